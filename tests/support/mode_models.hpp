#pragma once
// The GPU part of a synthetic AGX-Orin-like power-mode model: analytical parameters with a voltage
// knee, shared by the mode-model tests (models/) and the selection-over-modes tests (explore/).
#include <string>

#include "models/analytical.hpp"
#include "traces/catalog/power_modes.hpp"
#include "traces/records.hpp"

namespace pacer::testing {

inline models::AnalyticalParams synthetic_orin_gpu_params() {
  models::AnalyticalParams a;
  a.voltage.floor_v = 1;
  a.voltage.knee_hz = 500e6;
  a.voltage.slope_v_per_hz = 0.5e-9;
  a.time = {0.004, 0.0002, 1.5e6, 3e6};
  a.power_mean = {8, 3, 2e-9, 1.2e-8, 16, 0, 0};
  a.power_peak = {8, 3, 3e-9, 1.6e-8, 16, 0, 0};
  return a;
}

// What `model` predicts at every power mode of `device` x b = 8..128, as a measured profile of
// `workload` (mean power; the peak too where `with_peak`).
inline traces::ProfileTable modes_table(const models::DeviceModel& model, const traces::DeviceSpec& device,
                                        const std::string& workload, bool with_peak) {
  traces::ProfileTable t;
  t.workload = workload;
  t.device = device.name;
  t.knob = traces::power_mode_knob(device);
  for (const auto& k : traces::mode_settings(device))
    for (int b : {8, 16, 32, 64, 128}) {
      traces::ProfilePoint p;
      p.knob = k;
      p.batch_size = b;
      const auto pr = model.predict(k, b);
      p.time_per_batch_mean_s = pr.time_per_batch_s;
      p.power_mean_w = pr.power_mean_w;
      if (with_peak) p.power_peak_w = pr.power_peak_w;
      t.points.push_back(p);
    }
  return t;
}

}  // namespace pacer::testing
