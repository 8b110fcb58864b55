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

// One chosen configuration's interval against the held-back target runs: log of the interval's
// centre, its half-width at inflation 1, and the log of the held-back runs' mean time.
struct CoverageSample {
  std::string gpu, workload;
  double centre = 0, half = 0, truth = 0;
};

// Pacer's choice at every protocol cap with its target interval, against the mean time of the
// target's runs that the proxy did not draw (the target holds every run).
void coverage_samples(const traces::zeus::Workload& w, const std::string& gpu, int caps_per_workload,
                      std::vector<CoverageSample>& out) {
  const explore::Space space = explore::Space::from_profile(w.profile);
  const explore::Index index(space);
  const auto* looser = w.proxy_looser.runs.empty() ? nullptr : &w.proxy_looser;
  const explore::Relation proxy = explore::Relation::from_set(w.proxy, space, looser);
  std::set<std::pair<int, int>> drawn;
  for (const auto& r : w.proxy.runs) drawn.insert({r.batch_size, r.seed});
  traces::RelationSet held = w.target;
  held.runs.clear();
  for (const auto& r : w.target.runs)
    if (!drawn.count({r.batch_size, r.seed})) held.runs.push_back(r);
  explore::PolicyContext ctx;
  ctx.index = &index;
  ctx.proxy = &proxy;
  for (double cap : traces::zeus::protocol_caps_w(w.profile, caps_per_workload)) {
    const explore::Selection s = explore::select(explore::Policy::Pacer, ctx, cap);
    if (!s.feasible || !(s.predicted_time_lo_s > 0) || !(s.predicted_time_hi_s > 0)) continue;
    const double n = held.mean_samples(s.batch_size);
    if (!(n > 0)) continue;
    const double t = base::time_to_accuracy_s(space.time_per_batch_s(s.batch_index, s.knob_index), n, s.batch_size);
    const double lo = std::log(s.predicted_time_lo_s), hi = std::log(s.predicted_time_hi_s);
    out.push_back({gpu, w.name, (lo + hi) / 2, (hi - lo) / 2 / explore::kIntervalInflation, std::log(t)});
  }
}

// The share of `samples` (those `keep` accepts) whose truth lies in the interval at `inflation`.
template <typename Keep>
std::pair<double, int> coverage_of(const std::vector<CoverageSample>& samples, double inflation, Keep keep) {
  int in = 0, n = 0;
  for (const auto& c : samples)
    if (keep(c)) {
      ++n;
      in += std::abs(c.truth - c.centre) <= inflation * c.half + 1e-12;
    }
  return {n ? static_cast<double>(in) / n : traces::kNaN, n};
}

// Leave one group out: the inflation of the grid whose coverage on the other groups is nearest 90 %
// (then the smaller), scored on the held-out group; returns the pooled held-out coverage.
double coverage_folds(const std::vector<CoverageSample>& samples, const std::vector<double>& grid, bool by_gpu,
                      std::vector<CoverageFold>& folds) {
  std::set<std::string> groups;
  for (const auto& c : samples) groups.insert(by_gpu ? c.gpu : c.workload);
  if (grid.empty()) return traces::kNaN;
  int in = 0, n = 0;
  for (const auto& g : groups) {
    auto group = [&](const CoverageSample& c) { return (by_gpu ? c.gpu : c.workload) == g; };
    double best = grid.front(), best_gap = INFINITY;
    for (double f : grid) {
      const double gap =
          std::abs(coverage_of(samples, f, [&](const CoverageSample& c) { return !group(c); }).first - 0.9);
      if (gap < best_gap - 1e-12) {
        best_gap = gap;
        best = f;
      }
    }
    const auto [cov, count] = coverage_of(samples, best, group);
    folds.push_back({g, best, cov, count});
    in += static_cast<int>(std::lround(cov * count));
    n += count;
  }
  return n ? static_cast<double>(in) / n : traces::kNaN;
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
  r.max_regret = max_of(all);
  r.median_max = base::quantile(maxima, 0.5);
  r.p90_max = base::quantile(maxima, 0.9);
  const double n = std::max(1.0, static_cast<double>(r.splits));
  r.share_over_max = over / n;
  r.share_goal_met = met / n;
  return r;
}

