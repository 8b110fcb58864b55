#include "base/stats.hpp"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "base/error.hpp"

namespace pacer::base {

double mean(const std::vector<double>& values) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  double sum = 0;
  for (double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

double geometric_mean(const std::vector<double>& values) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  double log_sum = 0;
  for (double v : values) log_sum += std::log(v);
  return std::exp(log_sum / static_cast<double>(values.size()));
}

double sample_std(const std::vector<double>& values) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  if (values.size() == 1) return 0.0;
  const double m = mean(values);
  double ss = 0;
  for (double v : values) ss += (v - m) * (v - m);
  return std::sqrt(ss / static_cast<double>(values.size() - 1));
}

namespace {
// The values sorted ascending, NaN values left out.
std::vector<double> sorted_numbers(std::vector<double> values) {
  values.erase(std::remove_if(values.begin(), values.end(), [](double v) { return std::isnan(v); }), values.end());
  std::sort(values.begin(), values.end());
  return values;
}
}  // namespace

double quantile(std::vector<double> values, double q) {
  const std::vector<double> v = sorted_numbers(std::move(values));
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t i = static_cast<size_t>(pos);
  return i + 1 < v.size() ? v[i] + (pos - static_cast<double>(i)) * (v[i + 1] - v[i]) : v[i];
}

double median(std::vector<double> values) {
  const std::vector<double> v = sorted_numbers(std::move(values));
  const size_t n = v.size();
  if (n == 0) return std::numeric_limits<double>::quiet_NaN();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

Line least_squares_line(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size())
    throw Error(fmt::format("a least-squares line needs as many x as y (got {} and {})", x.size(), y.size()));
  Line line;
  if (x.empty()) return line;
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < x.size(); ++i) sx += x[i], sy += y[i], sxx += x[i] * x[i], sxy += x[i] * y[i];
  const double n = static_cast<double>(x.size()), mx = sx / n, my = sy / n, vxx = sxx / n - mx * mx;
  line.constant = !(vxx > 1e-12);
  line.slope = line.constant ? 0.0 : (sxy / n - mx * my) / vxx;
  line.intercept = my - line.slope * mx;
  return line;
}

double trapezoid_energy_j(const std::vector<double>& time_s, const std::vector<double>& power_w, double duration_s) {
  const size_t n = std::min(time_s.size(), power_w.size());
  if (n == 0) return std::numeric_limits<double>::quiet_NaN();
  double e = 0;
  if (std::isfinite(duration_s)) e += power_w.front() * std::max(0.0, time_s.front());
  for (size_t i = 1; i < n; ++i) e += 0.5 * (power_w[i] + power_w[i - 1]) * (time_s[i] - time_s[i - 1]);
  if (std::isfinite(duration_s)) e += power_w[n - 1] * std::max(0.0, duration_s - time_s[n - 1]);
  return e;
}

std::vector<double> cap_grid_w(double lo_w, double hi_w, int count, double step_w) {
  if (count < 1) throw Error(fmt::format("a cap grid needs at least one cap (asked for {})", count));
  const double per_w = step_w > 0 ? 1 / step_w : 0;  // round(w * 100) / 100 for 0.01 W, as written by hand
  auto rounded = [&](double w) { return step_w > 0 ? std::round(w * per_w) / per_w : w; };
  if (count == 1) return {rounded(hi_w)};
  std::vector<double> caps;
  for (int i = 0; i < count; ++i) caps.push_back(rounded(lo_w + (hi_w - lo_w) * i / (count - 1)));
  caps.back() = rounded(hi_w);
  return caps;
}

}  // namespace pacer::base
