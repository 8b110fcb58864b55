// `pacer emulate`: serves a live fake Jetson sysfs tree for a catalog device until interrupted, kept
// updated from the emulated Jetson, so another process (pacer profile --device jetson --sysfs-root
// DIR, or any tool reading sysfs) runs against it as against a board: hardware in the loop.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>

#include "base/error.hpp"
#include "base/process.hpp"
#include "base/units.hpp"
#include "experiments/cli/cli.hpp"
#include "experiments/cli/options.hpp"
#include "hw/emulator/emulated.hpp"
#include "hw/emulator/emulated_tree.hpp"
#include "models/workloads/workload.hpp"
#include "traces/catalog/catalog.hpp"

namespace pacer::cli {
namespace {

namespace fs = std::filesystem;

// How long `--detach` waits for the emulator to serve its tree (it takes well under a second).
constexpr int kDetachStartTimeoutS = 60;

// --detach: the caller waits until the child serves the tree, says where and how to stop it, and
// returns its exit code; the child (nothing returned) goes on serving and reports through `child`.
std::optional<int> detach(base::DetachedChild& child, const fs::path& root, const std::string& device) {
  if (child.in_child()) return std::nullopt;
  // A child that neither serves nor exits within kDetachStartTimeoutS is stopped rather than waited on.
  const auto start = child.wait_until_ready(kDetachStartTimeoutS);
  if (start.timed_out)
    std::cerr << fmt::format(
        "pacer: the detached emulator (pid {}) did not start serving {} within {} s and was stopped; run it "
        "without --detach to see where it stops\n",
        child.pid(), root.string(), kDetachStartTimeoutS);
  if (!start.ready) return start.exit_code;
  std::cout << fmt::format("serving emulated {} at {} in the background, pid {} (also in {}): stop it with kill {}\n",
                           device, root.string(), child.pid(), (root / "pacer-emulator" / "pid").string(), child.pid());
  return 0;
}

int run_emulate(const po::variables_map& vm) {
  const auto spec = traces::find_device(vm["device"].as<std::string>());
  const fs::path root = vm["root"].as<std::string>();
  const double time_scale = vm["time-scale"].as<double>();
  require_range(time_scale, 1e-4, 1e4, "--time-scale", "");
  const double tick_s = vm["tick"].as<units::Duration>().s;
  require_range(tick_s, 1e-4, 10, "--tick", "s");
  const double duration_s = vm["duration"].as<units::Duration>().s;
  hw::EmulatorOptions eo;
  eo.sensor_noise_rel = vm["sensor-noise"].as<double>();
  require_range(eo.sensor_noise_rel, 0, 1, "--sensor-noise", "");
  eo.power_cap_w = vm["circuit-cap"].as<units::Power>().w;
  eo.seed = vm["seed"].as<uint64_t>();
  // Before detaching, so that a root that is refused (a folder of other files, one another emulator
  // serves) is one line from this process and nothing is created.
  hw::check_emulation_root(root);
  std::optional<base::DetachedChild> detached;
  if (vm["detach"].as<bool>()) {
    detached.emplace("emulator");
    if (const auto caller = detach(*detached, root, spec.name)) return *caller;
  }

  const hw::ModelFactory factory = [spec](const std::string& workload) -> std::shared_ptr<const models::DeviceModel> {
    return std::make_shared<hw::WorkloadPhysics>(spec, models::describe_workload(workload));
  };
  auto emu = std::make_unique<hw::EmulatedJetson>(spec, factory(vm["workload"].as<std::string>()), eo);

  // Held before the update thread starts, so only the wait below sees them.
  const base::StopSignals stop_signals;

  hw::LiveTreeOptions lo;
  lo.time_scale = time_scale;
  lo.tick_s = tick_s;
  lo.seed = eo.seed;
  lo.faults = hw::parse_sysfs_fault(vm["fault"].as<std::string>());
  lo.fault_from_request = vm["fault-from-request"].as<long>();
  if (lo.fault_from_request < 0) throw UsageError("--fault-from-request must be >= 0");
  hw::LiveEmulatedTree tree(root, std::move(emu), factory, lo);
  tree.start();
  if (detached) detached->ready(root / "pacer-emulator" / "log");
  std::cout << fmt::format("serving emulated {} at {} (time scale {:g}){}\n", spec.name, root.string(), time_scale,
                           duration_s > 0 ? fmt::format(" for {}", units::format(duration_s, units::Dimension::Time))
                                          : "; stop with Ctrl-C")
            << std::flush;
  if (std::filesystem::exists(root / "pacer-emulator/nvpmodel"))
    std::cout << fmt::format(
                     "power modes: {} (nvpmodel -q / -m ID for this tree; profile them with --knob power_mode "
                     "--nvpmodel {})\n",
                     (root / "pacer-emulator/nvpmodel").string(), (root / "pacer-emulator/nvpmodel").string())
              << std::flush;
  spdlog::info("profile against it: pacer profile --device jetson --sysfs-root {} --workload NAME", root.string());

  const int sig = stop_signals.wait(duration_s);
  tree.stop();
  std::cout << fmt::format("emulated {} stopped after {} updates ({}); min_freq > max_freq writes seen: {}\n",
                           spec.name, tree.ticks(), sig > 0 ? strsignal(sig) : "duration reached", tree.violations());
  return 0;
}

Command make() {
  Command c;
  c.name = "emulate";
  c.summary = "serve a live emulated Jetson sysfs tree (hardware in the loop) until interrupted";
  c.order = 32;
  c.description =
      "Writes a fake sysfs tree for a catalog device under --root (devfreq node, INA3221 rails in the board's\n"
      "iio or hwmon layout, a GPU thermal zone) and keeps it updated from the emulated Jetson: cur_freq follows\n"
      "min_freq/max_freq and the circuit cap, rails carry the model's power while a workload runs. The workload\n"
      "side talks through <root>/pacer-emulator (see docs/hardware.md); `pacer profile --device jetson\n"
      "--sysfs-root ROOT` does this by itself. Times are scaled by --time-scale (wall s per device s).\n"
      "--fault makes the tree misbehave as a failing board would (rail files that vanish, hold garbage, stop\n"
      "changing or block, a cur_freq that does not follow), to check what a client does about it.";
  c.add_options = [](po::options_description& d) {
    // The library's defaults are the command's.
    const hw::EmulatorOptions e;
    const hw::LiveTreeOptions l;
    d.add_options()("device", po::value<std::string>()->required(), "catalog device to emulate (pacer devices)")(
        "root", po::value<std::string>()->required(),
        "folder to serve the tree in: missing or empty (created), or one a pacer emulator served before; not inside "
        "/sys or /proc, not one another emulator serves now")(
        "workload", po::value<std::string>()->default_value("resnet18@3x32x32"),
        "initial workload; the profiling side may name another")(
        "time-scale", number_opt(l.time_scale), "wall seconds per device second [1]")("tick", duration_opt(l.tick_s),
                                                                                      "update period of the tree [s]")(
        "duration", duration_opt(0.0, "0s (until interrupted)"), "stop after this long [s]")(
        "detach", po::bool_switch()->default_value(false),
        "serve in the background: return once the tree is served, printing the pid to stop it with (kill PID; also "
        "in ROOT/pacer-emulator/pid); its later output goes to ROOT/pacer-emulator/log")(
        "sensor-noise", number_opt(e.sensor_noise_rel), "relative sigma of a power reading [1]")(
        "circuit-cap", power_opt(e.power_cap_w, "0W (none)"), "circuit-level power cap that throttles the clock [W]")(
        "seed", po::value<uint64_t>()->default_value(e.seed), "random seed")(
        "fault", po::value<std::string>()->default_value("none"),
        "inject a fault (docs/reliability.md): none | rail-vanish | rail-garbage[=TEXT] | rail-frozen | rail-block | "
        "cur-freq=FREQ")("fault-from-request", po::value<long>()->default_value(l.fault_from_request),
                         "inject it from the workload side's Nth request on (one per profiled point; 0: at once)");
  };
  c.run = run_emulate;
  return c;
}

PACER_REGISTER_COMMAND(make);

}  // namespace
}  // namespace pacer::cli
