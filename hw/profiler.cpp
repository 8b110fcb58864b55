#include "hw/profiler.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <set>
#include <utility>

#include "hw/emulated.hpp"
#include "hw/sampler.hpp"
#include "traces/error.hpp"
#include "traces/store.hpp"
#include "traces/units.hpp"
#include "traces/stats.hpp"

namespace pacer::hw {
namespace {

struct RestoreOnExit {
  Device& device;
  BatchExecutor& executor;
  ~RestoreOnExit() {
    try {
      executor.finish();
    } catch (const std::exception& e) {
      spdlog::warn("stopping the workload: {}", e.what());
    }
    try {
      device.restore();
    } catch (const std::exception& e) {
      spdlog::error("{}", e.what());
    }
  }
};

void validate(const Device& device, const ProfileOptions& o, std::vector<double>& settings) {
  if (o.batch_sizes.empty()) throw Error("no batch sizes to profile");
  for (int b : o.batch_sizes)
    if (b <= 0) throw Error(fmt::format("batch size {} is not positive", b));
  if (o.warmup_batches < 0 || o.measured_batches < 1)
    throw Error("warm-up batches must be >= 0 and measured batches >= 1");
  if (o.mode != "grid" && o.mode != "walk") throw Error(fmt::format("unknown profiling mode '{}' (grid, walk)", o.mode));
  if (o.mode == "walk" && !(o.power_limit_w > 0)) throw Error("the efficient walk needs a power limit");
  if (o.walk_power != "peak" && o.walk_power != "mean")
    throw Error(fmt::format("walk power figure '{}' is not peak or mean", o.walk_power));
  const traces::KnobSpace& knob = device.knob();
  if (knob.dims.size() != 1)
    throw Error(fmt::format("{} has a {}-dimensional knob ({}): the profiler walks one-dimensional knobs", device.name(),
                            knob.dims.size(), knob.kind));
  const auto all = knob_values(device);
  if (all.empty()) throw Error(fmt::format("{} lists no {} settings", device.name(), knob.kind));
  if (settings.empty()) settings = all;
  // Same setting when within half a unit of the last digit a device lists (1 Hz, 1 mW).
  const double tolerance = knob.dims[0].unit == "Hz" ? 0.5 : 5e-4;
  for (double& f : settings) {
    const auto it = std::find_if(all.begin(), all.end(), [&](double g) { return std::abs(f - g) < tolerance; });
    // Snap to the device's own value: "921.6" MHz parses to 921599999.99..., the table says 921600000.
    if (it != all.end()) {
      f = *it;
      continue;
    }
    throw Error(fmt::format("{} is not a {} setting of {} ({} .. {})", knob.format({f}), knob.kind, device.name(),
                            knob.format({all.front()}), knob.format({all.back()})));
  }
  std::sort(settings.begin(), settings.end());
  settings.erase(std::unique(settings.begin(), settings.end()), settings.end());
}

// Points a fault skipped are measured again by a rerun on the same store: the fault may be gone.
bool retried_on_resume(const traces::ProfilePoint& p) {
  return p.status.rfind("skipped: power sensor", 0) == 0 || p.status.rfind("skipped: cur_freq", 0) == 0;
}

std::string at_point(const traces::KnobSpace& knob, double setting, int b) {
  return fmt::format("{}={} b={}", knob_label(knob), knob.format({setting}), b);
}

}  // namespace

std::string knob_label(const traces::KnobSpace& knob, size_t dim) {
  const std::string heading = knob.heading(dim);
  return heading.substr(0, heading.find(" ["));
}

ProfileReport run_profile(Device& device, BatchExecutor& executor, const ProfileOptions& o, const ProgressFn& progress) {
  std::vector<double> settings = o.knob_values;
  validate(device, o, settings);
  std::vector<int> batches = o.batch_sizes;
  std::sort(batches.begin(), batches.end());
  batches.erase(std::unique(batches.begin(), batches.end()), batches.end());

  ProfileReport report;
  report.grid_points = static_cast<int>(settings.size() * batches.size());
  const std::string name = o.profile_name.empty() ? o.workload : o.profile_name;
  EmulatedJetson* vdev = executor.virtual_device();
  const double time_scale = executor.time_scale();

  traces::ProfileTable& table = report.table;
  table.workload = o.workload;
  table.device = o.device_spec.name.empty() ? device.name() : o.device_spec.name;
  table.emulated = device.emulated();
  table.virtual_time = vdev != nullptr;
  table.source = time_scale != 1.0 ? fmt::format("{} ({}, time scale {:g})", o.source, executor.kind(), time_scale)
                                   : fmt::format("{} ({})", o.source, executor.kind());
  table.knob = device.knob();
  table.warmup_batches = o.warmup_batches;
  table.measured_batches = o.measured_batches;
  double previous_cost_s = 0;

  std::optional<traces::Store> store;
  if (!o.store.empty()) {
    store = traces::Store::open_or_create(o.store);
    if (!o.device_spec.name.empty() && !store->has_device()) store->write_device(o.device_spec);
    if (store->has("profiles", name)) {
      auto old = store->read_profile(name);
      if (old.workload != table.workload || old.device != table.device || old.emulated != table.emulated)
        throw SettingError("profile-name",
                           fmt::format("{} already holds profile '{}' of {} on {}{}: choose another profile name or store",
                                o.store.string(), name, old.workload, old.device, old.emulated ? " (emulated)" : ""));
      previous_cost_s = old.profiling_cost_s;
      table.points = std::move(old.points);
    }
  }
  std::set<std::pair<double, int>> retry;
  for (const auto& p : table.points)
    if (retried_on_resume(p) && p.knob.size() == 1) retry.insert({p.knob[0], p.batch_size});
  const std::string rails = fmt::format("{}", fmt::join(device.power_rails(), ", "));
  auto kept_note = [&] {
    const int kept = static_cast<int>(table.points.size());
    if (o.store.empty()) return fmt::format("{} points were measured before", kept);
    return fmt::format("the {} points measured before are in {}: rerun to resume", kept, o.store.string());
  };

  RestoreOnExit restore_on_exit{device, executor};
  const double watchdog_w = o.power_limit_w > 0 ? o.power_limit_w + o.watchdog_margin_w : 0;
  int planned = o.mode == "grid" ? report.grid_points : static_cast<int>(batches.size() * 2);
  int done = 0;

  auto record = [&](const traces::ProfilePoint& p, double cost) {
    report.cost_s += cost;
    ++report.measured_points;
    ++done;
    table.points.push_back(p);
    table.profiling_cost_s = previous_cost_s + report.cost_s;
    if (store) store->write_profile(table, name);
    if (progress) progress(p, done, planned);
  };

  auto measure = [&](double f, int b) -> traces::ProfilePoint {
    if (const auto* existing = table.find({f}, b)) {
      if (!retry.erase({f, b})) {
        ++report.resumed_points;
        ++done;
        return *existing;
      }
      spdlog::info("measuring {} again (it was {})", at_point(table.knob, f, b), existing->status);
      table.points.erase(table.points.begin() + (existing - table.points.data()));
    }
    using clock = std::chrono::steady_clock;
    const auto wall0 = clock::now();
    const double virt0 = vdev ? vdev->now_s() : 0;
    auto cost_so_far = [&] {
      return vdev ? vdev->now_s() - virt0 : std::chrono::duration<double>(clock::now() - wall0).count() / time_scale;
    };
    try {
      device.pin({f});
    } catch (const SettingNotApplied& e) {
      // The device runs at another setting than asked (throttled, railgated): nothing to measure
      // at this one. Recorded with the reason; the next point pins again.
      traces::ProfilePoint p;
      p.knob = {f};
      p.batch_size = b;
      p.sensor_rate_hz = o.sensor_rate_hz;
      p.temperature_c = device.temperature_c();
      p.status = fmt::format("skipped: {}", e.what());
      spdlog::warn("{}: {}", at_point(table.knob, f, b), p.status);
      record(p, cost_so_far());
      return p;
    }
    executor.prepare(b);
    for (int i = 0; i < o.warmup_batches; ++i) executor.run_batch();

    std::vector<double> times;
    PowerAccumulator vacc(o.min_power_samples, PowerWatchdog(watchdog_w, o.watchdog_duration_s));
    std::unique_ptr<PowerSampler> sampler;
    double next_sample_s = 0;
    if (vdev) {
      next_sample_s = vdev->now_s();
    } else {
      sampler = std::make_unique<PowerSampler>(
          device.power_reader(),
          SamplerOptions{o.sensor_rate_hz, o.min_power_samples, time_scale, watchdog_w, o.watchdog_duration_s,
                         o.sensor_read_timeout_s});
      sampler->start();
    }
    auto sample_count = [&] { return vdev ? vacc.count() : sampler->count(); };
    auto watchdog_trip = [&] { return vdev ? vacc.watchdog().trip() : sampler->watchdog_trip(); };
    const int max_batches = std::max(o.measured_batches, static_cast<int>(o.measured_batches * o.max_extension));
    std::string status = "ok";
    while (static_cast<int>(times.size()) < o.measured_batches ||
           (sample_count() < o.min_power_samples && static_cast<int>(times.size()) < max_batches)) {
      if (vdev) {
        const double t0 = vdev->now_s();
        executor.run_batch();
        times.push_back(vdev->now_s() - t0);
        for (; next_sample_s <= vdev->now_s(); next_sample_s += 1.0 / o.sensor_rate_hz)
          vacc.add(next_sample_s, vdev->power_at(next_sample_s));
      } else {
        const auto t0 = clock::now();
        executor.run_batch();
        times.push_back(std::chrono::duration<double>(clock::now() - t0).count() / time_scale);
      }
      // A blocked or vanished sensor cannot give this point a power figure: stop measuring it.
      if (sampler && sampler->read_in_flight_s() > o.sensor_read_timeout_s) break;
      if (sampler) {
        const SensorHealth h = sampler->health();
        if (h.last_failed && h.last_fault == SensorFault::missing) break;
      }
      if (watchdog_w > 0) {
        if (const WatchdogTrip trip = watchdog_trip(); trip.tripped) {
          status = fmt::format("stopped: power watchdog: mean power {} over {} above the cap {} + {} margin",
                               units::format(trip.mean_w, units::Dimension::Power),
                               units::format(o.watchdog_duration_s, units::Dimension::Time),
                               units::format(o.power_limit_w, units::Dimension::Power),
                               units::format(o.watchdog_margin_w, units::Dimension::Power));
          break;
        }
      }
    }
    if (sampler) sampler->stop();
    const SensorHealth health = vdev ? vacc.health() : sampler->health();
    if (sampler && sampler->abandoned())
      throw Error(fmt::format("power sensor read blocked for more than {:g} s at {} (rails {}): the INA3221 driver or "
                              "its I2C bus does not answer; the run stopped and the device setting was restored; {}",
                              o.sensor_read_timeout_s, at_point(table.knob, f, b), rails, kept_note()));
    if (health.last_failed && health.last_fault == SensorFault::missing)
      throw Error(fmt::format("power sensor lost at {}: {}; the run stopped and the device setting was restored; check that "
                              "the INA3221 driver is bound, then {}",
                              at_point(table.knob, f, b), health.last_error, kept_note()));

    traces::ProfilePoint p;
    p.knob = {f};
    p.batch_size = b;
    p.time_per_batch_mean_s = traces::mean(times);
    p.time_per_batch_std_s = traces::sample_std(times);
    double sum = 0;  // the measured time of the mini-batches, for the energy below
    for (double t : times) sum += t;
    p.samples = static_cast<int64_t>(times.size()) * b;
    p.sensor_rate_hz = o.sensor_rate_hz;
    p.temperature_c = device.temperature_c();
    // A sensor fault leaves the power figures unset: the readings that did arrive are suspect.
    std::string sensor_fault;
    if (health.failed > 0 && health.failed_share() > o.max_failed_read_share)
      sensor_fault = fmt::format("skipped: power sensor {}: {} of {} reads failed (limit {:g}%), first: {}",
                                 health.garbage == health.failed ? "returns garbage" : "read errors", health.failed,
                                 health.reads, 100 * o.max_failed_read_share, health.first_error);
    else if (sampler && o.sensor_frozen_s > 0 && health.longest_unchanged_s > o.sensor_frozen_s)
      sensor_fault = fmt::format("skipped: power sensor frozen: the total ({}) read {:.4g} W unchanged for {:.1f} s "
                                 "(limit {:g} s): the INA3221 stopped converting",
                                 rails, health.unchanged_w, health.longest_unchanged_s, o.sensor_frozen_s);
    if (!sensor_fault.empty()) {
      p.power_samples = sample_count();
      if (status == "ok") status = sensor_fault;
      spdlog::warn("{}: {}", at_point(table.knob, f, b), sensor_fault);
    } else {
      try {
        const PowerStats s = vdev ? vacc.stats() : sampler->stats();
        p.power_peak_w = s.peak_w;
        p.power_mean_w = s.mean_w;
        p.energy_j = s.mean_w * sum;  // mean power over exactly the measured mini-batches
        p.power_samples = s.samples;
      } catch (const Error& e) {
        p.power_samples = sample_count();
        if (status == "ok") status = fmt::format("skipped: {}", e.what());
      }
    }
    p.status = status;
    if (status.rfind("stopped", 0) == 0) ++report.stopped_points;
    record(p, cost_so_far());
    return p;
  };

  if (o.mode == "grid") {
    for (int b : batches)
      for (double f : settings) measure(f, b);
  } else {
    // The paper's walk: largest b from the lowest f upward until the cap; each smaller b starts
    // from the highest feasible f so far (power falls with b), stepping down if that is over.
    auto feasible = [&](const traces::ProfilePoint& p) {
      const double w = o.walk_power == "peak" ? p.power_peak_w : p.power_mean_w;
      return p.status == "ok" && !std::isnan(w) && w <= o.power_limit_w;
    };
    size_t start = 0;
    for (auto bit = batches.rbegin(); bit != batches.rend(); ++bit) {
      const int b = *bit;
      size_t i = start;
      bool ok = feasible(measure(settings[i], b));
      while (!ok && i > 0) ok = feasible(measure(settings[--i], b));
      if (!ok) continue;
      while (i + 1 < settings.size() && feasible(measure(settings[i + 1], b))) ++i;
      start = i;
    }
  }
  table.profiling_cost_s = previous_cost_s + report.cost_s;
  if (store) store->write_profile(table, name);
  return report;
}

}  // namespace pacer::hw
