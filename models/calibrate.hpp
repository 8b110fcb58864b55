#pragma once
// Calibration of a DeviceModel from a ProfileTable (or the k points a planner picked from it):
// input checks, the shared least-squares and error machinery, cross-validation, and the table of
// predictions for a device grid. The models themselves live in analytical.hpp, learned.hpp and
// interpolating.hpp; this file is what `pacer calibrate` and `pacer bench models` call.
#include <Eigen/Dense>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "models/analytical.hpp"
#include "models/device_model.hpp"
#include "models/learned.hpp"
#include "models/planner.hpp"
#include "traces/records.hpp"

namespace pacer::models {

// min ||A·x - y||² + Σ_j ridge_j·x_j²  subject to x >= 0 (at most 12 columns; the models have at
// most 8 linear parameters), solved exactly by Lawson and Hanson's active-set method on the normal
// equations; a positive ridge makes the optimum unique. `objective` receives the minimum.
Eigen::VectorXd nnls(const Eigen::MatrixXd& a, const Eigen::VectorXd& y, const Eigen::VectorXd& ridge,
                     double* objective = nullptr);

// Mean absolute percentage errors (in %) of a model on measured points; NaN where no point has the
// measurement (no peak power in Zeus traces).
struct ErrorSummary {
  double time_mape = traces::kNaN;
  double power_mean_mape = traces::kNaN;
  double power_peak_mape = traces::kNaN;
  int points = 0;
  // cross_validate only: |predicted / measured - 1| of the peak and mean power of every held-out point.
  std::vector<double> power_peak_abs_errors{}, power_mean_abs_errors{};
};
ErrorSummary mape(const DeviceModel& model, const std::vector<traces::ProfilePoint>& points);

using FitFunction = std::function<std::unique_ptr<DeviceModel>(const std::vector<traces::ProfilePoint>&)>;
// The folds cross_validate uses for `n` points when asked for `folds` (0: leave-one-out up to 30
// points, 10 above; 1: none), at most n.
int cross_validation_folds(int n, int folds);
// Held-out errors: every point is predicted by a model fitted without it (leave-one-out when
// folds == 0 and there are at most 30 points; `folds` interleaved folds otherwise, 10 when 0).
// Returns NaNs with points = 0 when there are fewer than `min_train` + 1 points.
ErrorSummary cross_validate(const std::vector<traces::ProfilePoint>& points, const FitFunction& fit, int folds,
                            int min_train);

// Held-out errors by setting: each distinct knob setting of `points` (a power mode) is predicted by
// a model fitted on the other settings plus `anchors` (always trained on). `per_setting` receives
// each setting's errors. Settings whose fold cannot be fitted are skipped.
struct SettingError {
  std::vector<double> knob;
  ErrorSummary error;
};
ErrorSummary cross_validate_settings(const std::vector<traces::ProfilePoint>& points,
                                     const std::vector<traces::ProfilePoint>& anchors, const FitFunction& fit,
                                     std::vector<SettingError>* per_setting = nullptr);

// The "modes" model's fit for `used` points of a power-mode profile (mode_model.hpp): the GPU-only
// and the cap-term candidates are each scored by leave-one-mode-out cross-validation
// (cross_validate_settings, `anchors` always in training) and the one with the lower sum of time
// and mean-power MAPE is kept. `metrics` and `settings` receive the scores and the choice.
FitFunction mode_fit(const std::vector<traces::ProfilePoint>& used, const std::vector<traces::ProfilePoint>& anchors,
                     const traces::KnobSpace& knob, const traces::DeviceSpec& device,
                     const AnalyticalFitOptions& analytical, std::map<std::string, double>& metrics,
                     std::map<std::string, std::string>& settings);

// A prediction's 1 sigma (relative, per target) from few points and their leave-one-out fits, for a
// model fitted on `points` that predicts the configurations `grid` (the device's grid):
//   sigma^2 = mean_i(r_i e_i) + mean_grid(jackknife variance of the prediction),
// with r_i the in-sample and e_i the leave-one-out log residual of point i. For a linear fit
// r_i = (1 - h_ii) e_i, so r_i e_i = r_i^2 / (1 - h_ii) is an unbiased estimate of the noise that
// does not grow with the leverage h_ii -- plain leave-one-out MAPE does, and on a design of corners
// it overstates the error of interior predictions 2-3x. The jackknife term is the parameters' share
// (what a prediction inherits from the few points), averaged over the grid. NaN per target with
// fewer than `min_train` + 2 points or no such measurement.
//
// The power sigmas are then multiplied by `power_scale`. On the real LoudVA sweeps the estimate
// above is 2-2.5x the held-out power error at every k from 6 to 20: the planner's points are the
// corners of the (f, log b) box -- b = 1 without batching, the extreme clocks -- where the power
// model misses most, so their leave-one-out residuals and the fits' swings overstate the error of
// the interior points a user asks about. kFewPointPowerSigmaScale is chosen leave-one-board-out
// (docs/models.md, "Coverage of the stated uncertainty"; `pacer bench models --real` prints it):
// on each board the scale that puts 68.3% of its held-out power errors inside 1 sigma (geometric
// mean over k = 6, 8, 10, 12, 20) is picked and judged on the other board; the default is the
// geometric mean of the two picks. Re-chosen for the absolute-error power fit (power_loss
// "absolute") from this implementation's full bench run (2026-11-27): Nano 0.36, AGX Xavier 0.53,
// so sqrt(0.36 * 0.53) = 0.44 (an earlier implementation's run gave 0.32, 0.48, so 0.39; with the
// squared fit: 0.41, 0.50, so 0.45). Time needs none (its sigma covers at 58-85% as it is).
// One scale does not serve both boards at k = 8 (Nano 84% inside 1 sigma, above the band): the
// unscaled sigma is about the same on both while their errors are not, and neither part nor any
// variant tried reads a board's level from its k points (docs/models.md, "Reading the board's
// error level from its k points").
inline constexpr double kFewPointPowerSigmaScale = 0.44;
struct TargetSigmas {
  double time_rel = traces::kNaN;
  double power_mean_rel = traces::kNaN;
  double power_peak_rel = traces::kNaN;
  // The mean-power sigma's two parts before the scale: sqrt(mean_i(r_i e_i)) and sqrt(mean_grid(jackknife
  // variance)), so power_mean_rel = power_scale * sqrt(noise^2 + jackknife^2). What `pacer bench models
  // --real` reads to show which part carries a board's error level (docs/models.md).
  double power_mean_noise_rel = traces::kNaN;
  double power_mean_jackknife_rel = traces::kNaN;
};
TargetSigmas few_point_sigma(const std::vector<traces::ProfilePoint>& points, const FitFunction& fit,
                             const std::vector<PlanPoint>& grid, int min_train,
                             double power_scale = kFewPointPowerSigmaScale);

// Writes "<what>_mape_fit" and "<what>_mape_cv" metrics (percent) into the record.
void put_metrics(traces::ModelRecord& record, const ErrorSummary& fit, const ErrorSummary& cv, int cv_folds);

// The measured points a model may use: status "ok" rows only. Throws Error naming the point for a
// NaN, infinite or non-positive time or mean power, a negative peak, a knob of the wrong dimension,
// and (when `device` is given and the knob is gpu_freq) a frequency outside the device's table.
std::vector<traces::ProfilePoint> usable_points(const traces::ProfileTable& table, const traces::DeviceSpec* device);

// Transfer between boards (`pacer calibrate --prior`): the analytical model fitted on another
// board's full sweep regularises a fit on this board's few points. The prior's predictions on this
// board's grid -- clock mapped by f / f_max, time and mean power each scaled by the geometric mean
// ratio measured / prior over the measured points -- join the fit as pseudo-points whose weights
// sum to `weight` points' worth: they settle what the few points leave open (the shape in b and f)
// and give way where the measurements disagree.
// kDefaultTransferWeight was chosen by leave-one-board-out on the two LoudVA sweeps
// (docs/models.md, "Transfer between boards"): among 0.1, 0.25, 0.5, 2 and 8 points, AGX Xavier ->
// Nano picks 0.25 and Nano -> AGX Xavier picks 0.1; each pick, used on the other direction, still
// beats the k points alone there. The prior is weak on purpose: it settles what a few points leave
// open and gives way to any measurement.
inline constexpr double kDefaultTransferWeight = 0.25;
// The weights the joint transfer gate (below) chooses from with each prior candidate, by the same
// leave-one-out, unless a weight is fixed (transfer_weight_grid): a log grid, kTransferWeightStepsPerDecade
// weights per decade from kMaxTransferGridWeight down to kMinTransferGridWeight, not a list tuned to
// the two boards. The top: one point's worth -- a model of another board never counts as more than one
// of this board's measurements (every weight from 1 up hurt on both LoudVA boards). The bottom: a
// thousandth of a point, where the prior no longer moves the time fit (its time predictions on the
// board's grid within 0.07% of the points alone on both LoudVA boards at k = 8: a property of the
// fit, not of held-out errors), so a lower weight would only repeat the points alone in time (the
// 8-point power fit is not fully determined: there the prior's power still moves the Nano's by up
// to 2.5%). The spacing (a decade or half a decade) was chosen leave-one-board-out: each
// direction's pick (by its held-out error) was judged on the other, and both picked half-decades
// (docs/models.md, "The transfer gate, sixth round"). The prior kept below
// kMinTransferGatePoints, the prior always (no gate) and the per-axis gate weigh kDefaultTransferWeight.
inline constexpr double kMaxTransferGridWeight = 1.0;
inline constexpr double kMinTransferGridWeight = 1e-3;
inline constexpr int kTransferWeightStepsPerDecade = 2;
struct TransferPrior {
  std::shared_ptr<const AnalyticalModel> model;  // fitted on the other board's full sweep
  double knob_max_hz = 0;                        // that board's highest GPU clock
  double weight = kDefaultTransferWeight;        // total weight of the pseudo-points, in points
  // The batch-size axis: with scale_batch, this board's b is mapped onto the prior board's range by
  // ln b / ln b_max (b = 1 stays 1, this board's largest b becomes `batch_max`), the prior's
  // prediction interpolated in ln b between whole batch sizes. 0: the prior board's range is unknown.
  int batch_max = 0;  // that board's largest profiled batch size
  bool scale_batch = false;
  // Whether the pseudo-points join the power fits too (false: the time fit only; the power models
  // are fitted on the measured points, with the transferred time model in their coupled terms).
  bool power = true;
};
// The pseudo-points on the grid `freqs_hz` x `batch_sizes` (batch sizes thinned to at most 16,
// log-spaced, ends kept) and their weights. Throws Error without a prior model, measured points or
// a positive weight.
struct PseudoPoints {
  std::vector<traces::ProfilePoint> points;
  std::vector<double> weight;
};
PseudoPoints transfer_pseudo_points(const TransferPrior& prior, double target_max_hz,
                                    const std::vector<traces::ProfilePoint>& measured,
                                    const std::vector<double>& freqs_hz, const std::vector<int>& batch_sizes);
// The analytical fit of `measured` with the prior's pseudo-points (options: V(f) already chosen;
// under the absolute power loss the pseudo-points keep their weight and a squared loss,
// FitExtras::fixed_weight: they are a least-squares prior).
std::unique_ptr<AnalyticalModel> fit_analytical_with_prior(const std::vector<traces::ProfilePoint>& measured,
                                                           const AnalyticalFitOptions& options,
                                                           const TransferPrior& prior, double target_max_hz,
                                                           const std::vector<double>& freqs_hz,
                                                           const std::vector<int>& batch_sizes);

// The transfer gate (`pacer calibrate --prior`, on unless forced): which candidate (TransferChoice
// below) fits this board's k points -- the k points alone, the prior as above, the prior with its b
// axis scaled (TransferPrior::scale_batch), each prior for time and power or for time only
// (TransferPrior::power) -- is decided by leave-one-out on the k points: each candidate is refitted
// k times without one point (the prior's affine maps too) and scored on it.
// - TransferGateMode::joint (the default): one candidate for the whole model, the lowest time +
//   mean-power MAPE (ties: the earlier in kTransferChoices). With `weights` (calibrate:
//   transfer_weight_grid() unless a weight is given) each prior candidate is scored at each weight and
//   the lowest (candidate, weight) wins (ties: the earlier weight); without, at TransferPrior::weight.
// - TransferGateMode::per_axis: the time model and the power model (V(f), mean and peak power) each
//   take their own candidate: time the lowest leave-one-out time MAPE, then power the lowest
//   leave-one-out mean-power MAPE paired with that time model (power's coupled energy terms divide
//   by t(f, b)); combined by combine_transfer_axes. It wins where the prior carries one axis and not
//   the other (Transfer.TheGateTakesThePriorForTimeAndThePointsForPowerWhenOnlyTimeTransfers); it
//   uses TransferPrior::weight (no weight grid) and the three candidates that carry both axes. On
//   the two LoudVA boards at k = 8 leave-one-out on the planner's 8 corner points picks the wrong
//   axis both ways and it loses to the joint gate (docs/models.md, "Transfer between boards"), so
//   it is an option, not the default.
// The choices are fitted on all k points. Below kMinTransferGatePoints the gate is not trusted and
// the prior is kept: the leave-one-out folds would train the k points alone on fewer points than
// the analytical model needs (kMinAnalyticalPoints), so the candidates cannot all be scored. The
// constant follows from that count; nothing was tuned (docs/models.md, "Transfer between boards").
inline constexpr int kMinAnalyticalPoints = 4;
inline constexpr int kMinTransferGatePoints = kMinAnalyticalPoints + 1;
// The candidates: the points alone; the prior (b as it is, or scaled), its pseudo-points joining
// the time and power fits; the same joining the time fit only (TransferPrior::power false: the power
// models fitted on the points, with the transferred time model in their coupled terms).
enum class TransferChoice { alone, prior, prior_scaled_b, prior_time_only, prior_scaled_b_time_only };
inline constexpr TransferChoice kTransferChoices[] = {TransferChoice::alone, TransferChoice::prior,
                                                      TransferChoice::prior_scaled_b, TransferChoice::prior_time_only,
                                                      TransferChoice::prior_scaled_b_time_only};
// "alone" | "prior" | "prior-scaled-b" | "prior-time-only" | "prior-scaled-b-time-only"
std::string to_string(TransferChoice choice);
bool scales_batch(TransferChoice choice);     // prior-scaled-b and prior-scaled-b-time-only
bool transfers_power(TransferChoice choice);  // prior and prior-scaled-b
enum class TransferGateMode { joint, per_axis };
std::string to_string(TransferGateMode mode);  // "joint" | "per-axis"
// The mode named `name` ("joint" | "per-axis"); throws OptionError("prior-gate") for another.
TransferGateMode parse_transfer_gate_mode(const std::string& name);
// The record's transfer_choice: the candidate's name when both axes took it, else
// "time <candidate>, power <candidate>".
std::string transfer_label(TransferChoice time, TransferChoice power);
struct TransferGate {
  TransferGateMode mode = TransferGateMode::joint;
  TransferChoice time = TransferChoice::prior;   // whose time model is kept
  TransferChoice power = TransferChoice::prior;  // whose V(f) and power models are kept (joint: the same)
  bool trusted = false;                          // false below kMinTransferGatePoints: the prior kept unscored
  // Leave-one-out errors per candidate behind the choice (when trusted): joint, those of loo_own;
  // per axis, time_mape of its own time model and power_mean_mape of its power model paired with the
  // chosen time model.
  std::map<TransferChoice, ErrorSummary> loo;
  // Leave-one-out errors of each candidate on its own (its time and power models together).
  std::map<TransferChoice, ErrorSummary> loo_own;
  std::unique_ptr<AnalyticalModel> model;  // the choices fitted on every measured point
  // The prior's weight the chosen fit uses (joint with a weight grid: chosen with the candidate; else
  // TransferPrior::weight), and per prior candidate the weight behind its score in `loo`.
  double weight = kDefaultTransferWeight;
  std::map<TransferChoice, double> loo_weight;
  std::string label() const { return transfer_label(time, power); }
};
// One candidate fitted on `measured` (alone ignores the prior).
std::unique_ptr<AnalyticalModel> fit_transfer_candidate(TransferChoice choice,
                                                        const std::vector<traces::ProfilePoint>& measured,
                                                        const AnalyticalFitOptions& options, const TransferPrior& prior,
                                                        double target_max_hz, const std::vector<double>& freqs_hz,
                                                        const std::vector<int>& batch_sizes);
// The time model of `time_model` with the V(f) and mean and peak power models of `power_model`
// (parameters, their standard errors and the time form's setting each from its own fit).
std::unique_ptr<AnalyticalModel> combine_transfer_axes(const AnalyticalModel& time_model,
                                                       const AnalyticalModel& power_model);
// The candidates `time` and `power` fitted on `measured` and combined (one fit when they agree).
std::unique_ptr<AnalyticalModel> fit_transfer(TransferChoice time, TransferChoice power,
                                              const std::vector<traces::ProfilePoint>& measured,
                                              const AnalyticalFitOptions& options, const TransferPrior& prior,
                                              double target_max_hz, const std::vector<double>& freqs_hz,
                                              const std::vector<int>& batch_sizes);
// The gate above. Throws Error as transfer_pseudo_points does.
TransferGate choose_transfer(const std::vector<traces::ProfilePoint>& measured, const AnalyticalFitOptions& options,
                             const TransferPrior& prior, double target_max_hz, const std::vector<double>& freqs_hz,
                             const std::vector<int>& batch_sizes, TransferGateMode mode = TransferGateMode::joint,
                             const std::vector<double>& weights = {});
// The log grid of weights above, descending (choose_transfer's `weights`).
std::vector<double> transfer_weight_grid();
// The record's metric holding candidate `choice`'s leave-one-out MAPE of `target` ("time",
// "power_mean"; TransferGate::loo), and one line describing a calibrated record's transfer ("" without
// a prior; the record's setting "transfer_gate_mode" says how the gate chose).
std::string transfer_loo_metric(TransferChoice choice, const std::string& target);
// The record's metric holding the weight (points) behind prior candidate `choice`'s score.
std::string transfer_weight_metric(TransferChoice choice);
std::string describe_transfer(const traces::ModelRecord& record);

struct CalibrationOptions {
  // A calibrated kind (traces::is_calibrated); analytical on a power-mode profile means modes.
  traces::ModelKind model = traces::ModelKind::analytical;
  int points = 0;  // 0: every usable point; k: the k points the planner picks
  AnalyticalFitOptions analytical;
  LearnedOptions learned;
  // Learned transfer: the reference workload's full profile (null: train from scratch).
  const traces::ProfileTable* reference = nullptr;
  std::string reference_name;
  int cv_folds = 0;  // see cross_validate; 1 disables cross-validation
  // Model "modes": a GPU-frequency profile of the same workload on the board, measured under its
  // maxima with the GPU clock pinned (a MAXN sweep); its points join every fit and are never held out.
  const traces::ProfileTable* frequency_profile = nullptr;
  std::string frequency_profile_name;
  // Analytical: transfer from another board (TransferPrior). `prior` is that board's full sweep of
  // the same workload (GPU-frequency knob), `prior_device` its device (V(f) table, f_max; null: the
  // sweep's highest clock and a fitted V(f)).
  const traces::ProfileTable* prior = nullptr;
  const traces::DeviceSpec* prior_device = nullptr;
  std::string prior_name;
  double prior_weight_points = kDefaultTransferWeight;
  // The joint gate chooses the weight from transfer_weight_grid() (false: prior_weight_points, fixed).
  bool prior_weight_by_gate = true;
  bool transfer_gate = true;  // false: always the prior (TransferChoice::prior), no leave-one-out
  TransferGateMode transfer_gate_mode = TransferGateMode::joint;
};

struct Calibration {
  std::unique_ptr<DeviceModel> model;
  traces::ModelRecord record;              // what to store (metrics, settings, used points)
  std::vector<traces::ProfilePoint> used;  // the points the model was fitted on
  std::vector<traces::ProfilePoint> all;   // every usable point of the profile
};

// Throws before any work what calibrate would throw on its options: a profile with no usable point,
// a model that does not apply to its knob, pacer::SettingError("points") for fewer points than the model
// needs or more than the profile has, and check_fit_options for the analytical fit's options.
void check_calibration(const traces::ProfileTable& table, const traces::DeviceSpec* device,
                       const CalibrationOptions& options);

// Fits the chosen model. Throws what check_calibration throws, and Error for a reference that is
// missing or uses another knob.
Calibration calibrate(const traces::ProfileTable& table, const traces::DeviceSpec* device,
                      const CalibrationOptions& options);

// Analytical V(f) by cross-validation: with a catalog table and voltage "auto", the catalog curve and a
// fitted one are each cross-validated on `points` and the one with the lower held-out mean-power
// error is returned (as "catalog" or "fit"; the catalog wins ties and when too few points allow no
// cross-validation). `why` receives the two errors. Other settings are returned unchanged.
AnalyticalFitOptions choose_voltage(const std::vector<traces::ProfilePoint>& points,
                                    const AnalyticalFitOptions& options, int cv_folds, std::string* why = nullptr);

// One row per measured point, for anyone to score the model: the knob values (one column per
// dimension, unit in the header), b, used_for_fit (0/1), and measured and predicted time per
// mini-batch, mean power and peak power (empty where absent).
std::string predictions_csv(const DeviceModel& model, const traces::KnobSpace& knob,
                            const std::vector<traces::ProfilePoint>& all,
                            const std::vector<traces::ProfilePoint>& used);

// The sensor readings a predicted point's peak stands for: the median power_samples of the measured
// points (status ok, at least one reading) that a model is calibrated on; 0 when none has any. Every
// predicted point carries it (predict_table; Space::from_model through the record's metric
// kPowerSamplesMetric), so explore::feasibility_power_w projects a predicted peak to a run as it
// projects the same point measured (docs/explore.md, "Predicted points").
int64_t stated_power_samples(const std::vector<traces::ProfilePoint>& measured);
inline constexpr const char* kPowerSamplesMetric = "power_samples";
// A calibrated model's stated power samples: its record's kPowerSamplesMetric (0 for an older record
// without it).
int64_t stated_power_samples(const traces::ModelRecord& record);

// The model's prediction for every (knob setting, batch size) of a grid, as a ProfileTable named
// like `measured` with source "pacer calibrate, predicted (<kind>)"; each point's power_samples is
// stated_power_samples(measured.points).
traces::ProfileTable predict_table(const DeviceModel& model, const traces::ProfileTable& measured,
                                   const std::vector<std::vector<double>>& settings,
                                   const std::vector<int>& batch_sizes);

// The quantile level of the held-out peak-power error that the automatic guard band covers
// (explore/decide.hpp): a choice whose predicted peak is this error under the cap stays under it
// in 19 of 20 cases (docs/explore.md says why 95%).
inline constexpr double kPeakErrorQuantile = 0.95;
// The kPeakErrorQuantile-quantile of a calibrated model's held-out relative peak-power error (mean
// power with `peak` false), as a fraction: the record's metric `power_peak_abs_err_q95_cv`
// (`power_mean_abs_err_q95_cv`; calibration stores the quantile of the cross-validated errors, R's
// type 7); for an older record, that quantile of a zero-mean Gaussian whose mean absolute error is
// the record's `power_peak_mape_cv` (`power_mean_mape_cv`): 1.96 * sqrt(pi/2) * MAPE. NaN when the
// record has neither.
double peak_error_quantile(const traces::ModelRecord& record, bool peak = true);

// The name of the predicted table that calibration writes beside measured profile `measured_name`
// ("<name>-predicted"): the model's output for a whole grid, never a measurement.
std::string predicted_profile_name(const std::string& measured_name);
// The measured profile's name behind predicted table `predicted_name` (the inverse of the above).
std::string measured_profile_name(const std::string& predicted_name);
// Whether `profile_name` names such a predicted table.
bool is_predicted_profile_name(const std::string& profile_name);

// "<workload>@<device>:<kind>" with '/' replaced (record names may not contain '/').
std::string model_record_name(const std::string& workload, const std::string& device, traces::ModelKind kind);

}  // namespace pacer::models
