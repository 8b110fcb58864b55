#include "traces/catalog/power_modes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <regex>
#include <sstream>

#include "base/error.hpp"
#include "base/text.hpp"
#include "traces/import/common.hpp"

namespace pacer::traces {

KnobSpace power_mode_knob(size_t dims) {
  KnobSpace k = KnobSpace::power_mode();
  if (dims > k.dims.size()) k.dims.push_back({"gpu_tpcs", "1"});
  return k;
}

KnobSpace power_mode_knob(const DeviceSpec& device) {
  const bool tpcs = std::any_of(device.power_modes.begin(), device.power_modes.end(),
                                [](const PowerModeSpec& m) { return m.gpu_tpcs > 0; });
  return power_mode_knob(KnobSpace::power_mode().dims.size() + (tpcs ? 1 : 0));
}

ModeCaps mode_maxima(const DeviceSpec& device) {
  ModeCaps m;
  for (const auto& p : device.power_modes) {
    m.cpu_cores = std::max(m.cpu_cores, p.cpu_cores);
    m.cpu_freq_hz = std::max(m.cpu_freq_hz, p.cpu_max_hz);
    m.gpu_freq_hz = std::max(m.gpu_freq_hz, p.gpu_max_hz);
    m.mem_freq_hz = std::max(m.mem_freq_hz, p.mem_hz);
    m.gpu_tpcs = std::max(m.gpu_tpcs, p.gpu_tpcs);
  }
  m.gpu_freq_hz = std::max(m.gpu_freq_hz, device.max_freq_hz());
  return m;
}

ModeCaps resolved_caps(const PowerModeSpec& mode, const DeviceSpec& device) {
  const ModeCaps top = mode_maxima(device);
  ModeCaps c;
  c.cpu_cores = mode.cpu_cores > 0 ? mode.cpu_cores : top.cpu_cores;
  c.cpu_freq_hz = mode.cpu_max_hz > 0 ? mode.cpu_max_hz : top.cpu_freq_hz;
  c.gpu_freq_hz = mode.gpu_max_hz > 0 ? mode.gpu_max_hz : top.gpu_freq_hz;
  c.mem_freq_hz = mode.mem_hz > 0 ? mode.mem_hz : top.mem_freq_hz;
  c.gpu_tpcs = mode.gpu_tpcs > 0 ? mode.gpu_tpcs : top.gpu_tpcs;
  const auto missing = [&](const char* what, const char* key) {
    return Error(
        fmt::format("power mode {} ({}) of {} has no {} and no other mode of the device names one: add {} "
                    "to its [mode-{}] section (docs/devices.md)",
                    mode.id, mode.name, device.name, what, key, mode.id));
  };
  if (c.cpu_cores <= 0) throw missing("CPU core count", "cpu_cores");
  if (!(c.cpu_freq_hz > 0)) throw missing("CPU frequency cap", "cpu_max_mhz");
  if (!(c.gpu_freq_hz > 0)) throw missing("GPU frequency cap", "gpu_max_mhz");
  if (!(c.mem_freq_hz > 0)) throw missing("memory (EMC) frequency", "mem_mhz");
  return c;
}

std::vector<double> caps_knob(const ModeCaps& caps, const KnobSpace& space) {
  std::vector<double> out;
  for (const auto& d : space.dims) {
    if (d.name == "cpu_cores")
      out.push_back(caps.cpu_cores);
    else if (d.name == "cpu_freq")
      out.push_back(caps.cpu_freq_hz);
    else if (d.name == "gpu_freq")
      out.push_back(caps.gpu_freq_hz);
    else if (d.name == "mem_freq")
      out.push_back(caps.mem_freq_hz);
    else if (d.name == "gpu_tpcs")
      out.push_back(caps.gpu_tpcs);
    else
      throw Error(fmt::format("knob dimension '{}' is no power-mode cap", d.name));
  }
  return out;
}

ModeCaps knob_caps(const KnobSpace& space, const std::vector<double>& knob) {
  if (knob.size() != space.dims.size())
    throw Error(fmt::format("a {} setting has {} values, got {}", space.kind, space.dims.size(), knob.size()));
  ModeCaps c;
  for (size_t i = 0; i < knob.size(); ++i) {
    const auto& n = space.dims[i].name;
    if (n == "cpu_cores")
      c.cpu_cores = static_cast<int>(std::lround(knob[i]));
    else if (n == "cpu_freq")
      c.cpu_freq_hz = knob[i];
    else if (n == "gpu_freq")
      c.gpu_freq_hz = knob[i];
    else if (n == "mem_freq")
      c.mem_freq_hz = knob[i];
    else if (n == "gpu_tpcs")
      c.gpu_tpcs = static_cast<int>(std::lround(knob[i]));
  }
  return c;
}

std::vector<double> mode_knob(const PowerModeSpec& mode, const DeviceSpec& device) {
  return caps_knob(resolved_caps(mode, device), power_mode_knob(device));
}

std::vector<std::vector<double>> mode_settings(const DeviceSpec& device) {
  if (device.power_modes.empty())
    throw Error(
        fmt::format("device {} lists no nvpmodel mode: add [mode-N] sections to its device file "
                    "(docs/devices.md) to profile power modes",
                    device.name));
  std::vector<std::vector<double>> out;
  for (const auto& m : device.power_modes) out.push_back(mode_knob(m, device));
  return out;
}

namespace {

bool same_knob(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::abs(a[i] - b[i]) > 1e-6 * std::max(1.0, std::abs(a[i]))) return false;
  return true;
}

}  // namespace

