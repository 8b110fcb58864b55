// `pacer devices`: the device catalog.
#include <fmt/format.h>

#include <iostream>

#include "base/error.hpp"
#include "experiments/cli/cli.hpp"
#include "traces/catalog/catalog.hpp"

namespace pacer::cli {
namespace {

int run_devices(const po::variables_map& vm) {
  const std::string action = vm.count("action") ? vm["action"].as<std::string>() : "list";
  if (action == "list") {
    if (vm.count("name")) throw UsageError("'list' takes no device name (did you mean 'show NAME'?)");
    std::cout << fmt::format("{:<20} {:<40} {:>6} {:>20} {:>6} {:>8}\n", "NAME", "DEVICE", "FREQS", "GPU RANGE [MHz]",
                             "MODES", "SENSORS");
    for (const auto& d : traces::all_devices())
      std::cout << fmt::format("{:<20} {:<40} {:>6} {:>20} {:>6} {:>8}\n", d.name, d.display_name,
                               d.gpu_freqs_hz.size(),
                               fmt::format("{:g}-{:g}", d.gpu_freqs_hz.front() / 1e6, d.gpu_freqs_hz.back() / 1e6),
                               d.power_modes.size(), d.sensor_layout);
    std::cout << "\nAdd devices without recompiling: PACER_DEVICE_PATH=dir-or-file.ini (same schema as\n"
                 "`pacer devices show NAME --format ini`), or pass a file path wherever a device name goes.\n";
    return 0;
  }
  if (action == "show") {
    if (!vm.count("name")) throw UsageError("'show' needs a device name (pacer devices list shows them)");
    const auto d = traces::find_device(vm["name"].as<std::string>());
    const std::string format = vm["format"].as<std::string>();
    if (format == "text") std::cout << traces::describe(d);
    else if (format == "ini") std::cout << traces::to_device_ini(d);
    else throw UsageError(fmt::format("--format: '{}' is not one of text, ini", format));
    return 0;
  }
  throw UsageError(fmt::format("unknown action '{}' (use list or show NAME)", action));
}

Command make() {
  Command c;
  c.name = "devices";
  c.summary = "list the device catalog, or show one device";
  c.order = 10;
  c.usage_tail = "[list | show NAME]";
  c.description =
      "The built-in catalog holds the Jetson boards of shared/facts/jetson.md: GPU frequency tables,\n"
      "nvpmodel modes, sysfs devfreq and INA3221 layouts, and V(f) where public. NAME may also be the\n"
      "path of a device file in the same INI schema.";
  c.add_options = [](po::options_description& d) {
    d.add_options()("action", po::value<std::string>()->default_value("list"), "list | show")(
        "name", po::value<std::string>(), "device name or device file (for show)")(
        "format", po::value<std::string>()->default_value("text"), "output of show: text | ini");
  };
  c.positional = {"action", "name"};
  c.run = run_devices;
  return c;
}

PACER_REGISTER_COMMAND(make);

}  // namespace
}  // namespace pacer::cli
