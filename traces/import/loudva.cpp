#include "traces/import/loudva.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "base/error.hpp"
#include "base/text.hpp"
#include "base/units.hpp"
#include "traces/catalog/power_modes.hpp"
#include "traces/csv.hpp"
#include "traces/import/common.hpp"
#include "traces/import/zeus.hpp"

namespace pacer::traces::loudva {
namespace {

// The CSV reader keeps blanks; LoudVA headers have ", " separators.
int column(const CsvTable& t, const std::string& name, const std::string& origin) {
  for (size_t i = 0; i < t.header.size(); ++i)
    if (base::trim(t.header[i]) == name) return static_cast<int>(i);
  throw Error(fmt::format("{}: missing column '{}' in the header (is this a LoudVA file?)", origin, name));
}

ProfilePoint make_point(std::vector<double> knob, int concurrency, double throughput_per_s, double power_w) {
  ProfilePoint p;
  p.knob = std::move(knob);
  p.batch_size = concurrency;
  // In a closed loop of C requests the server completes C inferences per batch period.
  p.time_per_batch_mean_s = concurrency / throughput_per_s;
  p.power_mean_w = power_w;
  p.energy_j = power_w * p.time_per_batch_mean_s;
  p.samples = concurrency;
  return p;
}

void check_positive(double v, const std::string& origin, size_t line, const std::string& what) {
  if (!(v > 0)) throw Error(fmt::format("{}:{}: {} is {:g}, it must be positive", origin, line, what, v));
}

void check_unique(std::set<int>& seen, int c, const std::string& origin, size_t line) {
  if (!seen.insert(c).second)
    throw Error(
        fmt::format("{}:{}: concurrency {} appears twice; one run per concurrency is expected", origin, line, c));
}

struct Listing {
  std::map<double, std::filesystem::path> sweeps;    // freq_hz -> file
  std::map<int, std::filesystem::path> perf, power;  // mode id -> file
};

Listing list_dir(const std::filesystem::path& dir) {
  if (!std::filesystem::is_directory(dir))
    throw Error(fmt::format("{} is not a folder: name the folder holding the LoudVA CSV files", dir.string()));
  static const std::regex sweep_re(R"(energy_calculated_freq_(\d+)\.csv)");
  static const std::regex perf_re(R"(performance_measurements_mode_(\d+)\.csv)");
  static const std::regex power_re(R"(power_measurement_stats_mode_(\d+)\.csv)");
  Listing l;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string f = e.path().filename().string();
    // The frequency (Hz) or mode id in a file name.
    const auto number = [&](const std::string& digits, int64_t hi) {
      const auto v = units::to_integer(digits, 0, hi);
      if (!v)
        throw Error(
            fmt::format("{}: the number {} in the file name is out of range (at most {}): rename or remove "
                        "the file",
                        e.path().string(), digits, hi));
      return *v;
    };
    constexpr int64_t kMaxFreqHz = 1'000'000'000'000, kMaxModeId = 1'000'000;
    std::smatch m;
    if (std::regex_match(f, m, sweep_re))
      l.sweeps[static_cast<double>(number(m[1].str(), kMaxFreqHz))] = e.path();
    else if (std::regex_match(f, m, perf_re))
      l.perf[static_cast<int>(number(m[1].str(), kMaxModeId))] = e.path();
    else if (std::regex_match(f, m, power_re))
      l.power[static_cast<int>(number(m[1].str(), kMaxModeId))] = e.path();
  }
  return l;
}

// The device's frequency-table entry at `freq_hz` (exact within rounding), or an Error.
double table_freq(const DeviceSpec& device, double freq_hz, const std::string& origin) {
  if (device.gpu_freqs_hz.empty()) return freq_hz;
  for (double g : device.gpu_freqs_hz)
    if (std::abs(g - freq_hz) <= 1e-6 * g) return g;
  throw Error(fmt::format(
      "{}: {:g} MHz is not in {}'s GPU frequency table ({:g}-{:g} MHz): was it measured on "
      "another board?",
      origin, freq_hz / 1e6, device.name, device.gpu_freqs_hz.front() / 1e6, device.gpu_freqs_hz.back() / 1e6));
}

std::filesystem::path find_conf(const ImportOptions& o) {
  if (!o.nvpmodel_conf.empty()) return o.nvpmodel_conf;
  std::vector<std::filesystem::path> hits;
  for (const auto& dir : {o.dir, o.dir / ".." / "nvpmodel"}) {
    if (!std::filesystem::is_directory(dir)) continue;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      const std::string f = e.path().filename().string();
      if (f.find("nvpmodel") == std::string::npos || e.path().extension() != ".conf") continue;
      const std::string text = import::read_text(e.path());
      if (!o.device.devfreq_node.empty() && text.find("/" + o.device.devfreq_node + "/") != std::string::npos)
        hits.push_back(e.path());
    }
  }
  if (hits.size() == 1) return hits.front();
  throw Error(fmt::format("{} nvpmodel.conf files for {} (GPU node {}) next to {}: name the board's nvpmodel.conf",
                          hits.empty() ? "no" : "several", o.device.name, o.device.devfreq_node, o.dir.string()));
}

}  // namespace

