#pragma once
// The GPU part of a synthetic AGX-Orin-like power-mode model: analytical parameters with a voltage
// knee, shared by the mode-model tests (models/) and the selection-over-modes tests (explore/).
#include "models/analytical.hpp"

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

}  // namespace pacer::testing
