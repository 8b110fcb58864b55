#include "hw/sampler.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

#include "base/error.hpp"
#include "base/stats.hpp"

namespace pacer::hw {

bool PowerWatchdog::observe(double time_s, double total_w) {
  if (!armed() || trip_.tripped || !std::isfinite(total_w)) return false;
  if (std::isnan(first_s_)) first_s_ = time_s;
  recent_.emplace_back(time_s, total_w);
  sum_w_ += total_w;
  while (!recent_.empty() && recent_.front().first <= time_s - window_s_) {
    sum_w_ -= recent_.front().second;
    recent_.pop_front();
  }
  // A full window: the run has lasted window_s (one sample period of slack for the sampling grid).
  const double period_s =
      recent_.size() > 1 ? (time_s - recent_.front().first) / static_cast<double>(recent_.size() - 1) : 0;
  if (time_s - first_s_ + period_s < window_s_ * (1 - 1e-9)) return false;
  const double mean = sum_w_ / static_cast<double>(recent_.size());
  if (!(mean > limit_w_)) return false;
  trip_ = {true, time_s, mean};
  return true;
}

void PowerAccumulator::add(double time_s, const PowerReading& r) {
  ++health_.reads;
  health_.last_failed = false;
  // A frozen sensor repeats its last value bit for bit; a live INA3221 reading moves by its LSB.
  if (!series_.power_w.empty() && r.total_w == series_.power_w.back() && unchanged_since_s_ >= 0) {
    if (time_s - unchanged_since_s_ > health_.longest_unchanged_s) {
      health_.longest_unchanged_s = time_s - unchanged_since_s_;
      health_.unchanged_w = r.total_w;
    }
  } else {
    unchanged_since_s_ = time_s;
  }
  series_.time_s.push_back(time_s);
  series_.power_w.push_back(r.total_w);
  health_.span_s = time_s - series_.time_s.front();
  if (!std::isnan(r.gpu_w)) series_.gpu_power_w.push_back(r.gpu_w);
  watchdog_.observe(time_s, r.total_w);
}

void PowerAccumulator::add_failure(SensorFault fault, const std::string& message) {
  ++health_.reads;
  ++health_.failed;
  if (fault == SensorFault::garbage) ++health_.garbage;
  if (fault == SensorFault::missing) ++health_.missing;
  health_.last_failed = true;
  health_.last_fault = fault;
  if (health_.first_error.empty()) health_.first_error = message;
  health_.last_error = message;
}

PowerStats PowerAccumulator::stats() const {
  PowerStats s;
  s.samples = count();
  s.failed_reads = health_.failed;
  if (s.samples < min_samples_)
    throw Error(
        fmt::format("only {} power samples ({} failed reads), {} needed for a figure: measure more "
                    "mini-batches per point or sample power faster",
                    s.samples, health_.failed, min_samples_));
  const auto& t = series_.time_s;
  const auto& p = series_.power_w;
  s.peak_w = *std::max_element(p.begin(), p.end());
  s.mean_w = base::mean(p);
  s.energy_j = base::trapezoid_energy_j(t, p);
  s.duration_s = t.back() - t.front();
  s.rate_hz = s.duration_s > 0 ? static_cast<double>(p.size() - 1) / s.duration_s : traces::kNaN;
  if (!series_.gpu_power_w.empty()) {
    const auto& g = series_.gpu_power_w;
    double gsum = 0;
    s.gpu_peak_w = g[0];
    for (double v : g) {
      gsum += v;
      s.gpu_peak_w = std::max(s.gpu_peak_w, v);
    }
    s.gpu_mean_w = gsum / static_cast<double>(g.size());
  }
  return s;
}

struct PowerSampler::Shared {
  Shared(Reader reader, const SamplerOptions& o)
      : reader(std::move(reader)), options(o), acc(o.min_samples, PowerWatchdog(o.watchdog_w, o.watchdog_window_s)) {}
  Reader reader;
  SamplerOptions options;
  std::mutex mu;
  std::condition_variable cv;
  bool stop_requested = false;
  bool exited = false;
  std::optional<std::chrono::steady_clock::time_point> read_started;
  PowerAccumulator acc;
};

PowerSampler::PowerSampler(Reader reader, SamplerOptions options) : reader_(std::move(reader)), options_(options) {
  if (!(options_.rate_hz > 0)) throw Error(fmt::format("sensor rate must be positive, got {} Hz", options_.rate_hz));
  if (!(options_.time_scale > 0)) throw Error("time scale must be positive");
  if (!(options_.read_timeout_s > 0)) throw Error("sensor read timeout must be positive");
  shared_ = std::make_shared<Shared>(reader_, options_);
}

PowerSampler::~PowerSampler() {
  stop();
}

void PowerSampler::start() {
  stop();
  // A fresh window; an abandoned thread keeps the previous one to itself.
  shared_ = std::make_shared<Shared>(reader_, options_);
  abandoned_ = false;
  thread_ = std::thread([shared = shared_] { loop(shared); });
}

void PowerSampler::stop() {
  if (!thread_.joinable()) return;
  using clock = std::chrono::steady_clock;
  bool exited = false;
  {
    std::unique_lock lock(shared_->mu);
    shared_->stop_requested = true;
    shared_->cv.notify_all();
    // A read in flight may run until read_timeout_s after it began; the loop itself exits at once.
    const auto timeout =
        std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(options_.read_timeout_s));
    const auto deadline = (shared_->read_started ? *shared_->read_started : clock::now()) + timeout;
    exited = shared_->cv.wait_until(lock, deadline, [this] { return shared_->exited; });
  }
  if (exited) {
    thread_.join();
    return;
  }
  // The thread owns a share of `shared_` and a reader that owns what it touches: it may finish
  // (or stay blocked) after this object is gone.
  thread_.detach();
  abandoned_ = true;
  spdlog::warn("a power sensor read has been blocked for more than {:g} s: abandoned", options_.read_timeout_s);
}