std::string power_rail_description(const DeviceSpec& device) {
  if (!device.total_rail.empty()) return device.total_rail + " (module total rail)";
  std::vector<std::string> names;
  for (const auto& r : device.rails)
    if (r.role != "nc") names.push_back(r.name);
  if (names.empty()) return "module power (rails unknown)";
  return fmt::format("sum of the {} rails (the board has no module-total rail)", fmt::join(names, ", "));
}

std::vector<ProfilePoint> parse_sweep(const std::string& csv, double freq_hz, const std::string& origin) {
  const CsvTable t = parse_csv(csv, origin);
  const int c_c = column(t, "Concurrency", origin), c_p = column(t, "Mean Power (W)", origin),
            c_x = column(t, "Throughput (Inference/sec)", origin);
  std::vector<ProfilePoint> out;
  std::set<int> seen;
  for (size_t i = 0; i < t.rows.size(); ++i) {
    const auto& r = t.rows[i];
    const size_t line = i + 2;
    const int c = import::parse_count(r.at(c_c), origin, line, "Concurrency");
    const double power_w = import::parse_number(r.at(c_p), origin, line, "Mean Power (W)");
    const double throughput = import::parse_number(r.at(c_x), origin, line, "Throughput (Inference/sec)");
    check_positive(power_w, origin, line, "Mean Power (W)");
    check_positive(throughput, origin, line, "Throughput (Inference/sec)");
    check_unique(seen, c, origin, line);
    out.push_back(make_point({freq_hz}, c, throughput, power_w));
  }
  if (out.empty()) throw Error(fmt::format("{}: no measurement rows under the header", origin));
  return out;
}

std::vector<ProfilePoint> parse_mode(const std::string& perf_csv, const std::string& power_stats,
                                     const std::vector<double>& knob, const std::string& origin) {
  const CsvTable t = parse_csv(perf_csv, origin);
  const int c_c = column(t, "Concurrency", origin), c_x = column(t, "Inferences/Second", origin);
  std::vector<double> means_w;
  std::istringstream in(power_stats);
  size_t line_no = 0;
  const std::string power_origin = origin + " (power stats)";
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    const std::string s(base::trim(line));
    if (s.empty()) continue;
    if (s.rfind("Mean:", 0) != 0)
      throw Error(fmt::format("{}:{}: expected 'Mean: <mW>', found '{}'", power_origin, line_no, s));
    const double mw = import::parse_number(s.substr(5), power_origin, line_no, "Mean");
    check_positive(mw, power_origin, line_no, "Mean");
    means_w.push_back(mw / 1000.0);
  }
  if (means_w.size() != t.rows.size())
    throw Error(
        fmt::format("{}: {} performance rows but {} power means; the two files must list the same "
                    "concurrencies in the same order",
                    origin, t.rows.size(), means_w.size()));
  std::vector<ProfilePoint> out;
  std::set<int> seen;
  for (size_t i = 0; i < t.rows.size(); ++i) {
    const size_t line = i + 2;
    const int c = import::parse_count(t.rows[i].at(c_c), origin, line, "Concurrency");
    const double throughput = import::parse_number(t.rows[i].at(c_x), origin, line, "Inferences/Second");
    check_positive(throughput, origin, line, "Inferences/Second");
    check_unique(seen, c, origin, line);
    out.push_back(make_point(knob, c, throughput, means_w[i]));
  }
  if (out.empty()) throw Error(fmt::format("{}: no measurement rows under the header", origin));
  return out;
}

