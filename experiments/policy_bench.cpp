#include "experiments/policy_bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <set>

#include "explore/policy.hpp"
#include "explore/sweep.hpp"
#include "traces/error.hpp"
#include "traces/zeus.hpp"

namespace pacer::experiments {
namespace {

namespace fs = std::filesystem;

// Regrets of the pacer policy per workload (every GPU pooled) for one setting of the constants.
using Regrets = std::map<std::string, std::vector<double>>;

std::vector<std::string> zeus_gpus(const fs::path& dir) {
  std::vector<std::string> gpus;
  std::error_code ec;
  const std::regex name("summary_power_(.+)\\.csv");
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::smatch m;
    const std::string file = e.path().filename().string();
    if (std::regex_match(file, m, name)) gpus.push_back(m[1].str());
  }
  std::sort(gpus.begin(), gpus.end());
  return gpus;
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? traces::kNaN : s / static_cast<double>(v.size());
}

double max_of(const std::vector<double>& v) {
  return v.empty() ? traces::kNaN : *std::max_element(v.begin(), v.end());
}

// The rows of every workload but `left_out` ("": of every workload).
std::vector<double> pooled(const Regrets& r, const std::string& left_out) {
  std::vector<double> out;
  for (const auto& [w, v] : r)
    if (w != left_out) out.insert(out.end(), v.begin(), v.end());
  return out;
}

std::string constants(const explore::RelationModelOptions& c) {
  return fmt::format("own weight {:g}, shrink {:g}", c.own_weight, c.shrink);
}

}  // namespace

PolicyBenchResult run_policy_bench(const PolicyBenchOptions& options) {
  PolicyBenchResult result;
  PolicyBenchOptions o = options;
  if (o.zeus_dir.empty()) o.zeus_dir = traces::zeus::default_data_dir();
  result.gpus = o.gpus.empty() ? zeus_gpus(o.zeus_dir) : o.gpus;
  if (result.gpus.empty() || !fs::exists(o.zeus_dir / "summary_train.csv"))
    throw Error(
        fmt::format("{}: no Zeus traces (summary_train.csv and summary_power_<gpu>.csv) here; give the folder "
                    "of shared/data/zeus",
                    o.zeus_dir.string()));
  std::vector<explore::RelationModelOptions> grid;
  for (double w : o.own_weights)
    for (double s : o.shrinks) {
      explore::RelationModelOptions c;
      c.own_weight = w;
      c.shrink = s;
      grid.push_back(c);
    }
  std::vector<Regrets> regrets(grid.size());
  for (const auto& gpu : result.gpus) {
    traces::zeus::ImportOptions zo;
    zo.data_dir = o.zeus_dir;
    zo.gpu = gpu;
    for (const auto& w : traces::zeus::import_traces(zo).workloads) {
      const explore::Space space = explore::Space::from_profile(w.profile);
      const explore::Index index(space);
      const explore::Relation target = explore::Relation::from_set(w.target, space);
      const auto* looser = w.proxy_looser.runs.empty() ? nullptr : &w.proxy_looser;
      for (size_t g = 0; g < grid.size(); ++g) {
        const explore::Relation proxy = explore::Relation::from_set(w.proxy, space, looser, grid[g]);
        explore::SweepWorkload sw;
        sw.workload = w.name;
        sw.index = &index;
        sw.proxy = &proxy;
        sw.target = &target;
        sw.target_set = &w.target;
        sw.caps_w = traces::zeus::protocol_caps_w(w.profile, o.caps_per_workload);
        explore::SweepOptions so;
        so.policies = {explore::Policy::Pacer, explore::Policy::Oracle};
        for (const auto& row : explore::sweep(sw, so))
          if (row.policy == "pacer" && row.feasible && !std::isnan(row.regret))
            regrets[g][w.name].push_back(row.regret);
      }
    }
  }
  for (size_t g = 0; g < grid.size(); ++g) {
    const auto all = pooled(regrets[g], "");
    result.grid.push_back({grid[g], mean(all), max_of(all)});
  }
  std::vector<double> held_rows;
  std::set<std::string> workloads;
  for (const auto& r : regrets)
    for (const auto& [workload, unused] : r) workloads.insert(workload);
  for (const auto& workload : workloads) {
    // The least mean regret on the other workloads, then the least max (both to 1e-4: ties of
    // choices that differ only in rounding go to the lower max).
    size_t best = 0;
    auto key = [&](size_t g) {
      const auto rest = pooled(regrets[g], workload);
      return std::make_pair(std::round(mean(rest) * 1e4), std::round(max_of(rest) * 1e4));
    };
    for (size_t g = 1; g < grid.size(); ++g)
      if (key(g) < key(best)) best = g;
    const auto it = regrets[best].find(workload);  // no feasible row of the workload there: nothing held out
    const std::vector<double> held = it == regrets[best].end() ? std::vector<double>{} : it->second;
    held_rows.insert(held_rows.end(), held.begin(), held.end());
    result.folds.push_back({workload, grid[best], mean(held), max_of(held)});
  }
  result.held_out_mean = mean(held_rows);
  result.held_out_max = max_of(held_rows);
  return result;
}

std::string PolicyBenchResult::markdown() const {
  std::string md = fmt::format(
      "### The pacer policy's constants, leave one workload out (Zeus traces: {})\n\n"
      "| held-out workload | chosen on the others | held-out mean regret | held-out max regret |\n|---|---|---|---|\n",
      fmt::join(gpus, ", "));
  for (const auto& f : folds)
    md += fmt::format("| {} | {} | {:.2f} % | {:.2f} % |\n", f.held_out, constants(f.chosen), 100 * f.mean_regret,
                      100 * f.max_regret);
  md += fmt::format("| **all folds** | | **{:.2f} %** | **{:.2f} %** |\n\n", 100 * held_out_mean, 100 * held_out_max);
  md +=
      "Every grid point on all the data (mean / max regret; * = the constants the code uses):\n\n"
      "| own weight | shrink | mean regret | max regret |\n|---|---|---|---|\n";
  const explore::RelationModelOptions used;
  for (const auto& p : grid)
    md += fmt::format("| {:g}{} | {:g} | {:.2f} % | {:.2f} % |\n", p.constants.own_weight,
                      p.constants.own_weight == used.own_weight && p.constants.shrink == used.shrink ? " *" : "",
                      p.constants.shrink, 100 * p.mean_regret, 100 * p.max_regret);
  return md;
}

std::string PolicyBenchResult::csv() const {
  std::string out = "kind,workload,own_weight[1],shrink[1],mean_regret[1],max_regret[1]\n";
  for (const auto& p : grid)
    out += fmt::format("all,,{:g},{:g},{:.6g},{:.6g}\n", p.constants.own_weight, p.constants.shrink, p.mean_regret,
                       p.max_regret);
  for (const auto& f : folds)
    out += fmt::format("held-out,{},{:g},{:g},{:.6g},{:.6g}\n", f.held_out, f.chosen.own_weight, f.chosen.shrink,
                       f.mean_regret, f.max_regret);
  return out;
}

}  // namespace pacer::experiments
