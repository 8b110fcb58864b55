#include "traces/catalog/catalog.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

#include "base/error.hpp"
#include "base/files.hpp"
#include "base/text.hpp"
#include "base/units.hpp"

namespace pacer::traces {

const std::vector<std::pair<std::string_view, std::string_view>>& builtin_device_files();

namespace {
namespace fs = std::filesystem;

struct IniEntry {
  std::string key;
  std::string value;
  int line = 0;
};
struct IniSection {
  std::string name;
  std::vector<IniEntry> entries;
  const IniEntry* find(const std::string& key) const {
    for (const auto& e : entries)
      if (e.key == key) return &e;
    return nullptr;
  }
};

std::vector<IniSection> parse_ini(const std::string& text, const std::string& origin) {
  std::vector<IniSection> sections;
  std::istringstream in(std::string(base::text_input(text, origin)));
  std::string raw;
  int line = 0;
  while (std::getline(in, raw)) {
    ++line;
    const std::string s(base::trim(raw));
    if (s.empty() || s[0] == '#' || s[0] == ';') continue;
    if (s.front() == '[') {
      if (s.back() != ']') throw Error(fmt::format("{}:{}: malformed section header '{}'", origin, line, s));
      sections.push_back({std::string(base::trim(s.substr(1, s.size() - 2))), {}});
      continue;
    }
    const auto eq = s.find('=');
    if (eq == std::string::npos) throw Error(fmt::format("{}:{}: expected 'key = value', got '{}'", origin, line, s));
    if (sections.empty()) throw Error(fmt::format("{}:{}: key outside a [section]", origin, line));
    sections.back().entries.push_back(
        {std::string(base::trim(s.substr(0, eq))), std::string(base::trim(s.substr(eq + 1))), line});
  }
  return sections;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep)) {
    cur = base::trim(cur);
    if (!cur.empty()) out.push_back(cur);
  }
  return out;
}

class SectionReader {
 public:
  SectionReader(const IniSection* s, std::string origin) : s_(s), origin_(std::move(origin)) {}
  std::string str(const std::string& key, bool required = true, const std::string& def = "") const {
    const IniEntry* e = s_ ? s_->find(key) : nullptr;
    if (!e) {
      if (required) throw Error(fmt::format("{}: [{}] is missing the key '{}'", origin_, s_ ? s_->name : "?", key));
      return def;
    }
    return e->value;
  }
  double num(const std::string& key, bool required = true, double def = 0) const {
    const IniEntry* e = s_ ? s_->find(key) : nullptr;
    if (!e) {
      if (required) throw Error(fmt::format("{}: [{}] is missing the key '{}'", origin_, s_ ? s_->name : "?", key));
      return def;
    }
    return to_number(e->value, key, e->line);
  }
  std::vector<double> nums(const std::string& key) const {
    std::vector<double> out;
    const IniEntry* e = s_ ? s_->find(key) : nullptr;
    if (!e) throw Error(fmt::format("{}: [{}] is missing the key '{}'", origin_, s_ ? s_->name : "?", key));
    for (const auto& part : split(e->value, ',')) out.push_back(to_number(part, key, e->line));
    return out;
  }
  double to_number(const std::string& text, const std::string& key, int line) const {
    // The cap keeps every scaled value (GiB -> bytes, MHz -> Hz) finite, so to_device_ini can
    // write back whatever was accepted; no quantity of the schema comes near it.
    const auto v = units::to_number(text);
    if (!v || *v < 0 || *v > kMaxValue)
      throw Error(fmt::format("{}:{}: key '{}' needs a non-negative number (at most 1e15), got '{}'", origin_, line,
                              key, text));
    return *v;
  }
  // Counts, channels and ids are ints: a larger value is an error, not an undefined conversion.
  int to_int(double v, const std::string& key) const {
    if (v > std::numeric_limits<int>::max())
      throw Error(fmt::format("{}: [{}] key '{}' is too large ({:g})", origin_, s_ ? s_->name : "?", key, v));
    return static_cast<int>(v);
  }
  static constexpr double kMaxValue = 1e15;

 private:
  const IniSection* s_;
  std::string origin_;
};

const IniSection* section(const std::vector<IniSection>& all, const std::string& name) {
  for (const auto& s : all)
    if (s.name == name) return &s;
  return nullptr;
}

std::string fmt_num(double v) {
  return fmt::format("{:.10g}", v);
}

