#include "explore/sweep.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "sim/replay.hpp"
#include "traces/error.hpp"
#include "traces/units.hpp"

namespace pacer::explore {

std::vector<traces::SweepRow> sweep(const SweepWorkload& w, const SweepOptions& options) {
  if (!w.index || !w.proxy) throw Error(fmt::format("sweep of '{}' needs a design space and a proxy relation", w.workload));
  const Space& s = w.index->space();
  PolicyContext ctx;
  ctx.index = w.index;
  ctx.proxy = w.proxy;
  ctx.target = w.target;
  ctx.powertrain_batch = options.powertrain_batch;
  std::optional<DeviceWideCap> own_cap;
  if (w.device_cap) ctx.device_cap = w.device_cap;
  else ctx.device_cap = &own_cap.emplace(std::vector<const Space*>{&s});

  std::vector<traces::SweepRow> rows;
  for (double cap : w.caps_w) {
    const size_t first = rows.size();
    double oracle_time = traces::kNaN;
    for (Policy p : options.policies) {
      const Selection sel = select(p, ctx, cap);
      traces::SweepRow r;
      r.cap_w = cap;
      r.workload = w.workload;
      r.policy = std::string(to_string(p));
      r.feasible = sel.feasible;
      if (sel.feasible) {
        r.knob = sel.knob;
        r.batch_size = sel.batch_size;
        r.predicted_time_s = sel.predicted_time_s;
        r.predicted_energy_j = sel.predicted_energy_j;
        if (w.target_set) {
          const auto rep = sim::replay(
              sim::PointCost{s.time_per_batch_s(sel.batch_index, sel.knob_index), s.power_mean_w(sel.batch_index, sel.knob_index),
                             s.basis() == PowerBasis::Peak ? s.power_w(sel.batch_index, sel.knob_index) : traces::kNaN},
              sel.batch_size, *w.target_set);
          r.replayed_time_mean_s = rep.time_mean_s;
          r.replayed_time_std_s = rep.time_std_s;
          r.replayed_energy_j = rep.energy_mean_j;
        } else if (w.target && w.target->has(sel.batch_index)) {
          r.replayed_time_mean_s = s.time_per_batch_s(sel.batch_index, sel.knob_index) *
                                   w.target->samples_by_batch[sel.batch_index] / sel.batch_size;
          r.replayed_energy_j = s.energy_power_w(sel.batch_index, sel.knob_index) * r.replayed_time_mean_s;
        }
      }
      if (p == Policy::Oracle) oracle_time = r.replayed_time_mean_s;
      rows.push_back(r);
    }
    if (std::isnan(oracle_time) && w.target) {  // the oracle was not among the policies: compute it
      const Selection o = select(Policy::Oracle, ctx, cap);
      if (o.feasible) oracle_time = o.predicted_time_s;
    }
    for (size_t i = first; i < rows.size(); ++i)
      if (rows[i].feasible && !std::isnan(oracle_time) && oracle_time > 0)
        rows[i].regret = rows[i].replayed_time_mean_s / oracle_time - 1;
  }
  return rows;
}

SweepSummary summarize(const std::vector<traces::SweepRow>& rows) {
  SweepSummary out;
  std::map<std::pair<std::string, double>, bool> oracle_ok;
  std::map<std::pair<std::string, double>, std::map<std::string, double>> time_by;
  std::vector<std::string> order;
  for (const auto& r : rows) {
    if (std::find(order.begin(), order.end(), r.policy) == order.end()) order.push_back(r.policy);
    const auto key = std::make_pair(r.workload, r.cap_w);
    if (r.policy == "oracle") oracle_ok[key] = r.feasible;
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
  for (const char* base : {"baseline1", "baseline2"}) {
    SpeedUp su;
    su.over = base;
    double log_sum = 0, mx = -INFINITY;
    for (const auto& [key, times] : time_by) {
      const auto o = times.find("ours"), b = times.find(base);
      if (o == times.end() || b == times.end() || !(o->second > 0)) continue;
      const double x = b->second / o->second;
      log_sum += std::log(x);
      mx = std::max(mx, x);
      ++su.pairs;
    }
    if (su.pairs) {
      su.geomean = std::exp(log_sum / su.pairs);
      su.max = mx;
    }
    out.speedups.push_back(su);
  }
  return out;
}

std::string format_table(const std::vector<traces::SweepRow>& rows, const traces::KnobSpace& knob) {
  std::string out;
  std::string last_key;
  auto knob_text = [&](const std::vector<double>& k) {
    std::string t;
    for (size_t i = 0; i < k.size() && i < knob.dims.size(); ++i) {
      if (i) t += "/";
      const auto& u = knob.dims[i].unit;
      t += u == "Hz"  ? units::format(k[i], units::Dimension::Frequency)
           : u == "W" ? units::format(k[i], units::Dimension::Power)
                      : fmt::format("{:g}", k[i]);
    }
    return t;
  };
  for (const auto& r : rows) {
    const std::string key = fmt::format("{} @ {}", r.workload, units::format(r.cap_w, units::Dimension::Power));
    if (key != last_key) {
      out += fmt::format("\n{}\n  {:<12} {:>14} {:>7} {:>14} {:>14} {:>10}\n", key, "policy", "knob", "b",
                         "predicted", "replayed", "vs oracle");
      last_key = key;
    }
    if (!r.feasible) {
      out += fmt::format("  {:<12} {:>14}\n", r.policy, "infeasible");
      continue;
    }
    out += fmt::format("  {:<12} {:>14} {:>7} {:>14} {:>14} {:>10}\n", r.policy, knob_text(r.knob), r.batch_size,
                       std::isnan(r.predicted_time_s) ? "-" : units::format(r.predicted_time_s, units::Dimension::Time),
                       std::isnan(r.replayed_time_mean_s) ? "-"
                                                          : units::format(r.replayed_time_mean_s, units::Dimension::Time),
                       std::isnan(r.regret) ? "-" : fmt::format("{:.3f}x", 1 + r.regret));
  }
  return out;
}

std::string format_summary(const SweepSummary& s) {
  std::string out = "\nSummary (regret = replayed TT_acc / oracle TT_acc - 1, over caps where the oracle is feasible)\n";
  out += fmt::format("  {:<12} {:>9} {:>12} {:>12} {:>10}\n", "policy", "feasible", "mean regret", "max regret",
                     "optimal");
  for (const auto& p : s.policies)
    out += fmt::format("  {:<12} {:>4}/{:<4} {:>11.2f}% {:>11.2f}% {:>4}/{:<4}\n", p.policy, p.feasible, p.rows,
                       100 * p.mean_regret, 100 * p.max_regret, p.optimal, p.feasible);
  for (const auto& su : s.speedups)
    out += fmt::format("speed-up of ours over {}: geomean {:.3f}x, max {:.3f}x over {} (workload, cap) pairs\n", su.over,
                       su.geomean, su.max, su.pairs);
  return out;
}

}  // namespace pacer::explore
