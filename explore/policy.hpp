#pragma once
// Selection policies: each maps (space, relation, P_max) to a configuration with its predicted
// time and energy to accuracy, TT_acc(k, b) = t_batch(k, b) * N_acc(b) / b (the paper's Eq. 3 with
// absolute sample counts, so the prediction is in seconds, not only a ranking).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "explore/relation_model.hpp"
#include "explore/space.hpp"
#include "traces/records.hpp"

namespace pacer::explore {

// Samples to the target per batch size (the mean over the seeds that reached it).
struct Relation {
  std::string name;
  std::vector<double> samples_by_batch;  // aligned with a Space's batch sizes; NaN: unknown
  // The pacer policy's posterior of samples-to-target (explore/relation_model.hpp), aligned the same
  // way. Empty for a relation built from means alone:
  // expected value; 90 % interval of the target's mean samples-to-target (BatchPosterior::lower/
  // upper_samples); the proxy's mean log samples (BatchPosterior::proxy_log_mean/var).
  std::vector<double> expected_samples_by_batch{}, samples_lo_by_batch{}, samples_hi_by_batch{};
  std::vector<double> proxy_log_mean_by_batch{}, proxy_log_var_by_batch{};
  double depart_z = kPacerDepartZ;  // RelationModelOptions::depart_z
  double transfer_shape_sd = 0;     // RelationModelOptions::transfer_shape_sd
  double depart_transfer_z = kPacerDepartTransferZ;  // RelationModelOptions::depart_transfer_z
  double transfer_log_sd = 0;       // RelationModelOptions::transfer_log_sd (in the interval)
  // The batch sizes the relation has samples-to-target at (its own, inside the space or not), for
  // messages when the space's batch sizes miss them.
  std::vector<int> measured_batch_sizes{};
  // `looser`: the same runs at a looser metric level (a learning-curve point), when known;
  // `model_options`: the constants of the pacer policy's posterior (explore/relation_model.hpp).
  static Relation from_set(const traces::RelationSet& set, const Space& space,
                           const traces::RelationSet* looser = nullptr, const RelationModelOptions& model_options = {});
  bool has(size_t bi) const { return bi < samples_by_batch.size() && !std::isnan(samples_by_batch[bi]); }
};

enum class Policy { Ours, OursRobust, Baseline1, Baseline2, Oracle, EnergyOptimal, ZeusCost, PowerTrain, Pacer };
// The policy `pacer select`, `sweep`, `simulate`, `validate`, `demo` and `experiment` use unless told otherwise.
inline constexpr Policy kDefaultPolicy = Policy::Pacer;

struct Selection;
struct PolicyContext;
using SelectFn = Selection (*)(Policy, const PolicyContext&, double cap_w, std::vector<Selection>* per_batch);

// The one table of policies: its id (CLI, records), its label in tables and figures, its line in
// --help and its select function. A new policy is one enum value, one row and its select function.
struct PolicyInfo {
  Policy policy;
  std::string_view id;           // "ours", "baseline1", ... as stored in sweep and validation records
  std::string_view label;        // "Ours", "Baseline 1", ... in tables and figure keys
  std::string_view description;  // one line for help texts
  int paper_row;                 // row order of the paper's tables (Baseline 1, 2, Ours, oracle); -1: not a paper row
  SelectFn select;
};
const std::vector<PolicyInfo>& policy_table();
const PolicyInfo& info(Policy p);
std::vector<Policy> all_policies();    // in table order
std::string_view to_string(Policy p);  // "ours", "ours-robust", "baseline1", ...
std::optional<Policy> policy_from_string(std::string_view name);
// The policy named `name`, else OptionError(`option`, "unknown policy 'NAME' (one of ...)"): the one
// refusal of a policy name, in every command that takes one (`option`: the option's key, no dashes).
Policy parse_policy(std::string_view name, const std::string& option);
// Whether stored policy id `id` (a sweep or validation row's) is policy `p`: the typed comparison.
bool is_policy(std::string_view id, Policy p);
// The ids of `policies`, in their order ({Policy::Ours, Policy::Oracle} -> {"ours", "oracle"}).
std::vector<std::string> policy_ids(const std::vector<Policy>& policies);
std::string policy_names();  // "ours, ours-robust, ..." for help texts
std::string policy_help();   // one "  id: description" line per policy
// Label of a stored policy id ("baseline1" -> "Baseline 1"); an unknown id is returned as is.
std::string policy_label(std::string_view id);
// Sort key that puts the paper's rows first, in the paper's order; 100 for the other policies.
int policy_rank(std::string_view id);

struct Selection {
  Policy policy = Policy::Ours;
  bool feasible = false;
  std::string message;  // why nothing is feasible (empty when feasible)
  size_t knob_index = 0;
  size_t batch_index = 0;
  std::vector<double> knob;
  int batch_size = 0;
  double power_w = traces::kNaN;           // basis power of the choice
  double predicted_time_s = traces::kNaN;  // with the relation the policy used
  double predicted_energy_j = traces::kNaN;
  double predicted_time_lo_s = traces::kNaN;  // 90 % interval of the time (policies that model noise)
  double predicted_time_hi_s = traces::kNaN;
  std::string method;  // "binary search", "scan", "front", "device-wide cap"
};

struct PolicyContext {
  const Index* index = nullptr;
  const Relation* proxy = nullptr;            // what the device knows: every policy but the oracle
  const Relation* target = nullptr;           // the oracle's relation (nullptr: oracle unavailable)
  const DeviceWideCap* device_cap = nullptr;  // Baselines 1 and 2 (nullptr: this space alone)
  int powertrain_batch = 0;                   // PowerTrain's fixed b; 0: the largest b
};

// One policy at one cap. `per_batch`, when given, receives the best configuration of every batch
// size under the policy's objective (ranked best first; the runner-up is the second entry).
Selection select(Policy policy, const PolicyContext& context, double cap_w,
                 std::vector<Selection>* per_batch = nullptr);

// Brute force over every configuration for the time objective (what Ours-robust and the Oracle
// compute with their front): the reference the tests and benchmarks compare against.
Selection scan_fastest(const Index& index, const Relation& relation, double cap_w);
// Algorithm 1 with a linear search per b instead of the binary search (same answer when the
// power rises with the knob).
Selection scan_algorithm1(const Index& index, const Relation& relation, double cap_w);

}  // namespace pacer::explore
