#include "models/uncertainty.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numbers>

#include "base/error.hpp"

namespace pacer::models {
namespace {

using Getter = double (*)(const traces::ProfilePoint&);
double get_time(const traces::ProfilePoint& p) {
  return p.time_per_batch_mean_s;
}
double get_mean(const traces::ProfilePoint& p) {
  return p.power_mean_w;
}
double get_peak(const traces::ProfilePoint& p) {
  return p.power_peak_w;
}

bool usable(double v) {
  return std::isfinite(v) && v > 0;
}

// Pooled spread of log values over settings measured more than once.
double from_repeats(
    const std::map<std::pair<std::vector<double>, int>, std::vector<const traces::ProfilePoint*>>& groups, Getter get,
    int& terms) {
  double ss = 0;
  int dof = 0;
  for (const auto& [key, pts] : groups) {
    std::vector<double> y;
    for (const auto* p : pts)
      if (usable(get(*p))) y.push_back(std::log(get(*p)));
    if (y.size() < 2) continue;
    double m = 0;
    for (double v : y) m += v;
    m /= static_cast<double>(y.size());
    for (double v : y) ss += (v - m) * (v - m);
    dof += static_cast<int>(y.size()) - 1;
  }
  terms = dof;
  return dof > 0 ? std::sqrt(ss / dof) : traces::kNaN;
}

// Gasser-Sargent-Sengupta pseudo-residuals along log b at each knob setting.
double from_neighbours(const std::map<std::vector<double>, std::vector<const traces::ProfilePoint*>>& by_knob,
                       Getter get, int& terms) {
  double s = 0;
  int n = 0;
  for (const auto& [knob, pts_in] : by_knob) {
    std::vector<const traces::ProfilePoint*> pts;
    for (const auto* p : pts_in)
      if (usable(get(*p))) pts.push_back(p);
    std::sort(pts.begin(), pts.end(), [](const auto* a, const auto* b) { return a->batch_size < b->batch_size; });
    for (size_t i = 1; i + 1 < pts.size(); ++i) {
      const double x0 = std::log(pts[i - 1]->batch_size), x1 = std::log(pts[i]->batch_size),
                   x2 = std::log(pts[i + 1]->batch_size);
      if (!(x0 < x1 && x1 < x2)) continue;
      const double a = (x2 - x1) / (x2 - x0), b = (x1 - x0) / (x2 - x0);
      const double e = a * std::log(get(*pts[i - 1])) + b * std::log(get(*pts[i + 1])) - std::log(get(*pts[i]));
      s += e * e / (a * a + b * b + 1);
      ++n;
    }
  }
  terms = n;
  return n > 0 ? std::sqrt(s / n) : traces::kNaN;
}

}  // namespace

double NoiseFloor::mape_floor_pct(double sigma_rel) {
  return 100 * sigma_rel * std::sqrt(2 / std::numbers::pi);
}

NoiseFloor noise_floor(const std::vector<traces::ProfilePoint>& points) {
  std::map<std::pair<std::vector<double>, int>, std::vector<const traces::ProfilePoint*>> groups;
  std::map<std::vector<double>, std::vector<const traces::ProfilePoint*>> by_knob;
  for (const auto& p : points) {
    groups[{p.knob, p.batch_size}].push_back(&p);
    by_knob[p.knob].push_back(&p);
  }
  NoiseFloor out;
  const bool repeats = groups.size() < points.size();
  out.method = repeats ? "repeats" : "neighbours";
  int terms = 0;
  const auto estimate = [&](Getter get) {
    int t = 0;
    const double v = repeats ? from_repeats(groups, get, t) : from_neighbours(by_knob, get, t);
    terms = std::max(terms, t);
    return v;
  };
  out.time_rel = estimate(get_time);
  out.power_mean_rel = estimate(get_mean);
  out.power_peak_rel = estimate(get_peak);
  out.terms = terms;
  if (terms == 0) out.method.clear();
  return out;
}

namespace {

constexpr const char* kTargets[] = {"time", "power_mean", "power_peak"};

double metric(const traces::ModelRecord& record, const std::string& name) {
  const auto it = record.metrics.find(name);
  return it == record.metrics.end() ? traces::kNaN : it->second;
}

double* target(ModelUncertainty& u, int i) {
  return i == 0 ? &u.time_rel : i == 1 ? &u.power_mean_rel : &u.power_peak_rel;
}
double* target(NoiseFloor& f, int i) {
  return i == 0 ? &f.time_rel : i == 1 ? &f.power_mean_rel : &f.power_peak_rel;
}

std::string pct(double rel) {
  return std::isfinite(rel) ? fmt::format("{:.2g}%", 100 * rel) : std::string("-");
}

}  // namespace

double prediction_sigma(double mape_pct, double spread_rel) {
  const double error_sigma = mape_pct / 100 * std::sqrt(std::numbers::pi / 2);
  if (!std::isfinite(error_sigma)) return spread_rel;
  return std::isfinite(spread_rel) ? std::max(error_sigma, spread_rel) : error_sigma;
}

double normal_quantile(double p) {
  if (!(p > 0 && p < 1)) throw Error(fmt::format("normal_quantile: probability {:g} is not in (0, 1)", p));
  // Bisection on the CDF 0.5 erfc(-x / sqrt 2): 200 halvings of [-40, 40] reach double precision.
  double lo = -40, hi = 40;
  for (int i = 0; i < 200 && hi - lo > 1e-15; ++i) {
    const double mid = 0.5 * (lo + hi);
    (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

std::pair<double, double> coverage_band(double z, int k) {
  if (k < 1) throw Error(fmt::format("a coverage band needs k >= 1 points, got {}", k));
  const double d = 1.0 / std::sqrt(2.0 * k);
  const auto p = [](double x) { return std::erf(std::max(0.0, x) / std::sqrt(2.0)); };
  return {p(z * (1 - d)), p(z * (1 + d))};
}

Coverage coverage(const std::vector<double>& rel_errors, double sigma_rel) {
  Coverage c;
  if (!(sigma_rel > 0)) return c;
  int in1 = 0, in90 = 0;
  for (double e : rel_errors) {
    if (!std::isfinite(e)) continue;
    ++c.points;
    in1 += std::abs(e) <= sigma_rel;
    in90 += std::abs(e) <= kZ90 * sigma_rel;
  }
  if (c.points) {
    c.within_1sigma = static_cast<double>(in1) / c.points;
    c.within_90 = static_cast<double>(in90) / c.points;
  }
  return c;
}

void store_uncertainty(traces::ModelRecord& record, const NoiseFloor& floor, const std::string& floating_clocks) {
  ModelUncertainty u;
  u.floor = floor;
  u.floating_clocks = floating_clocks;
  for (const char* basis : {"heldout", "lomo", "loo", "cv"})
    if (std::isfinite(metric(record, std::string("time_mape_") + basis))) {
      u.basis = basis;
      break;
    }
  if (!u.basis.empty()) {
    u.time_mape_pct = metric(record, "time_mape_" + u.basis);
    u.power_mean_mape_pct = metric(record, "power_mean_mape_" + u.basis);
  }
  for (int i = 0; i < 3; ++i) {
    const double spread = *target(u.floor, i);
    double& sigma = *target(u, i);
    sigma = prediction_sigma(
        u.basis.empty() ? traces::kNaN : metric(record, std::string(kTargets[i]) + "_mape_" + u.basis), spread);
    if (std::isfinite(spread)) record.metrics[std::string(kTargets[i]) + "_noise_pct"] = 100 * spread;
    if (std::isfinite(sigma)) record.metrics[std::string(kTargets[i]) + "_sigma_pct"] = 100 * sigma;
  }
  record.metrics["noise_terms"] = floor.terms;
  record.settings["noise_method"] = floor.method;
  record.settings["uncertainty_basis"] = u.basis;
  record.settings["floating_clocks"] = floating_clocks;
  record.settings["uncertainty"] = describe_uncertainty(u);
}

std::optional<ModelUncertainty> read_uncertainty(const traces::ModelRecord& record) {
  const auto method = record.settings.find("noise_method");
  if (method == record.settings.end()) return std::nullopt;
  const auto setting = [&](const std::string& key) {
    const auto it = record.settings.find(key);
    return it == record.settings.end() ? std::string() : it->second;
  };
  ModelUncertainty u;
  u.floor.method = method->second;
  u.floor.terms = static_cast<int>(metric(record, "noise_terms"));
  u.basis = setting("uncertainty_basis");
  if (!u.basis.empty()) {
    u.time_mape_pct = metric(record, "time_mape_" + u.basis);
    u.power_mean_mape_pct = metric(record, "power_mean_mape_" + u.basis);
  }
  u.floating_clocks = setting("floating_clocks");
  for (int i = 0; i < 3; ++i) {
    *target(u.floor, i) = metric(record, std::string(kTargets[i]) + "_noise_pct") / 100;
    *target(u, i) = metric(record, std::string(kTargets[i]) + "_sigma_pct") / 100;
  }
  return u;
}

std::string describe_uncertainty(const ModelUncertainty& u) {
  const NoiseFloor& f = u.floor;
  std::string s;
  if (f.method.empty()) {
    s = "measurement spread: too few points per setting to estimate it (no repeats, fewer than 3 batch sizes)";
  } else {
    s = fmt::format(
        "measurement spread no model smooth in b can follow ({} over {} {}): time {}, P mean {}{} (1 sigma; a "
        "perfect model's MAPE: time {:.2g}%, P mean {:.2g}%)",
        f.method == "repeats" ? "repeated settings" : "deviation from neighbouring batch sizes", f.terms,
        f.method == "repeats" ? "degrees of freedom" : "triples", pct(f.time_rel), pct(f.power_mean_rel),
        std::isfinite(f.power_peak_rel) ? ", P peak " + pct(f.power_peak_rel) : std::string(),
        NoiseFloor::mape_floor_pct(f.time_rel), NoiseFloor::mape_floor_pct(f.power_mean_rel));
  }
  s += u.floating_clocks.empty() ? "; no clock floated while measuring (or the source does not say)"
                                 : fmt::format("; clocks that floated while measuring: {}", u.floating_clocks);
  // A model's MAPE below the floor is the floor's estimate being rough, not a model better than
  // the noise: "at the floor", never a negative "above".
  const auto above = [](double mape_pct, double floor_pct) {
    const double d = mape_pct - floor_pct;
    return std::isfinite(d) && d > 0 ? fmt::format("{:.2g} pp", d) : std::string("none (at the floor)");
  };
  if (std::isfinite(u.time_mape_pct) && std::isfinite(u.power_mean_mape_pct) && !f.method.empty())
    s += fmt::format("; {} MAPE above that floor: time {}, P mean {}", u.basis,
                     above(u.time_mape_pct, NoiseFloor::mape_floor_pct(f.time_rel)),
                     above(u.power_mean_mape_pct, NoiseFloor::mape_floor_pct(f.power_mean_rel)));
  s += fmt::format("; prediction 1 sigma{}: time {}, P mean {}{}", u.basis.empty() ? "" : " (" + u.basis + ")",
                   pct(u.time_rel), pct(u.power_mean_rel),
                   std::isfinite(u.power_peak_rel) ? ", P peak " + pct(u.power_peak_rel) : std::string());
  return s;
}

}  // namespace pacer::models
