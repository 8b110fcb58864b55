#include "traces/import/zeus.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <tuple>
#include <variant>
#include <vector>

#include "base/error.hpp"
#include "base/files.hpp"
#include "base/stats.hpp"
#include "base/units.hpp"
#include "traces/csv.hpp"
#include "traces/import/common.hpp"

namespace pacer::traces::zeus {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

double to_double(const std::string& s, const std::string& origin, size_t row, const std::string& column) {
  const auto v = units::to_number(s);
  if (!v)
    throw Error(fmt::format("{}: line {}: column {} holds '{}', not a number (is this a Zeus trace file?)", origin,
                            row + 2, column, s));
  return *v;
}

// Batch sizes, run indices and epochs are ints: a value beyond int is a bad row, not a wrapped one.
int to_int(const std::string& s, const std::string& origin, size_t row, const std::string& column) {
  const double v = to_double(s, origin, row, column);
  if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
    throw Error(fmt::format("{}: line {}: column {} holds '{}', out of the integer range", origin, row + 2, column, s));
  return static_cast<int>(v);
}

std::string read_file(const std::filesystem::path& p) {
  std::error_code ec;
  if (!std::filesystem::exists(p, ec))
    throw Error(
        fmt::format("cannot read {}: give the Zeus trace folder (pacer's data/zeus) as the data folder", p.string()));
  return base::read_regular_file(p, base::kMaxDataFileBytes, "Zeus trace");
}

struct Key {
  std::string dataset, network, optimizer;
  auto operator<=>(const Key&) const = default;
  std::string name() const { return dataset + "." + network + "." + optimizer; }
};

struct PowerRow {
  int batch_size;
  double limit_w, time_per_epoch_s, power_w;
};

// run index -> (metric value -> first epoch reaching it)
using RunMetrics = std::map<int, std::map<double, int>>;

struct TrainData {
  std::map<int, RunMetrics> by_batch;  // batch size -> runs
  std::map<int, double> lr_by_batch;
};

// Whether the metric improves upwards: in a run, the epoch grows with the metric when higher is
// better (accuracy) and shrinks when lower is better (word error rate).
bool detect_higher_is_better(const TrainData& d) {
  long score = 0;
  for (const auto& [b, runs] : d.by_batch)
    for (const auto& [run, m] : runs) {
      if (m.size() < 2) continue;
      const int lo = m.begin()->second, hi = m.rbegin()->second;
      score += (hi > lo) - (hi < lo);
    }
  return score >= 0;
}

// First epoch at which a run reached `target` (or anything stricter); 0 when never.
int epoch_reaching(const std::map<double, int>& m, double target, bool higher_is_better) {
  int best = 0;
  for (const auto& [metric, epoch] : m) {
    const bool ok = higher_is_better ? metric >= target : metric <= target;
    if (ok && (best == 0 || epoch < best)) best = epoch;
  }
  return best;
}

// The learning curve of the runs of `relation` (run index = seed): every level each run reached,
// at the epoch it first reached it.
LearningCurve make_curve(const RelationSet& relation, const TrainData& d) {
  LearningCurve c;
  c.name = relation.name;
  c.metric = relation.metric;
  c.higher_is_better = relation.higher_is_better;
  c.source = "levels";
  for (const auto& r : relation.runs)
    for (const auto& [metric, epoch] : d.by_batch.at(r.batch_size).at(r.seed))
      c.points.push_back({r.batch_size, r.seed, static_cast<int64_t>(epoch) * relation.samples_per_epoch, metric});
  return c;
}

int last_epoch(const std::map<double, int>& m) {
  int e = 0;
  for (const auto& [metric, epoch] : m) e = std::max(e, epoch);
  return e;
}

// The run indices of batch size `b` a relation keeps: all of them for the target; for the proxy the
// first half by run index (at least one) or, with a split seed, as many drawn at random: a
// Fisher-Yates shuffle driven by a 64-bit engine seeded from (seed, workload, b), written out so
// that a seed gives the same split on every standard library.
std::vector<int> kept_runs(const RunMetrics& runs, const std::string& workload, int b, bool proxy, uint64_t seed) {
  std::vector<int> ids;
  for (const auto& [run, metrics] : runs) ids.push_back(run);  // std::map: ordered by run index
  if (!proxy) return ids;
  const size_t keep = std::max<size_t>(1, ids.size() / 2);
  if (seed != 0) {
    uint64_t h = seed * 0x9E3779B97F4A7C15ull ^ static_cast<uint64_t>(b);
    for (unsigned char c : workload) h = (h ^ c) * 0x100000001B3ull;
    std::mt19937_64 engine(h);
    for (size_t i = ids.size(); i > 1; --i) std::swap(ids[i - 1], ids[engine() % i]);
    std::sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(keep));
  }
  ids.resize(keep);
  return ids;
}