std::vector<fs::path> user_device_files() {
  std::vector<fs::path> files;
  const char* env = std::getenv("PACER_DEVICE_PATH");
  if (!env) return files;
  for (const auto& entry : split(env, ':')) {
    std::error_code ec;
    if (fs::is_directory(entry, ec)) {
      std::vector<fs::path> dir;
      for (const auto& f : fs::directory_iterator(entry, ec))
        if (f.path().extension() == ".ini") dir.push_back(f.path());
      std::sort(dir.begin(), dir.end());
      files.insert(files.end(), dir.begin(), dir.end());
    } else if (fs::exists(entry, ec)) {
      files.emplace_back(entry);
    }
  }
  return files;
}

std::string read_text(const fs::path& p) {
  return base::read_regular_file(p, base::kMaxConfigFileBytes, "device file");
}

}  // namespace

DeviceSpec parse_device_ini(const std::string& text, const std::string& origin) {
  const auto sections = parse_ini(text, origin);
  const IniSection* dev = section(sections, "device");
  if (!dev) throw Error(fmt::format("{}: missing the [device] section (see docs/devices.md for the schema)", origin));
  SectionReader d(dev, origin);
  DeviceSpec spec;
  spec.name = d.str("name");
  spec.display_name = d.str("display_name", false, spec.name);
  spec.soc = d.str("soc", false);
  spec.gpu_arch = d.str("gpu_arch");
  spec.memory_bytes = d.num("memory_gib") * 1024.0 * 1024.0 * 1024.0;
  for (double mhz : d.nums("gpu_freqs_mhz")) spec.gpu_freqs_hz.push_back(std::round(mhz * 1e6));
  if (spec.gpu_freqs_hz.empty()) throw Error(fmt::format("{}: gpu_freqs_mhz is empty", origin));
  if (!std::is_sorted(spec.gpu_freqs_hz.begin(), spec.gpu_freqs_hz.end()) ||
      std::adjacent_find(spec.gpu_freqs_hz.begin(), spec.gpu_freqs_hz.end()) != spec.gpu_freqs_hz.end())
    throw Error(fmt::format("{}: gpu_freqs_mhz must be strictly ascending", origin));
  spec.devfreq_path = d.str("devfreq_path");
  spec.devfreq_node = d.str("devfreq_node");
  spec.gpu_device_dir = d.str("gpu_device_dir", false);
  spec.cuda_cores = d.to_int(d.num("cuda_cores"), "cuda_cores");
  spec.mem_bandwidth_bytes_s = d.num("mem_bandwidth_gbs") * 1e9;
  spec.idle_power_w = d.num("idle_power_w");
  spec.max_power_w = d.num("max_power_w");
  if (!(spec.max_power_w > spec.idle_power_w))  // a board that idles above its maximum was taken
    throw Error(fmt::format("{}: max_power_w ({:g} W) must be above idle_power_w ({:g} W)", origin, spec.max_power_w,
                            spec.idle_power_w));
  if (spec.cuda_cores <= 0) throw Error(fmt::format("{}: cuda_cores must be positive", origin));

  SectionReader sens(section(sections, "sensors"), origin);
  if (!section(sections, "sensors")) throw Error(fmt::format("{}: missing the [sensors] section", origin));
  spec.sensor_layout = sens.str("layout");
  if (spec.sensor_layout != "iio" && spec.sensor_layout != "hwmon")
    throw Error(fmt::format("{}: [sensors] layout must be 'iio' or 'hwmon', got '{}'", origin, spec.sensor_layout));
  spec.sensor_driver = sens.str("driver");
  spec.total_rail = sens.str("total_rail", false);
  spec.gpu_rail = sens.str("gpu_rail", false);
  for (const auto& r : split(sens.str("rails"), ',')) {
    const auto f = split(r, ':');
    if (f.size() != 4) throw Error(fmt::format("{}: rail '{}' must be chip:channel:name:role", origin, r));
    static const std::vector<std::string> roles = {"total", "gpu", "cpu", "soc", "mem", "other", "nc"};
    if (std::find(roles.begin(), roles.end(), f[3]) == roles.end())
      throw Error(
          fmt::format("{}: rail '{}' has unknown role '{}' (total, gpu, cpu, soc, mem, other, nc)", origin, r, f[3]));
    RailSpec rail{f[0], sens.to_int(sens.to_number(f[1], "rails", 0), "rails"), f[2], f[3]};
    spec.rails.push_back(rail);
  }
  auto rail_exists = [&](const std::string& n) {
    return std::any_of(spec.rails.begin(), spec.rails.end(), [&](const RailSpec& r) { return r.name == n; });
  };
  if (!spec.total_rail.empty() && !rail_exists(spec.total_rail))
    throw Error(fmt::format("{}: total_rail '{}' is not among the rails", origin, spec.total_rail));
  if (!spec.gpu_rail.empty() && !rail_exists(spec.gpu_rail))
    throw Error(fmt::format("{}: gpu_rail '{}' is not among the rails", origin, spec.gpu_rail));

  for (const auto& s : sections) {
    if (s.name.rfind("mode-", 0) != 0) continue;
    SectionReader m(&s, origin);
    PowerModeSpec mode;
    mode.id = m.to_int(m.to_number(s.name.substr(5), "mode id", 0), "mode id");
    mode.name = m.str("name");
    mode.gpu_max_hz = std::round(m.num("gpu_max_mhz", false) * 1e6);
    mode.cpu_cores = m.to_int(m.num("cpu_cores", false), "cpu_cores");
    mode.cpu_max_hz = m.num("cpu_max_mhz", false) * 1e6;
    mode.mem_hz = m.num("mem_mhz", false) * 1e6;
    mode.budget_w = m.num("budget_w", false);
    mode.gpu_tpcs = m.to_int(m.num("gpu_tpcs", false), "gpu_tpcs");
    spec.power_modes.push_back(mode);
  }
  if (const IniSection* v = section(sections, "voltage")) {
    SectionReader vr(v, origin);
    for (const auto& e : v->entries)
      spec.voltage_table.push_back(
          {std::round(vr.to_number(e.key, "voltage", e.line) * 1e6), vr.to_number(e.value, e.key, e.line)});
    std::sort(spec.voltage_table.begin(), spec.voltage_table.end(),
              [](const VoltagePoint& a, const VoltagePoint& b) { return a.freq_hz < b.freq_hz; });
  }
  if (const IniSection* src = section(sections, "sources"))
    for (const auto& e : src->entries) spec.sources[e.key] = e.value;
  return spec;
}

