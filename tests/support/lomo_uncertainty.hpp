#pragma once
// A model record's stated uncertainty as calibrate stores it, for tests of how commands print and
// use it: leave-one-mode-out errors of 4 % (time), 2 % (mean power), 3 % (peak power) over a
// measurement spread of 1, 2 and 2.5 % (30 neighbour triples).
#include <string>

#include "models/uncertainty.hpp"
#include "traces/records.hpp"

namespace pacer::testing {

inline void store_lomo_uncertainty(traces::ModelRecord& record, const std::string& floating_clocks) {
  record.metrics["time_mape_lomo"] = 4;
  record.metrics["power_mean_mape_lomo"] = 2;
  record.metrics["power_peak_mape_lomo"] = 3;
  models::NoiseFloor floor;
  floor.method = "neighbours";
  floor.terms = 30;
  floor.time_rel = 0.01;
  floor.power_mean_rel = 0.02;
  floor.power_peak_rel = 0.025;
  models::store_uncertainty(record, floor, floating_clocks);
}

}  // namespace pacer::testing
