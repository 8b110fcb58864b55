#pragma once
// One cap, one problem: the chosen configuration, its runner-up and what every other policy would
// pick (what `pacer select` prints), with the text it prints.
#include <string>
#include <vector>

#include "explore/decide.hpp"
#include "explore/policy.hpp"
#include "explore/problem.hpp"

namespace pacer::explore {

struct PolicyChoice {
  Selection selection;
  double target_time_s = traces::kNaN;  // TT_acc of the choice under the target relation (NaN: none)
};

struct ChoiceReport {
  Policy policy = Policy::Ours;
  double cap_w = traces::kNaN;
  ChoiceRule rule;  // the guard and feasibility every policy here chose under
  Selection choice;
  std::vector<Selection> ranked;     // the policy's best configuration per batch size, best first
  std::vector<PolicyChoice> others;  // every policy of the table at the same cap
};

// Every policy chooses by `rule` (explore/decide.hpp). Throws Error (the policy's message) when the
// policy finds nothing feasible.
ChoiceReport choose(const Problem& problem, const PolicyContext& context, Policy policy, double cap_w,
                    const ChoiceRule& rule);
std::string format_choice(const Problem& problem, const ChoiceReport& report);
// The same report as JSON Lines (`pacer select --json`): one object per policy of the table at the
// cap, the policy that made the choice marked "chosen": true; units in the keys as in the CSV export
// (traces/json_rows.hpp): cap_w, gpu_freq_hz, power_w, predicted_time_s, target_time_s, ...; and
// the rule: guard (a fraction) and feasibility (describe_feasibility).
std::string choice_json(const Problem& problem, const ChoiceReport& report);

// "Zeus cost MAXPOWER 300 W (the highest power limit)": which MAXPOWER the Zeus cost uses.
std::string describe_max_power(const Index& index);

}  // namespace pacer::explore