std::string to_device_ini(const DeviceSpec& d) {
  std::string out = "[device]\n";
  auto kv = [&](const std::string& k, const std::string& v) { out += k + " = " + v + "\n"; };
  kv("name", d.name);
  kv("display_name", d.display_name);
  kv("soc", d.soc);
  kv("gpu_arch", d.gpu_arch);
  kv("memory_gib", fmt_num(d.memory_bytes / (1024.0 * 1024.0 * 1024.0)));
  std::string freqs;
  for (double f : d.gpu_freqs_hz) freqs += (freqs.empty() ? "" : ", ") + fmt_num(f / 1e6);
  kv("gpu_freqs_mhz", freqs);
  kv("devfreq_path", d.devfreq_path);
  kv("devfreq_node", d.devfreq_node);
  kv("gpu_device_dir", d.gpu_device_dir);
  kv("cuda_cores", std::to_string(d.cuda_cores));
  kv("mem_bandwidth_gbs", fmt_num(d.mem_bandwidth_bytes_s / 1e9));
  kv("idle_power_w", fmt_num(d.idle_power_w));
  kv("max_power_w", fmt_num(d.max_power_w));
  out += "\n[sensors]\n";
  kv("layout", d.sensor_layout);
  kv("driver", d.sensor_driver);
  kv("total_rail", d.total_rail);
  kv("gpu_rail", d.gpu_rail);
  std::string rails;
  for (const auto& r : d.rails)
    rails += fmt::format("{}{}:{}:{}:{}", rails.empty() ? "" : ", ", r.chip, r.channel, r.name, r.role);
  kv("rails", rails);
  for (const auto& m : d.power_modes) {
    out += fmt::format("\n[mode-{}]\n", m.id);
    kv("name", m.name);
    if (m.gpu_max_hz > 0) kv("gpu_max_mhz", fmt_num(m.gpu_max_hz / 1e6));
    if (m.cpu_cores > 0) kv("cpu_cores", std::to_string(m.cpu_cores));
    if (m.cpu_max_hz > 0) kv("cpu_max_mhz", fmt_num(m.cpu_max_hz / 1e6));
    if (m.mem_hz > 0) kv("mem_mhz", fmt_num(m.mem_hz / 1e6));
    if (m.budget_w > 0) kv("budget_w", fmt_num(m.budget_w));
    if (m.gpu_tpcs > 0) kv("gpu_tpcs", std::to_string(m.gpu_tpcs));
  }
  if (!d.voltage_table.empty()) {
    out += "\n[voltage]\n";
    for (const auto& p : d.voltage_table) kv(fmt_num(p.freq_hz / 1e6), fmt_num(p.volt_v));
  }
  if (!d.sources.empty()) {
    out += "\n[sources]\n";
    for (const auto& [k, v] : d.sources) kv(k, v);
  }
  return out;
}

