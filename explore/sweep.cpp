#include "explore/sweep.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>

#include "base/error.hpp"
#include "base/stats.hpp"
#include "base/units.hpp"
#include "sim/replay.hpp"

namespace pacer::explore {

std::vector<traces::SweepRow> sweep(const SweepWorkload& w, const SweepOptions& options) {
  if (!w.index || !w.proxy)
    throw Error(fmt::format("sweep of '{}' needs a design space and a proxy relation", w.workload));
  const Space& s = w.index->space();
  PolicyContext ctx;
  ctx.index = w.index;
  ctx.proxy = w.proxy;
  ctx.target = w.target;
  ctx.powertrain_batch = options.powertrain_batch;
  std::optional<DeviceWideCap> own_cap;
  if (w.device_cap)
    ctx.device_cap = w.device_cap;
  else
    ctx.device_cap = &own_cap.emplace(std::vector<const Space*>{&s});

  std::vector<traces::SweepRow> rows;
  for (double cap : w.caps_w) {
    const size_t first = rows.size();
    double oracle_time = traces::kNaN;
    for (Policy p : options.policies) {
      const Selection sel = decide(p, ctx, cap, options.rule);
      traces::SweepRow r;
      r.cap_w = cap;
      r.workload = w.workload;
      r.policy = std::string(to_string(p));
      r.feasible = sel.feasible;
      r.guard = options.rule.guard;
      if (sel.feasible) {
        r.knob = sel.knob;
        r.batch_size = sel.batch_size;
        r.predicted_time_s = sel.predicted_time_s;
        r.predicted_energy_j = sel.predicted_energy_j;
        if (w.target_set) {
          const auto rep = sim::replay(
              sim::PointCost{s.time_per_batch_s(sel.batch_index, sel.knob_index),
                             s.power_mean_w(sel.batch_index, sel.knob_index),
                             s.basis() == PowerBasis::Peak ? s.power_w(sel.batch_index, sel.knob_index) : traces::kNaN},
              sel.batch_size, *w.target_set);
          r.replayed_time_mean_s = rep.time_mean_s;
          r.replayed_time_std_s = rep.time_std_s;
          r.replayed_energy_j = rep.energy_mean_j;
        } else if (w.target && w.target->has(sel.batch_index)) {
          r.replayed_time_mean_s =
              base::time_to_accuracy_s(s.time_per_batch_s(sel.batch_index, sel.knob_index),
                                       w.target->samples_by_batch[sel.batch_index], sel.batch_size);
          r.replayed_energy_j = s.energy_power_w(sel.batch_index, sel.knob_index) * r.replayed_time_mean_s;
        }
      }
      if (p == Policy::Oracle) oracle_time = r.replayed_time_mean_s;
      rows.push_back(r);
    }
    if (std::isnan(oracle_time) && w.target) {  // the oracle was not among the policies: compute it
      const Selection o = decide(Policy::Oracle, ctx, cap, options.rule);
      if (o.feasible) oracle_time = o.predicted_time_s;
    }
    for (size_t i = first; i < rows.size(); ++i)
      if (rows[i].feasible && !std::isnan(oracle_time) && oracle_time > 0)
        rows[i].regret = rows[i].replayed_time_mean_s / oracle_time - 1;
  }
  return rows;
}

SweepWorkload sweep_workload(const Problem& p, std::vector<double> caps_w) {
  SweepWorkload w;
  w.workload = p.workload;
  w.index = p.index.get();
  w.proxy = &p.proxy;
  w.target = p.target ? &*p.target : nullptr;
  w.target_set = p.target_set ? &*p.target_set : nullptr;
  w.device_cap = p.device_cap ? &*p.device_cap : nullptr;
  w.caps_w = std::move(caps_w);
  return w;
}

traces::SweepResult sweep_record(const std::vector<const Problem*>& problems, const SweepRequest& req) {
  if (problems.empty()) throw Error("a sweep needs at least one design space");
  // One record has one knob (its rows' settings are read with it).
  if (std::any_of(problems.begin(), problems.end(),
                  [&](const auto* p) { return p->space->knob() != problems[0]->space->knob(); }))
    throw UsageError("the profiles have different knobs: one sweep record has one knob; sweep each profile alone");
  // A user's cap below every configuration of every workload is bad input, as in select: nothing runs
  // under it (a cap feasible for one workload and not another gives infeasible rows, a result).
  if (req.refuse_unrunnable_caps) {
    const Problem* lowest = *std::min_element(problems.begin(), problems.end(), [](const auto* a, const auto* b) {
      return a->space->min_power_w() < b->space->min_power_w();
    });
    const double lo = lowest->space->min_power_w();
    for (double cap : req.caps_w)
      if (cap < lo)
        throw SettingError("power-limits",
                           fmt::format("{} is below the lowest {} power of every configuration swept ({}, {}): "
                                       "nothing runs under it; raise the cap or leave it out",
                                       units::format(cap, units::Dimension::Power), to_string(lowest->space->basis()),
                                       units::format(lo, units::Dimension::Power), lowest->workload));
  }
  traces::SweepResult result;
  result.name = req.name;
  result.knob = problems[0]->space->knob();
  if (!req.proxies.empty() && req.proxies.size() != problems.size())
    throw Error("a sweep with its own proxy relations needs one per design space");
  std::vector<std::string> workloads;
  std::vector<ChoiceRule> rules;
  for (size_t i = 0; i < problems.size(); ++i) {
    const Problem* p = problems[i];
    // This workload's own rule: the one `pacer select --profile` of it uses.
    SweepOptions options = req.options;
    options.rule = choice_rule(*p, req.guard);
    workloads.push_back(p->workload);
    rules.push_back(options.rule);
    result.guard = i ? std::max(result.guard, options.rule.guard) : options.rule.guard;
    // Without explicit caps: the replay protocol's, evenly spaced over this workload's own power range.
    auto caps = req.caps_w.empty() ? cap_grid_w(p->space->min_power_w(), p->space->max_power_w(), req.caps_per_workload)
                                   : req.caps_w;
    SweepWorkload w = sweep_workload(*p, std::move(caps));
    if (!req.proxies.empty()) w.proxy = req.proxies[i];
    const auto rows = sweep(w, options);
    result.rows.insert(result.rows.end(), rows.begin(), rows.end());
    result.profile += (result.profile.empty() ? "" : ",") + p->profile_name;
    result.relation += (result.relation.empty() ? "" : ",") + p->proxy_set.name;
    if (p->target_set) result.target += (result.target.empty() ? "" : ",") + p->target_set->name;
  }
  result.feasibility = describe_feasibility(workloads, rules);
  return result;
}

ChoiceRule recorded_rule(const traces::SweepResult& sweep, std::string_view workload) {
  std::optional<double> own, common;
  bool one = true;  // every row kept the same guard
  for (const auto& r : sweep.rows) {
    if (std::isnan(r.guard)) continue;
    if (r.workload == workload && !own) own = r.guard;
    if (common && *common != r.guard) one = false;
    if (!common) common = r.guard;
  }
  // A workload the rows do not name (a sweep of one profile under another name): the rows' one guard.
  const double guard = own ? *own : common && one ? *common : sweep.guard;
  return recorded_rule(guard, sweep.feasibility);
}

SweepSummary summarize(const std::vector<traces::SweepRow>& rows) {
  SweepSummary out;
  std::map<std::pair<std::string, double>, bool> oracle_ok;
  std::map<std::pair<std::string, double>, std::map<std::string, double>> time_by;
  std::vector<std::string> order;
  for (const auto& r : rows) {
    if (std::find(order.begin(), order.end(), r.policy) == order.end()) order.push_back(r.policy);
    const auto key = std::make_pair(r.workload, r.cap_w);
    if (is_policy(r.policy, Policy::Oracle)) oracle_ok[key] = r.feasible;
    if (r.feasible && !std::isnan(r.replayed_time_mean_s)) time_by[key][r.policy] = r.replayed_time_mean_s;
  }
  for (const auto& name : order) {
    PolicySummary ps;
    ps.policy = name;
    double sum = 0, mx = -INFINITY;
    int n = 0;
    for (const auto& r : rows) {
      if (r.policy != name) continue;
      const auto it = oracle_ok.find({r.workload, r.cap_w});
      if (it != oracle_ok.end() && !it->second) continue;
      ++ps.rows;
      if (!r.feasible) continue;
      ++ps.feasible;
      if (std::isnan(r.regret)) continue;
      sum += r.regret;
      mx = std::max(mx, r.regret);
      ps.optimal += r.regret <= 1e-9;
      ++n;
    }
    if (n) {
      ps.mean_regret = sum / n;
      ps.max_regret = mx;
    }
    out.policies.push_back(ps);
  }
  const std::string ours(to_string(Policy::Ours));
  for (const Policy baseline : {Policy::Baseline1, Policy::Baseline2}) {
    const std::string base(to_string(baseline));
    if (std::find(order.begin(), order.end(), ours) == order.end() ||
        std::find(order.begin(), order.end(), base) == order.end())
      continue;  // not swept: no speed-up to report
    SpeedUp su;
    su.over = base;
    std::vector<double> ratios;
    for (const auto& [key, times] : time_by) {
      const auto o = times.find(ours), b = times.find(base);
      if (o == times.end() || b == times.end() || !(o->second > 0)) continue;
      ratios.push_back(b->second / o->second);
    }
    su.pairs = static_cast<int>(ratios.size());
    if (su.pairs) {
      su.geomean = base::geometric_mean(ratios);
      su.max = *std::max_element(ratios.begin(), ratios.end());
    }
    out.speedups.push_back(su);
  }
  return out;
}

std::string format_table(const std::vector<traces::SweepRow>& rows, const traces::KnobSpace& knob) {
  std::string out;
  std::string last_key;
  for (const auto& r : rows) {
    const std::string key = fmt::format("{} @ {}", r.workload, units::format_cap(r.cap_w));
    if (key != last_key) {
      out += fmt::format("\n{}\n  {:<12} {:>14} {:>7} {:>14} {:>14} {:>10}\n", key, "policy", "knob", "b", "predicted",
                         "replayed", "vs oracle");
      last_key = key;
    }
    if (!r.feasible) {
      out += fmt::format("  {:<12} {:>14}\n", r.policy, "infeasible");
      continue;
    }
    out += fmt::format(
        "  {:<12} {:>14} {:>7} {:>14} {:>14} {:>10}\n", r.policy, knob.format(r.knob), r.batch_size,
        std::isnan(r.predicted_time_s) ? "-" : units::format(r.predicted_time_s, units::Dimension::Time),
        std::isnan(r.replayed_time_mean_s) ? "-" : units::format(r.replayed_time_mean_s, units::Dimension::Time),
        std::isnan(r.regret) ? "-" : fmt::format("{:.3f}x", 1 + r.regret));
  }
  return out;
}

std::string format_summary(const SweepSummary& s) {
  // Without a target relation no row has a regret: one line says so, not a row of "0/0 nan%" per policy.
  if (std::none_of(s.policies.begin(), s.policies.end(),
                   [](const PolicySummary& p) { return std::isfinite(p.mean_regret); }))
    return "\nNo regret summary: no workload swept has a target relation and an oracle to compare with (add one, "
           "e.g. with pacer relation or an import)\n";
  std::string out =
      "\nSummary (regret = replayed TT_acc / oracle TT_acc - 1, over caps where the oracle is feasible)\n";
  out += fmt::format("  {:<12} {:>9} {:>12} {:>12} {:>10}\n", "policy", "feasible", "mean regret", "max regret",
                     "optimal");
  for (const auto& p : s.policies)
    out += fmt::format("  {:<12} {:>4}/{:<4} {:>12} {:>12} {:>4}/{:<4}\n", p.policy, p.feasible, p.rows,
                       std::isfinite(p.mean_regret) ? fmt::format("{:.2f}%", 100 * p.mean_regret) : "-",
                       std::isfinite(p.max_regret) ? fmt::format("{:.2f}%", 100 * p.max_regret) : "-", p.optimal,
                       p.feasible);
  for (const auto& su : s.speedups)
    if (su.pairs == 0)
      out += fmt::format("speed-up of ours over {}: no (workload, cap) pair where both are feasible\n", su.over);
    else
      out += fmt::format("speed-up of ours over {}: geomean {:.3f}x, max {:.3f}x over {} (workload, cap) pairs\n",
                         su.over, su.geomean, su.max, su.pairs);
  return out;
}

}  // namespace pacer::explore

