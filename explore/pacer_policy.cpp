#include "explore/pacer_policy.hpp"

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

}  // namespace

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
  Selection s = select(Policy::OursRobust, ctx, cap_w, per_batch);
  s.policy = Policy::Pacer;
  add_interval(s, *context.proxy);
  if (per_batch)
    for (auto& p : *per_batch) {
      p.policy = Policy::Pacer;
      add_interval(p, *context.proxy);
    }
  return s;
}

}  // namespace pacer::explore
