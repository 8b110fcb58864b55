#pragma once
// Power-law learning curves with one exponent shared by every run (docs/explore.md, "Adaptive
// relation campaigns"): run r's metric error after n samples is e_r(n) = a_r * n^-alpha, alpha
// shared. Fitted by least squares in log space, log e = log a_r - alpha log n (one intercept per
// run, one slope: the pooled within-run regression), made robust by Huber weights on the
// residuals. Sharing the exponent lets a run with one or two evaluations (an adaptive campaign's
// round 1) borrow the curve's shape from the others. The adaptive engine uses it to extrapolate an
// unfinished run's samples-to-target (AdaptiveOptions::extrapolation "power-law").
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pacer::explore {

// A run's learning curve: (samples, metric) evaluations.
using CurvePoints = std::vector<std::pair<int64_t, double>>;

// The error a metric's power law describes: 1 - metric when higher is better (accuracy), else the
// metric itself (a loss).
double metric_error(double metric, bool higher_is_better);

// Fewer points than this across the runs (each run with at least two) give no fit.
inline constexpr int kPowerLawMinPoints = 3;

struct PowerLawFit {
  double alpha = 0;                // the shared exponent (> 0 for a valid fit)
  std::vector<double> log_a;       // per run given: log a_r (NaN: the run had no usable point)
  double resid_var = 0;            // of log e about the fit (weighted, per degree of freedom)
  std::vector<double> mean_log_n;  // per run: the weighted mean log n of its points (the fit's centre)
  std::vector<double> weight;      // per run: the sum of its points' weights
  double sxx = 0;                  // sum over runs of the weighted squared deviations of log n
  int points = 0;                  // points used
  bool valid = false;              // enough points and a positive exponent
};

// Fits the runs' error curves (one CurvePoints per run, metrics as recorded). Points with n <= 0 or
// an error outside (0, 1] when higher is better (outside (0, inf) otherwise) are left out. Not valid
// when fewer than kPowerLawMinPoints points lie in runs with two distinct sample counts or more, or
// when the fitted error does not fall with samples.
PowerLawFit fit_power_law(const std::vector<CurvePoints>& runs, bool higher_is_better);

struct PowerLawEstimate {
  double log_samples = 0;  // log of the samples at which the run's fitted error reaches the target's
  double var = 0;          // its variance: the residual and the exponent's, through the fit
  bool valid = false;
};

// Run `run`'s samples to reach `target` (a metric) on the fit: log n = (log a_r - log e_target) /
// alpha. Not valid for an invalid fit, a run without points, or a target error at or below 0.
PowerLawEstimate power_law_samples(const PowerLawFit& fit, size_t run, double target, bool higher_is_better);

}  // namespace pacer::explore