std::string proxy_runs_label(uint64_t split_seed) {
  return split_seed == 0 ? "first half of the runs" : fmt::format("a random half of the runs, split seed {}", split_seed);
}

RelationSet make_relation(const Key& key, const TrainData& d, const std::vector<int>& batches, double target,
                          bool higher_is_better, int64_t spe, bool proxy, uint64_t split_seed) {
  RelationSet s;
  s.name = proxy ? proxy_name(key.name()) : target_name(key.name());
  s.workload = key.name();
  s.dataset = key.dataset + " (zeus train trace, " + (proxy ? proxy_runs_label(split_seed) : "all runs") + ")";
  s.metric = key.dataset == "librispeech" ? "wer" : "validation_metric";
  s.higher_is_better = higher_is_better;
  s.target = target;
  s.lr_rule = "lr = base_lr * sqrt(b / base_batch) (as recorded in the Zeus train trace)";
  s.optimizer = key.optimizer;
  s.samples_per_epoch = spe;
  if (!batches.empty()) {
    s.base_batch = batches.front();
    const auto it = d.lr_by_batch.find(s.base_batch);
    if (it != d.lr_by_batch.end()) s.base_lr = it->second;
  }
  for (int b : batches) {
    const RunMetrics& runs = d.by_batch.at(b);
    for (const int run : kept_runs(runs, key.name(), b, proxy, split_seed)) {
      const auto& metrics = runs.at(run);
      RelationRun r;
      r.batch_size = b;
      r.seed = run;
      const int e = epoch_reaching(metrics, target, higher_is_better);
      r.reached = e > 0;
      r.budget_samples = static_cast<int64_t>(last_epoch(metrics)) * spe;
      r.samples = r.reached ? static_cast<int64_t>(e) * spe : r.budget_samples;
      const auto lr = d.lr_by_batch.find(b);
      if (lr != d.lr_by_batch.end()) r.learning_rate = lr->second;
      s.runs.push_back(r);
    }
  }
  return s;
}

}  // namespace

int64_t nominal_samples_per_epoch(const std::string& dataset) {
  // Public training-split sizes; any value gives the same times to accuracy (it cancels).
  static const std::map<std::string, int64_t> sizes = {{"cifar100", 50000},     {"imagenet", 1281167},
                                                       {"librispeech", 281241}, {"movielens-1m", 994169},
                                                       {"squad", 88641},        {"sentiment140", 1600000}};
  const auto it = sizes.find(dataset);
  return it == sizes.end() ? 100000 : it->second;
}

std::vector<double> protocol_caps_w(const ProfileTable& profile, int count) {
  double lo = 0, hi = 0;
  bool any = false;
  for (const auto& p : profile.points) {
    if (std::isnan(p.power_mean_w)) continue;
    lo = any ? std::min(lo, p.power_mean_w) : p.power_mean_w;
    hi = any ? std::max(hi, p.power_mean_w) : p.power_mean_w;
    any = true;
  }
  if (!any || count < 1) return {};
  return base::cap_grid_w(lo, hi, count);
}

std::filesystem::path default_data_dir() {
  return import::data_dir("data-dir") / "zeus";
}

std::filesystem::path power_trace(const std::filesystem::path& dir, const std::string& gpu) {
  return dir / fmt::format("summary_power_{}.csv", gpu);
}

std::filesystem::path train_trace(const std::filesystem::path& dir) {
  return dir / "summary_train.csv";
}

