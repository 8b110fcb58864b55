// `pacer profile`: time per mini-batch and power for every (f, b) of a workload on a device, into a
// ProfileTable in the trace store (resumable). Emulated devices run in virtual time; a Jetson tree
// served by `pacer emulate` runs the real sysfs backend in the loop; real boards run real steps.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <iostream>

#include "base/error.hpp"
#include "base/units.hpp"
#include "experiments/campaigns/profiling.hpp"
#include "experiments/cli/cli.hpp"
#include "experiments/cli/options.hpp"
#include "experiments/cli/shard_options.hpp"
#include "experiments/cluster/shard.hpp"
#include "hw/device_backends.hpp"
#include "hw/open_device.hpp"
#include "models/workloads/workload.hpp"
#include "traces/emulated_label.hpp"

namespace pacer::cli {
namespace {

int run_profile_cmd(const po::variables_map& vm) {
  experiments::ProfileRequest req;
  hw::DeviceRequest& dev = req.device;
  dev.spec = vm["device"].as<std::string>();
  dev.sysfs_root = vm["sysfs-root"].as<std::string>();
  if (vm.count("state-file")) dev.state_file = vm["state-file"].as<std::string>();
  dev.workload = models::describe_workload(vm["workload"].as<std::string>());
  dev.emulator.sensor_noise_rel = vm["sensor-noise"].as<double>();
  dev.emulator.sensor_period_s = vm["sensor-period"].as<units::Duration>().s;
  dev.emulator.time_jitter_rel = vm["time-jitter"].as<double>();
  dev.emulator.power_cap_w = vm["circuit-cap"].as<units::Power>().w;
  dev.emulator.thermal_drift = vm["thermal-drift"].as<bool>();
  dev.emulator.seed = vm["seed"].as<uint64_t>();
  const std::string knob = vm["knob"].as<std::string>();
  const auto knob_kind = traces::find_knob_kind(knob);
  if (knob_kind != traces::KnobKind::gpu_freq && knob_kind != traces::KnobKind::power_mode)
    throw UsageError(fmt::format("--knob: '{}' is not gpu_freq or power_mode", knob));
  dev.knob = *knob_kind;
  if (vm.count("modes")) {
    if (dev.knob != traces::KnobKind::power_mode) throw UsageError("--modes needs --knob power_mode");
    req.mode_ids = parse_seeds(vm["modes"].as<std::string>(), "--modes");
  }
  if (vm.count("board")) dev.board = vm["board"].as<std::string>();
  dev.nvpmodel = vm["nvpmodel"].as<std::string>();
  dev.power_source = vm["power-source"].as<std::string>();
  hw::check_power_source(dev.power_source);
  dev.tegrastats.binary = vm["tegrastats"].as<std::string>();
  dev.tegrastats.interval_s = vm["tegrastats-interval"].as<units::Duration>().s;
  require_range(dev.tegrastats.interval_s, 0.001, 60, "--tegrastats-interval", "s");
  dev.nvml.allow_control = vm["allow-gpu-control"].as<bool>();
  const bool nvml = dev.spec.rfind("nvml", 0) == 0;
  if (nvml) {  // other devices ignore it
    const std::string nvml_knob = vm["nvml-knob"].as<std::string>();
    const auto kind = traces::find_knob_kind(nvml_knob);
    if (kind != traces::KnobKind::gpu_freq && kind != traces::KnobKind::power_limit)
      throw UsageError(fmt::format("--nvml-knob: '{}' is not gpu_freq or power_limit", nvml_knob));
    dev.nvml.knob = *kind;
  }
  require_range(dev.emulator.sensor_noise_rel, 0, 1, "--sensor-noise", "");
  require_range(dev.emulator.time_jitter_rel, 0, 1, "--time-jitter", "");
  req.train_device = vm["train-device"].as<std::string>();
  req.threads = vm["threads"].as<int>();

  hw::ProfileOptions& o = req.profile;
  o.workload = dev.workload->name;
  o.batch_sizes = parse_int_list(vm["batch-sizes"].as<std::string>(), "--batch-sizes");
  // Knob values in the unit of the device's knob: a bare number is MHz for a GPU frequency, W for
  // a power limit (--nvml-knob power_limit); values with units are checked against that dimension.
  if (vm.count("freqs")) {
    if (dev.knob == traces::KnobKind::power_mode)
      throw UsageError(
          "--freqs and --knob power_mode exclude each other: under a power mode the clocks float under the mode's "
          "caps; choose the modes with --modes");
    const bool watts = nvml && dev.nvml.knob == traces::KnobKind::power_limit;
    o.knob_values =
        units::parse_list(vm["freqs"].as<std::string>(), watts ? units::Dimension::Power : units::Dimension::Frequency,
                          watts ? "W" : "MHz", "--freqs");
  }
  o.warmup_batches = vm["warmup-batches"].as<int>();
  o.measured_batches = vm["measured-batches"].as<int>();
  o.mode = vm["mode"].as<std::string>();
  if (o.mode != "grid" && o.mode != "walk") throw UsageError(fmt::format("--mode: '{}' is not grid or walk", o.mode));
  o.power_limit_w = vm["power-limit"].as<units::Power>().w;
  if (o.mode == "walk" && !(o.power_limit_w > 0)) throw UsageError("--mode walk needs --power-limit");
  o.walk_power = vm["walk-power"].as<std::string>();
  if (o.walk_power != "peak" && o.walk_power != "mean")
    throw UsageError(fmt::format("--walk-power: '{}' is not peak or mean", o.walk_power));
  o.sensor_rate_hz = sensor_rate_hz(vm);
  o.min_power_samples = vm["min-power-samples"].as<int>();
  o.watchdog_margin_w = vm["watchdog-margin"].as<units::Power>().w;
  o.watchdog_duration_s = vm["watchdog-time"].as<units::Duration>().s;
  o.sensor_read_timeout_s = vm["sensor-timeout"].as<units::Duration>().s;
  require_range(o.sensor_read_timeout_s, 0.01, 3600, "--sensor-timeout", "s");
  o.max_failed_read_share = vm["max-failed-reads"].as<double>();
  require_range(o.max_failed_read_share, 0, 1, "--max-failed-reads", "");
  o.sensor_frozen_s = vm["sensor-frozen"].as<units::Duration>().s;
  o.store = vm["store"].as<std::string>();
  o.profile_name = vm.count("profile-name") ? vm["profile-name"].as<std::string>() : "";
  const auto jobs =
      experiments::profile_job_list(o.profile_name.empty() ? o.workload : o.profile_name, o.store, o.batch_sizes);
  if (const auto done = run_shard_front(vm, {jobs})) return *done;
  const auto shard = shard_option(vm);
  if (shard) o.batch_sizes = experiments::shard_items(o.batch_sizes, *shard), o.store = store_for(vm, o.store);

  experiments::ProfileRun run;
  const auto profile = [&] {
    run = experiments::run_profile(req, [](const std::string& line) { spdlog::info("{}", line); });
  };
  if (shard)
    experiments::record_shard_outcome(o.store, profile);
  else
    profile();
  const auto& report = run.report;
  const auto& t = report.table;
  const auto label = traces::emulated_mark(run.emulated, traces::EmulatedMark::Banner);
  std::cout << fmt::format("profile '{}' of {} on {}{}{}\n", o.profile_name.empty() ? t.workload : o.profile_name,
                           t.workload, t.device, label, t.virtual_time ? " (virtual time)" : "");
  std::cout << experiments::format_profile_points(t);
  std::cout << fmt::format(
      "{} mode: measured {} points this run ({} resumed, {} stopped by the watchdog) of a {}-point grid; profiling "
      "cost {} ({}), {} in total; written to {}\n",
      o.mode, report.measured_points, report.resumed_points, report.stopped_points, report.grid_points,
      units::format(report.cost_s, units::Dimension::Time), run.time_basis,
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
    // The library's defaults are the command's.
    const experiments::ProfileRequest r;
    const hw::ProfileOptions& o = r.profile;
    const hw::EmulatorOptions& e = r.device.emulator;
    const std::string knob(to_string(r.device.knob)), nvml_knob(to_string(r.device.nvml.knob));
    d.add_options()("device", po::value<std::string>()->required(), hw::device_spec_syntax().c_str())(
        "workload", po::value<std::string>()->required(), "network[@shape] (pacer workloads lists them)")(
        "store", po::value<std::string>()->default_value("pacer.h5"), "trace store (HDF5) to write")(
        "profile-name", po::value<std::string>(), "name under /profiles (default: the workload)")(
        "batch-sizes", po::value<std::string>()->default_value("4:128"), "list 4,8,16 or doubling range 4:128")(
        "freqs", po::value<std::string>(),
        "knob settings to profile: list or range (default: every setting of the device); GPU frequencies [MHz], "
        "power limits of --nvml-knob power_limit [W]")("mode", po::value<std::string>()->default_value(o.mode),
                                                       "grid | walk (needs --power-limit)")(
        "power-limit", power_opt(o.power_limit_w, "0W (none)"), "power cap P_max [W] for the walk and the watchdog")(
        "walk-power", po::value<std::string>()->default_value(o.walk_power),
        "power figure judged by the walk: peak | mean");
    add_count_option(d, "warmup-batches", o.warmup_batches, 0, kMaxBatchesPerPoint,
                     "mini-batches run before measuring, per point");
    add_count_option(d, "measured-batches", o.measured_batches, 1, kMaxBatchesPerPoint,
                     "mini-batches measured per point (at least)");
    add_sensor_rate_option(d, o.sensor_rate_hz, "power sampling rate (the paper used 1 Hz)");
    add_count_option(
        d, "min-power-samples", o.min_power_samples, 1, kMaxPowerSamples,
        fmt::format("fewest samples behind a power figure: a point is measured longer until it has them (up "
                    "to {:g}x --measured-batches)",
                    o.max_extension));
    d.add_options()("watchdog-margin", power_opt(o.watchdog_margin_w),
                    "watchdog: mean power above the cap plus this [W] ...")(
        "watchdog-time", duration_opt(o.watchdog_duration_s), "... over a window this long [s] stops the point")(
        "sensor-timeout", duration_opt(o.sensor_read_timeout_s), "a power read blocked longer stops the run [s]")(
        "max-failed-reads", number_opt(o.max_failed_read_share),
        "a point with a larger share of failed or garbage power reads is skipped [1]")(
        "sensor-frozen", duration_opt(o.sensor_frozen_s),
        "a point whose total power reads the same value this long is skipped (sensor frozen; 0: off) [s]")(
        "sysfs-root", po::value<std::string>()->default_value(r.device.sysfs_root.string()),
        "root of the Jetson sysfs tree (--device jetson)")("state-file", po::value<std::string>(),
                                                           "restore state file (default: one per sysfs root)")(
        "knob", po::value<std::string>()->default_value(knob),
        "Jetson knob: gpu_freq (pin GPU clocks) | power_mode (nvpmodel modes; clocks float under each mode's caps)")(
        "modes", po::value<std::string>(),
        "--knob power_mode: nvpmodel mode ids to profile, list 0,2,3 (default: all)")(
        "board", po::value<std::string>(),
        "--device jetson --knob power_mode: catalog name or device file of the board, for its modes (default: the "
        "served tree's device)")(
        "nvpmodel", po::value<std::string>()->default_value(r.device.nvpmodel.string()),
        "--device jetson --knob power_mode: the nvpmodel program (a served tree has one in DIR/pacer-emulator)")(
        "power-source", po::value<std::string>()->default_value(r.device.power_source),
        "--device jetson: power from sysfs (INA3221 files) | tegrastats (a tegrastats child process)")(
        "tegrastats", po::value<std::string>()->default_value(r.device.tegrastats.binary.string()),
        "--power-source tegrastats: the tegrastats program")(
        "tegrastats-interval", duration_opt(r.device.tegrastats.interval_s),
        "--power-source tegrastats: its sampling interval [s] (passed as --interval in ms)")(
        "train-device", po::value<std::string>()->default_value(r.train_device),
        "real steps on: auto | cpu | cuda[:N]");
    add_threads_option(d, r.threads, "CPU intra-op threads for real steps", "libtorch's default");
    d.add_options()("allow-gpu-control", po::bool_switch()->default_value(r.device.nvml.allow_control),
                    "nvml: permit locking clocks / power limits")(
        "nvml-knob", po::value<std::string>()->default_value(nvml_knob), "nvml knob: gpu_freq | power_limit")(
        "sensor-noise", number_opt(e.sensor_noise_rel), "emulated: relative sigma of a power reading [1]")(
        "sensor-period", duration_opt(e.sensor_period_s, "0s"),
        "emulated: sensor conversion period [s] (0: continuous)")("time-jitter", number_opt(e.time_jitter_rel),
                                                                  "emulated: relative sigma of a mini-batch time [1]")(
        "circuit-cap", power_opt(e.power_cap_w, "0W (none)"),
        "emulated: circuit-level cap that throttles the clock [W]")(
        "thermal-drift", po::bool_switch()->default_value(e.thermal_drift), "emulated: leakage rises as the die heats")(
        "seed", po::value<uint64_t>()->default_value(e.seed), "emulated: random seed");
    add_shard_options(d);
  };
  c.input_files = {"nvpmodel", "tegrastats"};
  c.output_files = {{"store", ""}, {"state-file", ""}};
  c.run = run_profile_cmd;
  return c;
}

PACER_REGISTER_COMMAND(make);

}  // namespace
}  // namespace pacer::cli
