#include "hw/profiler.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <set>
#include <utility>

#include "base/error.hpp"
#include "base/stats.hpp"
#include "base/units.hpp"
#include "hw/emulator/emulated.hpp"
#include "hw/sampler.hpp"
#include "traces/emulated_label.hpp"
#include "traces/store/store.hpp"

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

using Setting = std::vector<double>;

// Same setting when within half a unit of the last digit a device lists (1 Hz, 1 mW), relative
// 1e-6 for a multi-dimensional knob; snapped to the device's own value ("921.6" MHz parses to
// 921599999.99..., the table says 921600000).
const Setting* device_setting(const std::vector<Setting>& all, const Setting& s, const traces::KnobSpace& knob) {
  for (const auto& g : all) {
    if (g.size() != s.size()) continue;
    bool eq = true;
    for (size_t d = 0; eq && d < g.size(); ++d) {
      const double tol =
          knob.dims.size() == 1 ? (knob.dims[0].unit == "Hz" ? 0.5 : 5e-4) : 1e-6 * std::max(1.0, std::abs(g[d]));
      eq = std::abs(s[d] - g[d]) < tol;
    }
    if (eq) return &g;
  }
  return nullptr;
}

std::vector<Setting> validate(const Device& device, const ProfileOptions& o) {
  if (o.batch_sizes.empty()) throw Error("no batch sizes to profile");
  for (int b : o.batch_sizes)
    if (b <= 0) throw Error(fmt::format("batch size {} is not positive", b));
  if (o.warmup_batches < 0 || o.measured_batches < 1)
    throw Error("warm-up batches must be >= 0 and measured batches >= 1");
  if (o.mode != "grid" && o.mode != "walk")
    throw Error(fmt::format("unknown profiling mode '{}' (grid, walk)", o.mode));
  if (o.mode == "walk" && !(o.power_limit_w > 0)) throw Error("the efficient walk needs a power limit");
  if (o.walk_power != "peak" && o.walk_power != "mean")
    throw Error(fmt::format("walk power figure '{}' is not peak or mean", o.walk_power));
  const traces::KnobSpace& knob = device.knob();
  if (knob.dims.size() != 1 && o.mode == "walk")
    throw Error(
        fmt::format("the efficient walk follows one knob upwards; {}'s {} knob has {} dimensions: profile its "
                    "settings as a grid",
                    device.name(), knob.kind, knob.dims.size()));
  const auto all = device.settings();
  if (all.empty()) throw Error(fmt::format("{} lists no {} settings", device.name(), knob.kind));
  std::vector<Setting> wanted = o.settings;
  for (double v : o.knob_values) wanted.push_back({v});
  if (wanted.empty()) wanted = all;
  std::vector<Setting> out;
  for (const auto& s : wanted) {
    const Setting* g = device_setting(all, s, knob);
    if (!g)
      throw Error(fmt::format("{} is not a {} setting of {} ({} .. {})", knob.format(s), knob.kind, device.name(),
                              knob.format(all.front()), knob.format(all.back())));
    out.push_back(*g);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// Points a fault skipped are measured again by a rerun on the same store: the fault may be gone.
bool retried_on_resume(const traces::ProfilePoint& p) {
  return p.status.rfind("skipped: power sensor", 0) == 0 || p.status.rfind("skipped: cur_freq", 0) == 0;
}

std::string at_point(const traces::KnobSpace& knob, const Setting& setting, int b) {
  return fmt::format("{}={} b={}", knob.dims.size() == 1 ? knob_label(knob) : std::string(to_string(knob.kind)),
                     knob.format(setting), b);
}

}  // namespace

void check_profile_options(const Device& device, const ProfileOptions& options) {
  validate(device, options);
}

std::string knob_label(const traces::KnobSpace& knob, size_t dim) {
  const std::string heading = knob.heading(dim);
  return heading.substr(0, heading.find(" ["));
}

namespace {

// One profiling run: the table it extends (resumed from the store), the device and executor it
// drives, and the measurement of one (setting, b) point.
class ProfileSession {
 public:
  ProfileSession(Device& device, BatchExecutor& executor, const ProfileOptions& o, const ProgressFn& progress,
                 ProfileReport& report)
      : device_(device),
        executor_(executor),
        o_(o),
        progress_(progress),
        report_(report),
        table_(report.table),
        vdev_(executor.virtual_device()),
        time_scale_(executor.time_scale()),
        watchdog_w_(o.power_limit_w > 0 ? o.power_limit_w + o.watchdog_margin_w : 0),
        rails_(fmt::format("{}", fmt::join(device.power_rails(), ", "))),
        node_(node_name()),
        board_model_(device.board_model()) {}

  void open(const std::string& name, int planned);
  traces::ProfilePoint measure(const Setting& f, int b);
  void finish() {
    table_.profiling_cost_s = previous_cost_s_ + report_.cost_s;
    save();
  }

 private:
  struct Batches {
    std::vector<double> times_s;
    std::string status = "ok";
  };
  double cost_since(double wall0, double virt0) const {
    return vdev_ ? vdev_->now_s() - virt0 : (executor_.now_s() - wall0) / time_scale_;
  }
  std::string kept_note() const;
  void save();
  void record(const traces::ProfilePoint& p, double cost);
  Batches run_batches(PowerAccumulator& vacc, PowerSampler* sampler);
  void fill_power(traces::ProfilePoint& p, const Batches& run, PowerAccumulator& vacc, PowerSampler* sampler);

  Device& device_;
  BatchExecutor& executor_;
  const ProfileOptions& o_;
  const ProgressFn& progress_;
  ProfileReport& report_;
  traces::ProfileTable& table_;
  EmulatedJetson* vdev_;
  double time_scale_;
  double watchdog_w_;
  std::string rails_;
  std::string node_;  // recorded with every point (docs/cluster.md, board fleets)
  std::string board_model_;
  std::string name_;
  std::optional<traces::Store> store_;
  std::set<std::pair<Setting, int>> retry_;
  double previous_cost_s_ = 0;
  double saved_cost_s_ = 0;  // of report_.cost_s, the part already added to the stored profile
  int planned_ = 0, done_ = 0;
};

void ProfileSession::open(const std::string& name, int planned) {
  name_ = name;
  planned_ = planned;
  if (!o_.store.empty()) {
    store_ = traces::Store::open_or_create(o_.store);
    if (!o_.device_spec.name.empty() && !store_->has_device()) store_->write_device(o_.device_spec);
    if (store_->has<traces::ProfileTable>(name)) {
      auto old = store_->read<traces::ProfileTable>(name);
      if (old.workload != table_.workload || old.device != table_.device || old.emulated != table_.emulated)
        throw SettingError(
            "profile-name",
            fmt::format("{} already holds profile '{}' of {} on {}{}: choose another profile name or "
                        "store",
                        o_.store.string(), name, old.workload, old.device, traces::emulated_mark(old.emulated)));
      // A profile is of one board model: a store's profile measured on another model is not resumed here.
      for (const auto& p : old.points)
        if (!p.board_model.empty() && !board_model_.empty() && p.board_model != board_model_)
          throw SettingError(
              "profile-name",
              fmt::format("{} already holds profile '{}' measured on board model '{}' (node {}), but this "
                          "board is '{}': choose another profile name or store",
                          o_.store.string(), name, p.board_model, p.node, board_model_));
      previous_cost_s_ = old.profiling_cost_s;
      table_.points = std::move(old.points);
    }
  }
  for (const auto& p : table_.points)
    if (retried_on_resume(p)) retry_.insert({p.knob, p.batch_size});
}

std::string ProfileSession::kept_note() const {
  const int kept = static_cast<int>(table_.points.size());
  if (o_.store.empty()) return fmt::format("{} points were measured before", kept);
  return fmt::format("the {} points measured before are in {}: rerun to resume", kept, o_.store.string());
}

void ProfileSession::record(const traces::ProfilePoint& p, double cost) {
  report_.cost_s += cost;
  ++report_.measured_points;
  ++done_;
  table_.points.push_back(p);
  table_.profiling_cost_s = previous_cost_s_ + report_.cost_s;
  save();
  if (progress_) progress_(p, done_, planned_);
}

// The points into the stored profile, merged under the writers' lock with what is there now:
// another `pacer profile` into the same profile may have added points since this one read it.
// The session goes on with the profile as stored (its points and its whole profiling cost).
void ProfileSession::save() {
  if (!store_) return;
  traces::ProfileTable mine = table_;
  mine.profiling_cost_s = report_.cost_s - saved_cost_s_;  // what this session adds to the stored cost
  table_ = store_->add_rows(mine, name_);
  saved_cost_s_ = report_.cost_s;
}

// Measured mini-batches until there are enough of them and enough power samples, or a fault or the
// watchdog stops the point.
ProfileSession::Batches ProfileSession::run_batches(PowerAccumulator& vacc, PowerSampler* sampler) {
  Batches run;
  double next_sample_s = vdev_ ? vdev_->point_s() : 0;
  auto sample_count = [&] { return vdev_ ? vacc.count() : sampler->count(); };
  const int max_batches = std::max(o_.measured_batches, static_cast<int>(o_.measured_batches * o_.max_extension));
  while (static_cast<int>(run.times_s.size()) < o_.measured_batches ||
         (sample_count() < o_.min_power_samples && static_cast<int>(run.times_s.size()) < max_batches)) {
    if (vdev_) {
      const double t0 = vdev_->point_s();
      executor_.run_batch();
      run.times_s.push_back(vdev_->point_s() - t0);
      for (; next_sample_s <= vdev_->point_s(); next_sample_s += 1.0 / o_.sensor_rate_hz)
        vacc.add(next_sample_s, vdev_->power_at(next_sample_s));
    } else {
      const double t0 = executor_.now_s();
      executor_.run_batch();
      run.times_s.push_back((executor_.now_s() - t0) / time_scale_);
    }
    // A blocked or vanished sensor cannot give this point a power figure: stop measuring it.
    if (sampler && sampler->read_in_flight_s() > o_.sensor_read_timeout_s) break;
    if (sampler) {
      const SensorHealth h = sampler->health();
      if (h.last_failed && h.last_fault == SensorFault::missing) break;
    }
    if (watchdog_w_ > 0) {
      const WatchdogTrip trip = vdev_ ? vacc.watchdog().trip() : sampler->watchdog_trip();
      if (trip.tripped) {
        run.status = fmt::format("stopped: power watchdog: mean power {} over {} above the cap {} + {} margin",
                                 units::format(trip.mean_w, units::Dimension::Power),
                                 units::format(o_.watchdog_duration_s, units::Dimension::Time),
                                 units::format(o_.power_limit_w, units::Dimension::Power),
                                 units::format(o_.watchdog_margin_w, units::Dimension::Power));
        break;
      }
    }
  }
  return run;
}

// Power figures of a measured point, or the sensor fault that leaves them unset.
void ProfileSession::fill_power(traces::ProfilePoint& p, const Batches& run, PowerAccumulator& vacc,
                                PowerSampler* sampler) {
  const SensorHealth health = vdev_ ? vacc.health() : sampler->health();
  auto sample_count = [&] { return vdev_ ? vacc.count() : sampler->count(); };
  std::string status = run.status;
  // A sensor fault leaves the power figures unset: the readings that did arrive are suspect.
  std::string sensor_fault;
  if (health.failed > 0 && health.failed_share() > o_.max_failed_read_share)
    sensor_fault = fmt::format("skipped: power sensor {}: {} of {} reads failed (limit {:g}%), first: {}",
                               health.garbage == health.failed ? "returns garbage" : "read errors", health.failed,
                               health.reads, 100 * o_.max_failed_read_share, health.first_error);
  else if (sampler && health.frozen(o_.sensor_frozen_s))
    sensor_fault = fmt::format(
        "skipped: power sensor frozen: the total ({}) read {:.4g} W unchanged for {:.1f} s{} "
        "(limit {:g} s): the INA3221 stopped converting",
        rails_, health.unchanged_w, health.longest_unchanged_s,
        health.frozen_whole_window(o_.sensor_frozen_s)
            ? fmt::format(", the whole point (a live sensor moves within {:g} s)", kLiveSensorStillMaxS)
            : "",
        o_.sensor_frozen_s);
  if (!sensor_fault.empty()) {
    p.power_samples = sample_count();
    if (status == "ok") status = sensor_fault;
    spdlog::warn("{}: {}", at_point(table_.knob, p.knob, p.batch_size), sensor_fault);
  } else {
    try {
      const PowerStats s = vdev_ ? vacc.stats() : sampler->stats();
      double measured_s = 0;  // the measured time of the mini-batches, for the energy
      for (double t : run.times_s) measured_s += t;
      p.power_peak_w = s.peak_w;
      p.power_mean_w = s.mean_w;
      p.energy_j = s.mean_w * measured_s;  // mean power over exactly the measured mini-batches
      p.power_samples = s.samples;
    } catch (const Error& e) {
      p.power_samples = sample_count();
      if (status == "ok") status = fmt::format("skipped: {}", e.what());
    }
  }
  p.status = status;
}

traces::ProfilePoint ProfileSession::measure(const Setting& f, int b) {
  if (const auto* existing = table_.find(f, b)) {
    if (!retry_.erase({f, b})) {
      ++report_.resumed_points;
      ++done_;
      return *existing;
    }
    spdlog::info("measuring {} again (it was {})", at_point(table_.knob, f, b), existing->status);
    table_.points.erase(table_.points.begin() + (existing - table_.points.data()));
  }
  const double wall0 = executor_.now_s();
  const double virt0 = vdev_ ? vdev_->now_s() : 0;
  traces::ProfilePoint p;
  p.knob = f;
  p.batch_size = b;
  p.sensor_rate_hz = o_.sensor_rate_hz;
  p.node = node_;
  p.board_model = board_model_;
  try {
    device_.pin(f);
  } catch (const SettingNotApplied& e) {
    // The device runs at another setting than asked (throttled, railgated): nothing to measure
    // at this one. Recorded with the reason; the next point pins again.
    p.temperature_c = device_.temperature_c();
    p.status = fmt::format("skipped: {}", e.what());
    spdlog::warn("{}: {}", at_point(table_.knob, f, b), p.status);
    record(p, cost_since(wall0, virt0));
    return p;
  }
  executor_.prepare(b);
  // An emulated point draws its own noise on its own clock: the same whatever was measured before.
  if (vdev_) vdev_->start_point(f, b);
  for (int i = 0; i < o_.warmup_batches; ++i) executor_.run_batch();

  PowerAccumulator vacc(o_.min_power_samples, PowerWatchdog(watchdog_w_, o_.watchdog_duration_s));
  std::unique_ptr<PowerSampler> sampler;
  if (!vdev_) {
    sampler = std::make_unique<PowerSampler>(
        device_.power_reader(), SamplerOptions{o_.sensor_rate_hz, o_.min_power_samples, time_scale_, watchdog_w_,
                                               o_.watchdog_duration_s, o_.sensor_read_timeout_s});
    sampler->start();
  }
  const Batches run = run_batches(vacc, sampler.get());
  if (sampler) sampler->stop();
  const SensorHealth health = vdev_ ? vacc.health() : sampler->health();
  if (sampler && sampler->abandoned())
    throw Error(
        fmt::format("power sensor read blocked for more than {:g} s at {} (rails {}): the INA3221 driver or "
                    "its I2C bus does not answer; the run stopped and the device setting was restored; {}",
                    o_.sensor_read_timeout_s, at_point(table_.knob, f, b), rails_, kept_note()));
  if (health.last_failed && health.last_fault == SensorFault::missing)
    throw Error(
        fmt::format("power sensor lost at {}: {}; the run stopped and the device setting was restored; check "
                    "that the INA3221 driver is bound, then {}",
                    at_point(table_.knob, f, b), health.last_error, kept_note()));

  p.time_per_batch_mean_s = base::mean(run.times_s);
  p.time_per_batch_std_s = base::sample_std(run.times_s);
  p.samples = static_cast<int64_t>(run.times_s.size()) * b;
  p.temperature_c = device_.temperature_c();
  fill_power(p, run, vacc, sampler.get());
  if (p.status.rfind("stopped", 0) == 0) ++report_.stopped_points;
  record(p, cost_since(wall0, virt0));
  return p;
}

// The power a walk compares with its cap: the point's peak or mean (ProfileOptions::walk_power).
double walk_power_w(const ProfileOptions& o, const traces::ProfilePoint& p) {
  return o.walk_power == "peak" ? p.power_peak_w : p.power_mean_w;
}

// The paper's walk: largest b from the lowest f upward until the cap; each smaller b starts from the
// highest feasible f so far (power falls with b), stepping down if that is over. Returns whether some
// batch size had a setting under the cap; `lowest` gets the measured point of the lowest power figure.
bool walk(ProfileSession& session, const ProfileOptions& o, const std::vector<Setting>& settings,
          const std::vector<int>& batches, traces::ProfilePoint& lowest) {
  auto feasible = [&](const traces::ProfilePoint& p) {
    const double w = walk_power_w(o, p);
    if (p.status != "ok" || std::isnan(w)) return false;
    if (lowest.knob.empty() || w < walk_power_w(o, lowest)) lowest = p;
    return w <= o.power_limit_w;
  };
  bool any = false;
  size_t start = 0;
  for (auto bit = batches.rbegin(); bit != batches.rend(); ++bit) {
    const int b = *bit;
    size_t i = start;
    bool ok = feasible(session.measure(settings[i], b));
    while (!ok && i > 0) ok = feasible(session.measure(settings[--i], b));
    if (!ok) continue;
    any = true;
    while (i + 1 < settings.size() && feasible(session.measure(settings[i + 1], b))) ++i;
    start = i;
  }
  return any;
}

}  // namespace

ProfileReport run_profile(Device& device, BatchExecutor& executor, const ProfileOptions& o,
                          const ProgressFn& progress) {
  const std::vector<Setting> settings = validate(device, o);
  std::vector<int> batches = o.batch_sizes;
  std::sort(batches.begin(), batches.end());
  batches.erase(std::unique(batches.begin(), batches.end()), batches.end());

  ProfileReport report;
  report.grid_points = static_cast<int>(settings.size() * batches.size());
  const double time_scale = executor.time_scale();
  traces::ProfileTable& table = report.table;
  table.workload = o.workload;
  table.device = o.device_spec.name.empty() ? device.name() : o.device_spec.name;
  table.emulated = device.emulated();
  table.virtual_time = executor.virtual_device() != nullptr;
  table.source = time_scale != 1.0 ? fmt::format("{} ({}, time scale {:g})", o.source, executor.kind(), time_scale)
                                   : fmt::format("{} ({})", o.source, executor.kind());
  table.knob = device.knob();
  table.floating_clocks = device.floating_clocks();
  table.warmup_batches = o.warmup_batches;
  table.measured_batches = o.measured_batches;

  ProfileSession session(device, executor, o, progress, report);
  session.open(o.profile_name.empty() ? o.workload : o.profile_name,
               o.mode == "grid" ? report.grid_points : static_cast<int>(batches.size() * 2));
  RestoreOnExit restore_on_exit{device, executor};
  if (o.mode == "grid") {
    for (int b : batches)
      for (const auto& f : settings) session.measure(f, b);
    session.finish();
    return report;
  }
  traces::ProfilePoint lowest;
  const bool any = walk(session, o, settings, batches, lowest);
  session.finish();  // what was measured is kept, whatever follows
  if (!any) {
    const std::string what = lowest.knob.empty()
                                 ? std::string("no point was measured ok")
                                 : fmt::format("the lowest measured is {} at {}",
                                               units::format(walk_power_w(o, lowest), units::Dimension::Power),
                                               at_point(device.knob(), lowest.knob, lowest.batch_size));
    throw Error(
        fmt::format("no {} setting of {} draws at most {} ({} power) at any batch size: {}; raise the power "
                    "limit (the {} point(s) measured are kept in the store)",
                    device.knob().kind, device.name(), units::format(o.power_limit_w, units::Dimension::Power),
                    o.walk_power, what, report.measured_points + report.resumed_points));
  }
  return report;
}

}  // namespace pacer::hw