void PowerSampler::loop(const std::shared_ptr<Shared>& shared) {
  using clock = std::chrono::steady_clock;
  auto& s = *shared;
  const auto t0 = clock::now();
  const auto period = std::chrono::duration<double>(1.0 / s.options.rate_hz * s.options.time_scale);
  int64_t k = 0;
  bool warned = false;
  for (;;) {
    {
      std::lock_guard lock(s.mu);
      if (s.stop_requested) break;
      s.read_started = clock::now();
    }
    // Read outside the lock: a slow sensor delays the next sample, never the caller.
    PowerReading r;
    std::optional<SensorError> failure;
    try {
      r = s.reader();
    } catch (const SensorError& e) {
      failure = e;
    } catch (const std::exception& e) {
      failure = SensorError(e.what(), SensorFault::read_error);
    }
    const double t = std::chrono::duration<double>(clock::now() - t0).count() / s.options.time_scale;
    std::unique_lock lock(s.mu);
    s.read_started.reset();
    // Stopped while reading (an abandoned read that came back late): the window is closed, and the
    // process may be exiting, so touch nothing but the shared state (no logging).
    if (s.stop_requested) break;
    if (failure && !warned) {
      spdlog::warn("power read failed: {} (counting failures)", failure->what());
      warned = true;
    }
    if (failure)
      s.acc.add_failure(failure->fault, failure->what());
    else
      s.acc.add(t, r);
    // Fixed schedule (not sleep-after-read), so the rate does not drift with read latency; a slot
    // already past (a slow read, or this thread kept off the CPU by a busy machine) is skipped, not
    // made up by reads back to back: those would see one instant and count as several samples, and
    // the sample count is what a point's peak is projected from (its run of 10x its samples).
    ++k;
    const auto late = static_cast<int64_t>(std::chrono::duration<double>(clock::now() - t0) / period);
    k = std::max(k, late + 1);
    const auto next = t0 + std::chrono::duration_cast<clock::duration>(period * static_cast<double>(k));
    if (s.cv.wait_until(lock, next, [&s] { return s.stop_requested; })) break;
  }
  std::lock_guard lock(s.mu);
  s.exited = true;
  s.cv.notify_all();
}

WatchdogTrip PowerSampler::watchdog_trip() const {
  std::lock_guard lock(shared_->mu);
  return shared_->acc.watchdog().trip();
}

int64_t PowerSampler::count() const {
  std::lock_guard lock(shared_->mu);
  return shared_->acc.count();
}

PowerStats PowerSampler::stats() const {
  std::lock_guard lock(shared_->mu);
  return shared_->acc.stats();
}

traces::PowerSeries PowerSampler::series() const {
  std::lock_guard lock(shared_->mu);
  return shared_->acc.series();
}

SensorHealth PowerSampler::health() const {
  std::lock_guard lock(shared_->mu);
  return shared_->acc.health();
}

double PowerSampler::read_in_flight_s() const {
  std::lock_guard lock(shared_->mu);
  if (!shared_->read_started) return 0;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - *shared_->read_started).count();
}

}  // namespace pacer::hw
