#pragma once
// What a configuration costs: the one interface through which the emulated device, the explorer
// and the simulator ask a model for a prediction: a calibrated one (analytical, learned,
// interpolating, modes), a measured table (sim/replay.hpp) or the emulator's physics.
#include <memory>
#include <string>
#include <vector>

#include "traces/records.hpp"

namespace pacer::models {

struct Prediction {
  double time_per_batch_s = traces::kNaN;
  double power_peak_w = traces::kNaN;
  double power_mean_w = traces::kNaN;
};

class DeviceModel {
 public:
  virtual ~DeviceModel() = default;
  virtual traces::ModelKind kind() const = 0;  // the list: traces/kinds.hpp
  virtual const traces::KnobSpace& knob() const = 0;
  // Cost of one mini-batch of `batch_size` at knob setting `knob` (SI units, one value per dim).
  virtual Prediction predict(const std::vector<double>& knob, int batch_size) const = 0;
  virtual traces::ModelRecord to_record() const = 0;
};

// Rebuilds a model from its stored record (dispatches on record.kind: the calibrated kinds,
// traces::is_calibrated). Throws Error on a record of another kind or with missing parameters.
std::unique_ptr<DeviceModel> model_from_record(const traces::ModelRecord& record);

}  // namespace pacer::models
