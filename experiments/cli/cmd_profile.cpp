// `pacer profile`: time per mini-batch and power for every (f, b) of a workload on a device, into a
// ProfileTable in the trace store (resumable). Emulated devices run in virtual time; a Jetson tree
// served by `pacer emulate` runs the real sysfs backend in the loop; real boards run real steps.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>

#include "experiments/cli/cli.hpp"
#include "experiments/cli/options.hpp"
#include "experiments/cli/shard_options.hpp"
#include "hw/executor.hpp"
#include "hw/open_device.hpp"
#include "hw/profiler.hpp"
#include "models/train.hpp"
#include "models/workload.hpp"
#include "traces/error.hpp"
#include "traces/units.hpp"

namespace pacer::cli {
namespace {

namespace fs = std::filesystem;

// Real training steps for a real board: models::StepRunner (forward, backward, optimizer, sync)
// rebuilt for each batch size.
std::unique_ptr<hw::BatchExecutor> make_training_executor(const std::string& workload, const std::string& train_device,
                                                          int threads) {
  auto runner = std::make_shared<std::unique_ptr<models::StepRunner>>();
  hw::FunctionExecutor::Hooks h;
  h.kind = fmt::format("training steps on {}", train_device);
  h.prepare = [=](int b) {
    models::StepRunnerOptions o;
    o.workload = workload;
    o.batch_size = b;
    o.device = train_device;
    o.threads = threads;
    runner->reset();
    *runner = std::make_unique<models::StepRunner>(o);
  };
  h.step = [=] { (*runner)->step(); };
  h.finish = [=] { runner->reset(); };
  return std::make_unique<hw::FunctionExecutor>(h);
}

int run_profile_cmd(const po::variables_map& vm) {
  const std::string device_spec = vm["device"].as<std::string>();
  const std::string workload_name = vm["workload"].as<std::string>();
  const auto workload = models::describe_workload(workload_name);

  hw::DeviceRequest req;
  req.spec = device_spec;
  req.sysfs_root = vm["sysfs-root"].as<std::string>();
  if (vm.count("state-file")) req.state_file = vm["state-file"].as<std::string>();
  req.workload = workload;
  req.emulator.sensor_noise_rel = vm["sensor-noise"].as<double>();
  req.emulator.sensor_period_s = vm["sensor-period"].as<units::Duration>().s;
  req.emulator.time_jitter_rel = vm["time-jitter"].as<double>();
  req.emulator.power_cap_w = vm["circuit-cap"].as<units::Power>().w;
  req.emulator.thermal_drift = vm["thermal-drift"].as<bool>();
  req.emulator.seed = vm["seed"].as<uint64_t>();
  req.nvml.allow_control = vm["allow-gpu-control"].as<bool>();
  req.nvml.knob = vm["nvml-knob"].as<std::string>();
  require_range(req.emulator.sensor_noise_rel, 0, 1, "--sensor-noise", "");
  require_range(req.emulator.time_jitter_rel, 0, 1, "--time-jitter", "");

  hw::ProfileOptions o;
  o.workload = workload.name;
  o.batch_sizes = parse_int_list(vm["batch-sizes"].as<std::string>(), "--batch-sizes");
  if (vm.count("freqs"))
    o.freqs_hz = units::parse_list(vm["freqs"].as<std::string>(), units::Dimension::Frequency, "MHz", "--freqs");
  o.warmup_batches = vm["warmup-batches"].as<int>();
  o.measured_batches = vm["measured-batches"].as<int>();
  if (o.warmup_batches < 0) throw UsageError("--warmup-batches must be >= 0");
  if (o.measured_batches < 1) throw UsageError("--measured-batches must be >= 1");
  o.mode = vm["mode"].as<std::string>();
  if (o.mode != "grid" && o.mode != "walk") throw UsageError(fmt::format("--mode: '{}' is not grid or walk", o.mode));
  o.power_limit_w = vm["power-limit"].as<units::Power>().w;
  if (o.mode == "walk" && !(o.power_limit_w > 0)) throw UsageError("--mode walk needs --power-limit");
  o.walk_power = vm["walk-power"].as<std::string>();
  if (o.walk_power != "peak" && o.walk_power != "mean")
    throw UsageError(fmt::format("--walk-power: '{}' is not peak or mean", o.walk_power));
  o.sensor_rate_hz = vm["sensor-rate-hz"].as<double>();
  require_range(o.sensor_rate_hz, 0.01, 10000, "--sensor-rate-hz", "Hz");
  o.min_power_samples = vm["min-power-samples"].as<int>();
  if (o.min_power_samples < 1) throw UsageError("--min-power-samples must be >= 1");
  o.watchdog_margin_w = vm["watchdog-margin"].as<units::Power>().w;
  o.watchdog_duration_s = vm["watchdog-time"].as<units::Duration>().s;
  o.sensor_read_timeout_s = vm["sensor-timeout"].as<units::Duration>().s;
  require_range(o.sensor_read_timeout_s, 0.01, 3600, "--sensor-timeout", "s");
  o.max_failed_read_share = vm["max-failed-reads"].as<double>();
  require_range(o.max_failed_read_share, 0, 1, "--max-failed-reads", "");
  o.sensor_frozen_s = vm["sensor-frozen"].as<units::Duration>().s;
  o.store = vm["store"].as<std::string>();
  o.profile_name = vm.count("profile-name") ? vm["profile-name"].as<std::string>() : "";
  const auto jobs = experiments::profile_job_list(o.profile_name.empty() ? workload.name : o.profile_name, o.store,
                                                  o.batch_sizes);
  if (const auto done = run_shard_front(vm, jobs)) return *done;
  const auto shard = shard_option(vm);
  if (shard) o.batch_sizes = experiments::shard_items(o.batch_sizes, *shard), o.store = store_for(vm, o.store);

  auto opened = hw::open_device(req);
  hw::Device& device = *opened.device;
  // The catalog entry is the campaign's /device only for an emulated board; a real one is whatever
  // the tree holds, which the catalog may not describe.
  if (opened.emulated) o.device_spec = opened.spec;
  else o.device_spec.name.clear();
  std::unique_ptr<hw::BatchExecutor> executor;
  if (opened.emulated) {
    executor = std::make_unique<hw::VirtualExecutor>(*opened.emulated);
  } else if (opened.sysfs && device.emulated()) {
    executor = std::make_unique<hw::SleepingExecutor>(opened.sysfs->root() / "pacer-emulator", workload.name);
  } else {
    std::string train_device = vm["train-device"].as<std::string>();
    if (train_device == "auto") train_device = models::cuda_available() ? "cuda" : "cpu";
    executor = make_training_executor(workload.name, train_device, vm["threads"].as<int>());
  }
  // Which rails the power figures come from is part of the result (summed rails differ from a total rail).
  o.source = fmt::format("pacer profile, power rails [{}]", fmt::join(device.power_rails(), ", "));
  const std::string label = device.emulated() ? " [EMULATED]" : "";
  spdlog::info("profiling {} on {}{} ({}), power from [{}]", workload.name, device.name(), label, executor->kind(),
               fmt::join(device.power_rails(), ", "));

  hw::ProfileReport report;
  const auto profile = [&] {
    report = hw::run_profile(device, *executor, o, [&](const traces::ProfilePoint& p, int done, int planned) {
      spdlog::info("[{}/{}] f={} b={} t={:.4g} s/batch p_peak={:.3g} W p_mean={:.3g} W {}", done, planned,
                   units::format(p.knob[0], units::Dimension::Frequency), p.batch_size, p.time_per_batch_mean_s,
                   p.power_peak_w, p.power_mean_w, p.status == "ok" ? "" : p.status);
    });
  };
  if (shard) experiments::record_shard_outcome(o.store, profile);
  else profile();

  const auto& t = report.table;
  std::cout << fmt::format("profile '{}' of {} on {}{}{}\n", o.profile_name.empty() ? t.workload : o.profile_name,
                           t.workload, t.device, label, t.virtual_time ? " (virtual time)" : "");
  std::cout << fmt::format("{:>12} {:>6} {:>14} {:>12} {:>10} {:>10}  {}\n", "f [MHz]", "b", "t/batch [s]", "std [s]",
                           "P_peak [W]", "P_mean [W]", "status");
  for (const auto& p : t.points)
    std::cout << fmt::format("{:>12.6g} {:>6} {:>14.6g} {:>12.3g} {:>10.4g} {:>10.4g}  {}\n", p.knob[0] / 1e6,
                             p.batch_size, p.time_per_batch_mean_s, p.time_per_batch_std_s, p.power_peak_w,
                             p.power_mean_w, p.status);
  std::cout << fmt::format(
      "{} mode: measured {} points this run ({} resumed, {} stopped by the watchdog) of a {}-point grid; profiling "
      "cost {} ({}), {} in total; written to {}\n",
      o.mode, report.measured_points, report.resumed_points, report.stopped_points, report.grid_points,
      units::format(report.cost_s, units::Dimension::Time),
      t.virtual_time ? "virtual time" : (executor->time_scale() != 1.0 ? "device time, scaled" : "wall time"),
      units::format(t.profiling_cost_s, units::Dimension::Time), o.store.string());
  return 0;
}

Command make() {
  Command c;
  c.name = "profile";
  c.summary = "profile time per mini-batch and power over (GPU frequency, batch size) on a device";
  c.order = 30;
  c.description =
      "For every (f, b): pin f, run warm-up mini-batches, then measured ones while a background thread samples\n"
      "power; records time mean/std and power peak/mean into the ProfileTable of --store after every point (a\n"
      "rerun resumes). --mode walk profiles only the paper's efficient walk for --power-limit.\n"
      "Devices: emulated:NAME (virtual time, seconds for a full grid), jetson (sysfs at --sysfs-root; a tree\n"
      "served by `pacer emulate` runs hardware in the loop), nvml[:INDEX]. Emulated results are labelled.";
  c.add_options = [](po::options_description& d) {
    d.add_options()("device", po::value<std::string>()->required(), "emulated:NAME | jetson | nvml[:INDEX]")(
        "workload", po::value<std::string>()->required(), "network[@shape] (pacer workloads lists them)")(
        "store", po::value<std::string>()->default_value("pacer.h5"), "trace store (HDF5) to write")(
        "profile-name", po::value<std::string>(), "name under /profiles (default: the workload)")(
        "batch-sizes", po::value<std::string>()->default_value("4:128"), "list 4,8,16 or doubling range 4:128")(
        "freqs", po::value<std::string>(), "GPU frequencies [MHz]: list or range (default: every table entry)")(
        "mode", po::value<std::string>()->default_value("grid"), "grid | walk (needs --power-limit)")(
        "power-limit", power_opt(0, "0W (none)"), "power cap P_max [W] for the walk and the watchdog")(
        "walk-power", po::value<std::string>()->default_value("peak"), "power figure judged by the walk: peak | mean")(
        "warmup-batches", po::value<int>()->default_value(2), "mini-batches run before measuring, per point")(
        "measured-batches", po::value<int>()->default_value(10), "mini-batches measured per point (at least)")(
        "sensor-rate-hz", po::value<double>()->default_value(10.0), "power sampling rate [Hz] (the paper used 1)")(
        "min-power-samples", po::value<int>()->default_value(30),
        "fewest samples behind a power figure: a point is measured longer until it has them (up to 200x "
        "--measured-batches)")(
        "watchdog-margin", power_opt(0.5, "0.5W"), "watchdog: mean power above the cap plus this [W] ...")(
        "watchdog-time", duration_opt(2.0, "2s"), "... over a window this long [s] stops the point")(
        "sensor-timeout", duration_opt(5.0, "5s"), "a power read blocked longer stops the run [s]")(
        "max-failed-reads", po::value<double>()->default_value(0.1),
        "a point with a larger share of failed or garbage power reads is skipped [1]")(
        "sensor-frozen", duration_opt(5.0, "5s"),
        "a point whose total power reads the same value this long is skipped (sensor frozen; 0: off) [s]")(
        "sysfs-root", po::value<std::string>()->default_value("/"), "root of the Jetson sysfs tree (--device jetson)")(
        "state-file", po::value<std::string>(), "restore state file (default: one per sysfs root)")(
        "train-device", po::value<std::string>()->default_value("auto"), "real steps on: auto | cpu | cuda[:N]")(
        "threads", po::value<int>()->default_value(0), "CPU intra-op threads for real steps (0: libtorch default)")(
        "allow-gpu-control", po::bool_switch()->default_value(false), "nvml: permit locking clocks / power limits")(
        "nvml-knob", po::value<std::string>()->default_value("gpu_freq"), "nvml knob: gpu_freq | power_limit")(
        "sensor-noise", po::value<double>()->default_value(0.02), "emulated: relative sigma of a power reading [1]")(
        "sensor-period", duration_opt(0.0, "0s"), "emulated: sensor conversion period [s] (0: continuous)")(
        "time-jitter", po::value<double>()->default_value(0.01), "emulated: relative sigma of a mini-batch time [1]")(
        "circuit-cap", power_opt(0, "0W (none)"), "emulated: circuit-level cap that throttles the clock [W]")(
        "thermal-drift", po::bool_switch()->default_value(false), "emulated: leakage rises as the die heats")(
        "seed", po::value<uint64_t>()->default_value(1), "emulated: random seed");
    add_shard_options(d);
  };
  c.run = run_profile_cmd;
  return c;
}

PACER_REGISTER_COMMAND(make);

}  // namespace
}  // namespace pacer::cli