const PowerModeSpec* find_mode(const DeviceSpec& device, const std::vector<double>& knob) {
  for (const auto& m : device.power_modes) {
    try {
      if (same_knob(mode_knob(m, device), knob)) return &m;
    } catch (const Error&) {
    }
  }
  return nullptr;
}

const PowerModeSpec* find_mode_id(const DeviceSpec& device, int id) {
  for (const auto& m : device.power_modes)
    if (m.id == id) return &m;
  return nullptr;
}

std::string mode_label(const DeviceSpec& device, const std::vector<double>& knob) {
  if (const auto* m = find_mode(device, knob)) return fmt::format("{} {}", m->id, m->name);
  return power_mode_knob(device).format(knob);
}

// ---------------------------------------------------------------------------------------------
// nvpmodel.conf

namespace {

struct ClockParam {
  std::string kind;    // "cpu" | "gpu" | "emc"
  double to_si = 1.0;  // cpufreq files are in kHz, devfreq and EMC caps in Hz
};

struct RawMode {
  int id = 0;
  std::string name;
  int cores_online = 0;
  bool cores_seen = false;
  double cpu = 0, gpu = 0, emc = 0;  // as written (SI), -1: no cap
  bool cpu_seen = false, gpu_seen = false, emc_seen = false;
  long long tpc_mask = -1;  // TPC_PG_MASK, -1 when absent
};

std::map<std::string, std::string> section_attrs(const std::string& line) {
  std::map<std::string, std::string> a;
  static const std::regex kv(R"((\w+)=(\S+))");
  for (auto it = std::sregex_iterator(line.begin(), line.end(), kv); it != std::sregex_iterator(); ++it)
    a[(*it)[1].str()] = (*it)[2].str();
  return a;
}

double resolve(double raw, bool seen, bool zero_is_none, double catalog, double fallback) {
  if (!seen || raw < 0 || (zero_is_none && raw == 0)) return catalog > 0 ? catalog : fallback;
  return raw;
}

RawMode start_mode(const std::map<std::string, std::string>& a, const std::string& origin, size_t line_no) {
  if (!a.count("ID")) throw Error(fmt::format("{}:{}: POWER_MODEL without ID", origin, line_no));
  RawMode m;
  const double id = import::parse_number(a.at("ID"), origin, line_no, "POWER_MODEL ID");
  if (id < 0 || id != std::floor(id) || id > 1000)
    throw Error(fmt::format("{}:{}: POWER_MODEL ID {} is not a mode number", origin, line_no, a.at("ID")));
  m.id = static_cast<int>(id);
  m.name = a.count("NAME") ? a.at("NAME") : "";
  return m;
}

// One "PARAM ARG VALUE" line of a POWER_MODEL section.
void mode_line(RawMode& m, const std::map<std::string, ClockParam>& clocks, const std::string& w1,
               const std::string& w2, const std::string& w3, const std::string& origin, size_t line_no) {
  if (w1 == "CPU_ONLINE") {
    m.cores_seen = true;
    m.cores_online += import::parse_number(w3, origin, line_no, w2) != 0;
    return;
  }
  if (w1 == "TPC_POWER_GATING" && w2 == "TPC_PG_MASK") {
    const double v = import::parse_number(w3, origin, line_no, "TPC_PG_MASK");
    if (v < 0 || v != std::floor(v) || v > 65535)
      throw Error(fmt::format("{}:{}: TPC_PG_MASK {} is not a bit mask", origin, line_no, w3));
    m.tpc_mask = static_cast<long long>(v);
    return;
  }
  const auto it = clocks.find(w1);
  if (it == clocks.end() || w2 != "MAX_FREQ") return;
  const double v = import::parse_number(w3, origin, line_no, w1 + " MAX_FREQ");
  const double si = v < 0 ? -1 : v * it->second.to_si;
  if (it->second.kind == "gpu")
    m.gpu = si, m.gpu_seen = true;
  else if (it->second.kind == "emc")
    m.emc = si, m.emc_seen = true;
  else
    m.cpu = m.cpu_seen ? std::max(m.cpu, si) : si, m.cpu_seen = true;
}

PowerModeSpec to_mode(const RawMode& r, const DeviceSpec& device) {
  PowerModeSpec cat;
  for (const auto& c : device.power_modes)
    if (c.id == r.id) cat = c;
  const ModeCaps top = mode_maxima(device);
  PowerModeSpec m;
  m.id = r.id;
  m.name = r.name;
  m.cpu_cores = r.cores_seen ? r.cores_online : cat.cpu_cores;
  m.cpu_max_hz = resolve(r.cpu, r.cpu_seen, false, cat.cpu_max_hz, top.cpu_freq_hz);
  m.gpu_max_hz = resolve(r.gpu, r.gpu_seen, false, 0, device.max_freq_hz());
  if (!device.gpu_freqs_hz.empty()) {
    // The governor can only reach table entries: the cap is the highest entry at or below it.
    double snapped = device.gpu_freqs_hz.front();
    for (double g : device.gpu_freqs_hz)
      if (g <= m.gpu_max_hz * (1 + 1e-9)) snapped = g;
    m.gpu_max_hz = snapped;
  }
  m.mem_hz = resolve(r.emc, r.emc_seen, true, cat.mem_hz, top.mem_freq_hz);
  m.budget_w = cat.budget_w;
  m.gpu_tpcs = cat.gpu_tpcs;
  if (r.tpc_mask >= 0 && top.gpu_tpcs > 0)
    m.gpu_tpcs = std::max(0, top.gpu_tpcs - std::popcount(static_cast<unsigned long long>(r.tpc_mask)));
  return m;
}

}  // namespace

