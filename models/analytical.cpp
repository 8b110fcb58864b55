#include "models/analytical.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <set>

#include "base/error.hpp"
#include "models/calibrate.hpp"

namespace pacer::models {

double VoltageCurve::at(double freq_hz) const {
  if (table.empty()) return std::max(floor_v, floor_v + slope_v_per_hz * (freq_hz - knee_hz));
  if (table.size() == 1 || freq_hz <= table.front().freq_hz) return table.front().volt_v;
  for (size_t i = 1; i < table.size(); ++i)
    if (freq_hz <= table[i].freq_hz) {
      const auto& a = table[i - 1];
      const auto& b = table[i];
      return a.volt_v + (freq_hz - a.freq_hz) * (b.volt_v - a.volt_v) / (b.freq_hz - a.freq_hz);
    }
  // Above the table (a user forcing a higher clock): keep rising with the last segment's slope.
  const auto& a = table[table.size() - 2];
  const auto& b = table.back();
  return b.volt_v + (freq_hz - b.freq_hz) * (b.volt_v - a.volt_v) / (b.freq_hz - a.freq_hz);
}

double PowerParams::capacitance(int batch_size) const {
  const double b = batch_size;
  return cap_base_w_per_hz_v2 + cap_sat_w_per_hz_v2 * b / (b + batch_half) + cap_log_w_per_hz_v2 * std::log(b);
}

double PowerParams::at(double freq_hz, double volt_v, int batch_size, const TimeParams& time) const {
  const double b = batch_size;
  const double t = time.at(freq_hz, batch_size);
  const double work = time.work(batch_size);
  return idle_w + leak_w_per_v * volt_v + capacitance(batch_size) * freq_hz * volt_v * volt_v +
         (busy_j_per_cycle_v2 * volt_v * volt_v * work + traffic_j_per_sample * b) / t;
}

double TimeParams::work(int batch_size) const {
  const double b = batch_size;
  return work_cycles + work_per_sample_cycles * b + work_log_cycles * std::log(b);
}

double TimeParams::at(double freq_hz, int batch_size) const {
  const double b = batch_size;
  return fixed_s + fixed_per_sample_s * b + fixed_log_s * std::log(b) + work(batch_size) / freq_hz;
}

namespace {

constexpr const char* kTimeNames[] = {"time_fixed_s",     "time_fixed_per_sample_s",
                                      "time_work_cycles", "time_work_per_sample_cycles",
                                      "time_fixed_log_s", "time_work_log_cycles"};
constexpr int kTimeParams = 6;
constexpr const char* kPowerSuffixes[] = {
    "idle_w",     "leak_w_per_v",        "cap_base_w_per_hz_v2", "cap_sat_w_per_hz_v2",
    "batch_half", "busy_j_per_cycle_v2", "traffic_j_per_sample", "cap_log_w_per_hz_v2"};
constexpr int kPowerParams = 8;

// ---------------------------------------------------------------------------------------------
// Weighted linear fit with non-negative coefficients. Rows are divided by the measurement, so the
// objective is the sum of squared *relative* residuals (the MAPE we are judged on is relative too,
// and times span two orders of magnitude across b).
struct LinearSolve {
  Eigen::VectorXd beta;    // natural units
  Eigen::VectorXd stderr;  // natural units (NaN without spare degrees of freedom)
  double objective = 0;    // relative RSS + priors
  double rss = 0;          // relative RSS alone
};

// `w`: per-row weight (empty: 1), e.g. the pseudo-points of a transfer prior.
LinearSolve solve_relative(const Eigen::MatrixXd& x, const Eigen::VectorXd& y, const std::vector<bool>& shrink,
                           double prior_weight, bool want_stderr, const Eigen::VectorXd& w = {}) {
  const Eigen::Index n = x.rows();
  const Eigen::Index p = x.cols();
  Eigen::MatrixXd a(n, p);
  Eigen::VectorXd ones = Eigen::VectorXd::Ones(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const double sw = w.size() ? std::sqrt(w(i)) : 1.0;
    a.row(i) = x.row(i) * (sw / y(i));
    ones(i) = sw;
  }
  // Column scaling makes the priors and the solver independent of units (Hz vs samples).
  Eigen::VectorXd scale(p);
  for (Eigen::Index j = 0; j < p; ++j) {
    const double rms = std::sqrt(a.col(j).squaredNorm() / static_cast<double>(n));
    scale(j) = rms > 0 ? rms : 1.0;
    a.col(j) /= scale(j);
  }
  Eigen::VectorXd ridge(p);
  // A tiny ridge everywhere keeps every passive-set system positive definite when the data leave a
  // direction undetermined; it is far below any measurement noise.
  for (Eigen::Index j = 0; j < p; ++j) ridge(j) = shrink[static_cast<size_t>(j)] ? prior_weight : 1e-12;
  LinearSolve out;
  const Eigen::VectorXd b = nnls(a, ones, ridge, &out.objective);
  out.rss = (a * b - ones).squaredNorm();
  out.beta = b.cwiseQuotient(scale);
  out.stderr = Eigen::VectorXd::Constant(p, traces::kNaN);
  if (want_stderr) {
    Eigen::Index active = 0;
    for (Eigen::Index j = 0; j < p; ++j) active += b(j) > 0;
    // Weighted rows count as their weight's worth of points.
    const double n_eff = w.size() ? w.sum() : static_cast<double>(n);
    if (n_eff > static_cast<double>(active) + 0.5) {
      const double s2 = out.rss / (n_eff - static_cast<double>(active));
      Eigen::MatrixXd h = a.transpose() * a;
      h.diagonal() += ridge;
      const Eigen::MatrixXd cov = s2 * h.completeOrthogonalDecomposition().pseudoInverse();
      for (Eigen::Index j = 0; j < p; ++j) out.stderr(j) = std::sqrt(std::max(0.0, cov(j, j))) / scale(j);
    }
  }
  return out;
}

// The absolute loss (AnalyticalFitOptions::power_loss) by iteratively reweighted least squares: each
// round weighs a row by its own weight over max(|r|, kAbsoluteLossFloor), r the previous round's
// relative residual, the weights normalised to the rows' total so that the priors weigh as much as
// with the squared loss when every point misses by the same. Rows marked `fixed` (a transfer prior's
// pseudo-points, FitExtras::fixed_weight) keep their weight and their squared loss: they are a
// least-squares prior, and reweighting by 1/|r| would let the measured points, fitted closely,
// swamp them. The objective returned is (sum w|r|)^2 / sum w over the other rows, plus sum w r^2
// over the fixed rows and the priors (= sum w r^2 when every point misses by the same, so both
// losses share a scale); the best round is kept. The squared loss is solve_relative itself.
constexpr int kAbsoluteLossRounds = 40;
LinearSolve solve_loss(const Eigen::MatrixXd& x, const Eigen::VectorXd& y, const std::vector<bool>& shrink,
                       double prior_weight, bool want_stderr, const Eigen::VectorXd& w, bool absolute,
                       const std::vector<bool>& fixed) {
  if (!absolute) return solve_relative(x, y, shrink, prior_weight, want_stderr, w);
  const Eigen::VectorXd base = w.size() ? w : Eigen::VectorXd::Ones(x.rows());
  Eigen::VectorXd free_base = base;  // the reweighted rows' base weights (0 on fixed rows)
  for (size_t i = 0; i < fixed.size(); ++i)
    if (fixed[i]) free_base(static_cast<Eigen::Index>(i)) = 0;
  const double total = free_base.sum();
  const auto residuals = [&](const Eigen::VectorXd& beta) -> Eigen::VectorXd {
    return ((x * beta).cwiseQuotient(y).array() - 1.0).matrix();
  };
  // The absolute objective of a round solved with row weights `rw` (its priors: objective - rss).
  const auto score = [&](const LinearSolve& s) {
    const Eigen::VectorXd r = residuals(s.beta);
    const double l1 = free_base.dot(r.cwiseAbs());
    const double l2_fixed = (base - free_base).dot(r.cwiseAbs2());
    return (total > 0 ? l1 * l1 / total : 0.0) + l2_fixed + (s.objective - s.rss);
  };
  LinearSolve sol = solve_relative(x, y, shrink, prior_weight, false, w);
  Eigen::VectorXd rw = base, best_rw = base;
  LinearSolve best = sol;
  double best_score = score(sol);
  for (int round = 0; round < kAbsoluteLossRounds; ++round) {
    const Eigen::VectorXd r = residuals(sol.beta);
    Eigen::VectorXd free_rw(rw.size());
    for (Eigen::Index i = 0; i < rw.size(); ++i)
      free_rw(i) = free_base(i) / std::max(std::abs(r(i)), kAbsoluteLossFloor);
    if (free_rw.sum() > 0) free_rw *= total / free_rw.sum();
    rw = free_rw + (base - free_base);
    sol = solve_relative(x, y, shrink, prior_weight, false, rw);
    const double now = score(sol);
    const bool settled = now > best_score * (1 - 1e-7);
    if (now < best_score) best = sol, best_score = now, best_rw = rw;
    if (settled) break;
  }
  if (want_stderr) best = solve_relative(x, y, shrink, prior_weight, true, best_rw);
  best.objective = best_score;
  return best;
}

struct Obs {
  double freq_hz;
  int batch;
  double y;
  double share = 1.0;  // powered share of the GPU's TPCs (power-mode caps); compute runs at f * share
  const std::vector<double>* extra = nullptr;  // extra power columns of this point (FitExtras)
  double weight = 1.0;                         // FitExtras::weight
  bool fixed = false;                          // FitExtras::fixed_weight
};

Eigen::VectorXd weights(const std::vector<Obs>& obs) {
  bool any = false;
  Eigen::VectorXd w(static_cast<Eigen::Index>(obs.size()));
  for (size_t i = 0; i < obs.size(); ++i) {
    w(static_cast<Eigen::Index>(i)) = obs[i].weight;
    any = any || obs[i].weight != 1.0;
  }
  return any ? w : Eigen::VectorXd();
}

// The rows whose weight the absolute loss keeps (empty: none).
std::vector<bool> fixed_rows(const std::vector<Obs>& obs) {
  std::vector<bool> out(obs.size());
  bool any = false;
  for (size_t i = 0; i < obs.size(); ++i) any = (out[i] = obs[i].fixed) || any;
  return any ? out : std::vector<bool>{};
}

Eigen::Index extra_columns(const std::vector<Obs>& obs) {
  return obs.empty() || !obs.front().extra ? 0 : static_cast<Eigen::Index>(obs.front().extra->size());
}

// `log_cap`: c(b) = c_base + c_log·ln b (column 3 is f·V²·ln b), else the saturating form.
Eigen::MatrixXd power_design(const std::vector<Obs>& obs, const VoltageCurve& v, double batch_half,
                             const TimeParams& time, bool log_cap) {
  const Eigen::Index k = extra_columns(obs);
  Eigen::MatrixXd x(static_cast<Eigen::Index>(obs.size()), 6 + k);
  for (size_t i = 0; i < obs.size(); ++i) {
    const double f = obs[i].freq_hz;
    const double s = obs[i].share;  // powered-off TPCs neither leak nor switch
    const double volt = v.at(f);
    const double b = obs[i].batch;
    const auto r = static_cast<Eigen::Index>(i);
    x(r, 0) = 1.0;
    x(r, 1) = s * volt;
    x(r, 2) = s * f * volt * volt;
    x(r, 3) = s * f * volt * volt * (log_cap ? std::log(b) : b / (b + batch_half));
    const double t = time.at(f * s, obs[i].batch);
    x(r, 4) = volt * volt * time.work(obs[i].batch) / t;
    x(r, 5) = b / t;
    for (Eigen::Index j = 0; j < k; ++j) x(r, 6 + j) = (*obs[i].extra)[static_cast<size_t>(j)];
  }
  return x;
}

Eigen::VectorXd targets(const std::vector<Obs>& obs) {
  Eigen::VectorXd y(static_cast<Eigen::Index>(obs.size()));
  for (size_t i = 0; i < obs.size(); ++i) y(static_cast<Eigen::Index>(i)) = obs[i].y;
  return y;
}

// Minimises f over [lo, hi] (unimodal near the grid optimum) by golden-section search.
double golden_min(const std::function<double(double)>& f, double lo, double hi, int iterations) {
  const double g = (std::sqrt(5.0) - 1) / 2;
  double c = hi - g * (hi - lo);
  double d = lo + g * (hi - lo);
  double fc = f(c);
  double fd = f(d);
  for (int i = 0; i < iterations; ++i) {
    if (fc < fd) {
      hi = d;
      d = c;
      fd = fc;
      c = hi - g * (hi - lo);
      fc = f(c);
    } else {
      lo = c;
      c = d;
      fc = fd;
      d = lo + g * (hi - lo);
      fd = f(d);
    }
  }
  return fc < fd ? c : d;
}

// Grid search followed by golden-section refinement between the grid neighbours of the best.
double grid_then_golden(const std::function<double(double)>& f, double lo, double hi, int grid, int iterations) {
  std::vector<double> xs(static_cast<size_t>(grid));
  double best = std::numeric_limits<double>::infinity();
  int best_i = 0;
  for (int i = 0; i < grid; ++i) {
    xs[static_cast<size_t>(i)] = lo + (hi - lo) * i / (grid - 1);
    const double v = f(xs[static_cast<size_t>(i)]);
    if (v < best) {
      best = v;
      best_i = i;
    }
  }
  const double a = xs[static_cast<size_t>(std::max(0, best_i - 1))];
  const double b = xs[static_cast<size_t>(std::min(grid - 1, best_i + 1))];
  const double x = golden_min(f, a, b, iterations);
  return f(x) <= best ? x : xs[static_cast<size_t>(best_i)];
}

struct PowerFit {
  PowerParams params;
  PowerParams stderr;
  double objective = 0;
  std::vector<double> extra;  // coefficients of the extra columns
};

// The priors: k_leak and c_base shrink towards 0 (columns 1 and 2); b_half towards the geometric
// middle of the profiled batch sizes, one prior unit per factor of 4.
// Extra columns (power-mode cap terms) are pulled towards 0 too.
std::vector<bool> power_shrink(const std::vector<Obs>& obs) {
  std::vector<bool> s = {false, true, true, false, true, true};
  s.resize(6 + static_cast<size_t>(extra_columns(obs)), true);
  return s;
}

struct PowerProblem {
  const std::vector<Obs>* obs;
  const TimeParams* time;
  double prior_weight;
  double batch_half_prior;
  double log_half_lo;
  double log_half_hi;
  bool log_cap = false;
  bool absolute_loss = false;  // AnalyticalFitOptions::power_loss "absolute"

