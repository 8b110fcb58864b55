#pragma once
// Test helper: a random store for the choice rule's property tests (tests/explore/test_choice_rule.cpp,
// tests/experiments/report/test_report_choices.cpp): a measured profile of part of a GPU-frequency
// grid, the model's predicted table of the whole grid (its power off by up to +-12%), a model record
// with its held-out peak error, and proxy and target relations.
#include <cmath>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "models/calibrate.hpp"
#include "sim/replay.hpp"
#include "traces/import/zeus.hpp"
#include "traces/records.hpp"
#include "traces/store/store.hpp"

namespace pacer::testing {

inline const std::string kWorkload = "w";
inline const std::string kDevice = "board";
inline const std::string kMeasured = "w";
inline const std::string kPredicted = models::predicted_profile_name(kMeasured);

struct RandomStore {
  std::vector<double> caps;  // spread over the space's power range
};

// A random store at `path`: `measured_share` of the grid measured (1: every point, 0: none); the
// model's held-out peak error `model_peak_error` (a fraction). Returns caps over its power range.
inline RandomStore write_random_store(const std::filesystem::path& path, std::mt19937_64& rng, double measured_share,
                                      double model_peak_error) {
  std::uniform_real_distribution<double> u(0, 1);
  const std::vector<double> freqs = {300e6, 450e6, 600e6, 750e6, 900e6, 1050e6};
  const std::vector<int> batches = {8, 16, 32, 64, 128};
  traces::ProfileTable measured, predicted;
  for (auto* t : {&measured, &predicted}) {
    t->workload = kWorkload;
    t->device = kDevice;
  }
  predicted.source = "pacer calibrate, predicted (analytical)";
  const double idle = 1 + 2 * u(rng), per_ghz = 3 + 4 * u(rng);
  double lo = INFINITY, hi = 0;
  for (double f : freqs)
    for (int b : batches) {
      traces::ProfilePoint p;
      p.knob = {f};
      p.batch_size = b;
      const double sat = static_cast<double>(b) / (b + 8 + 24 * u(rng));
      p.power_peak_w = idle + per_ghz * f / 1e9 * (0.6 + 0.4 * sat) * (1 + 0.05 * u(rng));
      p.power_mean_w = p.power_peak_w * (0.85 + 0.1 * u(rng));
      p.time_per_batch_mean_s = (0.002 + 0.0004 * b) * (1e9 / f) * (0.5 + 0.5 * u(rng) * 0.2 + 0.5);
      lo = std::min(lo, p.power_peak_w);
      hi = std::max(hi, p.power_peak_w);
      traces::ProfilePoint q = p;  // the model's prediction: the same time, a power off by up to +-12%
      q.power_peak_w *= 1 + 0.24 * (u(rng) - 0.5);
      q.power_mean_w *= 1 + 0.24 * (u(rng) - 0.5);
      predicted.points.push_back(q);
      if (u(rng) < measured_share) {
        // A measured peak over 30-113 samples: its feasibility power is its projected run peak.
        p.power_samples = 30 + static_cast<int64_t>(83 * u(rng));
        measured.points.push_back(p);
      }
    }
  traces::ModelRecord model;
  model.name = models::model_record_name(kWorkload, kDevice, traces::ModelKind::analytical);
  model.kind = "analytical";
  model.workload = kWorkload;
  model.device = kDevice;
  model.metrics["power_peak_mape_cv"] = 100 * model_peak_error / 2.456;
  if (u(rng) < 0.5) model.metrics["power_peak_abs_err_q95_cv"] = 100 * model_peak_error;
  auto relation = [&](const std::string& name, double scale) {
    traces::RelationSet r;
    r.name = name;
    r.workload = kWorkload;
    r.metric = "accuracy";
    r.target = 0.9;
    for (int b : batches)
      for (int seed = 0; seed < 2; ++seed)
        r.runs.push_back(
            {b, seed, true, static_cast<int64_t>(scale * (20000 + 300 * b) * (0.8 + 0.4 * u(rng))), 10000000});
    return r;
  };
  auto store = traces::Store::open_or_create(path);
  if (!measured.points.empty()) store.write(measured, kMeasured);
  store.write(predicted, kPredicted);
  store.write(model);
  store.write(relation(traces::zeus::proxy_name(kWorkload), 1));
  store.write(relation(traces::zeus::target_name(kWorkload), 1.2));
  RandomStore out;
  for (int i = 0; i < 4; ++i) out.caps.push_back(lo + (hi - lo) * (0.1 + 0.9 * u(rng)));
  return out;
}

// Two workloads on one device whose automatic guards differ (explore/decide.hpp): kWorkload's
// profile every point predicted by a model with a 15% held-out peak error (guard 0.15), "v" the same
// points with every peak measured (sensor noise, 3%), each with its proxy and target relations.
inline void write_two_guard_store(const std::filesystem::path& path, std::mt19937_64& rng) {
  write_random_store(path, rng, 0.0, 0.15);  // w: predicted only
  auto store = traces::Store::open(path);
  traces::ProfileTable v = store.read<traces::ProfileTable>(kPredicted);
  v.workload = "v";
  v.source = "";
  for (auto& p : v.points) p.power_samples = 100;  // measured peaks
  store.write(v, "v");
  for (const auto& [from, to] : {std::pair{traces::zeus::proxy_name(kWorkload), traces::zeus::proxy_name("v")},
                                 std::pair{traces::zeus::target_name(kWorkload), traces::zeus::target_name("v")}}) {
    auto r = store.read<traces::RelationSet>(from);
    r.name = to;
    r.workload = "v";
    store.write(r);
  }
}

// A measured (or predicted) point at GPU frequency `f_hz` and batch size `b`.
inline traces::ProfilePoint profile_point(double f_hz, int b, double time_s, double peak_w, double mean_w,
                                          int64_t power_samples) {
  traces::ProfilePoint p;
  p.knob = {f_hz};
  p.batch_size = b;
  p.time_per_batch_mean_s = time_s;
  p.power_peak_w = peak_w;
  p.power_mean_w = mean_w;
  p.power_samples = power_samples;
  return p;
}

// The analytical model record of kWorkload on kDevice with its held-out peak error at the 95th
// percentile, `peak_error_q95_pct` (%).
inline traces::ModelRecord model_record(double peak_error_q95_pct) {
  traces::ModelRecord model;
  model.name = models::model_record_name(kWorkload, kDevice, traces::ModelKind::analytical);
  model.kind = "analytical";
  model.workload = kWorkload;
  model.device = kDevice;
  model.metrics["power_peak_abs_err_q95_cv"] = peak_error_q95_pct;
  return model;
}

// kWorkload's proxy relation: one run of seed 0 at each of `batches`, 30000 samples to accuracy 0.9.
inline traces::RelationSet one_seed_proxy(const std::vector<int>& batches) {
  traces::RelationSet rel;
  rel.name = traces::zeus::proxy_name(kWorkload);
  rel.workload = kWorkload;
  rel.metric = "accuracy";
  rel.target = 0.9;
  for (int b : batches) rel.runs.push_back({b, 0, true, 30000, 10000000});
  return rel;
}

// The same runs as kWorkload's target relation.
inline traces::RelationSet same_runs_target(const traces::RelationSet& proxy) {
  traces::RelationSet target = proxy;
  target.name = traces::zeus::target_name(kWorkload);
  return target;
}

// A store whose predicted table holds a point only the model knows (460.8 MHz at b=128, the
// emulated Nano's of test_choice_rule.cpp): its predicted peak 5.704 W is under the 5.9 W cap less
// the model's 3% guard (5.723 W), but its spread (mean 5.474 W) projected to a run over the
// calibration's median 31 power samples is 6.05 W, over it. The measured points (307.2, 384 and
// 537.6 MHz over 25, 100 and 31 samples: median 31) are written by models::predict_table from a
// model answering the same values; 384 MHz (projected 5.46 W) is the fastest feasible point.
inline const std::vector<double> kProjectionOverCapKnob = {460.8e6};
inline const std::vector<double> kProjectionNeighbourKnob = {384e6};
inline constexpr double kProjectionCapW = 5.9;
inline void write_predicted_projection_store(const std::filesystem::path& path) {
  struct Point {
    double f, peak, mean;
    int samples;  // 0: predicted only
    double time;
  };
  const std::vector<Point> points = {{307.2e6, 5.0, 4.95, 25, 0.30},
                                     {384e6, 5.40, 5.35, 100, 0.2413},
                                     {460.8e6, 5.704, 5.474, 0, 0.2047},
                                     {537.6e6, 6.6, 5.6, 31, 0.1783}};
  traces::ProfileTable measured, truth;
  for (auto* t : {&measured, &truth}) {
    t->workload = kWorkload;
    t->device = kDevice;
  }
  std::vector<std::vector<double>> settings;
  for (const auto& m : points) {
    const auto p = profile_point(m.f, 128, m.time, m.peak, m.mean, m.samples);
    truth.points.push_back(p);
    if (m.samples > 0) measured.points.push_back(p);
    settings.push_back(p.knob);
  }
  const auto predicted = models::predict_table(sim::TableModel(truth), measured, settings, {128});
  const auto proxy = one_seed_proxy({128});
  auto store = traces::Store::open_or_create(path);
  store.write(measured, kMeasured);
  store.write(predicted, kPredicted);
  store.write(model_record(3));
  store.write(proxy);
  store.write(same_runs_target(proxy));
}

}  // namespace pacer::testing
