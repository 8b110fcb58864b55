#include "explore/curve_fit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "base/error.hpp"
#include "base/stats.hpp"

namespace pacer::explore {
namespace {

// Huber's tuning constant (95 % efficiency under normal residuals) and the MAD's consistency factor:
// textbook values, not tuned.
constexpr double kHuberK = 1.345;
constexpr double kMadToSd = 1.4826;
constexpr int kMaxIterations = 50;

struct Point {
  size_t run;
  double x, y;  // log n, log e
  double w = 1;
};

}  // namespace

double metric_error(double metric, bool higher_is_better) {
  return higher_is_better ? 1 - metric : metric;
}

PowerLawFit fit_power_law(const std::vector<CurvePoints>& runs, bool higher_is_better) {
  PowerLawFit fit;
  const size_t n_runs = runs.size();
  fit.log_a.assign(n_runs, NAN);
  fit.mean_log_n.assign(n_runs, NAN);
  fit.weight.assign(n_runs, 0);
  std::vector<Point> pts;
  std::vector<bool> sloped(n_runs, false);  // the run has two distinct sample counts or more
  int sloped_points = 0, sloped_runs = 0;
  for (size_t r = 0; r < n_runs; ++r) {
    std::set<int64_t> distinct;
    const size_t first = pts.size();
    for (const auto& [n, m] : runs[r]) {
      const double e = metric_error(m, higher_is_better);
      if (n <= 0 || !(e > 0) || (higher_is_better && e > 1) || !std::isfinite(e)) continue;
      pts.push_back({r, std::log(static_cast<double>(n)), std::log(e)});
      distinct.insert(n);
    }
    if (distinct.size() >= 2) {
      sloped[r] = true;
      ++sloped_runs;
      sloped_points += static_cast<int>(pts.size() - first);
    }
  }
  fit.points = static_cast<int>(pts.size());
  if (sloped_points < kPowerLawMinPoints) return fit;

  std::vector<double> xbar(n_runs), ybar(n_runs), wsum(n_runs);
  double slope = 0;
  for (int it = 0; it < kMaxIterations; ++it) {
    std::fill(xbar.begin(), xbar.end(), 0.0);
    std::fill(ybar.begin(), ybar.end(), 0.0);
    std::fill(wsum.begin(), wsum.end(), 0.0);
    for (const auto& p : pts) {
      xbar[p.run] += p.w * p.x;
      ybar[p.run] += p.w * p.y;
      wsum[p.run] += p.w;
    }
    for (size_t r = 0; r < n_runs; ++r)
      if (wsum[r] > 0) {
        xbar[r] /= wsum[r];
        ybar[r] /= wsum[r];
      }
    double sxy = 0, sxx = 0;
    for (const auto& p : pts) {
      sxy += p.w * (p.x - xbar[p.run]) * (p.y - ybar[p.run]);
      sxx += p.w * (p.x - xbar[p.run]) * (p.x - xbar[p.run]);
    }
    if (!(sxx > 1e-12)) return fit;
    slope = sxy / sxx;
    fit.sxx = sxx;
    // Huber weights from the residuals of the runs that carry the slope (a lone point fits exactly).
    std::vector<double> abs_res;
    for (const auto& p : pts)
      if (sloped[p.run]) abs_res.push_back(std::abs(p.y - ybar[p.run] - slope * (p.x - xbar[p.run])));
    const double scale = kMadToSd * base::median(abs_res);
    if (!(scale > 1e-12)) break;
    double change = 0;
    for (auto& p : pts) {
      const double res = std::abs(p.y - ybar[p.run] - slope * (p.x - xbar[p.run]));
      const double w = res <= kHuberK * scale ? 1.0 : kHuberK * scale / res;
      change = std::max(change, std::abs(w - p.w));
      p.w = w;
    }
    if (change < 1e-9) break;
  }
  double rss = 0;
  for (const auto& p : pts) rss += p.w * std::pow(p.y - ybar[p.run] - slope * (p.x - xbar[p.run]), 2);
  // Degrees of freedom: the points of the sloped runs less their intercepts and the one slope (>= 1).
  const int dof = sloped_points - sloped_runs - 1;
  double wsloped = 0;
  for (const auto& p : pts)
    if (sloped[p.run]) wsloped += p.w;
  fit.resid_var = dof > 0 ? rss / (wsloped * dof / sloped_points) : NAN;
  fit.alpha = -slope;
  for (size_t r = 0; r < n_runs; ++r)
    if (wsum[r] > 0) {
      fit.log_a[r] = ybar[r] + fit.alpha * xbar[r];
      fit.mean_log_n[r] = xbar[r];
      fit.weight[r] = wsum[r];
    }
  fit.valid = fit.alpha > 0 && std::isfinite(fit.resid_var);
  return fit;
}

PowerLawEstimate power_law_samples(const PowerLawFit& fit, size_t run, double target, bool higher_is_better) {
  PowerLawEstimate e;
  const double et = metric_error(target, higher_is_better);
  if (!fit.valid || run >= fit.log_a.size() || std::isnan(fit.log_a[run]) || !(et > 0)) return e;
  e.log_samples = (fit.log_a[run] - std::log(et)) / fit.alpha;
  const double d = e.log_samples - fit.mean_log_n[run];
  e.var = fit.resid_var / (fit.alpha * fit.alpha) * (1 / fit.weight[run] + d * d / fit.sxx);
  e.valid = std::isfinite(e.log_samples) && std::isfinite(e.var);
  return e;
}

}  // namespace pacer::explore
