#include "models/interpolating.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/error.hpp"

namespace pacer::models {

InterpolatingModel::InterpolatingModel(traces::KnobSpace knob, std::map<int, std::vector<Sample>> by_batch,
                                       traces::ModelRecord record)
    : knob_(std::move(knob)), by_batch_(std::move(by_batch)), record_(std::move(record)) {
  record_.kind = to_string(traces::ModelKind::interpolating);
  if (by_batch_.empty()) throw Error("an interpolating model needs at least one profiled point");
  for (auto& [b, samples] : by_batch_) {
    if (samples.empty()) throw Error(fmt::format("interpolating model: batch size {} has no samples", b));
    std::sort(samples.begin(), samples.end(), [](const Sample& x, const Sample& y) { return x.knob < y.knob; });
  }
}

namespace {

double lerp_samples(const std::vector<InterpolatingModel::Sample>& s, double x,
                    double InterpolatingModel::Sample::*field) {
  if (x <= s.front().knob) return s.front().*field;
  if (x >= s.back().knob) return s.back().*field;
  for (size_t i = 1; i < s.size(); ++i)
    if (x <= s[i].knob) {
      const double t = (x - s[i - 1].knob) / (s[i].knob - s[i - 1].knob);
      return s[i - 1].*field + t * (s[i].*field - s[i - 1].*field);
    }
  return s.back().*field;
}

// Log-linear in b: y = y0·(b/b0)^slope with the slope through the two anchors.
double log_lerp(double b, double b0, double y0, double b1, double y1) {
  if (!(y0 > 0) || !(y1 > 0)) return std::isnan(y0) || std::isnan(y1) ? traces::kNaN : y0;
  const double t = std::log(b / b0) / std::log(b1 / b0);
  return std::exp(std::log(y0) + t * (std::log(y1) - std::log(y0)));
}

}  // namespace

Prediction InterpolatingModel::at_batch(int batch_size, double knob) const {
  const auto& s = by_batch_.at(batch_size);
  Prediction p;
  p.time_per_batch_s = lerp_samples(s, knob, &Sample::time_per_batch_s);
  p.power_mean_w = lerp_samples(s, knob, &Sample::power_mean_w);
  p.power_peak_w = lerp_samples(s, knob, &Sample::power_peak_w);
  return p;
}

Prediction InterpolatingModel::predict(const std::vector<double>& knob, int batch_size) const {
  if (knob.size() != 1)
    throw Error(fmt::format("the interpolating model takes a one-dimensional knob, got {} values", knob.size()));
  if (batch_size < 1) throw Error(fmt::format("batch size must be at least 1, got {}", batch_size));
  const double x = knob[0];
  if (by_batch_.count(batch_size)) return at_batch(batch_size, x);
  if (by_batch_.size() == 1) return at_batch(by_batch_.begin()->first, x);
  auto hi = by_batch_.lower_bound(batch_size);
  bool outside = false;
  if (hi == by_batch_.begin()) {
    ++hi;
    outside = true;
  } else if (hi == by_batch_.end()) {
    --hi;
    outside = true;
  }
  auto lo = std::prev(hi);
  const double b = batch_size, b0 = lo->first, b1 = hi->first;
  const auto p0 = at_batch(lo->first, x);
  const auto p1 = at_batch(hi->first, x);
  Prediction p;
  p.time_per_batch_s = log_lerp(b, b0, p0.time_per_batch_s, b1, p1.time_per_batch_s);
  if (outside) {
    // Power saturates with b: beyond the profiled range hold the nearest profiled value rather than
    // extrapolating a trend.
    const auto& near = b < b0 ? p0 : p1;
    p.power_mean_w = near.power_mean_w;
    p.power_peak_w = near.power_peak_w;
  } else {
    p.power_mean_w = log_lerp(b, b0, p0.power_mean_w, b1, p1.power_mean_w);
    p.power_peak_w = log_lerp(b, b0, p0.power_peak_w, b1, p1.power_peak_w);
  }
  return p;
}

traces::ModelRecord InterpolatingModel::to_record() const {
  traces::ModelRecord r = record_;
  r.param_names.clear();
  r.param_values.clear();
  r.param_stderr.clear();
  int i = 0;
  for (const auto& [b, samples] : by_batch_)
    for (const auto& s : samples) {
      const double values[] = {static_cast<double>(b), s.knob, s.time_per_batch_s, s.power_mean_w, s.power_peak_w};
      const char* names[] = {"batch_size", "knob", "time_per_batch_s", "power_mean_w", "power_peak_w"};
      for (int j = 0; j < 5; ++j) {
        r.param_names.push_back(fmt::format("point{}.{}", i, names[j]));
        r.param_values.push_back(values[j]);
        r.param_stderr.push_back(traces::kNaN);
      }
      ++i;
    }
  r.settings["knob_kind"] = to_string(knob_.kind);
  r.settings["knob_dim"] = knob_.dims.empty() ? "" : knob_.dims[0].name;
  r.settings["knob_unit"] = knob_.dims.empty() ? "" : knob_.dims[0].unit;
  r.settings["form"] = "piecewise-linear in the knob per b (clamped), log-linear in b between profiled b";
  return r;
}

std::unique_ptr<InterpolatingModel> fit_interpolating(const std::vector<traces::ProfilePoint>& points,
                                                      const traces::KnobSpace& knob) {
  if (knob.dims.size() != 1)
    throw Error("the interpolating model needs a one-dimensional knob; use the learned model for power modes");
  if (points.empty()) throw Error("the interpolating model needs at least one profiled point");
  struct Acc {
    double t = 0, m = 0, p = 0;
    int n = 0;
  };
  std::map<std::pair<int, double>, Acc> acc;
  for (const auto& pt : points) {
    if (pt.knob.size() != 1) throw Error("interpolating model: every point needs exactly one knob value");
    auto& a = acc[{pt.batch_size, pt.knob[0]}];
    a.t += pt.time_per_batch_mean_s;
    a.m += pt.power_mean_w;
    a.p += pt.power_peak_w;  // NaN stays NaN: the source had no peak
    ++a.n;
  }
  std::map<int, std::vector<InterpolatingModel::Sample>> by_batch;
  for (const auto& [key, a] : acc) by_batch[key.first].push_back({key.second, a.t / a.n, a.m / a.n, a.p / a.n});
  traces::ModelRecord record;
  return std::make_unique<InterpolatingModel>(knob, std::move(by_batch), std::move(record));
}

std::unique_ptr<InterpolatingModel> interpolating_from_record(const traces::ModelRecord& record) {
  std::map<std::string, double> p;
  for (size_t i = 0; i < record.param_names.size() && i < record.param_values.size(); ++i)
    p[record.param_names[i]] = record.param_values[i];
  std::map<int, std::vector<InterpolatingModel::Sample>> by_batch;
  for (int i = 0; p.count(fmt::format("point{}.batch_size", i)); ++i) {
    const auto get = [&](const char* n) {
      const auto it = p.find(fmt::format("point{}.{}", i, n));
      if (it == p.end())
        throw Error(fmt::format("model record '{}' lacks point{}.{}: recalibrate with pacer calibrate", record.name, i, n));
      return it->second;
    };
    by_batch[static_cast<int>(get("batch_size"))].push_back(
        {get("knob"), get("time_per_batch_s"), get("power_mean_w"), get("power_peak_w")});
  }
  if (by_batch.empty()) throw Error(fmt::format("model record '{}' holds no interpolation points", record.name));
  traces::KnobSpace knob;
  const auto s = [&](const char* key) {
    const auto it = record.settings.find(key);
    return it == record.settings.end() ? std::string() : it->second;
  };
  knob.kind = s("knob_kind").empty() ? traces::KnobKind::power_limit : traces::knob_kind_from_string(s("knob_kind"));
  knob.dims = {{s("knob_dim").empty() ? std::string(to_string(knob.kind)) : s("knob_dim"), s("knob_unit")}};
  return std::make_unique<InterpolatingModel>(std::move(knob), std::move(by_batch), record);
}

}  // namespace pacer::models
