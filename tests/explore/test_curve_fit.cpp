// explore/curve_fit.hpp: power-law learning curves with one exponent shared by every run, on
// synthetic curves whose exponent is known, and the adaptive engine's use of it
// (AdaptiveOptions::extrapolation "power-law").
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "base/error.hpp"
#include "explore/adaptive.hpp"
#include "explore/curve_fit.hpp"
#include "tests/support/hand_space.hpp"

namespace pacer::explore {
namespace {

// Accuracy after n samples when the error is a * n^-alpha, times a noise factor.
double accuracy(double a, double alpha, int64_t n, double noise = 1) {
  return 1 - a * std::pow(static_cast<double>(n), -alpha) * noise;
}

CurvePoints curve(double a, double alpha, std::vector<int64_t> ns, std::mt19937_64* rng = nullptr, double sd = 0) {
  std::normal_distribution<double> z(0, 1);
  CurvePoints c;
  for (const int64_t n : ns) c.emplace_back(n, accuracy(a, alpha, n, rng ? std::exp(sd * z(*rng)) : 1));
  return c;
}

TEST(CurveFit, RecoversAKnownExponentFromNoisyCurves) {
  std::mt19937_64 rng(7);
  std::vector<CurvePoints> runs;
  const std::vector<int64_t> ns = {256, 512, 1024, 2048, 4096, 8192};
  for (const double a : {3.0, 5.0, 8.0, 12.0}) runs.push_back(curve(a, 0.6, ns, &rng, 0.05));
  const PowerLawFit fit = fit_power_law(runs, true);
  ASSERT_TRUE(fit.valid);
  EXPECT_NEAR(fit.alpha, 0.6, 0.03);
  EXPECT_NEAR(fit.log_a[0], std::log(3.0), 0.25);
  EXPECT_NEAR(fit.log_a[3], std::log(12.0), 0.25);
  EXPECT_GT(fit.resid_var, 0.5 * 0.05 * 0.05);
  EXPECT_LT(fit.resid_var, 2.0 * 0.05 * 0.05);
  EXPECT_EQ(fit.points, 24);
  // Robust: two evaluations far off (errors ten times the curve's, at the runs' last sample counts)
  // barely move the exponent; plain least squares would take it below 0.5.
  runs[1][5].second = 1 - 10 * (1 - runs[1][5].second);
  runs[2][5].second = 1 - 10 * (1 - runs[2][5].second);
  const PowerLawFit robust = fit_power_law(runs, true);
  ASSERT_TRUE(robust.valid);
  EXPECT_NEAR(robust.alpha, 0.6, 0.03);
}

TEST(CurveFit, SharesTheExponentAcrossRuns) {
  // Run 0 early (small n, low error scale), run 1 late (large n, high error scale): one line through
  // all points would rise; one slope with an intercept per run recovers the exponent exactly.
  const std::vector<CurvePoints> runs = {curve(1.0, 0.5, {100, 200, 400}), curve(8.0, 0.5, {1600, 3200, 6400})};
  const PowerLawFit fit = fit_power_law(runs, true);
  ASSERT_TRUE(fit.valid);
  EXPECT_NEAR(fit.alpha, 0.5, 1e-9);
  EXPECT_NEAR(fit.log_a[0], 0.0, 1e-9);
  EXPECT_NEAR(fit.log_a[1], std::log(8.0), 1e-9);
  // A run with one evaluation borrows the exponent: its scale from its one point.
  const std::vector<CurvePoints> with_one = {curve(1.0, 0.5, {100, 200, 400, 800}), curve(4.0, 0.5, {300})};
  const PowerLawFit shared = fit_power_law(with_one, true);
  ASSERT_TRUE(shared.valid);
  EXPECT_NEAR(shared.alpha, 0.5, 1e-9);
  EXPECT_NEAR(shared.log_a[1], std::log(4.0), 1e-9);
}

TEST(CurveFit, RefusesTooFewPointsAndAnErrorThatDoesNotFall) {
  // Two points in one run and one in another: nothing to estimate a spread from.
  const PowerLawFit few = fit_power_law({curve(1.0, 0.5, {100, 200}), curve(2.0, 0.5, {400})}, true);
  EXPECT_FALSE(few.valid);
  EXPECT_FALSE(power_law_samples(few, 0, 0.99, true).valid);
  // One sample count per run: no slope at all.
  EXPECT_FALSE(fit_power_law({curve(1.0, 0.5, {100}), curve(2.0, 0.5, {400}), curve(2.0, 0.5, {800})}, true).valid);
  EXPECT_FALSE(fit_power_law({}, true).valid);
  // An error that grows with samples.
  EXPECT_FALSE(fit_power_law({curve(0.01, -0.3, {100, 200, 400, 800})}, true).valid);
  // Points outside the error's range are left out (an accuracy above 1, a sample count of 0).
  const PowerLawFit bad = fit_power_law({{{0, 0.5}, {100, 1.5}, {200, 0.9}, {400, 0.95}}}, true);
  EXPECT_EQ(bad.points, 2);
  EXPECT_FALSE(bad.valid);
}

TEST(CurveFit, ExtrapolatesSamplesToATarget) {
  // Error 2 n^-0.5: accuracy 0.98 (error 0.02) at n = (2 / 0.02)^2 = 10,000 samples.
  const std::vector<CurvePoints> runs = {curve(2.0, 0.5, {100, 200, 400}), curve(1.0, 0.5, {100, 200})};
  const PowerLawFit fit = fit_power_law(runs, true);
  ASSERT_TRUE(fit.valid);
  const PowerLawEstimate e = power_law_samples(fit, 0, 0.98, true);
  ASSERT_TRUE(e.valid);
  EXPECT_NEAR(std::exp(e.log_samples), 10'000, 1e-6);
  EXPECT_NEAR(std::exp(power_law_samples(fit, 1, 0.98, true).log_samples), 2'500, 1e-6);
  // A loss (lower is better) is its own error: 0.1 at (2 / 0.1)^2 = 400 samples.
  const PowerLawFit loss = fit_power_law({{{100, 0.2}, {400, 0.1}, {1600, 0.05}}, {{100, 0.4}, {400, 0.2}}}, false);
  ASSERT_TRUE(loss.valid);
  EXPECT_NEAR(std::exp(power_law_samples(loss, 1, 0.1, false).log_samples), 1'600, 1e-6);
  // With noise, the interval widens the further the target lies beyond the evaluations.
  std::mt19937_64 rng(3);
  const PowerLawFit noisy = fit_power_law(
      {curve(2.0, 0.5, {100, 200, 400, 800}, &rng, 0.05), curve(3.0, 0.5, {100, 200, 400}, &rng, 0.05)}, true);
  ASSERT_TRUE(noisy.valid);
  const PowerLawEstimate near = power_law_samples(noisy, 0, 0.9, true), far = power_law_samples(noisy, 0, 0.99, true);
  ASSERT_TRUE(near.valid && far.valid);
  EXPECT_GT(far.var, near.var);
  // Fifty times beyond the last evaluation: the truth (40,000) lies within the estimate's interval.
  EXPECT_LT(std::abs(far.log_samples - std::log(40'000.0)), 2 * std::sqrt(far.var));
  EXPECT_LT(std::sqrt(far.var), 0.5);
  EXPECT_FALSE(power_law_samples(noisy, 0, 1.0, true).valid);  // error 0: never reached
}

TEST(CurveFit, NamesTheAdaptiveExtrapolations) {
  EXPECT_EQ(to_string(AdaptiveExtrapolation::ratio), "ratio");
  EXPECT_EQ(to_string(AdaptiveExtrapolation::shared_curve), "shared-curve");
  EXPECT_EQ(to_string(AdaptiveExtrapolation::power_law), "power-law");
  EXPECT_EQ(parse_adaptive_extrapolation("power-law", "extrapolation"), AdaptiveExtrapolation::power_law);
  EXPECT_EQ(parse_adaptive_extrapolation("shared-curve", "extrapolation"), AdaptiveExtrapolation::shared_curve);
  EXPECT_EQ(parse_adaptive_extrapolation("ratio", "extrapolation"), AdaptiveExtrapolation::ratio);
  EXPECT_THROW(parse_adaptive_extrapolation("curve", "extrapolation"), OptionError);
}

// The engine (AdaptiveOptions::power_law): an unfinished run is stored at its samples on the shared
// power law, not at the ratio's estimate.
TEST(CurveFit, TheAdaptiveEngineStoresAnUnfinishedRunAtItsPowerLawEstimate) {
  const Space space = pacer::testing::one_knob_space({8, 16}, {1e-3, 1e-3});
  const Index index(space);
  const AdaptiveProblem p = pacer::testing::one_cap_problem(index, 0.98);
  // b=8 reached the target (error 2 n^-0.5: 10,000 samples); b=16 stopped at 400 samples on a curve
  // with the same exponent and error scale 1: its power-law estimate is (1 / 0.02)^2 = 2,500.
  AdaptiveRun reached{8, 0, 10'000, true, false, 1, curve(2.0, 0.5, {1250, 2500, 5000, 10'000})};
  AdaptiveRun open{16, 0, 400, false, false, 1, curve(1.0, 0.5, {100, 200, 400})};
  AdaptiveOptions o;
  o.run_budget_samples = 100'000;
  o.extrapolation = AdaptiveExtrapolation::power_law;
  const AdaptivePlan plan = plan_round(p, {reached, open}, 1, o);
  ASSERT_EQ(plan.relation.runs.size(), 2u);
  EXPECT_TRUE(plan.relation.runs[1].reached);
  EXPECT_NEAR(static_cast<double>(plan.relation.runs[1].samples), 2'500, 1);
  // The ratio instead: b=8 went from the level b=16 reached (0.95, at 2,500 of its samples) to the
  // target in 10,000 / 2,500 = 4 times the samples; b=16 reached 0.95 at 400: 1,600.
  o.extrapolation = AdaptiveExtrapolation::ratio;
  const AdaptivePlan ratio = plan_round(p, {reached, open}, 1, o);
  EXPECT_NEAR(static_cast<double>(ratio.relation.runs[1].samples), 1'600, 1);
}

}  // namespace
}  // namespace pacer::explore
