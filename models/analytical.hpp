#pragma once
// The analytical device model for a GPU-frequency knob:
//   power  P(f, b) = P_idle + k_leak·V(f) + c(b)·f·V(f)²,   c(b) = c_base + c_sat·b / (b + b_half)
//                    (or, AnalyticalFitOptions::cap_form "log", c(b) = c_base + c_log·ln b)
//                    + (busy·V(f)²·w(b) + traffic·b) / t(f, b)
//   time   t(f, b) = t_fixed(b) + w(b) / f,                 t_fixed(b) = t0 + t1·b,  w(b) = w0 + w1·b
// V(f) is the catalog's voltage table when the device has one (Jetson Nano), otherwise a fitted
// floored line V(f) = max(V_floor, V_floor + s·(f - f_knee)) in units of the floor voltage (the
// scale of V is not identifiable from power alone, so V_floor = 1 "relative volt").
// Mean and peak power are fitted as separate targets sharing V(f). docs/models.md derives the forms.
#include <memory>
#include <string>
#include <vector>

#include "models/device_model.hpp"
#include "traces/records.hpp"

namespace pacer::models {

struct VoltageCurve {
  // Non-empty: piecewise-linear through these points (ascending freq), clamped below the first
  // point and extended with the last segment's slope above the last one.
  std::vector<traces::VoltagePoint> table;
  // Used when `table` is empty.
  double floor_v = 1.0;
  double knee_hz = 0.0;
  double slope_v_per_hz = 0.0;

  double at(double freq_hz) const;
  bool fitted() const { return table.empty(); }
};

struct TimeParams {
  double fixed_s = 0;             // per mini-batch, independent of f and b
  double fixed_per_sample_s = 0;  // frequency-independent (memory-bound) time per sample
  double work_cycles = 0;         // per mini-batch compute, in GPU cycles
  double work_per_sample_cycles = 0;
  // The concave part in b (AnalyticalFitOptions::time_form "log"): t2·ln b + w2·ln b / f.
  double fixed_log_s = 0;
  double work_log_cycles = 0;

  double work(int batch_size) const;  // GPU cycles per mini-batch, w(b)
  double at(double freq_hz, int batch_size) const;
};

struct PowerParams {
  double idle_w = 0;
  double leak_w_per_v = 0;
  double cap_base_w_per_hz_v2 = 0;  // b-independent switched capacitance, W / (Hz·V²)
  double cap_sat_w_per_hz_v2 = 0;   // saturating part, reached for b >> batch_half
  double batch_half = 16;           // b at which the saturating part is half-way
  // Energy terms coupled to the time model, divided by the batch time t(f, b): switching energy of
  // the busy cycles, busy·V²·w(b)/t (a GPU idles in memory-bound phases), and DRAM/host energy per
  // sample, traffic·b/t. Zero when the data do not need them (weak priors pull them to 0).
  double busy_j_per_cycle_v2 = 0;
  double traffic_j_per_sample = 0;
  double cap_log_w_per_hz_v2 = 0;  // c(b) = c_base + c_log·ln b (the log form)

  double capacitance(int batch_size) const;
  double at(double freq_hz, double volt_v, int batch_size, const TimeParams& time) const;
};

struct AnalyticalParams {
  VoltageCurve voltage;
  TimeParams time;
  PowerParams power_mean;
  PowerParams power_peak;
  bool has_peak = true;  // false when the profile had no peak power: predict() gives no peak (NaN)
};

class AnalyticalModel : public DeviceModel {
 public:
  // `record` carries the metadata, metrics and uncertainties of the fit; to_record() returns it
  // with the parameters written from `params`.
  AnalyticalModel(AnalyticalParams params, traces::ModelRecord record);

  traces::ModelKind kind() const override { return traces::ModelKind::analytical; }
  const traces::KnobSpace& knob() const override { return knob_; }
  Prediction predict(const std::vector<double>& knob, int batch_size) const override;
  traces::ModelRecord to_record() const override;

  const AnalyticalParams& params() const { return params_; }

