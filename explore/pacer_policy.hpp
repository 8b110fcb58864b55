#pragma once
// The `pacer` selection policy: Algorithm 1's objective, TT_acc(k, b) = t_batch(k, b) * N(b) / b,
// minimised over the whole feasible front, with N(b) the *expected* samples-to-target under the
// posterior of explore/relation_model.hpp instead of the proxy's raw per-b mean. The proxy's runs
// are treated as noisy, possibly censored observations of a smooth curve in log b, de-quantised by
// the learning curve where a looser metric level is known; the choice carries the 90 % interval
// of the target's time to accuracy at the choice (Selection::predicted_time_lo_s/hi_s).
// Where the relation is too thin to separate pacer's batch size from Algorithm 1's (the expected
// gain is under RelationModelOptions::depart_z sd of the two proxy means' uncertainty, or the seed
// spread is unknown), pacer keeps Algorithm 1's batch size and says why in Selection::message.
// docs/explore.md gives the method, the leave-one-workload-out choice of its constants and its
// regret on the Zeus traces.
#include <string>
#include <vector>

#include "explore/policy.hpp"

namespace pacer::explore {

// The relation the pacer policy ranks with: samples_by_batch = the posterior's expected samples
// where the relation carries a posterior, else its means (then `pacer` chooses as Ours-robust).
Relation pacer_relation(const Relation& proxy);

// Why `proxy` cannot separate pacer's choice from `ours_b` (pacer's best configuration at Algorithm
// 1's batch size), or "" when it can (pacer departs). Both with times under the expected relation.
std::string thin_relation_reason(const Relation& proxy, const Selection& pacer, const Selection& ours_b);

// Policy::Pacer at one cap; `per_batch` as for select().
Selection select_pacer(const PolicyContext& context, double cap_w, std::vector<Selection>* per_batch = nullptr);

}  // namespace pacer::explore
