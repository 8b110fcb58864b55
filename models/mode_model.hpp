#pragma once
// A model over a Jetson's power-mode caps, so unprofiled modes are predicted: the analytical GPU
// model (analytical.hpp) at the mode's GPU clock cap f with its powered TPC share s (compute at
// f*s; leakage and switched capacitance times s), plus cap terms for what the GPU cannot explain,
// fitted jointly with it (non-negative, weak priors towards 0):
//   time   t = t_gpu(f, s, b) + (a0 + a1 b) (cpu_max / cpu_freq - 1) + (m0 + m1 b) (emc_max / emc_freq - 1)
//   power  P = P_gpu(f, s, b) - p_host (1 - cores cpu_freq^2 / (cores_max cpu_max^2)) - p_emc (1 - emc_freq / emc_max)
// Host code per step slows with the CPU clock, memory-bound work with the EMC clock; host power
// follows the online cores and the square of their clock. docs/models.md, "Power modes".
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "models/analytical.hpp"
#include "models/device_model.hpp"
#include "traces/catalog/power_modes.hpp"
#include "traces/records.hpp"

namespace pacer::models {

struct ModeTerms {
  double time_cpu_s = 0, time_cpu_per_sample_s = 0;  // a0, a1
  double time_emc_s = 0, time_emc_per_sample_s = 0;  // m0, m1
  double power_mean_host_w = 0, power_mean_emc_w = 0;
  double power_peak_host_w = 0, power_peak_emc_w = 0;
};

class ModeModel : public DeviceModel {
 public:
  ModeModel(traces::KnobSpace knob, traces::ModeCaps maxima, std::unique_ptr<AnalyticalModel> gpu, ModeTerms terms,
            traces::ModelRecord record);
  traces::ModelKind kind() const override { return traces::ModelKind::modes; }
  const traces::KnobSpace& knob() const override { return knob_; }
  Prediction predict(const std::vector<double>& knob, int batch_size) const override;
  traces::ModelRecord to_record() const override;

  const AnalyticalModel& gpu() const { return *gpu_; }
  const ModeTerms& terms() const { return terms_; }

 private:
  traces::KnobSpace knob_;
  traces::ModeCaps maxima_;
  std::unique_ptr<AnalyticalModel> gpu_;
  ModeTerms terms_;
  traces::ModelRecord record_;
};

struct ModeFitOptions {
  traces::KnobSpace knob;   // the profile's power-mode knob
  traces::ModeCaps maxima;  // the board's caps (traces::mode_maxima): the terms' reference
  AnalyticalFitOptions analytical;
  bool cap_terms = true;  // false: the GPU model alone (the "gpu" candidate)
};

// Throws Error when the GPU part cannot be fitted (fewer than 4 points or 2 GPU clocks).
std::unique_ptr<ModeModel> fit_modes(const std::vector<traces::ProfilePoint>& points, const ModeFitOptions& options);

std::unique_ptr<ModeModel> modes_from_record(const traces::ModelRecord& record);

// One mode's errors when it was held out, for one candidate of the leave-one-mode-out choice
// between the GPU-only model and the one with cap terms; stored with the calibrated model.
struct LomoEntry {
  bool cap_terms = false;    // the candidate: GPU + cap terms, else GPU only
  std::vector<double> knob;  // the mode held out
  double time_mape = traces::kNaN, power_mean_mape = traces::kNaN;  // [%]
};
// Writes the entries into a record's settings ("lomo_per_mode", with its format in "lomo_format").
void write_lomo(const std::vector<LomoEntry>& entries, std::map<std::string, std::string>& settings);
// Reads them back; none when the record has none (a model of another kind, or an older record).
std::vector<LomoEntry> read_lomo(const traces::ModelRecord& record);

// The points of a GPU-frequency profile as power-mode points: the board's maxima with the GPU
// clock each point pinned (a sweep taken in MAXN with the GPU clock locked, as LoudVA's).
std::vector<traces::ProfilePoint> sweep_as_mode_points(const std::vector<traces::ProfilePoint>& sweep,
                                                       const traces::KnobSpace& knob, const traces::ModeCaps& maxima);

// A leave-one-mode-out error (MAPE of time, mean or peak power, over the modes held out) above
// this is warned about: Jetson power modes differ by roughly 10 to 30 % in power and speed from
// one to the next, so a model 25 % off on a mode it did not see can rank neighbouring modes wrongly
// and pick one over the cap; its predicted table is then a guess, not a measurement substitute.
inline constexpr double kLargeLomoErrorPct = 25;
// The warning for `record` (empty when no leave-one-mode-out error exceeds kLargeLomoErrorPct).
std::string lomo_warning(const traces::ModelRecord& record);

}  // namespace pacer::models
