// `pacer export`: any trace-store record as CSV with units in the header.
#include <fmt/format.h>

#include <filesystem>
#include <iostream>

#include "experiments/cli/cli.hpp"
#include "traces/store/export.hpp"
#include "traces/store/outputs.hpp"
#include "traces/store/store.hpp"

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
    std::cout << traces::format_store_contents(store);
    return 0;
  }
  const std::string csv = traces::export_csv(store, vm["record"].as<std::string>());
  write_output(out, csv);
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
        "record", po::value<std::string>(),
        fmt::format("record to export: {}; omitted: list the store", traces::export_record_forms()).c_str())(
        "out,o", po::value<std::string>()->default_value("-"), "output CSV file, - for stdout")(
        "reseal", po::bool_switch()->default_value(false),
        "first recompute the store's checksum header (after editing the store on purpose with another HDF5 tool)");
  };
  c.positional = {"store", "record"};
  c.input_files = {"store"};
  c.output_files = {{"out", ""}};
  c.run = run_export;
  return c;
}

PACER_REGISTER_COMMAND(make);

}  // namespace
}  // namespace pacer::cli
