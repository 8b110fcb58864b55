#pragma once
// A time-domain run to accuracy of one problem (sim::run): a fixed configuration, or a policy that
// re-selects at every cap change; what `pacer simulate` prints.
#include <optional>
#include <string>
#include <vector>

#include "explore/policy.hpp"
#include "explore/problem.hpp"
#include "sim/timeline.hpp"

namespace pacer::explore {

struct SimulateRequest {
  std::optional<int> seed;                  // the relation seed to reach; nullopt: the mean over seeds
  std::optional<std::vector<double>> knob;  // a fixed configuration (with batch_size), else the policy
  int batch_size = 0;
  Policy policy = Policy::Ours;
  int powertrain_batch = 0;
  std::optional<double> guard;     // the policy's guard (explore/decide.hpp); nullopt: the automatic one
  std::vector<sim::CapStep> caps;  // empty: no cap (a policy needs one)
  sim::RunOptions run;
};

struct Simulation {
  sim::RunResult result;
  std::string what;      // "fixed configuration 921.6 MHz, b=32", "policy ours re-selecting ..."
  std::string relation;  // the relation whose samples to target the run reached
  bool capped = false;
  std::optional<ChoiceRule> rule;  // the rule a policy chose by (none for a fixed configuration)
};

// Throws UsageError for a configuration outside the space or a policy without a cap.
Simulation simulate(const Problem& problem, const SimulateRequest& request);
std::string format_simulation(const Problem& problem, const SimulateRequest& request, const Simulation& simulation);

}  // namespace pacer::explore
