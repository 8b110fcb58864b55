#pragma once
// Power sampling: a background thread reads the device at a fixed rate (default 10 Hz; the paper
// used 1 Hz) and accumulates peak, mean, energy (trapezoid), the raw series and the sensor's health
// (failed, garbage and missing reads, frozen values). The training thread never waits on a sensor
// read: stop() waits for the read in flight at most SamplerOptions::read_timeout_s.
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
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

// A live INA3221 reading moves by at least its LSB within one conversion period, at most 1.1 s
// (docs/reliability.md): readings bit-identical for longer come from a sensor that stopped.
inline constexpr double kLiveSensorStillMaxS = 1.1;

// How the sensor behaved over a window: what the profiler decides a point's outcome from
// (docs/reliability.md, "Sensor and devfreq faults").
struct SensorHealth {
  int64_t reads = 0;   // attempts: readings + failures
  int64_t failed = 0;  // failed reads, garbage included
  int64_t garbage = 0;
  int64_t missing = 0;
  bool last_failed = false;                        // the most recent attempt failed ...
  SensorFault last_fault = SensorFault::read_error;  // ... for this reason
  std::string first_error;                         // message of the first failure
  std::string last_error;                          // message of the most recent failure
  double longest_unchanged_s = 0;  // longest stretch of bit-identical total readings [device s]
  double unchanged_w = traces::kNaN;  // the value repeated over that stretch
  double span_s = 0;                  // first to last reading of the window [device s]
  double failed_share() const { return reads > 0 ? static_cast<double>(failed) / static_cast<double>(reads) : 0.0; }
  // The sensor stopped: its readings stayed bit-identical longer than `limit_s`, or through the whole
  // window when the window is shorter than the limit but longer than a live sensor stays still (a
  // short profiled point would otherwise never be caught). `limit_s` <= 0: never.
  bool frozen(double limit_s) const {
    if (!(limit_s > 0)) return false;
    return longest_unchanged_s > limit_s ||
           (span_s > kLiveSensorStillMaxS && span_s < limit_s && longest_unchanged_s >= span_s * (1 - 1e-9));
  }
  bool frozen_whole_window(double limit_s) const { return frozen(limit_s) && !(longest_unchanged_s > limit_s); }
};

// The power watchdog: trips once the mean of the total power over the last `window_s` (device
// time, a full window of samples) is above `limit_w` (a cap plus a margin). A windowed mean, like
// an over-current protection, is what "stays above" means for a board whose power swings within a
// mini-batch (compute phase at the peak, data phase near idle): a stretch of samples above the
// limit would end at every dip and never trip. A constant power above the limit trips one window
// after it began. limit_w <= 0 or window_s <= 0: off.
// When and how a watchdog tripped (a small snapshot to poll between mini-batches).
struct WatchdogTrip {
  bool tripped = false;
  double at_s = traces::kNaN;    // time of the reading that tripped it
  double mean_w = traces::kNaN;  // the window mean that tripped it
};

class PowerWatchdog {
 public:
  PowerWatchdog() = default;
  PowerWatchdog(double limit_w, double window_s) : limit_w_(limit_w), window_s_(window_s) {}
  bool armed() const { return limit_w_ > 0 && window_s_ > 0; }
  // Feeds one reading (times ascending); returns true when this reading trips the watchdog.
  bool observe(double time_s, double total_w);
  const WatchdogTrip& trip() const { return trip_; }
  bool tripped() const { return trip_.tripped; }
  double limit_w() const { return limit_w_; }
  double window_s() const { return window_s_; }

 private:
  double limit_w_ = 0, window_s_ = 0;
  double first_s_ = traces::kNaN;
  std::deque<std::pair<double, double>> recent_;
  double sum_w_ = 0;
  WatchdogTrip trip_;
};

// Accumulates readings at given times (device seconds). Used by the threaded sampler and, with
// the emulated device's virtual clock, directly by the profiler.
class PowerAccumulator {
 public:
  // `watchdog` armed: every reading feeds it.
  explicit PowerAccumulator(int min_samples = 3, PowerWatchdog watchdog = {}) : min_samples_(min_samples), watchdog_(watchdog) {}
  void add(double time_s, const PowerReading& reading);
  void add_failure(SensorFault fault = SensorFault::read_error, const std::string& message = {});
  int64_t count() const { return static_cast<int64_t>(series_.time_s.size()); }
  int64_t failed() const { return health_.failed; }
  const SensorHealth& health() const { return health_; }
  const PowerWatchdog& watchdog() const { return watchdog_; }
  // Throws Error when fewer than min_samples readings exist: a peak from one sample is noise.
  PowerStats stats() const;
  const traces::PowerSeries& series() const { return series_; }

 private:
  int min_samples_;
  PowerWatchdog watchdog_;
  double unchanged_since_s_ = -1;
  SensorHealth health_;
  traces::PowerSeries series_;
};

struct SamplerOptions {
  double rate_hz = 10;       // in device time
  int min_samples = 3;
  double time_scale = 1.0;   // wall seconds per device second (hardware-in-the-loop runs faster)
  double watchdog_w = 0;     // 0: no watchdog ...
  double watchdog_window_s = 0;  // ... else PowerWatchdog(watchdog_w, watchdog_window_s)
  double read_timeout_s = 5; // wall seconds one read may block before stop() abandons it
};

class PowerSampler {
 public:
  using Reader = std::function<PowerReading()>;
  // The reader runs on the sampler's thread; it must own what it touches (Device::power_reader)
  // when reads can block, since a blocked read outlives stop().
  PowerSampler(Reader reader, SamplerOptions options);
  ~PowerSampler();
  PowerSampler(const PowerSampler&) = delete;
  PowerSampler& operator=(const PowerSampler&) = delete;

  void start();  // clears the previous window
  // Idempotent. Waits for the read in flight until it has run read_timeout_s; a read blocked
  // longer is abandoned: the thread is detached and finishes (or stays blocked) on its own, and
  // abandoned() turns true. The figures gathered before stay readable.
  void stop();
  // Snapshot; safe while running (the profiler's watchdog polls it between mini-batches).
  WatchdogTrip watchdog_trip() const;
  int64_t count() const;
  PowerStats stats() const;  // throws Error on too few samples
  traces::PowerSeries series() const;
  SensorHealth health() const;
  // Wall seconds the read in flight has been running; 0 when none is.
  double read_in_flight_s() const;
  bool abandoned() const { return abandoned_; }

 private:
  struct Shared;
  static void loop(const std::shared_ptr<Shared>& shared);
  Reader reader_;
  SamplerOptions options_;
  std::shared_ptr<Shared> shared_;  // also held by the thread, which may outlive an abandoning stop()
  std::thread thread_;
  bool abandoned_ = false;
};

}  // namespace pacer::hw
