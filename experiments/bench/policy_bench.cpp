#include "experiments/bench/policy_bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "base/error.hpp"
#include "base/stats.hpp"
#include "explore/policy.hpp"
#include "explore/sweep.hpp"
#include "traces/import/common.hpp"
#include "traces/import/zeus.hpp"

namespace pacer::experiments {
namespace {

namespace fs = std::filesystem;

// Regrets of the pacer policy per workload (every GPU pooled) for one setting of the constants.
using Regrets = std::map<std::string, std::vector<double>>;

using base::mean;

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

// One workload swept with `policies` (and the oracle) under the protocol's caps; the proxy's
// posterior with `constants`. The rows of the policies that were feasible, by policy name.
std::map<std::string, std::vector<double>> workload_regrets(const traces::zeus::Workload& w,
                                                            const explore::RelationModelOptions& constants,
                                                            const std::vector<explore::Policy>& policies,
                                                            int caps_per_workload) {
  const explore::Space space = explore::Space::from_profile(w.profile);
  const explore::Index index(space);
  const explore::Relation target = explore::Relation::from_set(w.target, space);
  const auto* looser = w.proxy_looser.runs.empty() ? nullptr : &w.proxy_looser;
  const explore::Relation proxy = explore::Relation::from_set(w.proxy, space, looser, constants);
  explore::SweepWorkload sw;
  sw.workload = w.name;
  sw.index = &index;
  sw.proxy = &proxy;
  sw.target = &target;
  sw.target_set = &w.target;
  sw.caps_w = traces::zeus::protocol_caps_w(w.profile, caps_per_workload);
  explore::SweepOptions so;
  so.policies = policies;
  so.policies.push_back(explore::Policy::Oracle);
  std::map<std::string, std::vector<double>> out;
  for (const auto& row : explore::sweep(sw, so))
    if (!explore::is_policy(row.policy, explore::Policy::Oracle) && row.feasible && !std::isnan(row.regret))
      out[row.policy].push_back(row.regret);
  return out;
}

// Per split, the rows of one (GPU, workload or all, policy).
ResplitRow summarize(const std::string& gpu, const std::string& workload, const std::string& policy,
                     const std::vector<std::vector<double>>& splits) {
  ResplitRow r{gpu, workload, policy};
  std::vector<double> all, maxima;
  int over = 0, met = 0;
  for (const auto& rows : splits) {
    if (rows.empty()) continue;
    all.insert(all.end(), rows.begin(), rows.end());
    const double mx = max_of(rows);
    maxima.push_back(mx);
    over += mx > kRegretGoalMax;
    met += mx <= kRegretGoalMax && mean(rows) <= kRegretGoalMean;
  }
  r.splits = static_cast<int>(maxima.size());
  r.mean_regret = mean(all);
  r.median_max = base::quantile(maxima, 0.5);
  r.p90_max = base::quantile(maxima, 0.9);
  const double n = std::max(1.0, static_cast<double>(r.splits));
  r.share_over_max = over / n;
  r.share_goal_met = met / n;
  return r;
}

std::vector<ResplitRow> run_resplits(const PolicyBenchOptions& o, const std::vector<std::string>& gpus) {
  const std::vector<explore::Policy> policies = {explore::Policy::Pacer, explore::Policy::Ours,
                                                 explore::Policy::OursRobust};
  // (gpu, workload, policy) -> per split, its rows
  std::map<std::tuple<std::string, std::string, std::string>, std::vector<std::vector<double>>> rows;
  const std::string train_csv = traces::import::read_text(traces::zeus::train_trace(o.zeus_dir));
  for (const auto& gpu : gpus) {
    // Read once per GPU (run_policy_bench has imported it already: the file is there); split per draw.
    const std::string power_csv = traces::import::read_text(traces::zeus::power_trace(o.zeus_dir, gpu));
    for (int split = 1; split <= o.resplits; ++split) {
      traces::zeus::ImportOptions zo;
      zo.data_dir = o.zeus_dir;
      zo.gpu = gpu;
      zo.split_seed = static_cast<uint64_t>(split);
      for (const auto& w : traces::zeus::import_text(power_csv, train_csv, zo).workloads) {
        const auto by_policy = workload_regrets(w, explore::RelationModelOptions{}, policies, o.caps_per_workload);
        for (const auto p : policies) {
          const std::string name(explore::to_string(p));
          const auto it = by_policy.find(name);
          auto& per_split = rows[{gpu, w.name, name}];
          per_split.resize(static_cast<size_t>(o.resplits));
          if (it != by_policy.end()) per_split[static_cast<size_t>(split - 1)] = it->second;
        }
      }
    }
  }
  std::vector<ResplitRow> out, per_workload;
  for (const auto& gpu : gpus)
    for (const auto p : policies) {
      const std::string name(explore::to_string(p));
      std::vector<std::vector<double>> pooled_splits(static_cast<size_t>(o.resplits));
      for (const auto& [key, splits] : rows) {
        if (std::get<0>(key) != gpu || std::get<2>(key) != name) continue;
        for (size_t s = 0; s < splits.size(); ++s)
          pooled_splits[s].insert(pooled_splits[s].end(), splits[s].begin(), splits[s].end());
        per_workload.push_back(summarize(gpu, std::get<1>(key), name, splits));
      }
      out.push_back(summarize(gpu, "", name, pooled_splits));
    }
  out.insert(out.end(), per_workload.begin(), per_workload.end());
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
  result.gpus = o.gpus.empty() ? traces::zeus::available_gpus(o.zeus_dir) : o.gpus;
  if (result.gpus.empty() || !fs::exists(traces::zeus::train_trace(o.zeus_dir)))
    throw Error(
        fmt::format("{}: no Zeus traces (summary_train.csv and summary_power_<gpu>.csv) here; give the folder "
                    "of the Zeus traces (pacer's data/zeus)",
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
    for (const auto& w : traces::zeus::import_traces(zo).workloads)
      for (size_t g = 0; g < grid.size(); ++g) {
        const auto by_policy = workload_regrets(w, grid[g], {explore::Policy::Pacer}, o.caps_per_workload);
        const auto it = by_policy.find(std::string(to_string(explore::Policy::Pacer)));
        if (it != by_policy.end()) {
          auto& v = regrets[g][w.name];
          v.insert(v.end(), it->second.begin(), it->second.end());
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
  if (o.resplits > 0) result.resplits = run_resplits(o, result.gpus);
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
  if (resplits.empty()) return md;
  md += fmt::format(
      "\n### Random proxy halves ({} splits per GPU; outside the protocol: the proxy is a random half of each batch "
      "size's runs, the target all runs)\n\n"
      "| GPU | policy | mean regret | median / 90th pct. of the max regret | splits with max > {:g} % | splits meeting "
      "the goal (<= {:g} % / {:g} %) |\n|---|---|---|---|---|---|\n",
      resplits.front().splits, 100 * kRegretGoalMax, 100 * kRegretGoalMean, 100 * kRegretGoalMax);
  for (const auto& r : resplits)
    if (r.workload.empty())
      md += fmt::format("| {} | {} | {:.2f} % | {:.2f} / {:.2f} % | {:.0f} % | {:.0f} % |\n", r.gpu, r.policy,
                        100 * r.mean_regret, 100 * r.median_max, 100 * r.p90_max, 100 * r.share_over_max,
                        100 * r.share_goal_met);
  md += fmt::format("\nPer workload: the share of splits whose max regret exceeds {:g} % (mean regret):\n\n",
                    100 * kRegretGoalMax);
  std::vector<std::string> policies;
  for (const auto& r : resplits)
    if (r.workload.empty() && std::find(policies.begin(), policies.end(), r.policy) == policies.end())
      policies.push_back(r.policy);
  std::string rule;
  for (size_t i = 0; i < policies.size(); ++i) rule += "---|";
  md += fmt::format("| GPU | workload | {} |\n|---|---|{}\n", fmt::join(policies, " | "), rule);
  std::map<std::pair<std::string, std::string>, std::map<std::string, const ResplitRow*>> table;
  for (const auto& r : resplits)
    if (!r.workload.empty()) table[{r.gpu, r.workload}][r.policy] = &r;
  for (const auto& [key, by_policy] : table) {
    md += fmt::format("| {} | {} |", key.first, key.second);
    for (const auto& p : policies) {
      const auto it = by_policy.find(p);
      md += it == by_policy.end() ? " - |"
                                  : fmt::format(" {:.0f} % ({:.2f} %) |", 100 * it->second->share_over_max,
                                                100 * it->second->mean_regret);
    }
    md += "\n";
  }
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

std::string PolicyBenchResult::resplits_csv() const {
  std::string out =
      "gpu,workload,policy,splits,mean_regret[1],median_max_regret[1],p90_max_regret[1],share_max_over_goal[1],"
      "share_goal_met[1]\n";
  for (const auto& r : resplits)
    out += fmt::format("{},{},{},{},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g}\n", r.gpu, r.workload, r.policy, r.splits,
                       r.mean_regret, r.median_max, r.p90_max, r.share_over_max, r.share_goal_met);
  return out;
}

}  // namespace pacer::experiments