 private:
  AnalyticalParams params_;
  traces::ModelRecord record_;
  traces::KnobSpace knob_ = traces::KnobSpace::gpu_frequency();
};

struct AnalyticalFitOptions {
  // "auto": the catalog table when given, else fit; "catalog": require the table; "fit": fit V(f).
  std::string voltage = "auto";
  std::vector<traces::VoltagePoint> voltage_table;  // from the device catalog; may be empty
  // Weight of the weak priors that settle directions the data cannot determine (few points): they
  // pull t1, w0, k_leak, c_base, busy, traffic towards 0 and b_half towards the middle of the
  // profiled b range.
  // In units of squared relative residual; 1e-4 is negligible next to a 1% misfit over 10 points.
  // At most kMaxPriorWeight (a prior as strong as one point missed by 100%): beyond it the priors
  // overrule the data and pin their parameters to 0, a degenerate model.
  double prior_weight = 1e-4;
  // The form of c(b): "saturating", c_base + c_sat·b/(b + b_half) (b_half searched, nonlinear), or
  // "log", c_base + c_log·ln b (linear: one parameter fewer, nothing to search with few points).
  std::string cap_form = "saturating";
  // The form of t(f, b): "affine", t0 + t1·b + (w0 + w1·b)/f, or "log" (the default), which adds a
  // concave part t2·ln b + w2·ln b / f (a batching server's time per batch rises fastest at small b;
  // docs/models.md gives the held-out gain). The log part is fitted only from kMinPointsLogTime points
  // at 3 or more batch sizes: below that the 6 time parameters are not determined and the affine
  // form is fitted.
  std::string time_form = "log";
  // The loss of the mean and peak power fits (the time fit is least squares): "absolute" (the
  // default), the sum of absolute relative errors, or "squared", the sum of squared ones. One point
  // off the trend (a regime of its own, a reading taken while a clock floated) pulls a squared fit
  // towards it and misses the others; the absolute loss is the median-like fit that follows the
  // trend of the rest. Solved by iteratively reweighted least squares over the same non-negative
  // fit (weights 1 / max(|r|, kAbsoluteLossFloor)); the weak priors keep their role.
  // docs/models.md, "Absolute-error power fit", gives the held-out figures of both.
  std::string power_loss = "absolute";
};
inline constexpr double kMaxPriorWeight = 1.0;
inline constexpr int kMinPointsLogTime = 6;  // the time model's parameters with the log part
// The relative residual below which the absolute loss's reweighting stops growing a point's weight
// (a numerical floor, far below any measurement's spread: 0.67% on the Nano's power).
inline constexpr double kAbsoluteLossFloor = 1e-4;

// What a model over power-mode caps (models/mode_model.hpp) adds to the fit, per point: the powered
// share s of the GPU's TPCs (empty: 1; its compute runs at f*s and its leakage and switched
// capacitance scale with s), and extra time and power columns fitted jointly with the model's own,
// non-negative and pulled towards 0 by the priors (empty: none). Their coefficients come back here.
struct FitExtras {
  std::vector<double> compute_share;
  std::vector<double> weight;  // per point, > 0 (empty: 1): a row of weight w counts as w points
  // Per point (empty: none): its weight is kept by the absolute power loss's reweighting and its
  // power residual is squared (a transfer prior's pseudo-points: a least-squares prior).
  std::vector<bool> fixed_weight;
  // Per point (empty: none): the point joins the time fit only, not the power fits (a transfer
  // prior that carries time alone: TransferPrior::power).
  std::vector<bool> time_only;
  std::vector<std::vector<double>> time_columns;                    // per point; added time = sum_j time_coef[j] x_j
  std::vector<std::vector<double>> power_columns;                   // per point; added power = sum_j coef[j] x_j
  std::vector<double> time_coef, power_mean_coef, power_peak_coef;  // out
};

// Checks the options a fit does not need points to judge: OptionError("prior-weight") for a prior
// weight outside [0, kMaxPriorWeight], OptionError("power-loss" / "time-form" / "cap-form") for a
// name that is not one of the forms, Error for an unknown voltage mode.
void check_fit_options(const AnalyticalFitOptions& options);

// Fits the model to `points` (gpu_freq knob, time and mean power required, peak optional).
// Throws Error when there are fewer than 4 points or fewer than 2 distinct frequencies, and what
// check_fit_options throws.
std::unique_ptr<AnalyticalModel> fit_analytical(const std::vector<traces::ProfilePoint>& points,
                                                const AnalyticalFitOptions& options, FitExtras* extras = nullptr);

// Rebuilds a model from its record; throws Error when a parameter is missing.
std::unique_ptr<AnalyticalModel> analytical_from_record(const traces::ModelRecord& record);

}  // namespace pacer::models
