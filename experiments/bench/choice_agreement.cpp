#include "experiments/bench/choice_agreement.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "base/stats.hpp"
#include "explore/policy.hpp"

namespace pacer::experiments {

ChoiceAgreement& ChoiceAgreement::operator+=(const ChoiceAgreement& o) {
  const int n = caps + o.caps;
  mean_regret = n > 0 ? (mean_regret * caps + o.mean_regret * o.caps) / n : 0.0;
  caps = n;
  same += o.same;
  max_regret = std::max(max_regret, o.max_regret);
  reference_choices.insert(reference_choices.end(), o.reference_choices.begin(), o.reference_choices.end());
  other_choices.insert(other_choices.end(), o.other_choices.begin(), o.other_choices.end());
  return *this;
}

ChoiceAgreement compare_choices(const explore::Space& space, const explore::ChoiceRule& rule,
                                const std::vector<double>& caps_w, const traces::RelationSet& reference,
                                const traces::RelationSet& other) {
  const explore::Index index(space);
  const explore::Relation rf = explore::Relation::from_set(reference, space);
  const explore::Relation ro = explore::Relation::from_set(other, space);
  const auto time_ref = [&](const explore::Selection& s) {
    return base::time_to_accuracy_s(space.time_per_batch_s(s.batch_index, s.knob_index),
                                    rf.expected_samples_by_batch[s.batch_index], s.batch_size);
  };
  ChoiceAgreement a;
  double regret_sum = 0;
  for (const double cap : caps_w) {
    explore::PolicyContext cf{&index, &rf}, co{&index, &ro};
    const explore::Selection sf = explore::decide(explore::Policy::Pacer, cf, cap, rule);
    if (!sf.feasible) continue;
    const explore::Selection so = explore::decide(explore::Policy::Pacer, co, cap, rule);
    ++a.caps;
    a.reference_choices.push_back(sf.batch_size);
    a.other_choices.push_back(so.feasible ? so.batch_size : 0);
    a.same += so.feasible && so.batch_size == sf.batch_size && so.knob == sf.knob;
    if (!so.feasible) continue;
    const double regret = time_ref(so) / time_ref(sf) - 1;
    if (std::isfinite(regret)) {
      a.max_regret = std::max(a.max_regret, regret);
      regret_sum += regret;
    }
  }
  a.mean_regret = a.caps > 0 ? regret_sum / a.caps : 0.0;
  return a;
}

namespace {
// Compares the reference's choices with those of each of its seeds' subsets: `keep(run seed, s)`
// keeps a run for seed s's subset.
template <typename Keep>
ChoiceAgreement over_seeds(const explore::Space& space, const explore::ChoiceRule& rule,
                           const std::vector<double>& caps_w, const traces::RelationSet& reference, Keep keep) {
  std::set<int> seeds;
  for (const auto& r : reference.runs) seeds.insert(r.seed);
  ChoiceAgreement out;
  if (seeds.size() < 2) return out;
  for (const int s : seeds) {
    traces::RelationSet subset = reference;
    std::erase_if(subset.runs, [&](const traces::RelationRun& r) { return !keep(r.seed, s); });
    out += compare_choices(space, rule, caps_w, reference, subset);
  }
  return out;
}
}  // namespace

ChoiceAgreement leave_one_seed_out(const explore::Space& space, const explore::ChoiceRule& rule,
                                   const std::vector<double>& caps_w, const traces::RelationSet& reference) {
  return over_seeds(space, rule, caps_w, reference, [](int seed, int s) { return seed != s; });
}

ChoiceAgreement each_seed_alone(const explore::Space& space, const explore::ChoiceRule& rule,
                                const std::vector<double>& caps_w, const traces::RelationSet& reference) {
  return over_seeds(space, rule, caps_w, reference, [](int seed, int s) { return seed == s; });
}

}  // namespace pacer::experiments
