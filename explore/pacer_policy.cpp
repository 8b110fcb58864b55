#include "explore/pacer_policy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/error.hpp"

namespace pacer::explore {
namespace {

void add_interval(Selection& s, const Relation& proxy) {
  if (!s.feasible || s.batch_index >= proxy.samples_lo_by_batch.size()) return;
  const double expected = proxy.expected_samples_by_batch[s.batch_index];
  if (!(expected > 0)) return;
  s.predicted_time_lo_s = s.predicted_time_s * proxy.samples_lo_by_batch[s.batch_index] / expected;
  s.predicted_time_hi_s = s.predicted_time_s * proxy.samples_hi_by_batch[s.batch_index] / expected;
}

double at(const std::vector<double>& v, size_t i) {
  return i < v.size() ? v[i] : NAN;
}

// The samples the selection's predicted time used: the expected samples, else the mean.
double proxy_expected(const Relation& proxy, size_t bi) {
  const double e = at(proxy.expected_samples_by_batch, bi);
  return std::isnan(e) ? proxy.samples_by_batch[bi] : e;
}

}  // namespace

std::string thin_relation_reason(const Relation& proxy, const Selection& pacer, const Selection& ours_b) {
  const double v =
      at(proxy.proxy_log_var_by_batch, pacer.batch_index) + at(proxy.proxy_log_var_by_batch, ours_b.batch_index);
  if (std::isnan(v))
    return fmt::format(
        "relation '{}' cannot separate b={} from Algorithm 1's b={}: no batch size has two runs, so its seed spread "
        "is unknown; kept Algorithm 1's batch size (measure more seeds)",
        proxy.name, pacer.batch_size, ours_b.batch_size);
  // The gain under the proxy's means with nothing left out: t_batch * exp(m) / b at either choice.
  auto log_time = [&](const Selection& s) {
    return std::log(s.predicted_time_s / proxy_expected(proxy, s.batch_index)) +
           at(proxy.proxy_log_mean_by_batch, s.batch_index);
  };
  const double gain = log_time(ours_b) - log_time(pacer);
  // Where the target is another data set, the proxy's per-b shape transfers with an error of
  // transfer_shape_sd at each b: a gain inside depart_transfer_z sd of the difference of two such
  // errors does not separate the two batch sizes on the target, whatever the proxy's seeds say.
  const double margin = proxy.depart_transfer_z * std::sqrt(2.0) * proxy.transfer_shape_sd;
  const bool clears_transfer = !(margin > 0) || gain > margin;
  if (v <= 0 && !(gain > 0)) return "-";  // identical seeds: the proxy's relation is exact
  const double z = v > 0 ? gain / std::sqrt(v) : INFINITY;
  if (z >= proxy.depart_z && clears_transfer) return "";
  if (z >= proxy.depart_z)
    return fmt::format(
        "relation '{}' too thin to separate b={} from Algorithm 1's b={} on another data set: by the proxy's means "
        "b={} is {:.1f}% faster, inside the proxy->target transfer's margin of {:.1f}% ({:g} sd of the per-b "
        "transfer error, {:.1f}% each); kept Algorithm 1's batch size",
        proxy.name, pacer.batch_size, ours_b.batch_size, pacer.batch_size, 100 * (1 - std::exp(-gain)),
        100 * (1 - std::exp(-margin)), proxy.depart_transfer_z, 100 * proxy.transfer_shape_sd);
  // The gain of b over Algorithm 1's b in sd of the two means' uncertainty; departs at depart_z or more.
  return fmt::format(
      "relation '{}' too thin to separate b={} from Algorithm 1's b={}: by the runs' own means b={} is {:.1f}% "
      "{}, {:.2f} sd of the two means' uncertainty (pacer departs at {:g} sd or more); kept Algorithm 1's batch size "
      "(more seeds would decide)",
      proxy.name, pacer.batch_size, ours_b.batch_size, pacer.batch_size, 100 * std::abs(std::exp(-gain) - 1),
      gain > 0 ? "faster" : "slower", std::abs(z), proxy.depart_z);
}

Relation pacer_relation(const Relation& proxy) {
  Relation r;
  r.name = proxy.name;
  r.measured_batch_sizes = proxy.measured_batch_sizes;
  r.samples_by_batch = proxy.samples_by_batch;
  for (size_t i = 0; i < r.samples_by_batch.size() && i < proxy.expected_samples_by_batch.size(); ++i)
    if (!std::isnan(proxy.expected_samples_by_batch[i])) r.samples_by_batch[i] = proxy.expected_samples_by_batch[i];
  return r;
}

Selection select_pacer(const PolicyContext& context, double cap_w, std::vector<Selection>* per_batch) {
  if (!context.index || !context.proxy) throw Error("policy selection needs a design space and a proxy relation");
  const Relation expected = pacer_relation(*context.proxy);
  PolicyContext ctx = context;
  ctx.proxy = &expected;
  // Ours-robust's search (fastest feasible knob per b, argmin over b) on the expected relation.
  std::vector<Selection> ranked;
  Selection s = select(Policy::OursRobust, ctx, cap_w, &ranked);
  // Thin relation: where the posterior cannot separate pacer's b from Algorithm 1's, keep Algorithm
  // 1's b (with the fastest feasible knob there, as everywhere in this policy).
  if (s.feasible && !context.proxy->expected_samples_by_batch.empty()) {
    const Selection ours = select(Policy::Ours, context, cap_w);
    const auto it = std::find_if(ranked.begin(), ranked.end(),
                                 [&](const Selection& r) { return r.batch_index == ours.batch_index; });
    if (ours.feasible && ours.batch_index != s.batch_index && it != ranked.end()) {
      std::string why = thin_relation_reason(*context.proxy, s, *it);
      if (!why.empty()) {
        std::rotate(ranked.begin(), it, it + 1);
        s = ranked.front();
        s.method = "front, Algorithm 1's b (thin relation)";
        s.message = why == "-" ? "" : why;
        ranked.front() = s;
      }
    }
  }
  s.policy = Policy::Pacer;
  add_interval(s, *context.proxy);
  if (per_batch) {
    *per_batch = std::move(ranked);
    for (auto& p : *per_batch) {
      p.policy = Policy::Pacer;
      add_interval(p, *context.proxy);
    }
  }
  return s;
}

}  // namespace pacer::explore
