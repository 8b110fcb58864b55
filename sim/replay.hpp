#pragma once
// Replay of training to accuracy for one configuration: TT_acc(k, b) = t_batch(k, b) * N_acc(b) / b
// and energy = P_mean(k, b) * TT_acc for every seed of the target RelationSet, as a distribution.
#include <string>
#include <vector>

#include "base/stats.hpp"
#include "models/device_model.hpp"
#include "traces/records.hpp"

namespace pacer::sim {

// What one mini-batch costs at a configuration (from a profile row or a model prediction).
struct PointCost {
  double time_per_batch_s = traces::kNaN;
  double power_mean_w = traces::kNaN;
  double power_peak_w = traces::kNaN;

  // Energy is this power x time (base::energy_power_w: the mean, else the peak as an upper bound).
  double energy_power_w() const { return base::energy_power_w(power_mean_w, power_peak_w); }
};

struct SeedOutcome {
  int seed = 0;
  bool reached = false;  // false: the seed never reached the target (censored), not in the mean
  double time_s = traces::kNaN;
  double energy_j = traces::kNaN;
};

struct ReplayResult {
  int batch_size = 0;
  double time_mean_s = traces::kNaN;
  double time_std_s = traces::kNaN;  // sample std over reached seeds (0 with one seed)
  double energy_mean_j = traces::kNaN;
  double energy_std_j = traces::kNaN;
  int seeds_reached = 0;
  int seeds_total = 0;
  std::vector<SeedOutcome> seeds;
};

ReplayResult replay(const PointCost& cost, int batch_size, const traces::RelationSet& target);
ReplayResult replay(const models::DeviceModel& model, const std::vector<double>& knob, int batch_size,
                    const traces::RelationSet& target);

// A DeviceModel that answers exactly what a ProfileTable measured (kind "table"): lets the
// simulator run on profiled or imported data with no calibrated model. Unprofiled points throw.
class TableModel final : public models::DeviceModel {
 public:
  explicit TableModel(traces::ProfileTable table);
  traces::ModelKind kind() const override { return traces::ModelKind::table; }
  const traces::KnobSpace& knob() const override { return table_.knob; }
  models::Prediction predict(const std::vector<double>& knob, int batch_size) const override;
  traces::ModelRecord to_record() const override;
  const traces::ProfileTable& table() const { return table_; }

 private:
  traces::ProfileTable table_;
};

// Every distinct knob setting of a table, ascending (lexicographic for multi-dim knobs).
std::vector<std::vector<double>> knob_settings(const traces::ProfileTable& table);

}  // namespace pacer::sim
