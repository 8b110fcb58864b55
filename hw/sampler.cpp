#include "hw/sampler.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "traces/error.hpp"

namespace pacer::hw {

void PowerAccumulator::add(double time_s, const PowerReading& r) {
  series_.time_s.push_back(time_s);
  series_.power_w.push_back(r.total_w);
  if (!std::isnan(r.gpu_w)) series_.gpu_power_w.push_back(r.gpu_w);
  if (watchdog_w_ > 0) {
    if (r.total_w > watchdog_w_) {
      if (over_since_s_ < 0) over_since_s_ = time_s;
      longest_over_s_ = std::max(longest_over_s_, time_s - over_since_s_);
    } else {
      over_since_s_ = -1;
    }
  }
}

PowerStats PowerAccumulator::stats() const {
  PowerStats s;
  s.samples = count();
  s.failed_reads = failed_;
  if (s.samples < min_samples_)
    throw Error(fmt::format("only {} power samples ({} failed reads), {} needed for a figure: measure longer "
                            "(--measured-batches) or sample faster (--sensor-rate)",
                            s.samples, failed_, min_samples_));
  const auto& t = series_.time_s;
  const auto& p = series_.power_w;
  double sum = 0, energy = 0;
  s.peak_w = p[0];
  for (size_t i = 0; i < p.size(); ++i) {
    sum += p[i];
    s.peak_w = std::max(s.peak_w, p[i]);
    if (i > 0) energy += 0.5 * (p[i] + p[i - 1]) * (t[i] - t[i - 1]);
  }
  s.mean_w = sum / static_cast<double>(p.size());
  s.energy_j = energy;
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

PowerSampler::PowerSampler(Reader reader, SamplerOptions options)
    : reader_(std::move(reader)), options_(options), acc_(options.min_samples, options.watchdog_w) {
  if (!(options_.rate_hz > 0)) throw Error(fmt::format("sensor rate must be positive, got {} Hz", options_.rate_hz));
  if (!(options_.time_scale > 0)) throw Error("time scale must be positive");
}

PowerSampler::~PowerSampler() { stop(); }

void PowerSampler::start() {
  stop();
  {
    std::lock_guard lock(mu_);
    acc_ = PowerAccumulator(options_.min_samples, options_.watchdog_w);
    stop_requested_ = false;
  }
  thread_ = std::thread([this] { loop(); });
}

void PowerSampler::stop() {
  {
    std::lock_guard lock(mu_);
    stop_requested_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void PowerSampler::loop() {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  const auto period = std::chrono::duration<double>(1.0 / options_.rate_hz * options_.time_scale);
  int64_t k = 0;
  bool warned = false;
  for (;;) {
    // Read outside the lock: a slow sensor delays the next sample, never the caller.
    PowerReading r;
    bool ok = true;
    try {
      r = reader_();
    } catch (const std::exception& e) {
      ok = false;
      if (!warned) spdlog::warn("power read failed: {} (counting failures)", e.what());
      warned = true;
    }
    const double t = std::chrono::duration<double>(clock::now() - t0).count() / options_.time_scale;
    std::unique_lock lock(mu_);
    if (ok) acc_.add(t, r);
    else acc_.add_failure();
    // Fixed schedule (not sleep-after-read), so the rate does not drift with read latency.
    ++k;
    const auto next = t0 + std::chrono::duration_cast<clock::duration>(period * static_cast<double>(k));
    if (cv_.wait_until(lock, next, [this] { return stop_requested_; })) return;
  }
}

double PowerSampler::longest_over_s() const {
  std::lock_guard lock(mu_);
  return acc_.longest_over_s();
}

int64_t PowerSampler::count() const {
  std::lock_guard lock(mu_);
  return acc_.count();
}

PowerStats PowerSampler::stats() const {
  std::lock_guard lock(mu_);
  return acc_.stats();
}

traces::PowerSeries PowerSampler::series() const {
  std::lock_guard lock(mu_);
  return acc_.series();
}

}  // namespace pacer::hw