std::vector<std::string> builtin_device_names() {
  std::vector<std::string> names;
  for (const auto& [name, text] : builtin_device_files()) names.emplace_back(name);
  return names;
}

std::vector<DeviceSpec> all_devices() {
  std::vector<DeviceSpec> out;
  for (const auto& [name, text] : builtin_device_files())
    out.push_back(parse_device_ini(std::string(text), fmt::format("built-in device '{}'", name)));
  for (const auto& f : user_device_files()) {
    DeviceSpec d = parse_device_ini(read_text(f), f.string());
    auto same_name = [&](const DeviceSpec& x) { return x.name == d.name; };
    out.erase(std::remove_if(out.begin(), out.end(), same_name), out.end());  // user files override
    out.push_back(std::move(d));
  }
  return out;
}

DeviceSpec find_device(const std::string& name_or_path) {
  std::error_code ec;
  if (name_or_path.find('/') != std::string::npos || name_or_path.ends_with(".ini")) {
    if (!fs::exists(name_or_path, ec)) throw Error(fmt::format("device file '{}' does not exist", name_or_path));
    return parse_device_ini(read_text(name_or_path), name_or_path);
  }
  std::string known;
  for (auto& d : all_devices()) {
    if (d.name == name_or_path) return d;
    known += (known.empty() ? "" : ", ") + d.name;
  }
  throw Error(
      fmt::format("unknown device '{}' (known: {}; or give a device file, see docs/devices.md)", name_or_path, known));
}

std::string describe(const DeviceSpec& d) {
  std::string out = fmt::format("{} ({})\n", d.name, d.display_name);
  out += fmt::format("  SoC {}, GPU of_node '{}' with {} CUDA cores, memory {:.0f} GiB, bandwidth {:.1f} GB/s\n", d.soc,
                     d.gpu_arch, d.cuda_cores, d.memory_bytes / (1024.0 * 1024 * 1024), d.mem_bandwidth_bytes_s / 1e9);
  out += fmt::format("  GPU frequencies ({}): ", d.gpu_freqs_hz.size());
  for (size_t i = 0; i < d.gpu_freqs_hz.size(); ++i)
    out += fmt::format("{}{:g}", i ? ", " : "", d.gpu_freqs_hz[i] / 1e6);
  out += " MHz\n";
  out += fmt::format("  devfreq: /{}  (class name {})\n", d.devfreq_path, d.devfreq_node);
  out += fmt::format("  power sensors: INA3221, {} layout, driver {}; total rail: {}; GPU rail: {}\n", d.sensor_layout,
                     d.sensor_driver, d.total_rail.empty() ? "none (sum of rails)" : d.total_rail,
                     d.gpu_rail.empty() ? "none" : d.gpu_rail);
  for (const auto& r : d.rails) out += fmt::format("    {} channel {}: {} ({})\n", r.chip, r.channel, r.name, r.role);
  if (!d.power_modes.empty()) {
    out += "  nvpmodel modes:\n";
    for (const auto& m : d.power_modes) {
      out += fmt::format("    {} {}: GPU max {}", m.id, m.name,
                         m.gpu_max_hz > 0 ? fmt::format("{:g} MHz", m.gpu_max_hz / 1e6) : "unknown");
      if (m.cpu_cores > 0) out += fmt::format(", {} CPU cores", m.cpu_cores);
      if (m.cpu_max_hz > 0) out += fmt::format(" @ {:g} MHz", m.cpu_max_hz / 1e6);
      if (m.mem_hz > 0) out += fmt::format(", EMC {:g} MHz", m.mem_hz / 1e6);
      if (m.gpu_tpcs > 0) out += fmt::format(", {} GPU TPCs", m.gpu_tpcs);
      if (m.budget_w > 0) out += fmt::format(", budget {:g} W", m.budget_w);
      out += "\n";
    }
  }
  if (!d.voltage_table.empty()) {
    out += "  GPU voltage V(f):";
    for (const auto& p : d.voltage_table) out += fmt::format(" {:g}MHz={:.0f}mV", p.freq_hz / 1e6, p.volt_v * 1e3);
    out += "\n";
  } else {
    out += "  GPU voltage V(f): not public (fitted with a floor when calibrating)\n";
  }
  out += fmt::format("  idle power {:g} W, max power {:g} W\n", d.idle_power_w, d.max_power_w);
  if (!d.sources.empty()) {
    out += "  sources:\n";
    for (const auto& [k, v] : d.sources) out += fmt::format("    {}: {}\n", k, v);
  }
  return out;
}

}  // namespace pacer::traces
