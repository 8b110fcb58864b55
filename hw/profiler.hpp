#pragma once
// The profiler: for each (knob setting, b) pin the setting, run warm-up mini-batches, then measured ones, and record
// time per mini-batch (mean, std) and power (peak, mean) into a ProfileTable, written through the
// trace store after every point so an interrupted campaign resumes where it stopped.
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "hw/device.hpp"
#include "hw/executor.hpp"
#include "traces/records.hpp"

namespace pacer::hw {

struct ProfileOptions {
  std::string workload;          // name recorded in the table
  std::vector<int> batch_sizes;  // ascending or not; profiled as given (walk: largest first)
  // Settings of the device's one-dimensional knob to profile, SI in the knob's unit (GPU frequency
  // in Hz, power limit in W); empty: every setting of the device.
  std::vector<double> knob_values;
  // Settings of a multi-dimensional knob (power modes: their caps, traces/catalog/power_modes.hpp); empty:
  // every setting of the device. Each must be one the device lists.
  std::vector<std::vector<double>> settings;
  int warmup_batches = 2;
  int measured_batches = 10;
  std::string mode = "grid";        // "grid" | "walk" (the paper's efficient walk for power_limit_w; one-dim knobs)
  double power_limit_w = 0;         // walk: the cap; grid: >0 arms the watchdog only
  std::string walk_power = "peak";  // which power figure decides feasibility in the walk
  double sensor_rate_hz = 10;       // device time
  // A point is measured until its power figure rests on this many samples (3 s at 10 Hz): a peak
  // from a handful of samples misses the compute phase of most mini-batches and reads low.
  int min_power_samples = 30;        // fewer (after max_extension): the point's power is not reported
  double max_extension = 200;        // at most this many times measured_batches to reach min_power_samples
  double watchdog_margin_w = 0.5;    // watchdog (PowerWatchdog): mean power over the last ...
  double watchdog_duration_s = 2.0;  // ... this many seconds above cap + margin stops the point
  // Sensor faults (docs/reliability.md, "Sensor and devfreq faults"):
  double sensor_read_timeout_s = 5;    // a power read blocked longer stops the run [wall s]
  double max_failed_read_share = 0.1;  // more failed or garbage reads than this share skip the point
  double sensor_frozen_s = 5;          // total power unchanged bit for bit this long skips the point [s]; 0: off
  std::filesystem::path store;         // empty: nothing written
  std::string profile_name;            // empty: the workload name
  traces::DeviceSpec device_spec;      // written as /device when the store has none and this has a name
  std::string source = "pacer profile";
};

struct ProfileReport {
  traces::ProfileTable table;
  int grid_points = 0;      // |F| x |B|
  int measured_points = 0;  // measured in this run
  int resumed_points = 0;   // found in the store and skipped
  int stopped_points = 0;   // stopped by the watchdog
  double cost_s = 0;        // time spent in this run (virtual on the emulated device)
};

// The short name of a knob dimension in messages and progress lines: its heading without the unit
// ("f" for a GPU frequency, "P_limit" for a power limit).
std::string knob_label(const traces::KnobSpace& knob, size_t dim = 0);

using ProgressFn = std::function<void(const traces::ProfilePoint&, int done, int planned)>;

// Throws what run_profile throws on its options before it measures anything (no batch sizes, a
// setting the device does not have, a walk without a cap, ...).
void check_profile_options(const Device& device, const ProfileOptions& options);

// Restores the device's settings before returning, also when it throws. Outcomes of faults: a
// setting the device does not apply (SettingNotApplied) or a sensor returning too many failed or
// garbage reads or a frozen value skips the point with the reason as its status (a rerun on the
// same store measures such points again); a sensor file that disappears, a sensor read that
// blocks, or a setting the device refuses (EACCES, EBUSY after retries, EINVAL) stops the run with
// an Error. Points written before are kept.
ProfileReport run_profile(Device& device, BatchExecutor& executor, const ProfileOptions& options,
                          const ProgressFn& progress = {});

}  // namespace pacer::hw