std::vector<std::string> available_gpus(const std::filesystem::path& dir) {
  const std::string prefix = "summary_power_", suffix = ".csv";
  std::vector<std::string> gpus;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string f = e.path().filename().string();
    if (f.size() > prefix.size() + suffix.size() && f.rfind(prefix, 0) == 0 &&
        f.compare(f.size() - suffix.size(), suffix.size(), suffix) == 0)
      gpus.push_back(f.substr(prefix.size(), f.size() - prefix.size() - suffix.size()));
  }
  std::sort(gpus.begin(), gpus.end());
  return gpus;
}

ImportResult import_traces(const ImportOptions& options) {
  const auto power = power_trace(options.data_dir, options.gpu);
  const auto train = train_trace(options.data_dir);
  if (!std::filesystem::exists(power)) {
    const auto have = available_gpus(options.data_dir);
    throw Error(fmt::format("no power trace for GPU '{}' ({} is missing); available: {}", options.gpu, power.string(),
                            have.empty() ? "none (check the data folder)" : fmt::format("{}", fmt::join(have, " "))));
  }
  return import_text(read_file(power), read_file(train), options);
}

namespace {

// The rows of summary_power_<gpu>.csv per workload.
// Every value is checked against physics and the GPU (import::check_power and friends: the catalog's
// power where it knows the GPU, else the physics bound), and a (power_limit, batch_size) of a
// workload appears once: a repeated row, the same or not, is refused naming both rows.
std::map<Key, std::vector<PowerRow>> read_power(const CsvTable& pt, const std::string& power_origin,
                                                const std::string& gpu) {
  std::map<Key, std::vector<PowerRow>> power;
  const auto device = import::catalog_device(gpu);
  const DeviceSpec* dev = device ? &*device : nullptr;
  std::map<std::tuple<Key, double, int>, std::pair<size_t, PowerRow>> first_row;
  const int c_ds = pt.column("dataset", power_origin), c_net = pt.column("network", power_origin),
            c_b = pt.column("batch_size", power_origin), c_opt = pt.column("optimizer", power_origin),
            c_pl = pt.column("power_limit", power_origin), c_t = pt.column("time_per_epoch", power_origin),
            c_p = pt.column("average_power", power_origin);
  for (size_t i = 0; i < pt.rows.size(); ++i) {
    const auto& r = pt.rows[i];
    Key k{r.at(c_ds), r.at(c_net), lower(r.at(c_opt))};
    PowerRow row{to_int(r.at(c_b), power_origin, i, "batch_size"),
                 to_double(r.at(c_pl), power_origin, i, "power_limit"),
                 to_double(r.at(c_t), power_origin, i, "time_per_epoch"),
                 to_double(r.at(c_p), power_origin, i, "average_power")};
    if (row.batch_size <= 0 || row.time_per_epoch_s <= 0 || row.power_w <= 0)
      throw Error(
          fmt::format("{}: line {}: batch size, time per epoch and power must be positive", power_origin, i + 2));
    import::check_power(row.limit_w, {power_origin, i + 2, "power_limit"}, dev);
    import::check_power(row.power_w, {power_origin, i + 2, "average_power"}, dev);
    import::check_duration(row.time_per_epoch_s, {power_origin, i + 2, "time_per_epoch"});
    const auto [it, fresh] = first_row.emplace(std::tuple{k, row.limit_w, row.batch_size}, std::pair{i, row});
    if (!fresh) {
      const auto& [was_i, was] = it->second;
      const bool same = was.time_per_epoch_s == row.time_per_epoch_s && was.power_w == row.power_w;
      throw Error(fmt::format(
          "{}:{}: columns power_limit, batch_size: {} at {:g} W and batch size {} is already on line {}{}: "
          "keep one row per power limit and batch size",
          power_origin, i + 2, k.name(), row.limit_w, row.batch_size, was_i + 2,
          same ? " (the same values)"
               : fmt::format(" with other values (time_per_epoch {:g} vs {:g} s, average_power {:g} vs {:g} W)",
                             was.time_per_epoch_s, row.time_per_epoch_s, was.power_w, row.power_w)));
    }
    power[k].push_back(row);
  }
  return power;
}

// The runs of summary_train.csv per workload: per batch size and run, the first epoch at which
// each metric was reached.
std::map<Key, TrainData> read_train(const CsvTable& tt) {
  std::map<Key, TrainData> train;
  const std::string o = "summary_train.csv";
  const int c_ds = tt.column("dataset", o), c_net = tt.column("network", o), c_b = tt.column("batch_size", o),
            c_opt = tt.column("optimizer", o), c_lr = tt.column("learning_rate", o), c_run = tt.column("run", o),
            c_m = tt.column("target_metric", o), c_e = tt.column("target_epoch", o);
  for (size_t i = 0; i < tt.rows.size(); ++i) {
    const auto& r = tt.rows[i];
    Key k{r.at(c_ds), r.at(c_net), lower(r.at(c_opt))};
    const int b = to_int(r.at(c_b), o, i, "batch_size");
    const int run = to_int(r.at(c_run), o, i, "run");
    auto& d = train[k];
    auto& metrics = d.by_batch[b][run];  // a run that never reaches anything still counts as a run
    if (!r.at(c_lr).empty()) d.lr_by_batch[b] = to_double(r.at(c_lr), o, i, "learning_rate");
    if (r.at(c_e).empty() || lower(r.at(c_e)) == "nan") continue;  // never reached this metric
    const double m = to_double(r.at(c_m), o, i, "target_metric");
    const int e = to_int(r.at(c_e), o, i, "target_epoch");
    if (e <= 0)
      throw Error(
          fmt::format("{}:{}: column target_epoch holds '{}': the epoch a run reached its metric "
                      "counts from 1 (empty or nan: never reached)",
                      o, i + 2, r.at(c_e)));
    auto [it, inserted] = metrics.emplace(m, e);
    if (!inserted) it->second = std::min(it->second, e);
  }
  return train;
}

// The batch sizes in both traces with at least min_runs runs, ascending; the others of either
// trace go to `dropped`, ascending.
std::vector<int> kept_batches(const std::vector<PowerRow>& rows, const TrainData& d, int min_runs,
                              std::vector<int>& dropped) {
  std::set<int> power_b, train_b;
  for (const auto& r : rows) power_b.insert(r.batch_size);
  for (const auto& [b, runs] : d.by_batch) train_b.insert(b);
  std::vector<int> batches;
  for (int b : power_b) {
    if (train_b.count(b) && static_cast<int>(d.by_batch.at(b).size()) >= min_runs)
      batches.push_back(b);
    else
      dropped.push_back(b);
  }
  for (int b : train_b)
    if (!power_b.count(b)) dropped.push_back(b);
  std::sort(dropped.begin(), dropped.end());
  return batches;
}

// Every metric level a run of a kept batch size reached.
std::set<double> metric_levels(const TrainData& d, const std::vector<int>& batches) {
  std::set<double> levels;
  for (int b : batches)
    for (const auto& [run, m] : d.by_batch.at(b))
      for (const auto& [metric, e] : m) levels.insert(metric);
  return levels;
}

// The strictest level every kept batch size reaches in at least min_runs runs; NaN when none does.
double strictest_target(const TrainData& d, const std::vector<int>& batches, const std::set<double>& levels,
                        bool higher_is_better, int min_runs) {
  double target = kNaN;
  for (double m : levels) {
    bool all = true;
    for (int b : batches) {
      int n = 0;
      for (const auto& [run, metrics] : d.by_batch.at(b)) n += epoch_reaching(metrics, m, higher_is_better) > 0;
      if (n < min_runs) {
        all = false;
        break;
      }
    }
    if (all && (std::isnan(target) || (higher_is_better ? m > target : m < target))) target = m;
  }
  return target;
}

// The next looser level than the target: the last point of the proxy's learning curve before it.
double looser_level(const std::set<double>& levels, double target, bool higher_is_better) {
  double looser = kNaN;
  for (double m : levels)
    if ((higher_is_better ? m < target : m > target) &&
        (std::isnan(looser) || (higher_is_better ? m > looser : m < looser)))
      looser = m;
  return looser;
}

// The power trace's rows of the kept batch sizes as a profile over the power limit.
ProfileTable power_profile(const std::string& name, const std::vector<PowerRow>& rows, const std::vector<int>& batches,
                           const std::string& gpu, int64_t spe) {
  ProfileTable t;
  t.workload = name;
  t.device = gpu;
  t.source = "zeus import (ml-energy/zeus trace, summary_power_" + gpu + ".csv)";
  t.knob = KnobSpace::power_limit();
  t.samples_per_epoch = spe;
  std::vector<PowerRow> sorted = rows;
  std::sort(sorted.begin(), sorted.end(), [](const PowerRow& a, const PowerRow& b) {
    return std::tie(a.batch_size, a.limit_w) < std::tie(b.batch_size, b.limit_w);
  });
  for (const auto& r : sorted) {
    if (!std::binary_search(batches.begin(), batches.end(), r.batch_size)) continue;
    ProfilePoint p;
    p.knob = {r.limit_w};
    p.batch_size = r.batch_size;
    // One epoch = spe samples = spe / b mini-batches.
    p.time_per_batch_mean_s = r.time_per_epoch_s * r.batch_size / static_cast<double>(spe);
    p.power_mean_w = r.power_w;
    p.energy_j = r.power_w * r.time_per_epoch_s;
    p.samples = spe;
    t.points.push_back(p);
  }
  return t;
}

// One workload of both traces, or why it is skipped ("<workload>: <why>").
std::variant<Workload, std::string> import_workload(const Key& key, const std::vector<PowerRow>& rows,
                                                    const TrainData& d, const ImportOptions& options) {
  Workload w;
  w.name = key.name();
  const std::vector<int> batches = kept_batches(rows, d, options.min_runs, w.dropped_batch_sizes);
  if (batches.empty())
    return fmt::format("{}: no batch size is in both traces with >= {} runs", key.name(), options.min_runs);
  const bool hib = detect_higher_is_better(d);
  const std::set<double> levels = metric_levels(d, batches);
  const double target = strictest_target(d, batches, levels, hib, options.min_runs);
  if (std::isnan(target))
    return fmt::format("{}: no target metric is reached by every batch size in >= {} runs", key.name(),
                       options.min_runs);
  const int64_t spe = nominal_samples_per_epoch(key.dataset);
  w.profile = power_profile(w.name, rows, batches, options.gpu, spe);
  w.proxy = make_relation(key, d, batches, target, hib, spe, true, options.split_seed);
  w.proxy_curve = make_curve(w.proxy, d);
  w.target = make_relation(key, d, batches, target, hib, spe, false, options.split_seed);
  if (const double looser = looser_level(levels, target, hib); !std::isnan(looser)) {
    w.proxy_looser = make_relation(key, d, batches, looser, hib, spe, true, options.split_seed);
    w.proxy_looser.name = looser_name(w.proxy.name);
    w.proxy_looser.dataset =
        key.dataset + " (zeus train trace, " + proxy_runs_label(options.split_seed) + ", looser metric level)";
  }
  return w;
}

}  // namespace

ImportResult import_text(const std::string& power_csv, const std::string& train_csv, const ImportOptions& options) {
  const std::string power_origin = fmt::format("summary_power_{}.csv", options.gpu);
  const CsvTable pt = parse_csv(power_csv, power_origin);
  const CsvTable tt = parse_csv(train_csv, "summary_train.csv");
  const std::map<Key, std::vector<PowerRow>> power = read_power(pt, power_origin, options.gpu);
  const std::map<Key, TrainData> train = read_train(tt);
  ImportResult result;
  result.gpu = options.gpu;
  for (const auto& [key, rows] : power) {
    const auto tit = train.find(key);
    if (tit == train.end()) {
      result.skipped.push_back(fmt::format("{}: no runs in summary_train.csv", key.name()));
      continue;
    }
    auto w = import_workload(key, rows, tit->second, options);
    if (auto* why = std::get_if<std::string>(&w))
      result.skipped.push_back(std::move(*why));
    else
      result.workloads.push_back(std::move(std::get<Workload>(w)));
  }
  for (const auto& [key, d] : train)
    if (!power.count(key))
      result.skipped.push_back(fmt::format("{}: not in summary_power_{}.csv", key.name(), options.gpu));
  return result;
}

}  // namespace pacer::traces::zeus
