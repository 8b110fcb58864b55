#pragma once
// Probe before commit (`pacer validate`, `demo`, `experiment`; docs/explore.md, "Validation: probe
// before commit"). The policies choose from the validation's profile, which may be a calibrated
// model's prediction (<workload>-predicted). Before a validation trains a chosen configuration, that
// configuration's measurement replaces the prediction: the point of the store's measured profile
// (<workload>) when it was measured (measured points replace their predictions from the start), else
// a short profile of that one point on the validation's device (hw::run_profile: a fixed count of
// mini-batches and power samples), added to the measured profile so that it is never lost and later
// selections see it. The policies then choose again; a choice whose measured peak, projected to a
// run (explore::feasibility_power_w), is above cap x (1 - guard) -- the test every measured point
// passes -- moves to the policy's next choice,
// which is probed in turn, until every choice stands on a measured point. Internal to experiments/.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "experiments/campaigns/validate_runs.hpp"
#include "explore/decide.hpp"
#include "explore/policy.hpp"
#include "explore/space.hpp"
#include "traces/records.hpp"

namespace pacer::experiments {

struct ValidateOptions;

namespace validate_detail {

// One policy's choice at one cap; `replaced`: the choices it replaced and why ("" : none).
struct Choice {
  double cap_w = 0;
  std::string policy;
  explore::Selection selection;
  std::string replaced;
};

// What the choice needs beside the options: the problem's profile (name, table, basis), relations and
// the training settings of the probes.
struct ChoiceInputs {
  std::string profile_name;            // the validation's profile in opt.store
  std::string workload;                // the training workload (the probes' steps on a real board)
  explore::PowerBasis basis = explore::PowerBasis::Peak;
  explore::ChoiceRule rule;            // the one choice rule (explore/decide.hpp): guard and basis
  const traces::RelationSet* proxy = nullptr;
  const traces::RelationSet* proxy_looser = nullptr;
  const traces::RelationSet* target = nullptr;
  int powertrain_batch = 0;
  int threads = 0;                     // CPU threads of a probe's real training steps
  std::string train_device = "cpu";
};

// Every policy's choice at every cap, under cap x (1 - guard), each standing on a measured point
// (with opt.probe_batches > 0): probes are written to `out`'s measured profile. `probes` counts the
// points measured now. A choice that differs from the prediction's says which one it replaced and
// why (Choice::replaced).
std::vector<Choice> choose_measured(const ValidateOptions& opt, const ChoiceInputs& in, const std::filesystem::path& out,
                                    int& probes);

// The measured profile behind a validation's profile: <workload> for <workload>-predicted, else the
// profile itself (every point of it measured).
std::string measured_profile_name(const std::string& profile_name);

}  // namespace validate_detail
}  // namespace pacer::experiments
