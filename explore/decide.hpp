#pragma once
// The one choice rule: "policy P's choice at cap C on this problem". Every command that chooses a
// configuration (select, sweep, simulate, validate, the demo and experiment, the report's figures)
// calls `decide` with a ChoiceRule made by `choice_rule`, so that the same store, cap, policy and
// guard give the same choice everywhere:
// - feasibility: the Space's basis power (peak where the data has it, else mean), where a measured
//   profile point wins over the model's prediction (load_problem overlays it: explore/problem.hpp)
//   and a measured peak is the point's own projected run peak (explore/space.hpp,
//   projected_run_peak_w: its peak over m samples projected to a run of 10 m samples);
// - guard: every policy chooses under cap x (1 - guard); the user's guard when given, else the
//   calibrated model's held-out error of the basis power at models::kPeakErrorQuantile where the
//   space has points only the model predicts, else kDefaultGuard (sensor noise: every point's peak
//   measured), or 0 where every point's measured power is a mean (Zeus, NVML traces: no sampled
//   peak; the cap is compared with the mean, as in their replay protocol): the point term only, as
//   each measured point's spread is in its own feasibility power;
// - ties: those of the policy itself (explore/policy.hpp), nothing added.
// Records keep the rule: `guard` and `feasibility` (describe_feasibility) in sweep and validation records.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "explore/policy.hpp"
#include "explore/space.hpp"

namespace pacer::explore {

struct Problem;
struct PointOrigin;

// The guard band when every point of the space is measured: it covers the power sensor's noise and
// the run-to-run spread of a peak (a few percent on the INA3221 at 10 Hz), not a model's error. Each
// measured point's own spread is in its feasibility power already (Space: a measured peak projected to
// a run, projected_run_peak_w).
inline constexpr double kDefaultGuard = 0.03;
// Valid guards are [0, kGuardLimit) (a guard of one half would choose under half the cap).
inline constexpr double kGuardLimit = 0.5;
// The automatic guard is at most this: a model that is off by more needs measuring, not a guard.
inline constexpr double kAutoGuardMax = 0.25;
// Throws OptionError("guard") unless 0 <= guard < kGuardLimit.
void check_guard(double guard);

// How the points of a space got their feasibility power.
enum class PointBasis { Measured, Model, Mixed };
std::string_view to_string(PointBasis basis);

struct ChoiceRule {
  double guard = 0;          // every policy chooses under cap x (1 - guard)
  std::string guard_source;  // "given", "the model's held-out peak error (95th percentile)", "sensor noise ..."
  PowerBasis power = PowerBasis::Peak;
  bool power_per_profile = false;  // several problems of different bases (each its own)
  PointBasis points = PointBasis::Measured;
};

// The cap every policy compares with: cap x (1 - guard).
inline double guarded_cap_w(double cap_w, double guard) {
  return cap_w * (1 - guard);
}

// The rule for a problem: `guard` when given (checked), else the automatic one described above.
ChoiceRule choice_rule(const Problem& problem, std::optional<double> guard = std::nullopt);
// The rule for one space whose points' power came from `origin` (explore::measured_wins): a
// campaign that has a device profile but no relation yet (the adaptive relation campaign).
ChoiceRule choice_rule(const Space& space, const PointOrigin& origin, std::optional<double> guard = std::nullopt);

// Policy `policy`'s choice at `cap_w` under `rule`: the one entry point of every command.
Selection decide(Policy policy, const PolicyContext& context, double cap_w, const ChoiceRule& rule,
                 std::vector<Selection>* per_batch = nullptr);

// The rule as a record's `feasibility` text: "peak power (a measured peak projected to a run of 10x its
// samples, 95th percentile, spread x 1.4), measured points; chosen under cap x (1 - 0.03): sensor noise ...".
// Its first word is the power basis (feasibility_basis reads it back).
std::string describe_feasibility(const ChoiceRule& rule);
// Several workloads' rules (a sweep: each workload chooses under its own, `rules[i]` that of
// `workloads[i]`): their common basis, then the one guard where they share it, else each workload's.
std::string describe_feasibility(const std::vector<std::string>& workloads, const std::vector<ChoiceRule>& rules);
// The rule a sweep or validation record was made by, from its `guard` and `feasibility`: what
// `decide` needs to make its choices again (the report's figures, the bootstrap's oracle). A sweep
// of several workloads: explore::recorded_rule(sweep, workload) (explore/sweep.hpp), each its own.
ChoiceRule recorded_rule(double guard, std::string_view feasibility);
// The power basis of a record's feasibility text ("peak ...", "mean ..."); nullopt: neither.
std::optional<PowerBasis> feasibility_basis(std::string_view feasibility);

}  // namespace pacer::explore