namespace pacer::explore {
namespace {

// Mean samples of the reached runs of b in a resample (indices into `runs`); NaN when none reached.
double resampled_mean(const std::vector<const traces::RelationRun*>& runs, std::mt19937_64& rng) {
  if (runs.empty()) return traces::kNaN;
  std::uniform_int_distribution<size_t> pick(0, runs.size() - 1);
  double sum = 0;
  int n = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto* r = runs[pick(rng)];
    if (!r->reached) continue;
    sum += static_cast<double>(r->samples);
    ++n;
  }
  return n ? sum / n : traces::kNaN;
}

// Every row of `rows` re-scored against one resample of its workload's target runs.
std::vector<traces::SweepRow> rescore(const std::vector<SweepWorkload>& workloads,
                                      const std::vector<traces::SweepRow>& rows, const ChoiceRule& rule,
                                      std::mt19937_64& rng) {
  std::vector<traces::SweepRow> out;
  for (const auto& w : workloads) {
    if (!w.target_set || !w.index) continue;
    const Space& s = w.index->space();
    Relation target;
    for (int b : s.batch_sizes()) {
      std::vector<const traces::RelationRun*> runs;
      for (const auto& r : w.target_set->runs)
        if (r.batch_size == b) runs.push_back(&r);
      target.samples_by_batch.push_back(resampled_mean(runs, rng));
    }
    PolicyContext ctx{w.index, w.proxy ? w.proxy : &target};
    ctx.target = &target;
    std::map<double, double> oracle_by_cap;
    for (const auto& row : rows) {
      if (row.workload != w.workload) continue;
      auto it = oracle_by_cap.find(row.cap_w);
      if (it == oracle_by_cap.end()) {
        ChoiceRule own = rule;
        if (!std::isnan(row.guard)) own.guard = row.guard;  // the guard this workload chose under
        const Selection o = decide(Policy::Oracle, ctx, row.cap_w, own);
        it = oracle_by_cap.emplace(row.cap_w, o.feasible ? o.predicted_time_s : traces::kNaN).first;
      }
      traces::SweepRow r = row;
      r.regret = traces::kNaN;
      r.replayed_time_mean_s = traces::kNaN;
      const auto bi = s.batch_index(row.batch_size);
      const auto ki = row.feasible ? s.knob_index(row.knob) : std::nullopt;
      if (bi && ki && target.has(*bi)) {
        r.replayed_time_mean_s = s.time_per_batch_s(*bi, *ki) * target.samples_by_batch[*bi] / row.batch_size;
        if (it->second > 0) r.regret = r.replayed_time_mean_s / it->second - 1;
      }
      if (is_policy(row.policy, Policy::Oracle)) {  // the oracle of the resample, re-chosen
        r.feasible = !std::isnan(it->second);
        r.replayed_time_mean_s = it->second;
        r.regret = r.feasible ? 0.0 : traces::kNaN;
      }
      out.push_back(r);
    }
  }
  return out;
}

}  // namespace

