#pragma once
// Synthetic profile tables for the model tests: generated from the analytical form with known
// parameters (so a correct fit must recover them), optionally with multiplicative Gaussian noise.
#include <random>
#include <vector>

#include "models/analytical.hpp"
#include "traces/catalog/catalog.hpp"
#include "traces/records.hpp"

namespace pacer::models::testing {

inline AnalyticalParams nano_truth(const traces::DeviceSpec& nano) {
  AnalyticalParams p;
  p.voltage.table = nano.voltage_table;
  p.time = {6e-3, 0.4e-3, 2.0e6, 1.1e6};  // t0 [s], t1 [s/sample], w0 [cycles], w1 [cycles/sample]
  p.power_mean = {1.9, 0.6, 0.4e-9, 3.0e-9, 12.0};
  p.power_peak = {2.1, 0.7, 0.6e-9, 3.8e-9, 9.0};
  p.has_peak = true;
  return p;
}

// A second workload: heavier per sample, more memory-bound, different saturation.
inline AnalyticalParams nano_truth_b(const traces::DeviceSpec& nano) {
  AnalyticalParams p;
  p.voltage.table = nano.voltage_table;
  p.time = {9e-3, 1.5e-3, 1.0e6, 2.6e6};
  p.power_mean = {1.9, 0.6, 0.9e-9, 2.2e-9, 30.0};
  p.power_peak = {2.1, 0.7, 1.1e-9, 2.9e-9, 24.0};
  p.has_peak = true;
  return p;
}

inline traces::ProfileTable table_from(const AnalyticalParams& truth, const std::vector<double>& freqs_hz,
                                       const std::vector<int>& batch_sizes, double noise_rel = 0.0,
                                       unsigned seed = 7, const std::string& workload = "synthetic") {
  AnalyticalModel model(truth, traces::ModelRecord{});
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n(0.0, 1.0);
  traces::ProfileTable t;
  t.workload = workload;
  t.device = "jetson-nano";
  t.emulated = true;
  t.source = "test fixture";
  for (double f : freqs_hz)
    for (int b : batch_sizes) {
      const auto pred = model.predict({f}, b);
      traces::ProfilePoint p;
      p.knob = {f};
      p.batch_size = b;
      p.time_per_batch_mean_s = pred.time_per_batch_s * (1 + noise_rel * n(rng));
      p.time_per_batch_std_s = 0;
      p.power_mean_w = pred.power_mean_w * (1 + noise_rel * n(rng));
      p.power_peak_w = pred.power_peak_w * (1 + noise_rel * n(rng));
      p.samples = 10L * b;
      t.points.push_back(p);
    }
  return t;
}

inline std::vector<int> paper_batches() { return {4, 8, 16, 32, 64, 128}; }

}  // namespace pacer::models::testing
