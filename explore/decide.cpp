#include "explore/decide.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "base/error.hpp"
#include "explore/problem.hpp"
#include "models/calibrate.hpp"
#include "models/uncertainty.hpp"

namespace pacer::explore {
namespace {

// The automatic guard of one space whose points' power came from `o`, with its reason: the point
// term only (sensor noise where every peak is measured, the model's error where a point is
// predicted, none for measured means); each measured point's spread is in its own feasibility power
// (projected_run_peak_w).
std::pair<double, std::string> point_guard(const Space& space, const PointOrigin& o) {
  if (o.basis == PointBasis::Measured)
    return space.basis() == PowerBasis::Peak
               ? std::pair<double, std::string>{kDefaultGuard, "sensor noise: every point's peak power is measured"}
               : std::pair<double, std::string>{0.0, "none: every point's mean power is measured (no sampled peak)"};
  const std::string where = o.basis == PointBasis::Mixed
                                ? fmt::format("{} of {} points predicted", o.points - o.measured, o.points)
                                : std::string("every point predicted");
  if (!std::isfinite(o.model_power_error))
    return {kDefaultGuard, fmt::format("{}; no held-out peak error known for the model: sensor noise only", where)};
  const double g = std::clamp(o.model_power_error, kDefaultGuard, kAutoGuardMax);
  return {g, fmt::format("{}; model {}'s held-out {}-power error, {:g}th percentile {:.1f}%{}", where, o.model,
                         to_string(space.basis()), 100 * models::kPeakErrorQuantile, 100 * o.model_power_error,
                         g != o.model_power_error
                             ? fmt::format(", kept within [{:g}%, {:g}%]", 100 * kDefaultGuard, 100 * kAutoGuardMax)
                             : std::string())};
}

}  // namespace

void check_guard(double guard) {
  if (!(guard >= 0 && guard < kGuardLimit))
    throw OptionError("guard", fmt::format("{:g} is not a fraction in [0, {:g})", guard, kGuardLimit));
}

std::string_view to_string(PointBasis basis) {
  switch (basis) {
    case PointBasis::Measured:
      return "measured";
    case PointBasis::Model:
      return "model";
    case PointBasis::Mixed:
      return "model, measured where profiled";
  }
  return "?";
}

ChoiceRule choice_rule(const Space& space, const PointOrigin& origin, std::optional<double> guard) {
  ChoiceRule rule;
  rule.power = space.basis();
  rule.points = origin.basis;
  if (guard) {
    check_guard(*guard);
    rule.guard = *guard;
    rule.guard_source = "given";
  } else {
    std::tie(rule.guard, rule.guard_source) = point_guard(space, origin);
  }
  return rule;
}

ChoiceRule choice_rule(const Problem& problem, std::optional<double> guard) {
  return choice_rule(*problem.space, problem.origin, guard);
}

Selection decide(Policy policy, const PolicyContext& context, double cap_w, const ChoiceRule& rule,
                 std::vector<Selection>* per_batch) {
  return select(policy, context, guarded_cap_w(cap_w, rule.guard), per_batch);
}

std::string describe_feasibility(const ChoiceRule& rule) {
  return fmt::format(
      "{}, {} points; chosen under cap x (1 - {:g}): {}",
      rule.power_per_profile ? std::string("per-profile (peak or mean) power") : describe_basis(rule.power),
      to_string(rule.points), rule.guard, rule.guard_source);
}

std::string describe_feasibility(const std::vector<std::string>& workloads, const std::vector<ChoiceRule>& rules) {
  if (rules.empty() || rules.size() != workloads.size()) throw Error("a feasibility text needs one rule per workload");
  // The common basis: the first's, mixed where the points differ, per profile where the power does.
  ChoiceRule all = rules.front();
  bool one_guard = true;
  for (const auto& r : rules) {
    if (r.points != all.points) all.points = PointBasis::Mixed;
    if (r.power != all.power) all.power_per_profile = true;
    one_guard = one_guard && r.guard == all.guard && r.guard_source == all.guard_source;
  }
  if (one_guard) return describe_feasibility(all);
  std::string each;
  for (size_t i = 0; i < rules.size(); ++i)
    each +=
        fmt::format("{}{}: cap x (1 - {:g}): {}", i ? "; " : "", workloads[i], rules[i].guard, rules[i].guard_source);
  return fmt::format(
      "{}, {} points; each workload chosen under its own guard: {}",
      all.power_per_profile ? std::string("per-profile (peak or mean) power") : describe_basis(all.power),
      to_string(all.points), each);
}

ChoiceRule recorded_rule(double guard, std::string_view feasibility) {
  ChoiceRule rule;
  rule.guard = guard;
  rule.guard_source = "recorded";
  if (const auto basis = feasibility_basis(feasibility)) rule.power = *basis;
  return rule;
}

std::optional<PowerBasis> feasibility_basis(std::string_view feasibility) {
  // "peak" and "mean" alone: records written before the rule had its text.
  if (feasibility == "peak" || feasibility.starts_with("peak power")) return PowerBasis::Peak;
  if (feasibility == "mean" || feasibility.starts_with("mean power")) return PowerBasis::Mean;
  return std::nullopt;
}

}  // namespace pacer::explore