std::vector<RegretInterval> bootstrap_regret(const std::vector<SweepWorkload>& workloads,
                                             const std::vector<traces::SweepRow>& rows, int resamples, uint64_t seed,
                                             const ChoiceRule& rule) {
  if (resamples < 1) return {};
  std::mt19937_64 rng(seed);
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> draws;  // policy -> (means, maxes)
  std::vector<std::string> order;
  for (int i = 0; i < resamples; ++i)
    for (const auto& p : summarize(rescore(workloads, rows, rule, rng)).policies) {
      if (!draws.count(p.policy)) order.push_back(p.policy);
      draws[p.policy].first.push_back(p.mean_regret);
      draws[p.policy].second.push_back(p.max_regret);
    }
  std::vector<RegretInterval> out;
  for (const auto& name : order) {
    const auto& [means, maxes] = draws.at(name);
    out.push_back({name, base::quantile(means, 0.05), base::quantile(means, 0.95), base::quantile(maxes, 0.05),
                   base::quantile(maxes, 0.95)});
  }
  return out;
}

std::vector<RegretInterval> bootstrap_regret(const std::vector<const Problem*>& problems,
                                             const std::vector<traces::SweepRow>& rows, int resamples, uint64_t seed,
                                             const ChoiceRule& rule) {
  std::vector<SweepWorkload> workloads;
  for (const auto* p : problems) workloads.push_back(sweep_workload(*p, {}));
  return bootstrap_regret(workloads, rows, resamples, seed, rule);
}

