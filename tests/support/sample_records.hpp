#pragma once
// Sample records of every kind, shared by tests/traces, tests/reliability and tests/fuzz: one place
// that builds them, so a new column is filled in once. Values are chosen to catch a wrong codec: NaN
// where a column may be missing, distinct numbers per column, strings with commas and quotes, an
// infeasible sweep row without a knob, a boolean set on only some rows.
#include <random>
#include <string>

#include "traces/records.hpp"

namespace pacer::testing {

// A small profile of a CNN on a Nano: 3 clocks x b in {8, 32}, time per batch proportional to b / f,
// peak power 2 + (4 or 6 W at b = 32) x f / 921.6 MHz, the mean 0.3 W below it; the stores of the
// report's figure tests and the policy bench's tests.
inline traces::ProfileTable small_cnn_profile(bool emulated = true) {
  traces::ProfileTable prof;
  prof.workload = "cnn";
  prof.device = "jetson-nano";
  prof.emulated = emulated;
  for (double f : {307.2e6, 614.4e6, 921.6e6})
    for (int b : {8, 32}) {
      traces::ProfilePoint p;
      p.knob = {f};
      p.batch_size = b;
      p.time_per_batch_mean_s = b * 1e-3 * 921.6e6 / f;
      p.power_peak_w = 2 + f / 921.6e6 * (b == 32 ? 6 : 4);
      p.power_mean_w = p.power_peak_w - 0.3;
      prof.points.push_back(p);
    }
  return prof;
}

// Six points (3 frequencies x 2 batch sizes) with random-looking times and powers; temperature stays
// NaN (NaN must survive the round trip) and the last point is skipped with a status holding a comma.
inline traces::ProfileTable sample_profile() {
  traces::ProfileTable t;
  t.workload = "resnet8-w0.25@1x28x28";
  t.device = "jetson-nano";
  t.emulated = true;
  t.virtual_time = true;
  t.source = "test";
  t.warmup_batches = 3;
  t.measured_batches = 10;
  t.profiling_cost_s = 12.5;
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(0.1, 9.0);
  for (double f : {76.8e6, 460.8e6, 921.6e6})
    for (int b : {8, 64}) {
      traces::ProfilePoint p;
      p.knob = {f};
      p.batch_size = b;
      p.time_per_batch_mean_s = u(rng);
      p.time_per_batch_std_s = u(rng) / 100;
      p.power_peak_w = u(rng);
      p.power_mean_w = p.power_peak_w * 0.9;
      p.energy_j = u(rng) * 3;
      p.samples = 10 * b;
      p.power_samples = 42;
      p.sensor_rate_hz = 10;
      t.points.push_back(p);
    }
  t.points.back().status = "skipped: cap exceeded, watchdog";
  return t;
}

// Four runs: b=8 reaches at 4000 and 6000 samples, b=64 at 12000 (seed 0) and is censored (seed 1).
inline traces::RelationSet sample_relation() {
  traces::RelationSet s;
  s.name = "fmnist-proxy";
  s.workload = "resnet8";
  s.dataset = "fashion-mnist/proxy";
  s.metric = "accuracy";
  s.target = 0.85;
  s.lr_rule = "lr = base_lr * sqrt(b / base_batch)";
  s.base_lr = 1e-3;
  s.base_batch = 64;
  s.optimizer = "adam";
  s.runs = {{8, 0, true, 4000, 100000, 3.2, 0.86, 3.5e-4},
            {8, 1, true, 6000, 100000, 4.1, 0.851, 3.5e-4},
            {64, 0, true, 12000, 100000, 2.0, 0.852, 1e-3},
            {64, 1, false, 100000, 100000, 20.0, 0.80, 1e-3}};
  return s;
}

inline traces::ModelRecord sample_model() {
  traces::ModelRecord m;
  m.name = "resnet8@jetson-nano:analytical";
  m.kind = "analytical";
  m.workload = "resnet8";
  m.device = "jetson-nano";
  m.param_names = {"p_idle_w", "k_leak"};
  m.param_values = {1.9, 0.4};
  m.param_stderr = {0.01, traces::kNaN};
  m.metrics = {{"power_mape_cv", 1.8}, {"time_mape_cv", 3.1}};
  m.settings = {{"points", "8"}};
  m.blob = {0, 1, 2, 255};
  return m;
}

// A feasible row and an infeasible one (no knob, NaN costs).
inline traces::SweepResult sample_sweep() {
  traces::SweepResult s;
  s.name = "nano-sweep";
  s.profile = "p";
  s.relation = "r";
  s.target = "t";
  s.feasibility = "peak";
  s.rows = {{5.0, "w", "ours", true, {614.4e6}, 32, 10, 50, 11, 1, 55, 0.0},
            {1.0,
             "w",
             "ours",
             false,
             {},
             0,
             traces::kNaN,
             traces::kNaN,
             traces::kNaN,
             traces::kNaN,
             traces::kNaN,
             traces::kNaN}};
  return s;
}

// No GPU rail (gpu_power empty), a frequency per sample.
inline traces::PowerSeries sample_series() {
  traces::PowerSeries ps;
  ps.name = "validate-ours-5W";
  ps.emulated = true;
  ps.cap_w = 5;
  ps.time_s = {0, 0.1, 0.2};
  ps.power_w = {3, 4.5, 4.9};
  ps.freq_hz = {614.4e6, 614.4e6, 537.6e6};
  ps.failed_reads = 1;
  return ps;
}

// Two rows (ours and the oracle) at one cap; the oracle's was stopped by the watchdog.
inline traces::ValidationResult sample_validation() {
  traces::ValidationResult v;
  v.name = "val";
  v.workload = "w";
  v.device = "jetson-nano";
  v.dataset = "fmnist-target-a";
  v.metric = "accuracy";
  v.target = 0.8;
  v.emulated = true;
  v.feasibility = "peak";
  traces::ValidationRow row;
  row.cap_w = 5;
  row.policy = "ours";
  row.knob = {614.4e6};
  row.batch_size = 32;
  row.seed = 2;
  row.reached = true;
  row.samples = 4096;
  row.device_time_s = 31.5;
  row.cap_exceeded = true;
  row.time_over_cap_s = 0.2;
  row.series = "val-ours-5W-s2";
  v.rows = {row, row};
  v.rows[1].policy = "oracle";
  v.rows[1].reached = false;
  v.rows[1].status = "stopped: power watchdog, \"test\"";
  return v;
}

// A validation record of `rows` rows (caps 5, 6, ... W), to test what a rewrite may replace.
inline traces::ValidationResult sample_validation_rows(int rows) {
  traces::ValidationResult v = sample_validation();
  const traces::ValidationRow first = v.rows.front();
  v.rows.clear();
  for (int i = 0; i < rows; ++i) {
    v.rows.push_back(first);
    v.rows.back().cap_w = 5 + i;
  }
  return v;
}

}  // namespace pacer::testing
