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

// The largest sample-count guard of the problem's measured points, with its reason ("" : none).
std::pair<double, std::string> sample_count_term(const PointOrigin& o, const Space& space) {
  double g = 0;
  std::string why;
  for (const auto& p : o.measured_peaks) {
    const double gi = sample_count_guard(p.peak_w, p.mean_w, p.power_samples);
    if (gi > g) {
      g = gi;
      why = fmt::format(
          "sample count: b={} at {} peaked {:.3f} W over {:g} samples (mean {:.3f} W), projected {:.3f} W over a "
          "run of {:g} at the {:g}th percentile",
          p.batch_size, space.describe_knob(p.knob), p.peak_w, p.power_samples, p.mean_w, p.peak_w / (1 - gi),
          kRunSamplesPerProfileSample * p.power_samples, 100 * kRunPeakQuantile);
    }
  }
  return {g, why};
}

// The automatic guard of one space whose points' power came from `o`, with its reason: the point
// term (sensor noise or the model's error) or the measured points' sample-count term, whichever is
// larger.
std::pair<double, std::string> point_guard(const Space& space, const PointOrigin& o);
std::pair<double, std::string> auto_guard(const Space& space, const PointOrigin& o) {
  auto [g, why] = point_guard(space, o);
  const auto [term, twhy] = sample_count_term(o, space);
  const double t = std::min(term, kAutoGuardMax);
  if (t > g)
    return {t, fmt::format("{}{} (above {:.1f}%: {})", twhy,
                           t < term ? fmt::format(", kept within {:g}%", 100 * kAutoGuardMax) : std::string(), 100 * g,
                           why)};
  return {g, why};
}

std::pair<double, std::string> point_guard(const Space& space, const PointOrigin& o) {
  if (o.basis == PointBasis::Measured)
    return space.basis() == PowerBasis::Peak
               ? std::pair<double, std::string>{kDefaultGuard, "sensor noise: every point's peak power is measured"}
               : std::pair<double, std::string>{0.0, "none: every point's mean power is measured (no sampled peak)"};
  const std::string where =
      o.basis == PointBasis::Mixed ? fmt::format("{} of {} points predicted", o.points - o.measured, o.points)
                                   : std::string("every point predicted");
  if (!std::isfinite(o.model_power_error))
    return {kDefaultGuard, fmt::format("{}; no held-out peak error known for the model: sensor noise only", where)};
  const double g = std::clamp(o.model_power_error, kDefaultGuard, kAutoGuardMax);
  return {g, fmt::format("{}; model {}'s held-out {}-power error, {:g}th percentile {:.1f}%{}", where, o.model,
                         to_string(space.basis()), 100 * models::kPeakErrorQuantile, 100 * o.model_power_error,
                         g != o.model_power_error ? fmt::format(", kept within [{:g}%, {:g}%]", 100 * kDefaultGuard,
                                                               100 * kAutoGuardMax)
                                                 : std::string())};
}

}  // namespace

double max_of_normals_quantile(double k, double q) {
  if (!(k >= 1) || !(q > 0 && q < 1)) return traces::kNaN;
  // Phi(z) = q^(1/k); a probability that rounds to 1 is kept just below it.
  return models::normal_quantile(std::min(std::pow(q, 1 / k), std::nextafter(1.0, 0.0)));
}

double sample_count_guard(double peak_w, double mean_w, double power_samples) {
  if (!(power_samples >= 2) || !std::isfinite(peak_w) || !std::isfinite(mean_w) || !(peak_w > mean_w)) return 0;
  const double sigma = (peak_w - mean_w) / max_of_normals_quantile(power_samples, 0.5);
  const double run_peak =
      mean_w + sigma * max_of_normals_quantile(kRunSamplesPerProfileSample * power_samples, kRunPeakQuantile);
  return std::max(0.0, 1 - peak_w / run_peak);
}

void check_guard(double guard) {
  if (!(guard >= 0 && guard < kGuardLimit))
    throw OptionError("guard", fmt::format("{:g} is not a fraction in [0, {:g})", guard, kGuardLimit));
}

std::string_view to_string(PointBasis basis) {
  switch (basis) {
    case PointBasis::Measured: return "measured";
    case PointBasis::Model: return "model";
    case PointBasis::Mixed: return "model, measured where profiled";
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
    std::tie(rule.guard, rule.guard_source) = auto_guard(space, origin);
  }
  return rule;
}

ChoiceRule choice_rule(const Problem& problem, std::optional<double> guard) {
  return choice_rule(std::vector<const Problem*>{&problem}, guard);
}

ChoiceRule choice_rule(const std::vector<const Problem*>& problems, std::optional<double> guard) {
  if (problems.empty()) throw Error("a choice rule needs a design space");
  // Each problem's own rule; together: the first's basis (mixed where they differ) and the largest
  // guard, named with its workload when there are several.
  ChoiceRule rule = choice_rule(*problems.front()->space, problems.front()->origin, guard);
  rule.guard = -1;
  for (const auto* p : problems) {
    const ChoiceRule one = choice_rule(*p->space, p->origin, guard);
    if (one.points != rule.points) rule.points = PointBasis::Mixed;
    if (one.power != rule.power) rule.power_per_profile = true;
    if (one.guard > rule.guard) {
      rule.guard = one.guard;
      rule.guard_source = problems.size() > 1 && !guard ? fmt::format("{}: {}", p->workload, one.guard_source)
                                                        : one.guard_source;
    }
  }
  return rule;
}

Selection decide(Policy policy, const PolicyContext& context, double cap_w, const ChoiceRule& rule,
                 std::vector<Selection>* per_batch) {
  return select(policy, context, guarded_cap_w(cap_w, rule.guard), per_batch);
}

std::string describe_feasibility(const ChoiceRule& rule) {
  return fmt::format("{} power, {} points; chosen under cap x (1 - {:g}): {}",
                     rule.power_per_profile ? std::string_view("per-profile (peak or mean)") : to_string(rule.power),
                     to_string(rule.points), rule.guard, rule.guard_source);
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
