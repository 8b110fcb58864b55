// `pacer export`: any trace-store record as CSV with units in the header.
#include <fmt/format.h>

#include <filesystem>
#include <iostream>

#include "experiments/cli/cli.hpp"
#include "traces/csv.hpp"
#include "traces/error.hpp"
#include "traces/outputs.hpp"
#include "traces/store.hpp"

namespace pacer::cli {
namespace {

int run_export(const po::variables_map& vm) {
  const std::string path = vm["store"].as<std::string>();
  const std::string out = vm["out"].as<std::string>();
  if (vm.count("record") && out != "-") traces::check_output_file(out, "out");  // before the store is read
  if (vm["reseal"].as<bool>()) {
    traces::reseal_store(path);  // refuses, with the reason, a store that does not read back
    std::cerr << fmt::format("resealed {}: its checksum now covers its current content\n", path);
  }
  const traces::Store store = traces::Store::open(path);
  if (!vm.count("record")) {
    std::cout << fmt::format("{} (schema {}):\n", path, traces::kSchemaVersion);
    if (store.has_device()) std::cout << "  device\n";
    for (const char* g : traces::kStoreGroups)
      for (const auto& n : store.list(g)) std::cout << fmt::format("  {}/{}\n", g, n);
    return 0;
  }
  const std::string record = vm["record"].as<std::string>();
  std::string csv;
  if (record == "device") {
    csv = traces::to_csv(store.read_device());
  } else {
    const auto slash = record.find('/');
    if (slash == std::string::npos)
      throw UsageError(fmt::format("record '{}' must be GROUP/NAME (e.g. profiles/resnet8) or 'device'", record));
    const std::string group = record.substr(0, slash), name = record.substr(slash + 1);
    if (group == "profiles") csv = traces::to_csv(store.read_profile(name));
    else if (group == "relations") csv = traces::to_csv(store.read_relation(name));
    else if (group == "curves") csv = traces::to_csv(store.read_curve(name));
    else if (group == "models") csv = traces::to_csv(store.read_model(name));
    else if (group == "sweeps") csv = traces::to_csv(store.read_sweep(name));
    else if (group == "runs") csv = traces::to_csv(store.read_series(name));
    else if (group == "validations") csv = traces::to_csv(store.read_validation(name));
    else throw UsageError(fmt::format("unknown group '{}' (profiles, relations, curves, models, sweeps, runs, validations, device)", group));
  }
  if (out == "-") std::cout << csv;
  else {
    traces::write_file_atomic(out, csv);
    std::cerr << fmt::format("wrote {}\n", out);
  }
  return 0;
}

Command make() {
  Command c;
  c.name = "export";
  c.summary = "write a trace-store record as CSV (units in the header), or list a store";
  c.order = 90;
  c.usage_tail = "STORE [GROUP/NAME | device]";
  c.add_options = [](po::options_description& d) {
    d.add_options()("store", po::value<std::string>()->required(), "trace store (HDF5)")(
        "record", po::value<std::string>(), "record to export: profiles/NAME, relations/NAME, curves/NAME, models/NAME, "
                                            "sweeps/NAME, runs/NAME, validations/NAME or device; omitted: list the store")(
        "out,o", po::value<std::string>()->default_value("-"), "output CSV file, - for stdout")(
        "reseal", po::bool_switch()->default_value(false),
        "first recompute the store's checksum header (after editing the store on purpose with another HDF5 tool)");
  };
  c.positional = {"store", "record"};
  c.run = run_export;
  return c;
}

PACER_REGISTER_COMMAND(make);

}  // namespace
}  // namespace pacer::cli