namespace {

ProfileTable base_table(const ImportOptions& o, const std::string& what) {
  ProfileTable t;
  t.workload = o.workload;
  t.device = o.device.name;
  t.source = fmt::format(
      "loudva import: inference, not training (Triton InceptionV3, perf_analyzer concurrency C as b; {}), measured by "
      "Ioannis Loudaros (github.com/iloudaros/LoudVA, MIT); power: tegrastats mean of {}",
      what, power_rail_description(o.device));
  return t;
}

}  // namespace

std::filesystem::path default_dir(const DeviceSpec& device) {
  std::string board = device.name;
  if (board.rfind("jetson-", 0) == 0) board = board.substr(7);
  return import::data_dir("dir") / "jetson" / "loudva" / board;
}

ImportResult import_dir(const ImportOptions& o) {
  const Listing l = list_dir(o.dir);
  if (l.sweeps.empty() && l.perf.empty() && l.power.empty())
    throw Error(
        fmt::format("{} holds no LoudVA file (energy_calculated_freq_<Hz>.csv or "
                    "performance_measurements_mode_<N>.csv)",
                    o.dir.string()));
  ImportResult result;
  if (!l.sweeps.empty()) {
    Imported im;
    im.name = o.workload;
    im.table = base_table(o, "GPU frequency locked, CPU and EMC clocks free, nvpmodel mode 0");
    im.table.floating_clocks = kGpuPinnedFloatingClocks;
    for (const auto& [freq, path] : l.sweeps) {
      const std::string origin = path.filename().string();
      const double f = table_freq(o.device, freq, origin);
      for (auto& p : parse_sweep(import::read_text(path), f, origin)) im.table.points.push_back(std::move(p));
      im.files.push_back(path.string());
    }
    result.profiles.push_back(std::move(im));
  }
  for (const auto& [id, path] : l.perf)
    if (!l.power.count(id))
      throw Error(fmt::format("{} has no partner power_measurement_stats_mode_{}.csv", path.string(), id));
  for (const auto& [id, path] : l.power)
    if (!l.perf.count(id))
      throw Error(fmt::format("{} has no partner performance_measurements_mode_{}.csv", path.string(), id));
  if (!l.perf.empty()) {
    const auto conf = find_conf(o);
    const auto modes = parse_nvpmodel(import::read_text(conf), o.device, conf.filename().string());
    Imported im;
    im.name = o.workload + ".modes";
    im.table = base_table(
        o, fmt::format("nvpmodel modes, clocks free within the mode; caps from {}", conf.filename().string()));
    im.table.floating_clocks = kModeFloatingClocks;
    im.table.knob = power_mode_knob(o.device);
    for (const auto& [id, path] : l.perf) {
      const int mode_id = id;  // (clang 14 cannot capture a structured binding)
      const auto m =
          std::find_if(modes.begin(), modes.end(), [mode_id](const PowerModeSpec& s) { return s.id == mode_id; });
      if (m == modes.end())
        throw Error(fmt::format("{}: mode {} is not a POWER_MODEL of {}", path.filename().string(), id, conf.string()));
      const auto points = parse_mode(import::read_text(path), import::read_text(l.power.at(id)),
                                     mode_knob(*m, o.device), path.filename().string());
      im.table.points.insert(im.table.points.end(), points.begin(), points.end());
      im.files.push_back(path.string());
      im.files.push_back(l.power.at(id).string());
      result.modes.push_back(*m);
    }
    im.files.push_back(conf.string());
    result.profiles.push_back(std::move(im));
  }
  std::set<int> bs;
  for (const auto& p : result.profiles)
    for (int b : p.table.batch_sizes()) bs.insert(b);
  result.requests = request_relation(o.workload, {bs.begin(), bs.end()}, 10000);
  return result;
}

RelationSet request_relation(const std::string& workload, const std::vector<int>& batch_sizes, int64_t requests) {
  RelationSet r;
  r.name = zeus::proxy_name(workload);
  r.workload = workload;
  r.dataset = fmt::format("inference: {} requests served at every batch size (no training; r(b) = 1)", requests);
  r.metric = "requests_served";
  r.higher_is_better = true;
  r.target = static_cast<double>(requests);
  r.lr_rule = "none (inference)";
  for (int b : batch_sizes) {
    RelationRun run;
    run.batch_size = b;
    run.seed = 0;
    run.reached = true;
    run.samples = requests;
    run.budget_samples = requests;
    run.final_metric = static_cast<double>(requests);
    r.runs.push_back(run);
  }
  return r;
}

}  // namespace pacer::traces::loudva
