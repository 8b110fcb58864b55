#pragma once
// A calibrated model's uncertainty, and the part of it that is noise to the model: the spread of
// the measurements that no model of the knob and b that is smooth in b can follow. Clocks that
// float while measuring (CPU and EMC under a pinned GPU clock, every clock under a power mode;
// ProfileTable::floating_clocks) make it; so do a staircase in b (a batching server) and sensor
// noise. It is reported as the model's uncertainty and stored with it, never fitted: a model that
// chased it would turn noise into bias.
//
// Estimator of the spread (model-free): repeated (knob, b) settings give it directly (pooled spread
// of log values); otherwise, per knob setting with the points sorted by b, each interior point's
// deviation from the line through its two neighbours (log values against log b, so relative on the
// usual geometric b grids), weighted as in Gasser, Sargent and Sengupta (Biometrika 1986):
// sigma^2 = mean(c_i^2 e_i^2), c_i^2 = 1 / (a_i^2 + b_i^2 + 1). A smooth trend contributes its
// curvature between neighbours: small on a dense b grid (time affine in b over b = 1..40 reads
// 0.5%), so the estimate is an upper bound of the noise, never a lower one.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "traces/records.hpp"

namespace pacer::models {

struct NoiseFloor {
  double time_rel = traces::kNaN;  // 1 sigma, relative (0.05 = 5%)
  double power_mean_rel = traces::kNaN;
  double power_peak_rel = traces::kNaN;
  int terms = 0;       // degrees of freedom of the repeats, or neighbour triples, behind the estimate
  std::string method;  // "repeats" | "neighbours" | "" (too few points)
  // The mean absolute percentage error a perfect model would still show against Gaussian noise of
  // this spread: sigma * sqrt(2 / pi), in percent.
  static double mape_floor_pct(double sigma_rel);
};

NoiseFloor noise_floor(const std::vector<traces::ProfilePoint>& points);

// What a stored model says about its predictions, 1 sigma, relative. `time_rel` ... `power_peak_rel`:
// a prediction against a new measurement, from the model's error on points it was not fitted to
// (the planner's hold-out, else leave-one-mode-out, else cross-validation; `basis` says which) read
// as a Gaussian sigma (MAPE * sqrt(pi / 2)), never below the measurement spread `floor`.
struct ModelUncertainty {
  double time_rel = traces::kNaN;
  double power_mean_rel = traces::kNaN;
  double power_peak_rel = traces::kNaN;
  // "heldout" | "lomo" | "loo" (few_point_sigma, models/calibrate.hpp) | "cv" | "" (no error off the
  // fitted points)
  std::string basis;
  double time_mape_pct = traces::kNaN;  // the basis's MAPE behind the sigmas
  double power_mean_mape_pct = traces::kNaN;
  NoiseFloor floor;
  std::string floating_clocks;  // ProfileTable::floating_clocks of the profile it was fitted to
};

// A prediction's 1 sigma (relative) from a MAPE measured off the fitted points (in %), read as a
// Gaussian sigma (MAPE * sqrt(pi / 2)), never below the measurement spread `spread_rel` (NaN: none).
double prediction_sigma(double mape_pct, double spread_rel);

// How often held-out measurements fall inside the stated uncertainty: `rel_errors` are
// predicted / measured - 1 of points the model was not fitted on; `sigma_rel` the stated 1 sigma.
// Nominal rates: 68.3% inside 1 sigma, 90% inside the 90% interval (+-1.645 sigma).
inline constexpr double kZ90 = 1.6448536269514722;
// The standard normal quantile: normal_quantile(0.95) = kZ90. Throws Error outside (0, 1).
double normal_quantile(double p);
struct Coverage {
  double within_1sigma = traces::kNaN;  // fraction, 0..1
  double within_90 = traces::kNaN;
  int points = 0;
};
Coverage coverage(const std::vector<double>& rel_errors, double sigma_rel);
// The coverage a sigma estimated from k points can promise at the nominal level z (1 or kZ90): a
// sigma off by its relative standard error 1 / sqrt(2k) either way covers a Gaussian's errors at
// P(|x| <= z (1 -+ 1 / sqrt(2k))). k = 8: 55-79% at 1 sigma, 78-96% for the 90% interval. Throws
// Error for k < 1.
std::pair<double, double> coverage_band(double z, int k);

// Adds the uncertainty to a calibrated model's record, after its error metrics: metrics
// `<target>_noise_pct` (the spread), `<target>_sigma_pct` (the prediction's), `noise_terms`;
// settings `noise_method`, `uncertainty_basis`, `floating_clocks` and `uncertainty` (the line
// `pacer calibrate` prints).
void store_uncertainty(traces::ModelRecord& record, const NoiseFloor& floor, const std::string& floating_clocks);
// The uncertainty stored with a record; nullopt for a record written without one.
std::optional<ModelUncertainty> read_uncertainty(const traces::ModelRecord& record);

// One line: the spread of each target, what floated while measuring, how much of the error off the
// fitted points lies above the spread, and the prediction's 1 sigma.
std::string describe_uncertainty(const ModelUncertainty& u);

}  // namespace pacer::models