std::vector<ResplitRow> run_resplits(const PolicyBenchOptions& o, const std::vector<std::string>& gpus,
                                     PolicyBenchResult& result) {
  const std::vector<explore::Policy> policies = {explore::Policy::Pacer, explore::Policy::Ours,
                                                 explore::Policy::OursRobust};
  // (gpu, workload, policy) -> per split, its rows
  std::map<std::tuple<std::string, std::string, std::string>, std::vector<std::vector<double>>> rows;
  std::vector<CoverageSample> cover;
  std::vector<Regrets> depart(o.depart_zs.size());  // per threshold: workload -> pacer's rows
  Regrets ours_rows;                                // workload -> Algorithm 1's rows
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
        coverage_samples(w, gpu, o.caps_per_workload, cover);
        const std::string pacer_id(explore::to_string(explore::Policy::Pacer));
        for (size_t z = 0; z < o.depart_zs.size(); ++z) {
          explore::RelationModelOptions c;
          c.depart_z = o.depart_zs[z];
          const auto r = workload_regrets(w, c, {explore::Policy::Pacer}, o.caps_per_workload);
          const auto it = r.find(pacer_id);
          if (it != r.end()) depart[z][w.name].insert(depart[z][w.name].end(), it->second.begin(), it->second.end());
        }
        const auto ours_it = by_policy.find(std::string(explore::to_string(explore::Policy::Ours)));
        if (ours_it != by_policy.end())
          ours_rows[w.name].insert(ours_rows[w.name].end(), ours_it->second.begin(), ours_it->second.end());
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

  CoverageResult& cov = result.coverage;
  cov.inflation = explore::kIntervalInflation;
  std::tie(cov.coverage, cov.choices) = coverage_of(cover, cov.inflation, [](const CoverageSample&) { return true; });
  for (double f : o.inflations)
    cov.by_inflation.push_back({f, coverage_of(cover, f, [](const CoverageSample&) { return true; }).first});
  cov.held_out_workload = coverage_folds(cover, o.inflations, false, cov.by_workload);
  cov.held_out_gpu = coverage_folds(cover, o.inflations, true, cov.by_gpu);

  for (size_t z = 0; z < depart.size(); ++z) {
    explore::RelationModelOptions c;
    c.depart_z = o.depart_zs[z];
    const auto all = pooled(depart[z], "");
    result.depart_grid.push_back({c, mean(all), max_of(all)});
  }
  // The departure threshold, leave one workload out: the least mean regret on the others, then max.
  std::vector<double> held_pacer, held_ours;
  for (const auto& [workload, unused] : ours_rows) {
    if (depart.empty()) break;
    size_t best = 0;
    auto key = [&](size_t z) {
      const auto rest = pooled(depart[z], workload);
      return std::make_pair(std::round(mean(rest) * 1e4), std::round(max_of(rest) * 1e4));
    };
    for (size_t z = 1; z < depart.size(); ++z)
      if (key(z) < key(best)) best = z;
    const auto it = depart[best].find(workload);
    const std::vector<double> held = it == depart[best].end() ? std::vector<double>{} : it->second;
    const std::vector<double>& ours = ours_rows[workload];
    held_pacer.insert(held_pacer.end(), held.begin(), held.end());
    held_ours.insert(held_ours.end(), ours.begin(), ours.end());
    result.depart_folds.push_back({workload, o.depart_zs[best], mean(held), max_of(held), mean(ours), max_of(ours)});
  }
  result.depart_held_out_pacer_mean = mean(held_pacer);
  result.depart_held_out_pacer_max = max_of(held_pacer);
  result.depart_held_out_ours_mean = mean(held_ours);
  result.depart_held_out_ours_max = max_of(held_ours);
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
  if (o.resplits > 0) result.resplits = run_resplits(o, result.gpus, result);
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
      "| GPU | policy | mean regret | worst row | median / 90th pct. of the max regret | splits with max > {:g} % | "
      "splits meeting the goal (<= {:g} % / {:g} %) |\n|---|---|---|---|---|---|---|\n",
      resplits.front().splits, 100 * kRegretGoalMax, 100 * kRegretGoalMean, 100 * kRegretGoalMax);
  for (const auto& r : resplits)
    if (r.workload.empty())
      md += fmt::format("| {} | {} | {:.2f} % | {:.2f} % | {:.2f} / {:.2f} % | {:.0f} % | {:.0f} % |\n", r.gpu,
                        r.policy, 100 * r.mean_regret, 100 * r.max_regret, 100 * r.median_max, 100 * r.p90_max,
                        100 * r.share_over_max, 100 * r.share_goal_met);
  const CoverageResult& c = coverage;
  md += fmt::format(
      "\ncoverage of pacer's 90 % interval of the target's time to accuracy at its choice (held-back runs' mean, "
      "{} choices): {:.1f} % at inflation {:g} (the code's); leave one workload out {:.1f} %, leave one GPU out "
      "{:.1f} %\n\n| inflation | coverage |\n|---|---|\n",
      c.choices, 100 * c.coverage, c.inflation, 100 * c.held_out_workload, 100 * c.held_out_gpu);
  for (const auto& [f, cov] : c.by_inflation) md += fmt::format("| {:g} | {:.1f} % |\n", f, 100 * cov);
  md += "\n| held out | inflation chosen on the others | held-out coverage | choices |\n|---|---|---|---|\n";
  for (const auto* folds : {&c.by_gpu, &c.by_workload})
    for (const auto& f : *folds)
      md += fmt::format("| {} | {:g} | {:.1f} % | {} |\n", f.held_out, f.chosen, 100 * f.coverage, f.choices);
  if (!depart_folds.empty()) {
    md +=
        "\nThe threshold at which pacer departs from Algorithm 1's batch size, leave one workload out (every GPU "
        "and split):\n\n| held-out workload | threshold chosen on the others | pacer mean / max regret | ours mean / "
        "max regret |\n|---|---|---|---|\n";
    for (const auto& f : depart_folds)
      md += fmt::format("| {} | {:g} sd | {:.2f} / {:.2f} % | {:.2f} / {:.2f} % |\n", f.held_out, f.chosen,
                        100 * f.pacer_mean, 100 * f.pacer_max, 100 * f.ours_mean, 100 * f.ours_max);
    md += fmt::format("| **all folds** | | **{:.2f} / {:.2f} %** | **{:.2f} / {:.2f} %** |\n",
                      100 * depart_held_out_pacer_mean, 100 * depart_held_out_pacer_max,
                      100 * depart_held_out_ours_mean, 100 * depart_held_out_ours_max);
    md += "\nEvery threshold on every draw (* = the code's):\n\n| threshold | pacer mean / max regret |\n|---|---|\n";
    for (const auto& p : depart_grid)
      md += fmt::format("| {:g} sd{} | {:.2f} / {:.2f} % |\n", p.constants.depart_z,
                        p.constants.depart_z == explore::kPacerDepartZ ? " *" : "", 100 * p.mean_regret,
                        100 * p.max_regret);
  }
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
