#pragma once
// The profiler: for each (f, b) pin f, run warm-up mini-batches, then measured ones, and record
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
  std::string workload;             // name recorded in the table
  std::vector<int> batch_sizes;     // ascending or not; profiled as given (walk: largest first)
  std::vector<double> freqs_hz;     // empty: every frequency of the device
  int warmup_batches = 2;
  int measured_batches = 10;
  std::string mode = "grid";        // "grid" | "walk" (the paper's efficient walk for power_limit_w)
  double power_limit_w = 0;         // walk: the cap; grid: >0 arms the watchdog only
  std::string walk_power = "peak";  // which power figure decides feasibility in the walk
  double sensor_rate_hz = 10;       // device time
  int min_power_samples = 3;        // fewer: the point's power is not reported (the point is measured longer first)
  double max_extension = 20;        // at most this many times measured_batches to reach min_power_samples
  double watchdog_margin_w = 0.5;   // watchdog: power above cap + margin ...
  double watchdog_duration_s = 2.0; // ... for longer than this stops the point
  std::filesystem::path store;      // empty: nothing written
  std::string profile_name;         // empty: the workload name
  traces::DeviceSpec device_spec;   // written as /device when the store has none and this has a name
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

using ProgressFn = std::function<void(const traces::ProfilePoint&, int done, int planned)>;

// Restores the device's settings before returning, also when it throws.
ProfileReport run_profile(Device& device, BatchExecutor& executor, const ProfileOptions& options,
                          const ProgressFn& progress = {});

}  // namespace pacer::hw