std::vector<PowerModeSpec> parse_nvpmodel(const std::string& text, const DeviceSpec& device,
                                          const std::string& origin) {
  std::map<std::string, ClockParam> clocks;
  std::vector<RawMode> raw;
  std::string param_name, param_type;
  bool in_mode = false;
  std::istringstream in(text);
  size_t line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    const std::string s(base::trim(line));
    if (s.empty() || s[0] == '#') continue;
    if (s[0] == '<') {
      const auto a = section_attrs(s);
      in_mode = s.find("POWER_MODEL") != std::string::npos;
      param_type = a.count("TYPE") ? a.at("TYPE") : "";
      param_name = s.find("PARAM") != std::string::npos && a.count("NAME") ? a.at("NAME") : "";
      if (in_mode) raw.push_back(start_mode(a, origin, line_no));
      continue;
    }
    std::istringstream ls(s);
    std::string w1, w2, w3;
    ls >> w1 >> w2 >> w3;
    if (!in_mode) {
      if (param_type == "CLOCK" && w1 == "MAX_FREQ") {
        ClockParam c;
        c.kind = param_name == "GPU"               ? "gpu"
                 : param_name == "EMC"             ? "emc"
                 : param_name.rfind("CPU", 0) == 0 ? "cpu"
                                                   : "";
        c.to_si = w2.find("cpufreq") != std::string::npos ? 1e3 : 1.0;
        if (!c.kind.empty()) clocks[param_name] = c;
      }
      continue;
    }
    mode_line(raw.back(), clocks, w1, w2, w3, origin, line_no);
  }
  if (raw.empty()) throw Error(fmt::format("{}: no POWER_MODEL section (is this an nvpmodel.conf?)", origin));
  std::vector<PowerModeSpec> out;
  for (const auto& r : raw) out.push_back(to_mode(r, device));
  return out;
}

}  // namespace pacer::traces