std::string summary_csv(const SweepSummary& s, const std::vector<RegretInterval>& intervals) {
  std::string out =
      "policy,rows,feasible,mean_regret[1],max_regret[1],optimal,mean_regret_lo[1],mean_regret_hi[1],"
      "max_regret_lo[1],max_regret_hi[1]\n";
  auto num = [](double x) { return std::isnan(x) ? std::string() : fmt::format("{:.6g}", x); };
  for (const auto& p : s.policies) {
    const RegretInterval* iv = nullptr;
    for (const auto& i : intervals)
      if (i.policy == p.policy) iv = &i;
    out += fmt::format("{},{},{},{},{},{},{},{},{},{}\n", p.policy, p.rows, p.feasible, num(p.mean_regret),
                       num(p.max_regret), p.optimal, num(iv ? iv->mean_lo : traces::kNaN),
                       num(iv ? iv->mean_hi : traces::kNaN), num(iv ? iv->max_lo : traces::kNaN),
                       num(iv ? iv->max_hi : traces::kNaN));
  }
  return out;
}

std::string format_intervals(const std::vector<RegretInterval>& intervals, int resamples) {
  if (intervals.empty()) return "";
  std::string out = fmt::format("90% intervals over {} resamples of the target runs:\n", resamples);
  out += fmt::format("  {:<12} {:>20} {:>20}\n", "policy", "mean regret", "max regret");
  for (const auto& i : intervals)
    out += fmt::format("  {:<12} {:>20} {:>20}\n", i.policy,
                       fmt::format("{:.2f}% - {:.2f}%", 100 * i.mean_lo, 100 * i.mean_hi),
                       fmt::format("{:.2f}% - {:.2f}%", 100 * i.max_lo, 100 * i.max_hi));
  return out;
}

}  // namespace pacer::explore
