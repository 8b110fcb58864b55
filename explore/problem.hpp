#pragma once
// A selection problem read from a trace store: the design space (from a profile, or from a
// calibrated model on the device's grid), its Index, the proxy relation and, when present, the
// target relation. Shared by `pacer select`, `sweep` and `simulate`.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "explore/decide.hpp"
#include "explore/policy.hpp"
#include "explore/space.hpp"
#include "explore/transfer.hpp"
#include "models/device_model.hpp"
#include "models/uncertainty.hpp"
#include "traces/store/store.hpp"

namespace pacer::explore {

struct ProblemSpec {
  std::string profile;              // profile name in the store; "" with a model, or the only profile
  std::string model;                // model record name (instead of a profile)
  std::string device;               // catalog device whose frequency table is the model's grid ("": store's)
  std::vector<int> batch_sizes;     // the model's grid of b ("": the relation's batch sizes)
  std::string relation;             // proxy relation ("": "<workload>.proxy", or the store's one relation
                                    // that is not a target or looser-level relation)
  std::string target;               // target relation ("": "<workload>.target", or the store's one true
                                    // relation, traces::true_relation_name; none when absent)
  // false: no target relation is looked for (`target` must be ""): a command that measures its own
  // (validate) chooses on the proxy alone, whatever true relations the store holds.
  bool read_target = true;
  std::optional<PowerBasis> basis;  // feasibility power (default: peak where the data has it)
  IndexOptions index;
  // A relation of another workload than the profile's (or model's) is refused
  // (traces::check_workload_match) unless this is set, then warned about.
  bool allow_workload_mismatch = false;
};

// Where the feasibility power of a space's points comes from, after measured wins (measured_wins).
struct PointOrigin {
  PointBasis basis = PointBasis::Measured;
  size_t measured = 0, points = 0;  // configurations with a measured power, of all configurations
  // The calibrated model's held-out error of the space's basis power (peak, else mean) at
  // models::kPeakErrorQuantile (a fraction; NaN: no model, or none with held-out errors): the
  // automatic guard where points are predicted.
  double model_power_error = traces::kNaN;
  std::string model;  // the model record it came from ("" : none)
};

// Measured wins: a space built from profile `name` or from model `name` (`from_model`) of
// `workload` on `device` takes the measured power of every point that the store's measured
// profile behind it has (a predicted table "<profile>-predicted" -> "<profile>"; a model -> the
// store's one non-predicted profile of that workload and device), Space::overlay_measured. A
// measured profile is measured throughout. Returns where the points' power comes from.
PointOrigin measured_wins(const traces::Store& store, const std::string& name, bool from_model,
                          const std::string& workload, const std::string& device, Space& space);

struct Problem {
  std::string workload;
  std::string profile_name;                                   // or the model name
  std::unique_ptr<models::DeviceModel> model;                 // the profile as a TableModel, or the calibrated model
  std::optional<models::ModelUncertainty> model_uncertainty;  // a calibrated model's, when it stores one
  std::unique_ptr<Space> space;
  std::unique_ptr<Index> index;
  traces::RelationSet proxy_set;
  std::optional<traces::RelationSet> proxy_looser_set;  // the proxy's runs at a looser metric level
  std::optional<traces::RelationSet> target_set;
  Relation proxy;
  std::optional<Relation> target;
  PointOrigin origin;  // measured or predicted power (measured_wins)
  std::string device;  // the profile's or model's device
  // Baselines 1 and 2's knob cap over every workload profiled on the device (device_wide_cap).
  std::optional<DeviceWideCap> device_cap;

  PolicyContext context() const;  // with device_cap
};

// Baselines 1 and 2's device-wide knob cap for `space`, a workload's design space on `device`: the
// paper's "frequency that keeps any model under P_max", a cap found by profiling several models on
// the device (Sec. 5.1), so a property of the device and of what was profiled on it, not of which
// workloads one command looks at. It spans `space` itself and every measured profile in `store` of
// the same device and knob (predicted tables are not profiled: their measured points are in their
// measured profile), each with `space`'s power basis. The one span of every command: load_problem
// (select, sweep, simulate), validation's choice step and the report's figures call it.
DeviceWideCap device_wide_cap(const traces::Store& store, const std::string& device, const Space& space);

std::unique_ptr<Problem> load_problem(const traces::Store& store, const ProblemSpec& spec);

// The proxy relation as every command that chooses builds it (load_problem, validation's choice
// step, the report's figures): with the proxy's looser-level runs where there are, and the proxy ->
// target transfer terms (explore/transfer.hpp: none when `target` is runs of the proxy's own data
// set; `target` nullptr: another data set, the paper's premise).
Relation proxy_relation(const traces::RelationSet& proxy, const Space& space, const traces::RelationSet* looser,
                        const traces::RelationSet* target);
// The same with the transfer terms given (transfer_sd(proxy, target) above; the adaptive engine's
// AdaptiveProblem::transfer).
Relation proxy_relation(const traces::RelationSet& proxy, const Space& space, const traces::RelationSet* looser,
                        const TransferSd& transfer);
// The same, the looser-level runs read from `store` where it holds them.
Relation proxy_relation(const traces::Store& store, const traces::RelationSet& proxy, const Space& space,
                        const traces::RelationSet* target);
// Every profile of the store (or the one profile / model the spec names), each with its workload's
// proxy and target relations.
std::vector<std::unique_ptr<Problem>> load_problems(const traces::Store& store, const ProblemSpec& spec);

// Samples to the target per batch size of the space that a simulated run must reach: one seed of
// the target relation (of the proxy without a target), or the mean over seeds (nullopt). Throws
// when no batch size has a reached run.
std::map<int, double> samples_to_target(const Problem& problem, std::optional<int> seed);

// Parses a knob setting written with units, one value per dimension separated by '/':
// "921.6MHz", "250W", "8/2.2GHz/1.3GHz/3.2GHz". Bare numbers: MHz, W, or plain counts.
std::vector<double> parse_knob(const std::string& text, const traces::KnobSpace& knob, const std::string& option);
// The space's setting equal to `knob` (relative tolerance 1e-6); throws UsageError listing them.
size_t match_knob(const Space& space, const std::vector<double>& knob, const std::string& option);

}  // namespace pacer::explore
