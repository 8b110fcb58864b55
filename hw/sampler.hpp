#pragma once
// Power sampling: a background thread reads the device at a fixed rate (default 10 Hz; the paper
// used 1 Hz) and accumulates peak, mean, energy (trapezoid) and the raw series. The training
// thread never waits on a sensor read: stop() only joins after the read in flight.
#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "hw/device.hpp"
#include "traces/records.hpp"

namespace pacer::hw {

struct PowerStats {
  int64_t samples = 0;
  int64_t failed_reads = 0;
  double peak_w = traces::kNaN;
  double mean_w = traces::kNaN;      // arithmetic mean of the samples (uniform sampling)
  double energy_j = traces::kNaN;    // trapezoid over the samples
  double duration_s = 0;             // first to last sample
  double gpu_peak_w = traces::kNaN;
  double gpu_mean_w = traces::kNaN;
  double rate_hz = traces::kNaN;     // achieved
};

// Accumulates readings at given times (device seconds). Used by the threaded sampler and, with
// the emulated device's virtual clock, directly by the profiler.
class PowerAccumulator {
 public:
  // `watchdog_w` > 0: tracks how long the total stays above it.
  explicit PowerAccumulator(int min_samples = 3, double watchdog_w = 0) : min_samples_(min_samples), watchdog_w_(watchdog_w) {}
  void add(double time_s, const PowerReading& reading);
  void add_failure() { ++failed_; }
  int64_t count() const { return static_cast<int64_t>(series_.time_s.size()); }
  int64_t failed() const { return failed_; }
  // Longest continuous stretch above the watchdog threshold so far [s].
  double longest_over_s() const { return longest_over_s_; }
  // Throws Error when fewer than min_samples readings exist: a peak from one sample is noise.
  PowerStats stats() const;
  const traces::PowerSeries& series() const { return series_; }

 private:
  int min_samples_;
  double watchdog_w_;
  int64_t failed_ = 0;
  double over_since_s_ = -1;
  double longest_over_s_ = 0;
  traces::PowerSeries series_;
};

struct SamplerOptions {
  double rate_hz = 10;       // in device time
  int min_samples = 3;
  double time_scale = 1.0;   // wall seconds per device second (hardware-in-the-loop runs faster)
  double watchdog_w = 0;     // 0: no watchdog
};

class PowerSampler {
 public:
  using Reader = std::function<PowerReading()>;
  PowerSampler(Reader reader, SamplerOptions options);
  ~PowerSampler();
  PowerSampler(const PowerSampler&) = delete;
  PowerSampler& operator=(const PowerSampler&) = delete;

  void start();  // clears the previous window
  void stop();   // idempotent
  // Snapshot; safe while running (the profiler's watchdog polls it between mini-batches).
  double longest_over_s() const;
  int64_t count() const;
  PowerStats stats() const;  // throws Error on too few samples
  traces::PowerSeries series() const;

 private:
  void loop();
  Reader reader_;
  SamplerOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_requested_ = false;
  std::thread thread_;
  PowerAccumulator acc_;
};

}  // namespace pacer::hw