  double prior(double log_half) const {
    const double z = (log_half - std::log(batch_half_prior)) / std::log(4.0);
    return prior_weight * z * z;
  }
  double objective(const VoltageCurve& v, double log_half) const {
    const auto sol =
        solve_loss(power_design(*obs, v, std::exp(log_half), *time, log_cap), targets(*obs), power_shrink(*obs),
                   prior_weight, false, weights(*obs), absolute_loss, fixed_rows(*obs));
    return sol.objective + prior(log_half);
  }
  double best_log_half(const VoltageCurve& v, int grid) const {
    if (log_cap) return std::log(batch_half_prior);  // the log form has no b_half
    return grid_then_golden([&](double lh) { return objective(v, lh); }, log_half_lo, log_half_hi, grid, 24);
  }
};

// Standard error of a nonlinear parameter from the curvature of its profiled objective:
// objective(θ) ≈ min + (θ - θ̂)²·s²/var  for a least-squares objective with residual variance s².
double profile_stderr(const std::function<double(double)>& objective, double x, double step, double s2) {
  if (!(s2 > 0)) return traces::kNaN;
  const double f0 = objective(x);
  const double curvature = (objective(x + step) - 2 * f0 + objective(x - step)) / (step * step);
  if (!(curvature > 0)) return traces::kNaN;
  return std::sqrt(2 * s2 / curvature);
}

PowerFit finish_power(const PowerProblem& problem, const VoltageCurve& v, double log_half) {
  PowerFit out;
  const auto sol = solve_loss(power_design(*problem.obs, v, std::exp(log_half), *problem.time, problem.log_cap),
                              targets(*problem.obs), power_shrink(*problem.obs), problem.prior_weight, true,
                              weights(*problem.obs), problem.absolute_loss, fixed_rows(*problem.obs));
  out.params = {sol.beta(0), sol.beta(1), sol.beta(2), sol.beta(3), std::exp(log_half), sol.beta(4), sol.beta(5)};
  if (problem.log_cap) {
    out.params.cap_log_w_per_hz_v2 = sol.beta(3);
    out.params.cap_sat_w_per_hz_v2 = 0;
    out.stderr.cap_log_w_per_hz_v2 = sol.stderr(3);
    out.stderr.cap_sat_w_per_hz_v2 = traces::kNaN;
  }
  for (Eigen::Index j = 6; j < sol.beta.size(); ++j) out.extra.push_back(sol.beta(j));
  out.stderr = {sol.stderr(0), sol.stderr(1), sol.stderr(2), sol.stderr(3), traces::kNaN, sol.stderr(4), sol.stderr(5)};
  out.objective = sol.objective + problem.prior(log_half);
  int active = 1;
  for (Eigen::Index j = 0; j < sol.beta.size(); ++j) active += sol.beta(j) > 0;
  const auto n = static_cast<int>(problem.obs->size());
  if (n > active && sol.beta(3) > 0 && !problem.log_cap) {
    const double s2 = sol.rss / (n - active);
    const double se_log = profile_stderr([&](double lh) { return problem.objective(v, lh); }, log_half, 0.05, s2);
    out.stderr.batch_half = out.params.batch_half * se_log;
  }
  return out;
}

void push(traces::ModelRecord& r, const std::string& name, double value, double stderr) {
  r.param_names.push_back(name);
  r.param_values.push_back(value);
  r.param_stderr.push_back(stderr);
}

void push_power(traces::ModelRecord& r, const std::string& prefix, const PowerParams& p, const PowerParams& se) {
  const double v[] = {p.idle_w,     p.leak_w_per_v,        p.cap_base_w_per_hz_v2, p.cap_sat_w_per_hz_v2,
                      p.batch_half, p.busy_j_per_cycle_v2, p.traffic_j_per_sample, p.cap_log_w_per_hz_v2};
  const double e[] = {se.idle_w,     se.leak_w_per_v,        se.cap_base_w_per_hz_v2, se.cap_sat_w_per_hz_v2,
                      se.batch_half, se.busy_j_per_cycle_v2, se.traffic_j_per_sample, se.cap_log_w_per_hz_v2};
  for (int i = 0; i < kPowerParams; ++i) push(r, prefix + kPowerSuffixes[i], v[i], e[i]);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
AnalyticalModel::AnalyticalModel(AnalyticalParams params, traces::ModelRecord record)
    : params_(std::move(params)), record_(std::move(record)) {
  record_.kind = to_string(traces::ModelKind::analytical);
}

Prediction AnalyticalModel::predict(const std::vector<double>& knob, int batch_size) const {
  if (knob.size() != 1)
    throw Error(fmt::format("the analytical model takes one GPU frequency, got a knob of {} values", knob.size()));
  if (batch_size < 1) throw Error(fmt::format("batch size must be at least 1, got {}", batch_size));
  const double f = knob[0];
  const double v = params_.voltage.at(f);
  Prediction p;
  p.time_per_batch_s = params_.time.at(f, batch_size);
  p.power_mean_w = params_.power_mean.at(f, v, batch_size, params_.time);
  // Without peak readings in the fit there is no peak to predict (as the learned model): NaN, so that
  // a predicted table and a model's space are on the mean basis, like the profile it was fitted on.
  p.power_peak_w = params_.has_peak ? params_.power_peak.at(f, v, batch_size, params_.time) : traces::kNaN;
  return p;
}

traces::ModelRecord AnalyticalModel::to_record() const {
  traces::ModelRecord r = record_;
  // Keep the stored uncertainties of a fit; a model built by hand has none.
  std::map<std::string, double> se;
  for (size_t i = 0; i < r.param_names.size() && i < r.param_stderr.size(); ++i)
    se[r.param_names[i]] = r.param_stderr[i];
  const auto err = [&](const std::string& n) {
    const auto it = se.find(n);
    return it == se.end() ? traces::kNaN : it->second;
  };
  r.param_names.clear();
  r.param_values.clear();
  r.param_stderr.clear();
  const auto& t = params_.time;
  const double tv[] = {t.fixed_s,     t.fixed_per_sample_s, t.work_cycles, t.work_per_sample_cycles,
                       t.fixed_log_s, t.work_log_cycles};
  for (int i = 0; i < kTimeParams; ++i) push(r, kTimeNames[i], tv[i], err(kTimeNames[i]));
  const auto power = [&](const std::string& prefix, const PowerParams& p) {
    PowerParams e;
    e.idle_w = err(prefix + kPowerSuffixes[0]);
    e.leak_w_per_v = err(prefix + kPowerSuffixes[1]);
    e.cap_base_w_per_hz_v2 = err(prefix + kPowerSuffixes[2]);
    e.cap_sat_w_per_hz_v2 = err(prefix + kPowerSuffixes[3]);
    e.batch_half = err(prefix + kPowerSuffixes[4]);
    e.busy_j_per_cycle_v2 = err(prefix + kPowerSuffixes[5]);
    e.traffic_j_per_sample = err(prefix + kPowerSuffixes[6]);
    e.cap_log_w_per_hz_v2 = err(prefix + kPowerSuffixes[7]);
    push_power(r, prefix, p, e);
  };
  power("power_mean_", params_.power_mean);
  power("power_peak_", params_.power_peak);
  const auto& v = params_.voltage;
  if (v.fitted()) {
    push(r, "volt_floor_v", v.floor_v, traces::kNaN);
    push(r, "volt_knee_hz", v.knee_hz, err("volt_knee_hz"));
    push(r, "volt_slope_v_per_hz", v.slope_v_per_hz, err("volt_slope_v_per_hz"));
    r.settings["voltage"] = "fit";
  } else {
    for (size_t i = 0; i < v.table.size(); ++i) {
      push(r, fmt::format("volt_table_freq_hz_{}", i), v.table[i].freq_hz, traces::kNaN);
      push(r, fmt::format("volt_table_v_{}", i), v.table[i].volt_v, traces::kNaN);
    }
    r.settings["voltage"] = "catalog";
  }
  // (a std::string, not a ternary of literals: GCC 12 warns falsely on the latter with -Wrestrict)
  r.settings["has_peak"] = std::string(params_.has_peak ? "1" : "0");
  r.settings["time_form"] = "t = t0 + t1*b + t2*ln(b) + (w0 + w1*b + w2*ln(b))/f";
  r.settings["power_form"] =
      "P = P_idle + k_leak*V(f) + (c_base + c_sat*b/(b + b_half) + c_log*ln(b))*f*V(f)^2 + (busy*V(f)^2*w(b) + "
      "traffic*b)/t(f,b)";
  return r;
}

// ---------------------------------------------------------------------------------------------
void check_fit_options(const AnalyticalFitOptions& options) {
  if (!(options.prior_weight >= 0 && options.prior_weight <= kMaxPriorWeight))
    throw OptionError(
        "prior-weight",
        fmt::format("{:g} is not a prior weight in [0, {:g}] (squared relative residual; the default 1e-4 "
                    "is negligible against a 1% misfit, larger values overrule the data)",
                    options.prior_weight, kMaxPriorWeight));
  if (options.time_form != "affine" && options.time_form != "log")
    throw OptionError("time-form", fmt::format("'{}' is not a form of t(f, b): use affine or log", options.time_form));
  if (options.cap_form != "saturating" && options.cap_form != "log")
    throw OptionError("cap-form", fmt::format("'{}' is not a form of c(b): use saturating or log", options.cap_form));
  if (options.power_loss != "absolute" && options.power_loss != "squared")
    throw OptionError("power-loss",
                      fmt::format("'{}' is not a loss of the power fit: use absolute or squared", options.power_loss));
  if (options.voltage != "auto" && options.voltage != "catalog" && options.voltage != "fit")
    throw Error(fmt::format("voltage mode '{}' is not one of auto, catalog, fit", options.voltage));
}

namespace {

// The fit's inputs, checked: one observation list per target and what the search ranges need.
struct FitInputs {
  std::vector<Obs> time_obs, mean_obs, peak_obs;
  std::set<double> freqs;
  int b_min = 0, b_max = 0;
  bool use_table = false;  // V(f) from the catalog's table, else fitted
};

FitInputs check_inputs(const std::vector<traces::ProfilePoint>& points, const AnalyticalFitOptions& options,
                       const FitExtras* extras) {
  static const std::vector<double> none;
  const auto& compute_share = extras ? extras->compute_share : none;
  const auto check = [&](size_t n, const char* what) {
    if (n != 0 && n != points.size()) throw Error(fmt::format("{} {} for {} points", n, what, points.size()));
  };
  check(compute_share.size(), "compute shares");
  const std::vector<double>& point_weight = extras ? extras->weight : none;
  check(point_weight.size(), "point weights");
  static const std::vector<bool> no_flags;
  const std::vector<bool>& fixed_weight = extras ? extras->fixed_weight : no_flags;
  check(fixed_weight.size(), "fixed-weight flags");
  const std::vector<bool>& time_only = extras ? extras->time_only : no_flags;
  check(time_only.size(), "time-only flags");
  if (extras)
    check(extras->time_columns.size(), "extra time rows"), check(extras->power_columns.size(), "extra power rows");
  check_fit_options(options);
  if (points.size() < 4)
    throw Error(fmt::format(
        "the analytical model needs at least 4 profiled points (it has 4 time parameters), got {}: profile more "
        "points or let the planner pick 4 or more",
        points.size()));
  FitInputs in;
  in.b_min = in.b_max = points.front().batch_size;
  for (size_t pi = 0; pi < points.size(); ++pi) {
    const auto& p = points[pi];
    const double share = compute_share.empty() ? 1.0 : compute_share[pi];
    if (p.knob.size() != 1)
      throw Error(
          "the analytical model needs a one-dimensional GPU-frequency knob; fit the learned or the "
          "interpolating model to other knobs");
    const double f = p.knob[0];
    if (!(f > 0) || p.batch_size < 1 || !(p.time_per_batch_mean_s > 0) || !(p.power_mean_w > 0))
      throw Error(
          fmt::format("profile point (f = {:g} Hz, b = {}) has a non-positive or missing frequency, batch "
                      "size, time or mean power",
                      f, p.batch_size));
    in.freqs.insert(f);
    in.b_min = std::min(in.b_min, p.batch_size);
    in.b_max = std::max(in.b_max, p.batch_size);
    if (!(share > 0 && share <= 1)) throw Error(fmt::format("compute share {:g} is not in (0, 1]", share));
    const std::vector<double>* power_extra =
        extras && !extras->power_columns.empty() ? &extras->power_columns[pi] : nullptr;
    const double w = point_weight.empty() ? 1.0 : point_weight[pi];
    if (!(w > 0 && std::isfinite(w))) throw Error(fmt::format("point weight {:g} is not positive", w));
    const bool fixed = !fixed_weight.empty() && fixed_weight[pi];
    in.time_obs.push_back({f, p.batch_size, p.time_per_batch_mean_s, share, nullptr, w, fixed});
    if (!time_only.empty() && time_only[pi]) continue;
    in.mean_obs.push_back({f, p.batch_size, p.power_mean_w, share, power_extra, w, fixed});
    if (std::isfinite(p.power_peak_w) && p.power_peak_w > 0)
      in.peak_obs.push_back({f, p.batch_size, p.power_peak_w, share, power_extra, w, fixed});
  }
  if (in.freqs.size() < 2)
    throw Error(
        "the analytical model needs points at 2 or more GPU frequencies to separate the frequency-bound "
        "part of the time from the rest");
  in.use_table = options.voltage == "catalog" || (options.voltage == "auto" && !options.voltage_table.empty());
  if (in.use_table && options.voltage_table.empty())
    throw Error("the device has no V(f) table in the catalog; fit V(f) instead (voltage mode fit)");
  return in;
}

// Time: t = t0 + t1·b + w0/f + w1·b/f, linear; t1 and w0 carry the weak priors (extra columns too).
TimeParams fit_time(const std::vector<Obs>& time_obs, double prior_weight, bool log_time, FitExtras* extras,
                    traces::ModelRecord& record) {
  const Eigen::Index kt =
      extras && !extras->time_columns.empty() ? static_cast<Eigen::Index>(extras->time_columns.front().size()) : 0;
  const Eigen::Index kl = log_time ? 2 : 0;  // t2·ln b and w2·ln b / f
  Eigen::MatrixXd x(static_cast<Eigen::Index>(time_obs.size()), 4 + kt + kl);
  std::vector<bool> time_shrink = {false, true, true, false};
  time_shrink.resize(static_cast<size_t>(4 + kt + kl), true);
  for (size_t i = 0; i < time_obs.size(); ++i) {
    for (Eigen::Index j = 0; j < kt; ++j)
      x(static_cast<Eigen::Index>(i), 4 + j) = extras->time_columns[i].at(static_cast<size_t>(j));
    if (log_time) {
      const double lb = std::log(static_cast<double>(time_obs[i].batch));
      x(static_cast<Eigen::Index>(i), 4 + kt) = lb;
      x(static_cast<Eigen::Index>(i), 5 + kt) = lb / (time_obs[i].freq_hz * time_obs[i].share);
    }
    const auto r = static_cast<Eigen::Index>(i);
    const double b = time_obs[i].batch;
    const double f = time_obs[i].freq_hz * time_obs[i].share;
    x(r, 0) = 1.0;
    x(r, 1) = b;
    x(r, 2) = 1.0 / f;
    x(r, 3) = b / f;
  }
  const auto ts = solve_relative(x, targets(time_obs), time_shrink, prior_weight, true, weights(time_obs));
  if (extras) extras->time_coef.assign(ts.beta.data() + 4, ts.beta.data() + 4 + kt);
  TimeParams t{ts.beta(0), ts.beta(1), ts.beta(2), ts.beta(3)};
  const double nan = traces::kNaN;
  if (log_time) t.fixed_log_s = ts.beta(4 + kt), t.work_log_cycles = ts.beta(5 + kt);
  const double se[] = {ts.stderr(0),
                       ts.stderr(1),
                       ts.stderr(2),
                       ts.stderr(3),
                       log_time ? ts.stderr(4 + kt) : nan,
                       log_time ? ts.stderr(5 + kt) : nan};
  const double v[] = {t.fixed_s,     t.fixed_per_sample_s, t.work_cycles, t.work_per_sample_cycles,
                      t.fixed_log_s, t.work_log_cycles};
  for (int i = 0; i < kTimeParams; ++i) push(record, kTimeNames[i], v[i], se[i]);
  return t;
}

// V(f) relative to its floor (the scale of V is not identifiable from power, only its shape): a
// knee and a slope, searched on a grid and refined by golden sections, each point profiled over the
// batch half-saturation. Returns the curve; records the knee and slope with their errors.
VoltageCurve fit_voltage(const PowerProblem& mean_problem, const std::set<double>& freqs, traces::ModelRecord& record) {
  const double f_lo = *freqs.begin();
  const double f_hi = *freqs.rbegin();
  const double span = f_hi - f_lo;
  const auto curve = [](double knee_hz, double log_slope_per_ghz) {
    VoltageCurve c;
    c.floor_v = 1.0;
    c.knee_hz = knee_hz;
    c.slope_v_per_hz = std::exp(log_slope_per_ghz) / 1e9;
    return c;
  };
  const double knee_lo = f_lo - 0.25 * span, knee_hi = f_hi;
  const double ls_lo = std::log(0.02), ls_hi = std::log(4.0);
  const auto profiled = [&](double knee, double ls) {
    const auto c = curve(knee, ls);
    return mean_problem.objective(c, mean_problem.best_log_half(c, 9));
  };
  double best = std::numeric_limits<double>::infinity(), knee = knee_hi, ls = 0;
  for (int i = 0; i < 10; ++i)
    for (int j = 0; j < 10; ++j) {
      const double k = knee_lo + (knee_hi - knee_lo) * i / 9.0;
      const double s = ls_lo + (ls_hi - ls_lo) * j / 9.0;
      const double o = profiled(k, s);
      if (o < best) {
        best = o;
        knee = k;
        ls = s;
      }
    }
  double knee_step = (knee_hi - knee_lo) / 9.0, ls_step = (ls_hi - ls_lo) / 9.0;
  for (int round = 0; round < 2; ++round) {
    knee = golden_min([&](double k) { return profiled(k, ls); }, knee - knee_step, knee + knee_step, 16);
    ls = golden_min([&](double s) { return profiled(knee, s); }, ls - ls_step, ls + ls_step, 16);
    knee_step /= 2;
    ls_step /= 2;
  }
  const VoltageCurve v = curve(knee, ls);
  const auto& obs = *mean_problem.obs;
  const double fit_obj = profiled(knee, ls);
  const double s2 = fit_obj / std::max(1.0, static_cast<double>(obs.size()) - 7.0);
  const double se_knee =
      obs.size() > 7 ? profile_stderr([&](double k) { return profiled(k, ls); }, knee, 0.02 * span, s2) : traces::kNaN;
  const double se_ls =
      obs.size() > 7 ? profile_stderr([&](double s) { return profiled(knee, s); }, ls, 0.05, s2) : traces::kNaN;
  push(record, "volt_knee_hz", v.knee_hz, se_knee);
  push(record, "volt_slope_v_per_hz", v.slope_v_per_hz, v.slope_v_per_hz * se_ls);
  return v;
}

}  // namespace

std::unique_ptr<AnalyticalModel> fit_analytical(const std::vector<traces::ProfilePoint>& points,
                                                const AnalyticalFitOptions& options, FitExtras* extras) {
  const FitInputs in = check_inputs(points, options, extras);
  AnalyticalParams params;
  traces::ModelRecord record;
  record.kind = to_string(traces::ModelKind::analytical);
  const double pw = options.prior_weight;
  // Points count by their weight (a transfer prior's pseudo-points weigh a fraction of a point).
  std::set<int> batches;
  double n_eff = 0;
  for (const auto& o : in.time_obs) {
    n_eff += o.weight;
    if (o.weight >= 0.5) batches.insert(o.batch);
  }
  const bool log_time = options.time_form == "log" && n_eff >= kMinPointsLogTime - 1e-9 && batches.size() >= 3;
  params.time = fit_time(in.time_obs, pw, log_time, extras, record);
  const double half_prior = std::sqrt(static_cast<double>(in.b_min) * in.b_max);
  const double lh_lo = std::log(std::max(0.25, in.b_min / 8.0));
  const double lh_hi = std::log(in.b_max * 8.0);
  const bool log_cap = options.cap_form == "log";
  const bool absolute = options.power_loss == "absolute";
  const PowerProblem mean_problem{&in.mean_obs, &params.time, pw, half_prior, lh_lo, lh_hi, log_cap, absolute};

  auto& v = params.voltage;
  if (in.use_table) {
    v.table = options.voltage_table;
    std::sort(v.table.begin(), v.table.end(),
              [](const traces::VoltagePoint& a, const traces::VoltagePoint& b) { return a.freq_hz < b.freq_hz; });
  } else {
    v = fit_voltage(mean_problem, in.freqs, record);
  }
  const double log_half = mean_problem.best_log_half(v, 25);

  const PowerFit mean = finish_power(mean_problem, v, log_half);
  params.power_mean = mean.params;
  if (extras) extras->power_mean_coef = extras->power_peak_coef = mean.extra;
  push_power(record, "power_mean_", mean.params, mean.stderr);
  if (in.peak_obs.size() >= 4) {
    const PowerProblem peak_problem{&in.peak_obs, &params.time, pw, half_prior, lh_lo, lh_hi, log_cap, absolute};
    const PowerFit peak = finish_power(peak_problem, v, peak_problem.best_log_half(v, 25));
    params.power_peak = peak.params;
    params.has_peak = true;
    if (extras) extras->power_peak_coef = peak.extra;
    push_power(record, "power_peak_", peak.params, peak.stderr);
  } else {
    // Without peak readings (Zeus-style traces) the peak fit is the mean's, flagged: predict() gives no peak.
    params.power_peak = mean.params;
    params.has_peak = false;
  }

  record.settings["prior_weight"] = fmt::format("{:g}", pw);
  record.settings["cap_form"] = options.cap_form;
  record.settings["power_loss"] = options.power_loss;
  record.settings["time_b_form"] = log_time ? "log" : "affine";
  return std::make_unique<AnalyticalModel>(std::move(params), std::move(record));
}

std::unique_ptr<AnalyticalModel> analytical_from_record(const traces::ModelRecord& record) {
  std::map<std::string, double> p;
  for (size_t i = 0; i < record.param_names.size() && i < record.param_values.size(); ++i)
    p[record.param_names[i]] = record.param_values[i];
  const auto get = [&](const std::string& name) {
    const auto it = p.find(name);
    if (it == p.end())
      throw Error(
          fmt::format("model record '{}' lacks parameter '{}': recalibrate with pacer calibrate", record.name, name));
    return it->second;
  };
  AnalyticalParams a;
  a.time = {get(kTimeNames[0]), get(kTimeNames[1]), get(kTimeNames[2]), get(kTimeNames[3])};
  // The concave part in b is optional: older records hold none.
  if (p.count(kTimeNames[4])) a.time.fixed_log_s = p.at(kTimeNames[4]);
  if (p.count(kTimeNames[5])) a.time.work_log_cycles = p.at(kTimeNames[5]);
  const auto power = [&](const std::string& prefix) {
    // The two coupled energy terms and the log form of c(b) are optional: older records hold none.
    const auto opt = [&](const std::string& n) { return p.count(n) ? p.at(n) : 0.0; };
    return PowerParams{get(prefix + kPowerSuffixes[0]), get(prefix + kPowerSuffixes[1]),
                       get(prefix + kPowerSuffixes[2]), get(prefix + kPowerSuffixes[3]),
                       get(prefix + kPowerSuffixes[4]), opt(prefix + kPowerSuffixes[5]),
                       opt(prefix + kPowerSuffixes[6]), opt(prefix + kPowerSuffixes[7])};
  };
  a.power_mean = power("power_mean_");
  a.power_peak = power("power_peak_");
  const auto hp = record.settings.find("has_peak");
  a.has_peak = hp == record.settings.end() || hp->second != "0";
  const auto vs = record.settings.find("voltage");
  if (vs != record.settings.end() && vs->second == "catalog") {
    for (size_t i = 0; p.count(fmt::format("volt_table_freq_hz_{}", i)); ++i)
      a.voltage.table.push_back({get(fmt::format("volt_table_freq_hz_{}", i)), get(fmt::format("volt_table_v_{}", i))});
    if (a.voltage.table.empty())
      throw Error(fmt::format("model record '{}' says voltage=catalog but holds no voltage table", record.name));
  } else {
    a.voltage.floor_v = get("volt_floor_v");
    a.voltage.knee_hz = get("volt_knee_hz");
    a.voltage.slope_v_per_hz = get("volt_slope_v_per_hz");
  }
  return std::make_unique<AnalyticalModel>(std::move(a), record);
}

}  // namespace pacer::models
