// Fuzzes the --config INI parser of the CLI (cli::store_config_text) with an option set that has
// every kind of value the subcommands use: typed quantities, lists, integers, strings, switches
// and repeated values. Allowed outcomes: success, boost::program_options::error (exit 2 in the
// CLI), pacer::UsageError (exit 2) or pacer::Error (exit 1). Anything else escaping is a crash.
#include <cstdint>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "experiments/cli/cli.hpp"
#include "experiments/cli/options.hpp"
#include "fuzz_check.hpp"

namespace po = boost::program_options;
using namespace pacer;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  po::options_description own("Options");
  own.add_options()("power-limit", cli::power_opt(10, "10W"), "cap [W]")(
      "freq", cli::freq_opt(), "GPU frequency [MHz]")("duration", cli::duration_opt(30, "30s"), "time [s]")(
      "energy", po::value<units::Energy>(), "energy [J]")("caps", po::value<units::PowerList>(), "caps [W]")(
      "batch-sizes", po::value<std::string>()->default_value("4:64"), "batch sizes")(
      "seeds", po::value<int>()->default_value(1), "seeds")("out", po::value<std::string>(), "store")(
      "emulated", po::bool_switch(), "switch")("tag", po::value<std::vector<std::string>>()->composing(), "tags");
  po::options_description all;
  all.add(own).add_options()("config", po::value<std::string>(), "config")(
      "log-level", po::value<std::string>()->default_value("info"), "level");
  po::variables_map vm;
  try {
    cli::store_config_text(text, "fuzz.ini", "profile", all, vm);
    po::notify(vm);
    PACER_FUZZ_CHECK(vm["power-limit"].as<units::Power>().w >= 0);
    if (vm.count("caps"))
      for (double w : vm["caps"].as<units::PowerList>().w) PACER_FUZZ_CHECK(w >= 0);
    const auto sizes = cli::parse_int_list(vm["batch-sizes"].as<std::string>(), "--batch-sizes");
    for (int b : sizes) PACER_FUZZ_CHECK(b > 0);
  } catch (const po::error&) {
  } catch (const UsageError&) {
  } catch (const Error&) {
  }
  return 0;
}
