#pragma once
// Time-domain run of training to accuracy: mini-batch by mini-batch with a DeviceModel, power
// sampled at the sensor rate with noise, a circuit-level cap governor, exact and sampled energy,
// and a cap that may change over time (re-selection at every change).
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "models/device_model.hpp"
#include "traces/records.hpp"

namespace pacer::sim {

// One step of a cap schedule: from time_s on, the cap is cap_w (until the next step).
struct CapStep {
  double time_s = 0;
  double cap_w = 0;
};

// CSV with header "time_s,cap_w" (units may be written "time[s]", "cap[W]"); times ascending,
// first at 0. Throws Error naming the file and the row.
std::vector<CapStep> parse_cap_schedule(const std::string& csv_text, const std::string& origin);
std::vector<CapStep> read_cap_schedule(const std::filesystem::path& path);
// Cap in force at time t; NaN (no cap) for an empty schedule.
double cap_at(const std::vector<CapStep>& schedule, double time_s);

struct Choice {
  std::vector<double> knob;
  int batch_size = 0;
  bool operator==(const Choice&) const = default;
};
// Picks the configuration for a cap (NaN: no cap). nullopt: nothing is feasible under that cap;
// the run then keeps its configuration and the governor throttles as far as it can.
using Selector = std::function<std::optional<Choice>(double cap_w)>;

// The valid ranges of a run's sensor settings (checked by check_run_options, which run() calls): a
// power sensor samples at most 10,000 times a second and at least once an hour; its noise is below 1 kW.
inline constexpr double kMinSamplePeriodS = 1e-4;
inline constexpr double kMaxSamplePeriodS = 3600;
inline constexpr double kMaxNoiseStdW = 1000;

struct RunOptions {
  double sample_period_s = 0.1;   // power sensor period (the paper: 1 s; the sampler default: 0.1 s)
  double noise_std_w = 0.0;       // Gaussian sensor noise
  uint64_t noise_seed = 1;
  // Share of a mini-batch spent at peak power when the model gives a peak above its mean; the
  // rest runs at the power that keeps the batch's mean exact.
  double compute_fraction = 0.7;
  bool governor = true;           // throttle the knob when the power would exceed the cap
  size_t max_series_samples = 500000;  // longer runs are decimated (period doubled) to fit
  std::string name = "simulate";
};

// Throws SettingError ("sample-period", "noise") for a value outside the ranges above.
void check_run_options(const RunOptions& options);

struct RunInput {
  // Every setting the governor may step through (the device's table; any order).
  std::vector<std::vector<double>> knob_settings;
  // Samples to the target at each batch size (one seed, or the mean over seeds).
  std::map<int, double> samples_to_target;
  std::vector<CapStep> caps;  // empty: no cap
  Selector select;            // called at t = 0 and at every cap change
};

struct Segment {
  double start_s = 0, end_s = 0;
  double cap_w = traces::kNaN;
  Choice requested;
  int64_t batches = 0;
  double progress_start = 0, progress_end = 0;  // fraction of the samples to target done
};

struct RunResult {
  traces::PowerSeries series;    // what the sensor reads (true power + noise)
  bool reached = false;
  double time_s = 0;
  double energy_j = 0;           // exact integral of the true power
  double energy_sampled_j = 0;   // trapezoid over the sensor series (what a sampler would report)
  double max_true_power_w = 0;
  double max_measured_power_w = 0;
  double time_over_cap_s = 0;    // time with the true power above the cap in force
  int64_t batches = 0;
  int64_t throttled_batches = 0; // batches run below the requested setting
  int reselections = 0;
  std::vector<Segment> segments;
};

RunResult run(const models::DeviceModel& model, const RunInput& input, const RunOptions& options);

}  // namespace pacer::sim
