// `pacer doctor`: whether this machine can run each part of pacer (hw/jetson/doctor.hpp), a line per
// check with what to do; exit 0 when a validation has everything it needs.
#include <fmt/format.h>

#include <iostream>

#include "base/error.hpp"
#include "base/process.hpp"
#include "base/units.hpp"
#include "experiments/cli/cli.hpp"
#include "experiments/cli/doctor_torch.hpp"
#include "experiments/cli/options.hpp"
#include "hw/jetson/doctor.hpp"

namespace pacer::cli {
namespace {

namespace fs = std::filesystem;

// How long the light front waits for pacer-train's libtorch line (loading libtorch takes seconds).
constexpr double kTorchProbeTimeoutS = 120;

// This program's libtorch, or pacer-train's answer when this is the light front.
hw::TorchInfo torch_info() {
  if (linked_torch_info) return linked_torch_info();
  const fs::path full = full_program_path();
  hw::TorchInfo none;
  std::error_code ec;
  if (full.empty() || !fs::exists(full, ec)) {
    none.note = fmt::format("not linked in this front, and no {} beside it", full.empty() ? "pacer-train" : full.string());
    return none;
  }
  base::RunOptions ro;
  ro.timeout_s = kTorchProbeTimeoutS;
  try {
    const auto r = base::run_program(full.string(), {"doctor", "--torch-line"}, ro);
    auto t = hw::parse_torch_line(r.output);
    if (!t.linked) t.note = fmt::format("{} did not answer (exit {}): {}", full.string(), r.exit_code, t.note);
    return t;
  } catch (const Error& e) {
    none.note = e.what();
    return none;
  }
}

int run_doctor(const po::variables_map& vm) {
  if (vm["torch-line"].as<bool>()) {
    const auto t = torch_info();
    if (!t.linked) throw Error(t.note);
    std::cout << hw::torch_line(t) << "\n";
    return 0;
  }
  hw::DoctorOptions o;
  o.root = vm["root"].as<std::string>();
  o.store_dir = vm["store-dir"].as<std::string>();
  if (vm.count("state-file")) o.state_file = vm["state-file"].as<std::string>();
  if (vm.count("nvpmodel")) o.nvpmodel = vm["nvpmodel"].as<std::string>();
  if (vm.count("tegrastats")) o.tegrastats = vm["tegrastats"].as<std::string>();
  o.min_free_bytes = vm["min-free"].as<double>() * 1e9;
  if (!vm["no-torch"].as<bool>()) o.torch = torch_info();
  const auto report = hw::run_doctor(o);
  std::cout << hw::format_doctor(report);
  return report.ready() ? 0 : 1;
}

Command make() {
  Command c;
  c.name = "doctor";
  c.summary = "check whether this machine can profile and validate (a Jetson at your desk), and what to fix";
  c.order = 9;
  c.description =
      "One line per check (ok, warn, missing) and what to do where it fails: the board model and L4T release,\n"
      "the GPU devfreq node and its frequency table, the INA3221 power rails (iio or hwmon) and whether they\n"
      "answer, write access to min_freq/max_freq, nvpmodel and tegrastats, the libtorch pacer-train links and\n"
      "whether it sees CUDA, free disk and a writable store folder, and a state file left by a killed run.\n"
      "Exit 0 when a validation has everything it needs; 1 otherwise (a machine that is not a Jetson runs\n"
      "emulated devices and replays only). --root checks a tree of `pacer emulate` instead of this machine.";
  c.add_options = [](po::options_description& d) {
    const hw::DoctorOptions o;
    d.add_options()("root", po::value<std::string>()->default_value("/"),
                    "root of the board's file system (a `pacer emulate --root` tree to check an emulated board)")(
        "store-dir", po::value<std::string>()->default_value("."), "folder the trace stores will be written to")(
        "state-file", po::value<std::string>(), "state file of the restore (default: the one of --root)")(
        "nvpmodel", po::value<std::string>(), "nvpmodel program (default: ROOT/usr/sbin/nvpmodel)")(
        "tegrastats", po::value<std::string>(), "tegrastats program (default: ROOT/usr/bin/tegrastats)")(
        "min-free", number_opt(o.min_free_bytes / 1e9), "free space the store folder needs [GB]")(
        "no-torch", po::bool_switch()->default_value(false), "skip the libtorch check (does not start pacer-train)")(
        "torch-line", po::bool_switch()->default_value(false),
        "print the libtorch line (version, CUDA) and exit: what pacer asks pacer-train");
  };
  c.run = run_doctor;
  return c;
}

PACER_REGISTER_COMMAND(make);

}  // namespace
}  // namespace pacer::cli
