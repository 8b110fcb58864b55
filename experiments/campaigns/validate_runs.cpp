#include "experiments/campaigns/validate_runs.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <memory>

#include "experiments/campaigns/validate.hpp"

namespace pacer::experiments::validate_detail {

void Watchdog::record(const hw::WatchdogTrip& trip) {
  message = fmt::format(
      "stopped: power watchdog at t={:.2f} s: mean power {:.2f} W over the last {:g} s above "
      "the cap {:g} W + {:g} W margin; the GPU clock was restored",
      trip.at_s, trip.mean_w, w.window_s(), cap_w, margin_w);
}

Watchdog RunPlan::watchdog_for(const Config& c) const {
  Watchdog w;
  w.cap_w = config_cap.at(c);
  w.margin_w = opt->watchdog_margin_w;
  w.w = hw::PowerWatchdog(w.cap_w + w.margin_w, opt->watchdog_duration_s);
  return w;
}

std::vector<Config> RunPlan::configs_at(int batch_size) const {
  std::vector<Config> out;
  for (const auto& c : configs)
    if (c.batch_size == batch_size) out.push_back(c);
  return out;
}

std::string config_text(const explore::Space& space, const Config& c) {
  return fmt::format("b={}, {}", c.batch_size, space.describe_knob(c.knob));
}

namespace {

// Samples an emulated board on its sensor grid up to its current virtual time; the accumulator
// feeds the run's power watchdog.
struct BoardSampler {
  hw::EmulatedJetson* board;
  int batch_size;
  double start_s;
  double period_s;
  double next_s;
  hw::PowerAccumulator power;
  Watchdog watchdog;
  std::vector<double> freq_hz;
  int64_t samples_at_stop = 0;
  void catch_up() {
    while (next_s <= board->now_s() + 1e-12 && !watchdog.tripped()) {
      power.add(next_s - start_s, board->power_at(next_s));
      freq_hz.push_back(board->effective_freq_hz(batch_size));
      if (power.watchdog().tripped()) watchdog.record(power.watchdog().trip());
      next_s += period_s;
    }
  }
  traces::PowerSeries series() const {
    traces::PowerSeries s = power.series();
    s.freq_hz = freq_hz;
    s.emulated = true;
    return s;
  }
};

}  // namespace

int run_emulated_job(const RunPlan& plan, int b, int seed, Runs& runs, int& stops) {
  const ValidateOptions& opt = *plan.opt;
  const double period_s = 1.0 / opt.sensor_rate_hz;
  const std::vector<Config> here = plan.configs_at(b);
  if (here.empty()) return 0;
  std::vector<hw::OpenedDevice> boards;
  std::vector<BoardSampler> samplers;
  for (size_t k = 0; k < here.size(); ++k) {
    // The board's noise depends on (seed, b, its place among the configurations at b): the same in
    // a whole validation and in any shard that runs this job.
    hw::DeviceRequest r = plan.request;
    r.emulator.seed =
        plan.request.emulator.seed + 7919 * static_cast<uint64_t>(seed) + 104729 * k + static_cast<uint64_t>(b);
    boards.push_back(hw::open_device(r));
    boards.back().emulated->pin(here[k].knob);
  }
  for (size_t k = 0; k < boards.size(); ++k) {
    auto& bd = boards[k];
    Watchdog w = plan.watchdog_for(here[k]);
    samplers.push_back(BoardSampler{
        bd.emulated, b, bd.emulated->now_s(), period_s, bd.emulated->now_s(), hw::PowerAccumulator(0, w.w), w, {}, 0});
  }
  dnn::TrainOptions t = plan.train;
  t.batch_size = b;
  t.seed = seed;
  dnn::TrainHooks hooks;
  hooks.on_batch = [&](int64_t seen, int batch) {
    bool running = false;
    for (size_t k = 0; k < samplers.size(); ++k) {
      auto& s = samplers[k];
      if (s.watchdog.tripped()) continue;
      s.board->run_batch(batch);
      s.catch_up();
      if (s.watchdog.tripped()) {
        s.samples_at_stop = seen;
        boards[k].device->restore();
        spdlog::warn("validate: {} seed={}: {}", config_text(*plan.space, here[k]), seed, s.watchdog.message);
      } else {
        running = true;
      }
    }
    return running;  // every board stopped: so is the training
  };
  std::vector<std::string> knobs;
  for (const auto& c : here) knobs.push_back(plan.space->describe_knob(c.knob));
  spdlog::info("validate: b={} seed={} driving {} emulated board(s): {}", b, seed, here.size(), fmt::join(knobs, ", "));
  const auto res = dnn::train_to_target(t, *plan.data, hooks);
  const std::string node = hw::node_name();
  for (size_t k = 0; k < here.size(); ++k) {
    RunResult rr;
    const bool stopped = samplers[k].watchdog.tripped();
    rr.reached = res.reached && !stopped;
    rr.samples = stopped ? samplers[k].samples_at_stop : res.samples;
    rr.wall_time_s = res.wall_time_s;
    rr.final_metric = stopped ? traces::kNaN : res.final_metric;
    rr.threads = res.threads;
    rr.device_time_s = samplers[k].board->now_s() - samplers[k].start_s;
    rr.series = samplers[k].series();
    rr.status = samplers[k].watchdog.message;
    rr.node = node;
    rr.board_model = boards[k].device->board_model();
    if (stopped) ++stops;
    runs[{here[k], seed}] = std::move(rr);
  }
  for (auto& bd : boards) bd.device->restore();
  return 1;
}

int run_real_job(const RunPlan& plan, hw::Device& device, int b, int seed, Runs& runs, int& stops) {
  const ValidateOptions& opt = *plan.opt;
  int trained = 0;
  for (const auto& c : plan.configs_at(b)) {
    device.pin(c.knob);
    Watchdog watchdog = plan.watchdog_for(c);
    hw::SamplerOptions so;
    so.rate_hz = opt.sensor_rate_hz;
    so.watchdog_w = watchdog.w.limit_w();
    so.watchdog_window_s = watchdog.w.window_s();
    hw::PowerSampler sampler(device.power_reader(), so);  // owns what it reads: a blocked read may outlive it
    dnn::TrainOptions t = plan.train;
    t.batch_size = c.batch_size;
    t.seed = seed;
    spdlog::info("validate: {} seed={} on {}", config_text(*plan.space, c), seed, device.name());
    int64_t samples_at_stop = 0;
    dnn::TrainHooks hooks;
    hooks.on_batch = [&](int64_t seen, int) {
      if (!sampler.watchdog_trip().tripped) return true;
      samples_at_stop = seen;
      return false;
    };
    sampler.start();
    const auto res = dnn::train_to_target(t, *plan.data, hooks);
    sampler.stop();
    ++trained;
    RunResult rr;
    rr.series = sampler.series();
    if (samples_at_stop > 0) {
      device.restore();  // at once: the next configuration pins its own setting
      watchdog.record(sampler.watchdog_trip());
      spdlog::warn("validate: {} seed={}: {}", config_text(*plan.space, c), seed, watchdog.message);
      ++stops;
    }
    rr.reached = res.reached && samples_at_stop == 0;
    rr.samples = samples_at_stop > 0 ? samples_at_stop : res.samples;
    rr.wall_time_s = res.wall_time_s;
    rr.final_metric = samples_at_stop > 0 ? traces::kNaN : res.final_metric;
    rr.threads = res.threads;
    rr.device_time_s = res.wall_time_s - res.eval_time_s;
    rr.status = watchdog.message;
    rr.node = hw::node_name();
    rr.board_model = device.board_model();
    runs[{c, seed}] = std::move(rr);
  }
  device.restore();
  return trained;
}

}  // namespace pacer::experiments::validate_detail
