#include "models/calibrate.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numbers>
#include <optional>
#include <set>
#include <string_view>

#include "base/error.hpp"
#include "base/stats.hpp"
#include "models/interpolating.hpp"
#include "models/mode_model.hpp"
#include "models/planner.hpp"
#include "models/uncertainty.hpp"

namespace pacer::models {

using traces::KnobKind;
using traces::ModelKind;

namespace {

// The largest number of linear parameters nnls takes (the models have at most 8, plus extra
// columns); its work matrices live on the stack up to this size.
constexpr Eigen::Index kNnlsMaxParams = 12;
using NnlsMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, 0, kNnlsMaxParams, kNnlsMaxParams>;
using NnlsVector = Eigen::Matrix<double, Eigen::Dynamic, 1, 0, kNnlsMaxParams, 1>;

// The minimiser of x·G·x/2 - h·x on the passive set (the other coordinates held at 0), in full length.
NnlsVector passive_minimiser(const NnlsMatrix& g, const NnlsVector& h, const std::array<bool, kNnlsMaxParams>& passive) {
  const Eigen::Index p = g.rows();
  std::array<Eigen::Index, kNnlsMaxParams> idx{};
  Eigen::Index m = 0;
  for (Eigen::Index j = 0; j < p; ++j)
    if (passive[static_cast<size_t>(j)]) idx[static_cast<size_t>(m++)] = j;
  NnlsMatrix gs(m, m);
  NnlsVector hs(m);
  for (Eigen::Index r = 0; r < m; ++r) {
    hs(r) = h(idx[static_cast<size_t>(r)]);
    for (Eigen::Index c = 0; c < m; ++c) gs(r, c) = g(idx[static_cast<size_t>(r)], idx[static_cast<size_t>(c)]);
  }
  const Eigen::LDLT<NnlsMatrix> ldlt(gs);
  const NnlsVector zs = ldlt.solve(hs);
  NnlsVector z = NnlsVector::Zero(p);
  for (Eigen::Index r = 0; r < m; ++r) z(idx[static_cast<size_t>(r)]) = zs(r);
  return z;
}

}  // namespace

Eigen::VectorXd nnls(const Eigen::MatrixXd& a, const Eigen::VectorXd& y, const Eigen::VectorXd& ridge,
                     double* objective) {
  const Eigen::Index p = a.cols();
  if (p > kNnlsMaxParams)
    throw Error(fmt::format("nnls: {} parameters is more than the {} the solver supports", p, kNnlsMaxParams));
  NnlsMatrix g = a.transpose() * a;
  g.diagonal() += ridge;
  const NnlsVector h = a.transpose() * y;
  const auto finish = [&](const NnlsVector& x) -> Eigen::VectorXd {
    if (objective) *objective = (a * x - y).squaredNorm() + x.dot(ridge.cwiseProduct(x));
    return x;
  };
  const Eigen::LDLT<NnlsMatrix> full(g);
  const NnlsVector unconstrained = full.solve(h);
  if (full.info() == Eigen::Success && unconstrained.allFinite() && (unconstrained.array() >= 0).all())
    return finish(unconstrained);
  // Lawson and Hanson's active-set method on the normal equations: G is positive definite (the
  // ridge), so the optimum is unique and is the point where every held-at-0 coordinate's gradient
  // h - G·x is <= 0 and the free ones solve their own system. Each round frees the coordinate of
  // steepest descent, then steps towards its passive set's minimiser, holding at 0 whatever
  // reaches 0 on the way. A coordinate whose freeing the solve contradicts at once (a gradient at
  // rounding level) is left out until x moves again, so the method cannot cycle on it.
  std::array<bool, kNnlsMaxParams> passive{}, refused{};
  NnlsVector x = NnlsVector::Zero(p);
  // From x (feasible, 0 off the passive set) to the passive set's minimiser, holding at 0 the
  // coordinates that reach 0 on the way. False, with x and the passive set as before, when the
  // coordinate `entered` (just freed; -1: none) would go negative at once.
  const auto settle = [&](Eigen::Index entered) {
    for (bool first = true;; first = false) {
      const NnlsVector z = passive_minimiser(g, h, passive);
      bool feasible = true;
      for (Eigen::Index j = 0; j < p; ++j) feasible = feasible && (!passive[static_cast<size_t>(j)] || z(j) > 0);
      if (feasible) {
        x = z;
        return true;
      }
      if (first && entered >= 0 && z(entered) <= 0) {
        passive[static_cast<size_t>(entered)] = false;
        return false;
      }
      // Step from x towards z as far as x stays >= 0; the first coordinate to reach 0 leaves.
      double alpha = 1;
      Eigen::Index leave = -1;
      for (Eigen::Index j = 0; j < p; ++j)
        if (passive[static_cast<size_t>(j)] && z(j) <= 0) {
          // x(j) >= 0 >= z(j): both 0 is a step of 0 (not 0 / 0).
          const double step = x(j) > z(j) ? x(j) / (x(j) - z(j)) : 0.0;
          if (leave < 0 || step < alpha) alpha = step, leave = j;
        }
      x += alpha * (z - x);
      for (Eigen::Index j = 0; j < p; ++j)
        if (passive[static_cast<size_t>(j)] && (j == leave || (x(j) <= 0 && z(j) <= 0))) {
          passive[static_cast<size_t>(j)] = false;
          x(j) = 0;
        }
    }
  };
  // Warm start: most fits bind few constraints, so first free every coordinate the unconstrained
  // minimiser has positive (from x = 0, settle drops those that its minimiser drives negative).
  for (Eigen::Index j = 0; j < p; ++j) passive[static_cast<size_t>(j)] = unconstrained(j) > 0;
  settle(-1);
  const double h_scale = h.cwiseAbs().maxCoeff();
  const double g_scale = g.cwiseAbs().maxCoeff();
  constexpr double kTolerance = 64 * std::numeric_limits<double>::epsilon();
  for (int round = 0; round < 4 * kNnlsMaxParams; ++round) {
    const NnlsVector grad = h - g * x;
    const double tol = kTolerance * static_cast<double>(p) * (h_scale + g_scale * x.cwiseAbs().maxCoeff());
    Eigen::Index enter = -1;
    for (Eigen::Index j = 0; j < p; ++j) {
      const auto sj = static_cast<size_t>(j);
      if (!passive[sj] && !refused[sj] && grad(j) > tol && (enter < 0 || grad(j) > grad(enter))) enter = j;
    }
    if (enter < 0) break;
    passive[static_cast<size_t>(enter)] = true;
    if (settle(enter))
      refused.fill(false);
    else
      refused[static_cast<size_t>(enter)] = true;
  }
  return finish(x);
}

ErrorSummary mape(const DeviceModel& model, const std::vector<traces::ProfilePoint>& points) {
  double st = 0, sm = 0, sp = 0;
  int nt = 0, nm = 0, np = 0;
  for (const auto& p : points) {
    const auto pred = model.predict(p.knob, p.batch_size);
    if (std::isfinite(p.time_per_batch_mean_s) && p.time_per_batch_mean_s > 0) {
      st += std::abs(pred.time_per_batch_s / p.time_per_batch_mean_s - 1);
      ++nt;
    }
    if (std::isfinite(p.power_mean_w) && p.power_mean_w > 0) {
      sm += std::abs(pred.power_mean_w / p.power_mean_w - 1);
      ++nm;
    }
    if (std::isfinite(p.power_peak_w) && p.power_peak_w > 0 && std::isfinite(pred.power_peak_w)) {
      sp += std::abs(pred.power_peak_w / p.power_peak_w - 1);
      ++np;
    }
  }
  ErrorSummary e;
  e.points = static_cast<int>(points.size());
  if (nt) e.time_mape = 100 * st / nt;
  if (nm) e.power_mean_mape = 100 * sm / nm;
  if (np) e.power_peak_mape = 100 * sp / np;
  return e;
}

namespace {

// Errors of several held-out sets pooled into one, each set weighted by its points (the error of
// every held-out point alike); a figure no set has stays NaN.
struct PooledErrors {
  double time = 0, mean = 0, peak = 0;
  int time_n = 0, mean_n = 0, peak_n = 0, points = 0;
  void add(const ErrorSummary& e) {
    points += e.points;
    const auto one = [&](double v, double& sum, int& n) {
      if (std::isfinite(v)) {
        sum += v * e.points;
        n += e.points;
      }
    };
    one(e.time_mape, time, time_n);
    one(e.power_mean_mape, mean, mean_n);
    one(e.power_peak_mape, peak, peak_n);
  }
  ErrorSummary summary() const {
    ErrorSummary out;
    out.points = points;
    if (time_n) out.time_mape = time / time_n;
    if (mean_n) out.power_mean_mape = mean / mean_n;
    if (peak_n) out.power_peak_mape = peak / peak_n;
    return out;
  }
};

}  // namespace

int cross_validation_folds(int n, int folds) {
  if (folds == 1) return 1;
  return std::min(folds <= 0 ? (n <= 30 ? n : 10) : folds, n);
}

ErrorSummary cross_validate(const std::vector<traces::ProfilePoint>& points, const FitFunction& fit, int folds,
                            int min_train) {
  const int n = static_cast<int>(points.size());
  if (folds == 1 || n < min_train + 1) return {};
  folds = cross_validation_folds(n, folds);
  PooledErrors pooled;
  std::vector<double> peak_errors, mean_errors;
  for (int fold = 0; fold < folds; ++fold) {
    std::vector<traces::ProfilePoint> train, test;
    for (int i = 0; i < n; ++i) (i % folds == fold ? test : train).push_back(points[static_cast<size_t>(i)]);
    if (static_cast<int>(train.size()) < min_train) continue;
    std::unique_ptr<DeviceModel> model;
    try {
      model = fit(train);
    } catch (const Error& e) {
      // A fold can leave a model unidentifiable (say, one frequency left); it then predicts nothing.
      spdlog::debug("cross-validation fold {} skipped: {}", fold, e.what());
      continue;
    }
    pooled.add(mape(*model, test));
    for (const auto& p : test) {
      const auto predicted = model->predict(p.knob, p.batch_size);
      if (p.power_peak_w > 0 && std::isfinite(predicted.power_peak_w))
        peak_errors.push_back(std::abs(predicted.power_peak_w / p.power_peak_w - 1));
      if (p.power_mean_w > 0 && std::isfinite(predicted.power_mean_w))
        mean_errors.push_back(std::abs(predicted.power_mean_w / p.power_mean_w - 1));
    }
  }
  auto out = pooled.summary();
  out.power_peak_abs_errors = std::move(peak_errors);
  out.power_mean_abs_errors = std::move(mean_errors);
  return out;
}

TargetSigmas few_point_sigma(const std::vector<traces::ProfilePoint>& points, const FitFunction& fit,
                             const std::vector<PlanPoint>& grid, int min_train, double power_scale) {
  TargetSigmas out;
  const size_t n = points.size();
  if (static_cast<int>(n) < min_train + 2 || grid.empty()) return out;
  const auto logs = [](const Prediction& p) {
    return std::array<double, 3>{std::log(p.time_per_batch_s), std::log(p.power_mean_w), std::log(p.power_peak_w)};
  };
  const auto measured = [](const traces::ProfilePoint& p) {
    return std::array<double, 3>{std::log(p.time_per_batch_mean_s), std::log(p.power_mean_w), std::log(p.power_peak_w)};
  };
  const auto full = fit(points);
  std::array<double, 3> noise{0, 0, 0};
  std::array<int, 3> noise_n{0, 0, 0};
  std::vector<std::vector<std::array<double, 3>>> jack;  // per leave-one-out model, per grid point
  for (size_t i = 0; i < n; ++i) {
    auto train = points;
    train.erase(train.begin() + static_cast<std::ptrdiff_t>(i));
    std::unique_ptr<DeviceModel> m;
    try {
      m = fit(train);
    } catch (const Error& e) {
      spdlog::debug("few-point sigma: leaving out point {} leaves no model: {}", i, e.what());
      continue;
    }
    const auto y = measured(points[i]);
    const auto r = logs(full->predict(points[i].knob, points[i].batch_size));
    const auto e = logs(m->predict(points[i].knob, points[i].batch_size));
    for (int t = 0; t < 3; ++t) {
      const double ri = r[t] - y[t], ei = e[t] - y[t];
      if (!std::isfinite(ri) || !std::isfinite(ei)) continue;
      // r·e = r² / (1 - h) for a linear fit; never below r² (a constrained fit can move the other way).
      noise[t] += std::max(ri * ei, ri * ri);
      ++noise_n[t];
    }
    std::vector<std::array<double, 3>> row;
    for (const auto& g : grid) row.push_back(logs(m->predict(g.knob, g.batch_size)));
    jack.push_back(std::move(row));
  }
  const double nj = static_cast<double>(jack.size());
  if (jack.size() < 2) return out;
  std::array<double, 3> var{0, 0, 0};
  std::array<int, 3> var_n{0, 0, 0};
  for (size_t g = 0; g < grid.size(); ++g)
    for (int t = 0; t < 3; ++t) {
      double mean = 0;
      for (const auto& row : jack) mean += row[g][t] / nj;
      double v = 0;
      for (const auto& row : jack) v += (row[g][t] - mean) * (row[g][t] - mean);
      if (!std::isfinite(v)) continue;
      var[t] += v * (nj - 1) / nj;  // the jackknife variance
      ++var_n[t];
    }
  double* targets[3] = {&out.time_rel, &out.power_mean_rel, &out.power_peak_rel};
  for (int t = 0; t < 3; ++t)
    if (noise_n[t] >= 2 && var_n[t] > 0)
      *targets[t] = (t == 0 ? 1.0 : power_scale) * std::sqrt(noise[t] / noise_n[t] + var[t] / var_n[t]);
  if (std::isfinite(out.power_mean_rel)) {
    out.power_mean_noise_rel = std::sqrt(noise[1] / noise_n[1]);
    out.power_mean_jackknife_rel = std::sqrt(var[1] / var_n[1]);
  }
  return out;
}

void put_metrics(traces::ModelRecord& record, const ErrorSummary& fit, const ErrorSummary& cv, int cv_folds) {
  record.metrics["time_mape_fit"] = fit.time_mape;
  record.metrics["power_mean_mape_fit"] = fit.power_mean_mape;
  record.metrics["power_peak_mape_fit"] = fit.power_peak_mape;
  record.metrics["fit_points"] = fit.points;
  record.metrics["time_mape_cv"] = cv.time_mape;
  record.metrics["power_mean_mape_cv"] = cv.power_mean_mape;
  record.metrics["power_peak_mape_cv"] = cv.power_peak_mape;
  record.metrics["cv_points"] = cv.points;
  if (!cv.power_peak_abs_errors.empty())
    record.metrics["power_peak_abs_err_q95_cv"] = 100 * base::quantile(cv.power_peak_abs_errors, kPeakErrorQuantile);
  if (!cv.power_mean_abs_errors.empty())
    record.metrics["power_mean_abs_err_q95_cv"] = 100 * base::quantile(cv.power_mean_abs_errors, kPeakErrorQuantile);
  record.metrics["cv_folds"] = cv_folds;
}

namespace {

std::string knob_text(const std::vector<double>& knob, const traces::KnobSpace& space) {
  std::string s;
  for (size_t d = 0; d < knob.size(); ++d) {
    const std::string unit = d < space.dims.size() ? space.dims[d].unit : "";
    if (!s.empty()) s += ", ";
    if (unit == "Hz")
      s += fmt::format("{:g} MHz", knob[d] / 1e6);
    else
      s += fmt::format("{:g} {}", knob[d], unit);
  }
  return s;
}

}  // namespace

std::vector<traces::ProfilePoint> usable_points(const traces::ProfileTable& table, const traces::DeviceSpec* device) {
  std::vector<traces::ProfilePoint> out;
  const bool check_freq = device && table.knob.kind == traces::KnobKind::gpu_freq && !device->gpu_freqs_hz.empty();
  for (const auto& p : table.points) {
    if (p.status != "ok") continue;
    const std::string where =
        fmt::format("profile '{}' point ({}, b = {})", table.workload, knob_text(p.knob, table.knob), p.batch_size);
    if (p.knob.size() != table.knob.dims.size())
      throw Error(fmt::format("{} has {} knob values but the knob '{}' has {} dimensions", where, p.knob.size(),
                              table.knob.kind, table.knob.dims.size()));
    for (double k : p.knob)
      if (!std::isfinite(k) || k < 0) throw Error(fmt::format("{} has an invalid knob value", where));
    if (p.batch_size < 1) throw Error(fmt::format("{} has a batch size below 1", where));
    if (!std::isfinite(p.time_per_batch_mean_s) || p.time_per_batch_mean_s <= 0)
      throw Error(
          fmt::format("{} has time per batch {} s (NaN, infinite or not positive): re-profile the point or "
                      "mark its status 'skipped: <why>'",
                      where, p.time_per_batch_mean_s));
    if (!std::isfinite(p.power_mean_w) || p.power_mean_w <= 0)
      throw Error(
          fmt::format("{} has mean power {} W (NaN, infinite or not positive): re-profile the point or mark "
                      "its status 'skipped: <why>'",
                      where, p.power_mean_w));
    if (!std::isnan(p.power_peak_w) && (!std::isfinite(p.power_peak_w) || p.power_peak_w < 0))
      throw Error(fmt::format("{} has peak power {} W (negative or infinite)", where, p.power_peak_w));
    if (check_freq) {
      const double f = p.knob[0];
      const bool known = std::any_of(device->gpu_freqs_hz.begin(), device->gpu_freqs_hz.end(),
                                     [&](double g) { return std::abs(g - f) <= 1e-6 * g; });
      if (!known)
        throw Error(fmt::format(
            "{}: {:g} MHz is not in {}'s frequency table ({:g}-{:g} MHz); was the profile "
            "measured on another device? name that device",
            where, f / 1e6, device->name, device->gpu_freqs_hz.front() / 1e6, device->gpu_freqs_hz.back() / 1e6));
    }
    out.push_back(p);
  }
  return out;
}

std::string model_record_name(const std::string& workload, const std::string& device, traces::ModelKind kind) {
  std::string name = fmt::format("{}@{}:{}", workload, device.empty() ? "unknown" : device, kind);
  std::replace(name.begin(), name.end(), '/', '_');
  return name;
}

namespace {
constexpr std::string_view kPredictedSuffix = "-predicted";
}  // namespace

std::string predicted_profile_name(const std::string& measured_name) {
  return measured_name + std::string(kPredictedSuffix);
}

std::string measured_profile_name(const std::string& predicted_name) {
  return is_predicted_profile_name(predicted_name)
             ? predicted_name.substr(0, predicted_name.size() - kPredictedSuffix.size())
             : predicted_name;
}

bool is_predicted_profile_name(const std::string& profile_name) {
  return profile_name.ends_with(kPredictedSuffix);
}

namespace {

std::vector<double> grid_knob_scale(const traces::ProfileTable& table, const traces::DeviceSpec* device) {
  std::vector<double> scale(table.knob.dims.size(), 0.0);
  for (const auto& p : table.points)
    for (size_t d = 0; d < scale.size() && d < p.knob.size(); ++d) scale[d] = std::max(scale[d], p.knob[d]);
  if (device && table.knob.kind == traces::KnobKind::gpu_freq && device->max_freq_hz() > 0)
    scale[0] = device->max_freq_hz();
  for (auto& s : scale)
    if (!(s > 0)) s = 1;
  return scale;
}

}  // namespace

namespace {

// The model fitted for `asked`: a power mode's analytical model is the model over its caps.
ModelKind fitted_kind(ModelKind asked, const traces::ProfileTable& table) {
  return asked == ModelKind::analytical && table.knob.kind == KnobKind::power_mode ? ModelKind::modes : asked;
}

int min_points_for(ModelKind kind, const traces::ProfileTable& table, const traces::DeviceSpec* device,
                   const CalibrationOptions& options) {
  if (kind == ModelKind::analytical) {
    if (table.knob.kind != KnobKind::gpu_freq)
      throw Error(
          fmt::format("the analytical model applies to a GPU-frequency knob, not '{}': fit the "
                      "interpolating or the learned model",
                      table.knob.kind));
    return kMinAnalyticalPoints;
  }
  if (kind == ModelKind::modes) {
    if (table.knob.kind != KnobKind::power_mode)
      throw Error(fmt::format("the modes model applies to a power-mode profile, not a '{}' one", table.knob.kind));
    if (!device || device->power_modes.empty())
      throw Error(
          fmt::format("the modes model needs the board's nvpmodel modes (their caps): name the device of "
                      "profile '{}'",
                      table.workload));
    return options.frequency_profile ? 1 : 4;
  }
  if (kind == ModelKind::learned) return options.reference ? 2 : 4;
  if (kind == ModelKind::interpolating) {
    if (table.knob.dims.size() != 1)
      throw Error("the interpolating model needs a one-dimensional knob; fit the learned model to power modes");
    return 1;
  }
  throw Error(fmt::format("unknown model '{}' ({})", kind, traces::calibrated_model_names()));
}

std::vector<traces::ProfilePoint> planned_points(const std::vector<traces::ProfilePoint>& all,
                                                 const traces::ProfileTable& table, const CalibrationOptions& options) {
  if (!(options.points > 0 && options.points < static_cast<int>(all.size()))) return all;
  std::vector<PlanPoint> candidates;
  for (const auto& p : all) candidates.push_back({p.knob, p.batch_size});
  PlannerOptions po;
  po.k = options.points;
  po.knob = table.knob;
  po.voltage_table = options.analytical.voltage_table;
  std::vector<traces::ProfilePoint> used;
  for (const auto& c : plan_points(candidates, po))
    for (const auto& p : all)
      if (p.batch_size == c.batch_size && p.knob == c.knob) {
        used.push_back(p);
        break;
      }
  return used;
}

// Held-out errors on the points the planner left out, the used points and their residuals.
void record_errors(traces::ModelRecord& record, const DeviceModel& model, const std::vector<traces::ProfilePoint>& all,
                   const std::vector<traces::ProfilePoint>& used) {
  if (used.size() < all.size()) {
    // The points the planner left out are a true hold-out set.
    std::vector<traces::ProfilePoint> rest;
    for (const auto& p : all)
      if (std::none_of(used.begin(), used.end(),
                       [&](const traces::ProfilePoint& u) { return u.batch_size == p.batch_size && u.knob == p.knob; }))
        rest.push_back(p);
    const auto h = mape(model, rest);
    record.metrics["time_mape_heldout"] = h.time_mape;
    record.metrics["power_mean_mape_heldout"] = h.power_mean_mape;
    record.metrics["power_peak_mape_heldout"] = h.power_peak_mape;
    record.metrics["heldout_points"] = h.points;
  }
  std::string used_text, residuals;
  for (const auto& p : used) {
    const auto pred = model.predict(p.knob, p.batch_size);
    used_text += fmt::format("{}{}|{}", used_text.empty() ? "" : ";", fmt::join(p.knob, ","), p.batch_size);
    residuals += fmt::format("{}{}|{}|{:.4g}|{:.4g}|{:.4g}", residuals.empty() ? "" : ";", fmt::join(p.knob, ","),
                             p.batch_size, pred.time_per_batch_s / p.time_per_batch_mean_s - 1,
                             pred.power_mean_w / p.power_mean_w - 1, pred.power_peak_w / p.power_peak_w - 1);
  }
  record.settings["points"] = used_text;
  record.settings["residuals"] = residuals;
  record.settings["residuals_format"] = "knob|b|time_rel|power_mean_rel|power_peak_rel; rel = predicted/measured - 1";
}

}  // namespace

PseudoPoints transfer_pseudo_points(const TransferPrior& prior, double target_max_hz,
                                    const std::vector<traces::ProfilePoint>& measured,
                                    const std::vector<double>& freqs_hz, const std::vector<int>& batch_sizes) {
  if (!prior.model) throw Error("the transfer prior has no fitted model");
  if (measured.empty() || freqs_hz.empty() || batch_sizes.empty())
    throw Error("transfer needs measured points and a grid of clocks and batch sizes");
  if (!(prior.weight > 0) || !(prior.knob_max_hz > 0) || !(target_max_hz > 0))
    throw Error(fmt::format("transfer weight {:g} and both boards' highest clocks must be positive", prior.weight));
  const double ratio = prior.knob_max_hz / target_max_hz;
  const int target_batch_max = *std::max_element(batch_sizes.begin(), batch_sizes.end());
  if (prior.scale_batch && !(prior.batch_max > 1 && target_batch_max > 1))
    throw Error(
        fmt::format("scaling the prior's batch sizes needs both boards' largest batch size above 1 (got {} "
                    "and {})",
                    prior.batch_max, target_batch_max));
  const double b_exponent =
      prior.scale_batch ? std::log(prior.batch_max) / std::log(static_cast<double>(target_batch_max)) : 1.0;
  const auto at = [&](double f, int b) {
    if (!prior.scale_batch) return prior.model->predict({f * ratio}, b);
    // b -> b^(ln b_max,prior / ln b_max,this): the prediction interpolated in ln b between whole sizes.
    const double bp = std::pow(static_cast<double>(b), b_exponent);
    const int lo = std::max(1, static_cast<int>(std::floor(bp))), hi = std::max(lo, static_cast<int>(std::ceil(bp)));
    const auto a = prior.model->predict({f * ratio}, lo);
    if (hi == lo) return a;
    const auto c = prior.model->predict({f * ratio}, hi);
    const double u = std::log(bp / lo) / std::log(static_cast<double>(hi) / lo);
    Prediction q = a;
    q.time_per_batch_s = (1 - u) * a.time_per_batch_s + u * c.time_per_batch_s;
    q.power_mean_w = (1 - u) * a.power_mean_w + u * c.power_mean_w;
    q.power_peak_w = (1 - u) * a.power_peak_w + u * c.power_peak_w;
    return q;
  };
  // Each target maps affinely, y = a + s·y_prior (idle power and fixed time differ between boards,
  // the dynamic part scales), by least squares on relative residuals over the measured points; a
  // pure scale (geometric mean ratio) when that leaves s <= 0 or a <= -min(y) or has too few points.
  const auto mapping = [&](bool power) {
    Eigen::MatrixXd a(static_cast<Eigen::Index>(measured.size()), 2);
    Eigen::VectorXd ones = Eigen::VectorXd::Ones(a.rows());
    double log_ratio = 0;
    for (size_t i = 0; i < measured.size(); ++i) {
      const auto& p = measured[i];
      const auto q = at(p.knob.at(0), p.batch_size);
      const double y = power ? p.power_mean_w : p.time_per_batch_mean_s;
      const double yp = power ? q.power_mean_w : q.time_per_batch_s;
      a(static_cast<Eigen::Index>(i), 0) = 1.0 / y;
      a(static_cast<Eigen::Index>(i), 1) = yp / y;
      log_ratio += std::log(y / yp);
    }
    std::pair<double, double> scale{0.0, std::exp(log_ratio / static_cast<double>(measured.size()))};
    if (measured.size() < 3) return scale;
    const Eigen::Vector2d c = a.colPivHouseholderQr().solve(ones);
    if (!(c(1) > 0) || !std::isfinite(c(0))) return scale;
    return std::pair<double, double>{c(0), c(1)};
  };
  const auto [at0, st] = mapping(false);
  const auto [ap0, sp] = mapping(true);
  std::vector<int> bs = batch_sizes;
  std::sort(bs.begin(), bs.end());
  bs.erase(std::unique(bs.begin(), bs.end()), bs.end());
  constexpr size_t kMaxBatchSizes = 16;
  if (bs.size() > kMaxBatchSizes) {
    std::vector<int> thin;
    const double lo = std::log(bs.front()), hi = std::log(bs.back());
    for (size_t i = 0; i < kMaxBatchSizes; ++i) {
      const double want = std::exp(lo + (hi - lo) * static_cast<double>(i) / (kMaxBatchSizes - 1));
      const int nearest = *std::min_element(bs.begin(), bs.end(), [&](int a, int b) {
        return std::abs(std::log(a / want)) < std::abs(std::log(b / want));
      });
      if (thin.empty() || thin.back() != nearest) thin.push_back(nearest);
    }
    bs = thin;
  }
  PseudoPoints out;
  for (double f : freqs_hz)
    for (int b : bs) {
      const auto q = at(f, b);
      traces::ProfilePoint p;
      p.knob = {f};
      p.batch_size = b;
      p.time_per_batch_mean_s = at0 + st * q.time_per_batch_s;
      p.power_mean_w = ap0 + sp * q.power_mean_w;
      if (!(p.time_per_batch_mean_s > 0) || !(p.power_mean_w > 0)) continue;  // an affine map below zero
      p.power_peak_w = traces::kNaN;
      out.points.push_back(p);
    }
  if (out.points.empty()) throw Error("the transfer prior maps to no positive time and power on this grid");
  out.weight.assign(out.points.size(), prior.weight / static_cast<double>(out.points.size()));
  return out;
}

std::unique_ptr<AnalyticalModel> fit_analytical_with_prior(const std::vector<traces::ProfilePoint>& measured,
                                                           const AnalyticalFitOptions& options,
                                                           const TransferPrior& prior, double target_max_hz,
                                                           const std::vector<double>& freqs_hz,
                                                           const std::vector<int>& batch_sizes) {
  auto pseudo = transfer_pseudo_points(prior, target_max_hz, measured, freqs_hz, batch_sizes);
  std::vector<traces::ProfilePoint> pts = measured;
  pts.insert(pts.end(), pseudo.points.begin(), pseudo.points.end());
  FitExtras extras;
  extras.weight.assign(measured.size(), 1.0);
  extras.weight.insert(extras.weight.end(), pseudo.weight.begin(), pseudo.weight.end());
  // The prior's pseudo-points weigh a fraction of a point in a least-squares sense: the absolute
  // loss's reweighting (1 / |r|) would let the few measured points, fitted closely, swamp them
  // (Transfer.APriorFromAnotherBoardBeatsTheSameFewPointsAlone: 11% power MAPE), so their weight is
  // kept fixed; the measured points get the absolute loss.
  extras.fixed_weight.assign(measured.size(), false);
  extras.fixed_weight.resize(pts.size(), true);
  if (!prior.power) {
    extras.time_only.assign(measured.size(), false);
    extras.time_only.resize(pts.size(), true);
  }
  auto model = fit_analytical(pts, options, &extras);
  auto record = model->to_record();
  record.settings["transfer_weight"] = fmt::format("{:g}", prior.weight);
  return std::make_unique<AnalyticalModel>(model->params(), std::move(record));
}

std::string to_string(TransferChoice choice) {
  switch (choice) {
    case TransferChoice::alone:
      return "alone";
    case TransferChoice::prior:
      return "prior";
    case TransferChoice::prior_scaled_b:
      return "prior-scaled-b";
    case TransferChoice::prior_time_only:
      return "prior-time-only";
    case TransferChoice::prior_scaled_b_time_only:
      return "prior-scaled-b-time-only";
  }
  return "?";
}

std::string to_string(TransferGateMode mode) { return mode == TransferGateMode::joint ? "joint" : "per-axis"; }

TransferGateMode parse_transfer_gate_mode(const std::string& name) {
  for (const auto m : {TransferGateMode::joint, TransferGateMode::per_axis})
    if (name == to_string(m)) return m;
  throw OptionError("prior-gate", fmt::format("'{}' is not a transfer gate: use joint or per-axis", name));
}

std::string transfer_label(TransferChoice time, TransferChoice power) {
  if (time == power) return to_string(time);
  return fmt::format("time {}, power {}", to_string(time), to_string(power));
}

std::unique_ptr<AnalyticalModel> fit_transfer_candidate(TransferChoice choice,
                                                        const std::vector<traces::ProfilePoint>& measured,
                                                        const AnalyticalFitOptions& options, const TransferPrior& prior,
                                                        double target_max_hz, const std::vector<double>& freqs_hz,
                                                        const std::vector<int>& batch_sizes) {
  if (choice == TransferChoice::alone) return fit_analytical(measured, options);
  TransferPrior p = prior;
  p.scale_batch = scales_batch(choice);
  p.power = transfers_power(choice);
  return fit_analytical_with_prior(measured, options, p, target_max_hz, freqs_hz, batch_sizes);
}

std::unique_ptr<AnalyticalModel> combine_transfer_axes(const AnalyticalModel& time_model,
                                                       const AnalyticalModel& power_model) {
  AnalyticalParams params = power_model.params();
  params.time = time_model.params().time;
  // The record of the power fit with the time fit's standard errors in place of its own (the
  // parameter values are written from `params`; the time model's names all begin with "time_").
  traces::ModelRecord record = power_model.to_record();
  const traces::ModelRecord time_record = time_model.to_record();
  std::map<std::string, double> time_stderr;
  for (size_t i = 0; i < time_record.param_names.size() && i < time_record.param_stderr.size(); ++i)
    time_stderr[time_record.param_names[i]] = time_record.param_stderr[i];
  for (size_t i = 0; i < record.param_names.size() && i < record.param_stderr.size(); ++i)
    if (record.param_names[i].rfind("time_", 0) == 0) {
      const auto it = time_stderr.find(record.param_names[i]);
      record.param_stderr[i] = it == time_stderr.end() ? traces::kNaN : it->second;
    }
  if (const auto tb = time_record.settings.find("time_b_form"); tb != time_record.settings.end())
    record.settings["time_b_form"] = tb->second;
  return std::make_unique<AnalyticalModel>(std::move(params), std::move(record));
}

std::unique_ptr<AnalyticalModel> fit_transfer(TransferChoice time, TransferChoice power,
                                              const std::vector<traces::ProfilePoint>& measured,
                                              const AnalyticalFitOptions& options, const TransferPrior& prior,
                                              double target_max_hz, const std::vector<double>& freqs_hz,
                                              const std::vector<int>& batch_sizes) {
  auto t = fit_transfer_candidate(time, measured, options, prior, target_max_hz, freqs_hz, batch_sizes);
  if (time == power) return t;
  const auto p = fit_transfer_candidate(power, measured, options, prior, target_max_hz, freqs_hz, batch_sizes);
  return combine_transfer_axes(*t, *p);
}

bool scales_batch(TransferChoice choice) {
  return choice == TransferChoice::prior_scaled_b || choice == TransferChoice::prior_scaled_b_time_only;
}

bool transfers_power(TransferChoice choice) {
  return choice == TransferChoice::prior || choice == TransferChoice::prior_scaled_b;
}

std::vector<double> transfer_weight_grid() {
  // 10^(-i / kTransferWeightStepsPerDecade) points, i = 0, 1, ...: from kMaxTransferGridWeight down to
  // kMinTransferGridWeight (both powers of 10, so both ends are on the grid).
  std::vector<double> grid;
  const double decades = std::log10(kMaxTransferGridWeight / kMinTransferGridWeight);
  const int steps = static_cast<int>(std::lround(decades * kTransferWeightStepsPerDecade));
  for (int i = 0; i <= steps; ++i)
    grid.push_back(kMaxTransferGridWeight * std::pow(10.0, -static_cast<double>(i) / kTransferWeightStepsPerDecade));
  return grid;
}

TransferGate choose_transfer(const std::vector<traces::ProfilePoint>& measured, const AnalyticalFitOptions& options,
                             const TransferPrior& prior, double target_max_hz, const std::vector<double>& freqs_hz,
                             const std::vector<int>& batch_sizes, TransferGateMode mode,
                             const std::vector<double>& weights) {
  TransferGate gate;
  gate.mode = mode;
  gate.weight = prior.weight;
  const size_t n = measured.size();
  gate.trusted = static_cast<int>(n) >= kMinTransferGatePoints;
  if (gate.trusted) {
    const bool scalable =
        prior.batch_max > 1 && !batch_sizes.empty() && *std::max_element(batch_sizes.begin(), batch_sizes.end()) > 1;
    std::vector<TransferChoice> candidates;
    // The time-only candidates belong to the joint gate: per axis, the power model already takes
    // its own candidate.
    for (const auto c : kTransferChoices)
      if ((!scales_batch(c) || scalable) && (mode == TransferGateMode::joint || transfers_power(c) ||
                                             c == TransferChoice::alone))
        candidates.push_back(c);
    // The folds of cross_validate: leave-one-out up to 30 points, 10 interleaved folds above. Each
    // candidate is fitted without each fold (null where that fold cannot be fitted, as there);
    // every pairing below reuses these fits.
    const auto n_folds = static_cast<size_t>(cross_validation_folds(static_cast<int>(n), 0));
    using Folds = std::map<TransferChoice, std::vector<std::unique_ptr<AnalyticalModel>>>;
    const auto fit_folds = [&](const TransferPrior& p, const std::vector<TransferChoice>& which, Folds& folds) {
      for (const auto c : which) {
        auto& fc = folds[c];
        fc.clear();
        fc.resize(n_folds);
        for (size_t fold = 0; fold < n_folds; ++fold) {
          std::vector<traces::ProfilePoint> train;
          for (size_t j = 0; j < n; ++j)
            if (j % n_folds != fold) train.push_back(measured[j]);
          if (static_cast<int>(train.size()) < kMinAnalyticalPoints) continue;
          try {
            fc[fold] = fit_transfer_candidate(c, train, options, p, target_max_hz, freqs_hz, batch_sizes);
          } catch (const Error& e) {
            spdlog::debug("transfer gate: {} without fold {} skipped: {}", to_string(c), fold, e.what());
          }
        }
      }
    };
    // Held-out errors of time candidate `t` paired with power candidate `p`.
    const auto loo = [&](const Folds& folds, TransferChoice t, TransferChoice p) {
      PooledErrors pooled;
      for (size_t fold = 0; fold < n_folds; ++fold) {
        const auto& mt = folds.at(t)[fold];
        const auto& mp = folds.at(p)[fold];
        if (!mt || !mp) continue;
        std::vector<traces::ProfilePoint> test;
        for (size_t j = fold; j < n; j += n_folds) test.push_back(measured[j]);
        pooled.add(mape(t == p ? *mt : *combine_transfer_axes(*mt, *mp), test));
      }
      return pooled.summary();
    };
    const auto pick = [&](const auto& score) {
      std::optional<TransferChoice> best;
      double best_score = std::numeric_limits<double>::infinity();
      for (const auto c : candidates)
        if (const double s = score(c); std::isfinite(s) && s < best_score) best_score = s, best = c;
      return best;
    };
    const auto joint_score = [](const ErrorSummary& e) { return e.time_mape + e.power_mean_mape; };
    // With a weight grid (joint gate) each prior candidate is scored at each weight, its score its
    // best over them (the earlier weight on ties); the points alone do not depend on the weight.
    const bool grid = mode == TransferGateMode::joint && !weights.empty();
    Folds folds;
    fit_folds(prior, grid ? std::vector<TransferChoice>{TransferChoice::alone} : candidates, folds);
    for (const auto c : candidates) gate.loo_weight[c] = prior.weight;
    if (grid) {
      gate.loo_own[TransferChoice::alone] = loo(folds, TransferChoice::alone, TransferChoice::alone);
      std::vector<TransferChoice> priors;
      for (const auto c : candidates)
        if (c != TransferChoice::alone) priors.push_back(c);
      for (const double w : weights) {
        TransferPrior p = prior;
        p.weight = w;
        Folds at_w;
        fit_folds(p, priors, at_w);
        for (const auto c : priors) {
          const auto e = loo(at_w, c, c);
          const auto was = gate.loo_own.find(c);
          if (std::isfinite(joint_score(e)) &&
              (was == gate.loo_own.end() || !(joint_score(was->second) <= joint_score(e))))
            gate.loo_own[c] = e, gate.loo_weight[c] = w;
        }
      }
    } else {
      for (const auto c : candidates) gate.loo_own[c] = loo(folds, c, c);
    }
    if (mode == TransferGateMode::joint) {
      const auto best = pick([&](TransferChoice c) {
        const auto it = gate.loo_own.find(c);
        return it == gate.loo_own.end() ? traces::kNaN : joint_score(it->second);
      });
      gate.loo = gate.loo_own;
      if (best) {
        gate.time = gate.power = *best;
        if (*best != TransferChoice::alone) gate.weight = gate.loo_weight.at(*best);
      } else {
        gate.trusted = false;  // no candidate could be scored: keep the prior
      }
    } else if (const auto time = pick([&](TransferChoice c) { return gate.loo_own.at(c).time_mape; })) {
      for (const auto c : candidates) {
        gate.loo[c] = loo(folds, *time, c);
        gate.loo[c].time_mape = gate.loo_own.at(c).time_mape;
      }
      const auto power = pick([&](TransferChoice c) { return gate.loo.at(c).power_mean_mape; });
      gate.time = *time;
      gate.power = power.value_or(*time);
    } else {
      gate.trusted = false;  // no candidate could be scored: keep the prior
    }
  }
  if (!gate.trusted) {
    gate.time = gate.power = TransferChoice::prior;
    gate.weight = prior.weight;
  }
  TransferPrior chosen = prior;
  chosen.weight = gate.weight;
  gate.model = fit_transfer(gate.time, gate.power, measured, options, chosen, target_max_hz, freqs_hz, batch_sizes);
  return gate;
}

std::string transfer_loo_metric(TransferChoice choice, const std::string& target) {
  std::string name = to_string(choice);
  std::replace(name.begin(), name.end(), '-', '_');
  return fmt::format("transfer_{}_{}_mape_loo", name, target);
}

std::string transfer_weight_metric(TransferChoice choice) {
  std::string name = to_string(choice);
  std::replace(name.begin(), name.end(), '-', '_');
  return fmt::format("transfer_{}_weight_points", name);
}

std::string describe_transfer(const traces::ModelRecord& record) {
  if (record.transfer_choice.empty()) return "";
  if (!record.transfer_gate)
    return fmt::format("transfer: the prior always ({}; the gate is off)", record.transfer_choice);
  std::string time, power, both;
  for (const auto c : kTransferChoices) {
    const auto t = record.metrics.find(transfer_loo_metric(c, "time"));
    const auto pw = record.metrics.find(transfer_loo_metric(c, "power_mean"));
    if (t == record.metrics.end() || pw == record.metrics.end()) continue;
    time += fmt::format("{}{} {:.2f}%", time.empty() ? "" : ", ", to_string(c), t->second);
    power += fmt::format("{}{} {:.2f}%", power.empty() ? "" : ", ", to_string(c), pw->second);
    const auto w = record.metrics.find(transfer_weight_metric(c));
    both += fmt::format("{}{} {:.2f} + {:.2f}%{}", both.empty() ? "" : ", ", to_string(c), t->second, pw->second,
                        w == record.metrics.end() ? "" : fmt::format(" ({:g} points)", w->second));
  }
  if (time.empty())
    return fmt::format("transfer: {} (the gate needs {} points for leave-one-out; below that the prior is kept)",
                       record.transfer_choice, kMinTransferGatePoints);
  const auto mode = record.settings.find("transfer_gate_mode");
  if (mode != record.settings.end() && mode->second == to_string(TransferGateMode::per_axis))
    return fmt::format(
        "transfer: {} (chosen per axis by leave-one-out MAPE; time: {}; P mean with the chosen time model: {})",
        record.transfer_choice, time, power);
  const auto weight = record.settings.find("transfer_weight");
  const std::string at =
      record.transfer_choice == to_string(TransferChoice::alone) || weight == record.settings.end()
          ? ""
          : fmt::format(", {} points", weight->second);
  return fmt::format("transfer: {}{} (chosen by leave-one-out time + P mean MAPE: {})", record.transfer_choice, at,
                     both);
}

namespace {

// What calibrate fits from, once its options are checked against the profile.
struct Checked {
  std::vector<traces::ProfilePoint> all;  // the profile's usable points
  ModelKind kind;                         // the model fitted (fitted_kind)
  int min_points;                         // the fewest points it needs
};

Checked checked(const traces::ProfileTable& table, const traces::DeviceSpec* device,
                const CalibrationOptions& options) {
  Checked c{usable_points(table, device), fitted_kind(options.model, table), 0};
  if (c.all.empty())
    throw Error(fmt::format("profile '{}' has no usable point (status 'ok' with time and power)", table.workload));
  c.min_points = min_points_for(c.kind, table, device, options);
  const int wanted = options.points > 0 ? options.points : static_cast<int>(c.all.size());
  if (wanted > static_cast<int>(c.all.size()))
    throw pacer::SettingError("points", fmt::format("{} planned points are more than profile '{}' has usable ({}): "
                                                    "let the planner pick at most {}, or take them all",
                                                    wanted, table.workload, c.all.size(), c.all.size()));
  if (wanted < c.min_points)
    throw pacer::SettingError("points",
                              fmt::format("the {} model needs at least {} points, got {}: let the planner pick {} "
                                          "or more",
                                          c.kind, c.min_points, wanted, c.min_points));
  if (c.kind == ModelKind::analytical || c.kind == ModelKind::modes) check_fit_options(options.analytical);
  return c;
}

}  // namespace

void check_calibration(const traces::ProfileTable& table, const traces::DeviceSpec* device,
                       const CalibrationOptions& options) {
  checked(table, device, options);
}

Calibration calibrate(const traces::ProfileTable& table, const traces::DeviceSpec* device,
                      const CalibrationOptions& options) {
  const auto [all, kind, min_points] = checked(table, device, options);

  Calibration out;
  out.used = planned_points(all, table, options);
  LearnedOptions lopt = options.learned;
  if (lopt.knob_scale.empty()) lopt.knob_scale = grid_knob_scale(table, device);
  std::shared_ptr<LearnedModel> reference;
  if (kind == ModelKind::learned && options.reference) {
    if (!(options.reference->knob == table.knob))
      throw Error(fmt::format("reference profile '{}' uses knob '{}' but '{}' uses '{}'", options.reference_name,
                              options.reference->knob.kind, table.workload, table.knob.kind));
    LearnedOptions ropt = options.learned;
    ropt.knob_scale = grid_knob_scale(*options.reference, nullptr);
    const auto ref_points = usable_points(*options.reference, nullptr);
    spdlog::info("training the reference model on '{}' ({} points)", options.reference_name, ref_points.size());
    reference = train_learned(ref_points, options.reference->knob, ropt);
  }
  FitFunction fit;
  std::string voltage_why;
  AnalyticalFitOptions aopt = options.analytical;
  std::map<std::string, double> extra_metrics;
  std::map<std::string, std::string> extra_settings;
  TransferPrior transfer;
  if (options.prior && kind != ModelKind::analytical)
    throw OptionError("prior", "a transfer prior applies to the analytical model only");
  if (kind == ModelKind::analytical && options.prior) {
    if (!(options.prior->knob == table.knob) || table.knob.kind != traces::KnobKind::gpu_freq)
      throw Error(fmt::format("prior profile '{}' must be a GPU-frequency sweep like '{}'", options.prior_name,
                              table.workload));
    const auto prior_points = usable_points(*options.prior, options.prior_device);
    AnalyticalFitOptions popt = options.analytical;
    popt.voltage_table = options.prior_device ? options.prior_device->voltage_table
                                              : std::vector<traces::VoltagePoint>{};
    if (popt.voltage_table.empty() && popt.voltage == "catalog") popt.voltage = "fit";
    spdlog::info("fitting the transfer prior on '{}' ({} points)", options.prior_name, prior_points.size());
    transfer.model = fit_analytical(prior_points, choose_voltage(prior_points, popt, options.cv_folds));
    double f_prior = 0;
    for (const auto& p : prior_points) f_prior = std::max(f_prior, p.knob.at(0));
    transfer.knob_max_hz = options.prior_device ? options.prior_device->max_freq_hz() : f_prior;
    transfer.weight = options.prior_weight_points;
    for (const auto& p : prior_points) transfer.batch_max = std::max(transfer.batch_max, p.batch_size);
  }
  std::optional<TransferGate> gate;
  if (kind == ModelKind::analytical) {
    aopt = choose_voltage(out.used, options.analytical, options.cv_folds, &voltage_why);
    std::set<double> grid_f;
    for (const auto& p : all) grid_f.insert(p.knob.at(0));
    double f_max = *grid_f.rbegin();
    if (device && device->max_freq_hz() > 0) f_max = device->max_freq_hz();
    const std::vector<double> freqs(grid_f.begin(), grid_f.end());
    const auto bs = table.batch_sizes();
    TransferChoice time = TransferChoice::alone, power = TransferChoice::alone;
    if (transfer.model) {
      time = power = TransferChoice::prior;
      if (options.transfer_gate) {
        const bool grid = options.prior_weight_by_gate && options.transfer_gate_mode == TransferGateMode::joint;
        gate = choose_transfer(out.used, aopt, transfer, f_max, freqs, bs, options.transfer_gate_mode,
                               grid ? transfer_weight_grid() : std::vector<double>{});
        time = gate->time;
        power = gate->power;
        transfer.weight = gate->weight;  // the fit below (and its cross-validation) uses the chosen weight
      }
    }
    fit = [&, freqs, bs, f_max, time, power](const std::vector<traces::ProfilePoint>& pts) -> std::unique_ptr<DeviceModel> {
      return fit_transfer(time, power, pts, aopt, transfer, f_max, freqs, bs);
    };
  } else if (kind == ModelKind::modes) {
    std::vector<traces::ProfilePoint> anchors;
    if (options.frequency_profile) {
      anchors = sweep_as_mode_points(usable_points(*options.frequency_profile, device), table.knob,
                                     traces::mode_maxima(*device));
      extra_settings["frequency_profile"] = options.frequency_profile_name;
    }
    fit = mode_fit(out.used, anchors, table.knob, *device, options.analytical, extra_metrics, extra_settings);
  } else if (kind == ModelKind::learned) {
    fit = [&](const std::vector<traces::ProfilePoint>& pts) -> std::unique_ptr<DeviceModel> {
      return reference ? transfer_learned(*reference, pts, lopt) : train_learned(pts, table.knob, lopt);
    };
  } else {
    fit = [&](const std::vector<traces::ProfilePoint>& pts) -> std::unique_ptr<DeviceModel> {
      return fit_interpolating(pts, table.knob);
    };
  }
  std::unique_ptr<DeviceModel> model = gate ? std::move(gate->model) : fit(out.used);
  traces::ModelRecord record = model->to_record();
  record.name = model_record_name(table.workload, table.device, kind);
  record.workload = table.workload;
  record.device = table.device;
  const int folds = options.cv_folds;
  const auto cv = cross_validate(out.used, fit, folds, min_points);
  const int used_folds = cross_validation_folds(static_cast<int>(out.used.size()), folds);
  put_metrics(record, mape(*model, out.used), cv, used_folds);
  record_errors(record, *model, all, out.used);
  if (kind == ModelKind::analytical && used_folds == static_cast<int>(out.used.size()) && out.used.size() >= 2) {
    // Leave-one-out: the few-point sigma, stored as the MAPE a Gaussian of that sigma shows (basis "loo").
    std::vector<PlanPoint> grid;
    std::vector<std::vector<double>> settings;
    if (device && table.knob.kind == KnobKind::gpu_freq && !device->gpu_freqs_hz.empty())
      for (double f : device->gpu_freqs_hz) settings.push_back({f});
    else
      for (const auto& p : all)
        if (std::find(settings.begin(), settings.end(), p.knob) == settings.end()) settings.push_back(p.knob);
    grid = grid_points(settings, table.batch_sizes());
    const auto s = few_point_sigma(out.used, fit, grid, min_points);
    const double to_mape = 100 * std::sqrt(2 / std::numbers::pi);
    record.metrics["time_mape_loo"] = to_mape * s.time_rel;
    record.metrics["power_mean_mape_loo"] = to_mape * s.power_mean_rel;
    record.metrics["power_peak_mape_loo"] = to_mape * s.power_peak_rel;
  }
  for (const auto& [k, v] : extra_metrics) record.metrics[k] = v;
  for (const auto& [k, v] : extra_settings) record.settings[k] = v;
  record.settings["selection"] = options.points > 0 ? fmt::format("planner k={}", options.points) : "all";
  if (reference) record.settings["reference"] = options.reference_name;
  if (transfer.model) {
    record.settings["prior"] = options.prior_name;
    record.settings["transfer_weight"] = fmt::format("{:g}", transfer.weight);
    record.transfer_gate = options.transfer_gate;
    if (options.transfer_gate) record.settings["transfer_gate_mode"] = to_string(options.transfer_gate_mode);
    record.transfer_choice = gate ? gate->label() : to_string(TransferChoice::prior);
    if (gate && gate->trusted)
      for (const auto& [c, e] : gate->loo) {
        record.metrics[transfer_loo_metric(c, "time")] = e.time_mape;
        record.metrics[transfer_loo_metric(c, "power_mean")] = e.power_mean_mape;
        if (c != TransferChoice::alone && gate->loo_weight.count(c))
          record.metrics[transfer_weight_metric(c)] = gate->loo_weight.at(c);
      }
  }
  if (!voltage_why.empty()) record.settings["voltage_choice"] = voltage_why;
  // After every error metric: the uncertainty is read off them (models/uncertainty.hpp).
  store_uncertainty(record, noise_floor(all), table.floating_clocks);
  if (const int64_t m = stated_power_samples(all); m > 0) record.metrics[kPowerSamplesMetric] = static_cast<double>(m);
  out.model = model_from_record(record);
  out.record = std::move(record);
  out.all = all;
  return out;
}

ErrorSummary cross_validate_settings(const std::vector<traces::ProfilePoint>& points,
                                     const std::vector<traces::ProfilePoint>& anchors, const FitFunction& fit,
                                     std::vector<SettingError>* per_setting) {
  std::vector<std::vector<double>> settings;
  for (const auto& p : points)
    if (std::find(settings.begin(), settings.end(), p.knob) == settings.end()) settings.push_back(p.knob);
  PooledErrors pooled;
  for (const auto& held : settings) {
    std::vector<traces::ProfilePoint> train = anchors, test;
    for (const auto& p : points) (p.knob == held ? test : train).push_back(p);
    std::unique_ptr<DeviceModel> model;
    try {
      model = fit(train);
    } catch (const Error& e) {
      spdlog::debug("leave-one-setting-out fold skipped: {}", e.what());
      continue;
    }
    const auto e = mape(*model, test);
    if (per_setting) per_setting->push_back({held, e});
    pooled.add(e);
  }
  return pooled.summary();
}

AnalyticalFitOptions choose_voltage(const std::vector<traces::ProfilePoint>& points,
                                    const AnalyticalFitOptions& options, int cv_folds, std::string* why) {
  if (options.voltage != "auto" || options.voltage_table.empty()) return options;
  AnalyticalFitOptions catalog = options, fitted = options;
  catalog.voltage = "catalog";
  fitted.voltage = "fit";
  const auto cv = [&](const AnalyticalFitOptions& o) {
    return cross_validate(
        points,
        [&](const std::vector<traces::ProfilePoint>& p) -> std::unique_ptr<DeviceModel> {
          return fit_analytical(p, o);
        },
        cv_folds, 4);
  };
  const auto c = cv(catalog);
  const auto f = cv(fitted);
  const bool use_fit =
      std::isfinite(f.power_mean_mape) && !(std::isfinite(c.power_mean_mape) && c.power_mean_mape <= f.power_mean_mape);
  if (why)
    *why = fmt::format("cross-validated mean-power MAPE: catalog V(f) {:.3g}%, fitted V(f) {:.3g}% -> {}",
                       c.power_mean_mape, f.power_mean_mape, use_fit ? "fit" : "catalog");
  return use_fit ? fitted : catalog;
}

std::string predictions_csv(const DeviceModel& model, const traces::KnobSpace& knob,
                            const std::vector<traces::ProfilePoint>& all,
                            const std::vector<traces::ProfilePoint>& used) {
  std::string out;
  for (const auto& d : knob.dims) out += fmt::format("{}[{}],", d.name, d.unit);
  out +=
      "b,used_for_fit,time_per_batch_measured[s],time_per_batch_predicted[s],power_mean_measured[W],"
      "power_mean_predicted[W],power_peak_measured[W],power_peak_predicted[W]\n";
  const auto num = [](double v) { return std::isfinite(v) ? fmt::format("{:.10g}", v) : std::string(); };
  // Without any peak reading the model's peak is only its mean repeated: leave the column empty.
  const bool has_peak =
      std::any_of(all.begin(), all.end(), [](const traces::ProfilePoint& p) { return std::isfinite(p.power_peak_w); });
  for (const auto& p : all) {
    const bool is_used = std::any_of(used.begin(), used.end(), [&](const traces::ProfilePoint& u) {
      return u.batch_size == p.batch_size && u.knob == p.knob;
    });
    const auto pred = model.predict(p.knob, p.batch_size);
    for (double k : p.knob) out += num(k) + ",";
    out += fmt::format("{},{},{},{},{},{},{},{}\n", p.batch_size, is_used ? 1 : 0, num(p.time_per_batch_mean_s),
                       num(pred.time_per_batch_s), num(p.power_mean_w), num(pred.power_mean_w), num(p.power_peak_w),
                       has_peak ? num(pred.power_peak_w) : std::string());
  }
  return out;
}

double peak_error_quantile(const traces::ModelRecord& record, bool peak) {
  const auto metric = [&](const char* name) {
    const auto it = record.metrics.find(name);
    return it == record.metrics.end() ? traces::kNaN : it->second;
  };
  const char* quantile_metric = peak ? "power_peak_abs_err_q95_cv" : "power_mean_abs_err_q95_cv";
  if (std::isfinite(metric(quantile_metric))) return metric(quantile_metric) / 100;
  const double mape_pct = metric(peak ? "power_peak_mape_cv" : "power_mean_mape_cv");
  if (!std::isfinite(mape_pct)) return traces::kNaN;
  // |e| of a zero-mean Gaussian: P(|e| <= z sigma) = 0.95 at z = 1.96; sigma = MAPE sqrt(pi / 2).
  static_assert(kPeakErrorQuantile == 0.95);
  constexpr double kZ975 = 1.959963984540054;
  return kZ975 * std::sqrt(M_PI / 2) * mape_pct / 100;
}

int64_t stated_power_samples(const std::vector<traces::ProfilePoint>& measured) {
  std::vector<double> counts;
  for (const auto& p : measured)
    if (p.status == "ok" && p.power_samples >= 1) counts.push_back(static_cast<double>(p.power_samples));
  return counts.empty() ? 0 : static_cast<int64_t>(std::llround(base::median(counts)));
}

int64_t stated_power_samples(const traces::ModelRecord& record) {
  const auto it = record.metrics.find(kPowerSamplesMetric);
  return it == record.metrics.end() || !(it->second >= 1) ? 0 : static_cast<int64_t>(std::llround(it->second));
}

traces::ProfileTable predict_table(const DeviceModel& model, const traces::ProfileTable& measured,
                                   const std::vector<std::vector<double>>& settings,
                                   const std::vector<int>& batch_sizes) {
  traces::ProfileTable t;
  t.workload = measured.workload;
  t.device = measured.device;
  t.emulated = measured.emulated;
  t.virtual_time = measured.virtual_time;
  t.knob = measured.knob;
  t.samples_per_epoch = measured.samples_per_epoch;
  t.source = fmt::format("pacer calibrate, predicted ({})", model.kind());
  const int64_t power_samples = stated_power_samples(measured.points);
  for (const auto& s : settings)
    for (int b : batch_sizes) {
      const auto pred = model.predict(s, b);
      traces::ProfilePoint p;
      p.knob = s;
      p.batch_size = b;
      p.time_per_batch_mean_s = pred.time_per_batch_s;
      p.power_mean_w = pred.power_mean_w;
      p.power_peak_w = pred.power_peak_w;
      p.energy_j = pred.power_mean_w * pred.time_per_batch_s;
      p.samples = b;
      p.power_samples = power_samples;
      t.points.push_back(std::move(p));
    }
  return t;
}

}  // namespace pacer::models
