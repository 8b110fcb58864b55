#pragma once
// An interpolating model for knobs the analytical form does not describe (a GPU power limit, as in
// the Zeus traces): per profiled batch size, piecewise-linear in the one-dimensional knob (which
// keeps monotone data monotone and never invents a trend the data contradicts), clamped
// outside the profiled range; across batch sizes, log-linear in b between the two nearest
// profiled b (log-log extrapolation from the two outermost beyond them).
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "models/device_model.hpp"
#include "traces/records.hpp"

namespace pacer::models {

class InterpolatingModel : public DeviceModel {
 public:
  struct Sample {
    double knob = 0;
    double time_per_batch_s = traces::kNaN;
    double power_mean_w = traces::kNaN;
    double power_peak_w = traces::kNaN;
  };

  // `by_batch`: per batch size, samples ascending in knob, one per knob value.
  InterpolatingModel(traces::KnobSpace knob, std::map<int, std::vector<Sample>> by_batch, traces::ModelRecord record);

  traces::ModelKind kind() const override { return traces::ModelKind::interpolating; }
  const traces::KnobSpace& knob() const override { return knob_; }
  Prediction predict(const std::vector<double>& knob, int batch_size) const override;
  traces::ModelRecord to_record() const override;

 private:
  Prediction at_batch(int batch_size, double knob) const;

  traces::KnobSpace knob_;
  std::map<int, std::vector<Sample>> by_batch_;
  traces::ModelRecord record_;
};

// Throws Error for a knob of more than one dimension or no points. Repeated (knob, b) points are
// averaged.
std::unique_ptr<InterpolatingModel> fit_interpolating(const std::vector<traces::ProfilePoint>& points,
                                                      const traces::KnobSpace& knob);

std::unique_ptr<InterpolatingModel> interpolating_from_record(const traces::ModelRecord& record);

}  // namespace pacer::models
