#pragma once
// How far the pacer policy's choices on one relation agree with those on another (the adaptive
// campaign's against the full one's, `pacer bench train --adaptive`): per cap of the device's range,
// the same (b, knob) or not, and the regret of the other relation's choice under the reference
// relation. And the reference's own resolution: how many of its choices survive leaving one of its
// seeds out, which bounds what any campaign that trains fewer runs at the near-ties can reproduce.
#include <vector>

#include "explore/decide.hpp"
#include "explore/space.hpp"
#include "traces/records.hpp"

namespace pacer::experiments {

struct ChoiceAgreement {
  int caps = 0;             // caps at which the reference has a feasible choice
  int same = 0;             // of those, caps where the other relation's choice is the same (b, knob)
  double max_regret = 0;    // of the other choice, timed with the reference relation
  double mean_regret = 0;   // over the caps (a cap without a feasible other choice counts 0 here and not as same)
  std::vector<int> reference_choices, other_choices;  // per such cap: the batch size chosen (0: none feasible)
  double share() const { return caps > 0 ? static_cast<double>(same) / caps : 0.0; }
  ChoiceAgreement& operator+=(const ChoiceAgreement& o);  // pools caps (regrets weighted by caps), choices appended
};

// The pacer policy's choice at every cap on `other` against that on `reference`.
ChoiceAgreement compare_choices(const explore::Space& space, const explore::ChoiceRule& rule,
                                const std::vector<double>& caps_w, const traces::RelationSet& reference,
                                const traces::RelationSet& other);

// For every seed of the reference, the reference without that seed's runs against the reference,
// pooled over the seeds (caps x seeds). A reference with one seed: no caps.
ChoiceAgreement leave_one_seed_out(const explore::Space& space, const explore::ChoiceRule& rule,
                                   const std::vector<double>& caps_w, const traces::RelationSet& reference);

// For every seed of the reference, that seed's runs alone against the whole reference, pooled over
// the seeds (caps x seeds): how much of the pooled choice one seed per batch size keeps. A campaign
// that buys about one seed's compute and resolves the near-ties no better than one seed can hardly
// keep more, so this is the reference's own stability, a ceiling for such campaigns. A reference
// with one seed: no caps.
ChoiceAgreement each_seed_alone(const explore::Space& space, const explore::ChoiceRule& rule,
                                const std::vector<double>& caps_w, const traces::RelationSet& reference);

}  // namespace pacer::experiments
