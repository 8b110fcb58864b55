#pragma once
// The one home of the small formulas every layer uses: mean and spread, quantiles and the median,
// the least-squares line, trapezoid energy of a sampled power series, the power that energy is
// computed from, and time to accuracy from time per mini-batch and samples to the target.
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

namespace pacer::base {

// Arithmetic mean; NaN for an empty range.
double mean(const std::vector<double>& values);
// Geometric mean, exp(mean of the logs), of positive values; NaN for an empty range.
double geometric_mean(const std::vector<double>& values);
// Sample standard deviation (n - 1); 0 for one value, NaN for none.
double sample_std(const std::vector<double>& values);

// The q-quantile (q in [0, 1]) by linear interpolation between the closest ranks (R's type 7,
// numpy's default): with the n values sorted ascending, v[i] + (p - i) * (v[i+1] - v[i]) at
// position p = q * (n - 1), i = floor(p); q = 0 is the minimum, q = 1 the maximum. NaN values are
// left out; NaN when none is left.
double quantile(std::vector<double> values, double q);
// The middle value of the sorted values, or the mean of the two middle ones, (a + b) / 2, for an
// even count (quantile(v, 0.5) up to rounding). NaN values are left out; NaN when none is left.
double median(std::vector<double> values);

// A straight line y = intercept + slope * x.
struct Line {
  double intercept = std::numeric_limits<double>::quiet_NaN(), slope = 0;
  bool constant = true;  // fitted to one distinct x: the mean of y, slope 0
  double at(double x) const { return intercept + slope * x; }
};
// Least-squares line through the points (x[i], y[i]). When the x's are one value (their variance
// at most 1e-12, so rounding of equal x's counts as one) the line is the constant mean of y and
// `constant` is set; a caller that needs a slope treats that as no line. No points: NaN intercept.
// x and y of different lengths: Error.
Line least_squares_line(const std::vector<double>& x, const std::vector<double>& y);

// Trapezoid energy of samples (t_i, p_i), J. With `duration_s` finite, the first sample holds from
// t = 0 and the last to `duration_s`, so a run shorter than the sensor period still gets power x time.
double trapezoid_energy_j(const std::vector<double>& time_s, const std::vector<double>& power_w,
                          double duration_s = std::numeric_limits<double>::quiet_NaN());

// `count` caps evenly spaced from lo_w to hi_w, the last exactly hi_w (so the highest-power
// configuration stays feasible despite rounding); step_w > 0 rounds each to that step.
std::vector<double> cap_grid_w(double lo_w, double hi_w, int count, double step_w = 0);

// The power that energy is computed from (energy = power x time): the mean power when measured,
// else the peak, so that a source with only a peak (a power-capped prediction) gives an upper bound.
inline double energy_power_w(double power_mean_w, double power_peak_w) {
  return std::isnan(power_mean_w) ? power_peak_w : power_mean_w;
}

// The paper's Eq. 3 with absolute sample counts: TT_acc = t_batch * N_acc / b, seconds.
inline double time_to_accuracy_s(double time_per_batch_s, double samples_to_target, int batch_size) {
  return batch_size > 0 ? time_per_batch_s * samples_to_target / batch_size : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace pacer::base
