#pragma once
// Sweeps over caps for every policy, scored by replay against the target relation (sim), and
// the summary lines: regret of each policy versus the oracle, speed-up of Ours over the baselines.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/stats.hpp"
#include "explore/decide.hpp"
#include "explore/policy.hpp"
#include "explore/problem.hpp"
#include "traces/records.hpp"

namespace pacer::explore {

struct SweepWorkload {
  std::string workload;
  const Index* index = nullptr;
  const Relation* proxy = nullptr;
  const Relation* target = nullptr;                 // nullptr: no oracle, no regret
  const traces::RelationSet* target_set = nullptr;  // seeds for the replay (nullptr: predicted only)
  const DeviceWideCap* device_cap = nullptr;        // Baselines 1, 2 (nullptr: this workload's space alone)
  std::vector<double> caps_w;
};

struct SweepOptions {
  std::vector<Policy> policies = all_policies();
  int powertrain_batch = 0;
  // The choice rule (explore/decide.hpp): every policy chooses under cap x (1 - guard), as every
  // other command does; the rows keep the cap itself and the guard. The record stores the rule's
  // feasibility so that the report draws the same choices. sweep_record sets it from its request,
  // each workload's own.
  ChoiceRule rule{};
};

// The one cap grid: `count` caps evenly spaced from `lo_w` to `hi_w` (the last exactly `hi_w`; one
// cap: `hi_w`), each rounded to a multiple of `step_w` when `step_w` > 0.
using base::cap_grid_w;  // the one cap grid (base/stats.hpp)

// What one problem contributes to a sweep, with its device-wide cap (explore::device_wide_cap).
SweepWorkload sweep_workload(const Problem& problem, std::vector<double> caps_w);

// One row per (cap, policy). Replayed time: mean and std over the target's seeds at the chosen
// configuration; regret = replayed / oracle replayed - 1.
std::vector<traces::SweepRow> sweep(const SweepWorkload& workload, const SweepOptions& options);

struct PolicySummary {
  std::string policy;
  int rows = 0;      // (workload, cap) pairs where the oracle is feasible
  int feasible = 0;  // of those, where this policy found a configuration
  double mean_regret = traces::kNaN;
  double max_regret = traces::kNaN;
  int optimal = 0;  // rows with regret <= 1e-9 (the oracle's time)
};

struct SpeedUp {
  std::string over;  // "baseline1"
  int pairs = 0;     // (workload, cap) where both are feasible
  double geomean = traces::kNaN;
  double max = traces::kNaN;
};

struct SweepSummary {
  std::vector<PolicySummary> policies;
  std::vector<SpeedUp> speedups;  // Ours over Baseline 1 and 2 (replayed times), those that were swept
};

// A sweep record over several problems (one per workload), shared by `pacer select --save`,
// `pacer sweep` and the demo.
struct SweepRequest {
  std::string name = "sweep";
  std::vector<double> caps_w;  // empty: caps_per_workload caps over each workload's own power range
  // A cap of caps_w below the lowest power of every problem is refused (SettingError("power-limits"):
  // a user's list, where nothing can run under it); false: it gives infeasible rows (a pipeline's own
  // grid, drawn from below the feasible range).
  bool refuse_unrunnable_caps = false;
  int caps_per_workload = 10;
  SweepOptions options;         // its rule is set from `guard` and the problems (choice_rule)
  std::optional<double> guard;  // the user's guard; nullopt: the automatic one (explore/decide.hpp)
  // One proxy relation per problem in place of its own (a cut of its runs: explore/proxy_budget.hpp);
  // empty: each problem's proxy.
  std::vector<const Relation*> proxies;
};
// Each workload chooses under its own rule, choice_rule(problem, request.guard), the one `pacer select
// --profile` of it uses; each row keeps its guard (SweepRow::guard), the record the largest.
// With refuse_unrunnable_caps, SettingError("power-limits") for a cap below every problem's lowest power.
traces::SweepResult sweep_record(const std::vector<const Problem*>& problems, const SweepRequest& request);
// The rule `workload`'s rows of `sweep` were chosen under (its rows' guard; a record written before
// rows kept it: the record's one guard), with the record's feasibility basis.
ChoiceRule recorded_rule(const traces::SweepResult& sweep, std::string_view workload);

SweepSummary summarize(const std::vector<traces::SweepRow>& rows);

// 90 % intervals of each policy's mean and max regret over resampled target runs: the target's runs
// of every (workload, b) are drawn with replacement, the oracle re-chosen and every row's choice
// re-scored; the choices themselves stay (they depend on the proxy only). `workloads` are the ones
// the rows were swept from (matched by name); workloads without target runs are left out. The oracle
// is re-chosen under each row's guard (SweepRow::guard); `rule`: the sweep's, for rows without one
// (records written before rows kept it).
struct RegretInterval {
  std::string policy;
  double mean_lo = traces::kNaN, mean_hi = traces::kNaN;
  double max_lo = traces::kNaN, max_hi = traces::kNaN;
};
std::vector<RegretInterval> bootstrap_regret(const std::vector<SweepWorkload>& workloads,
                                             const std::vector<traces::SweepRow>& rows, int resamples,
                                             uint64_t seed = 1, const ChoiceRule& rule = {});

// Readable text: per (workload, cap) one line per policy, then the summary lines.
// The same over the problems a sweep_record was built from.
std::vector<RegretInterval> bootstrap_regret(const std::vector<const Problem*>& problems,
                                             const std::vector<traces::SweepRow>& rows, int resamples,
                                             uint64_t seed = 1, const ChoiceRule& rule = {});

// Readable text: per (workload, cap) one line per policy, then the summary lines.
std::string format_table(const std::vector<traces::SweepRow>& rows, const traces::KnobSpace& knob);
std::string format_summary(const SweepSummary& summary);
// The summary lines as CSV (policy, rows, feasible, mean and max regret, optimal) with the
// bootstrap intervals when given (matched by policy; empty cells otherwise).
std::string summary_csv(const SweepSummary& summary, const std::vector<RegretInterval>& intervals = {});
std::string format_intervals(const std::vector<RegretInterval>& intervals, int resamples);

}  // namespace pacer::explore
