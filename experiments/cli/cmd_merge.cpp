// `pacer merge OUT.h5 IN.h5...`: joins the stores that the shards of a campaign wrote (--shard,
// --jobs, Slurm array tasks) record by record (traces/store/merge.hpp has the rules).
#include <fmt/format.h>

#include <iostream>

#include "base/error.hpp"
#include "experiments/cli/cli.hpp"
#include "traces/store/merge.hpp"

namespace pacer::cli {
namespace {

int run_merge(const po::variables_map& vm) {
  if (!vm.count("out") || !vm.count("inputs")) throw UsageError("name the output store and at least one input store");
  const std::string out = vm["out"].as<std::string>();
  std::vector<std::filesystem::path> inputs;
  for (const auto& s : vm["inputs"].as<std::vector<std::string>>()) inputs.emplace_back(s);
  const bool update = vm["update"].as<bool>(), replace = vm["replace"].as<bool>();
  if (update && replace)
    throw UsageError("--update keeps what OUT holds and --replace drops it: choose one of them");
  const auto existing = update    ? traces::ExistingOutput::keep
                        : replace ? traces::ExistingOutput::replace
                                  : traces::ExistingOutput::refuse;
  traces::MergeReport report;
  try {
    report = traces::merge_stores(out, inputs, existing);
  } catch (const traces::OutputExistsError& e) {
    throw UsageError(fmt::format(
        "{}; pass --update to merge the inputs into it, --replace to overwrite it, or list it among the inputs",
        e.what()));
  }
  std::cout << traces::format_merge_report(report, out);
  return 0;
}

Command make() {
  Command c;
  c.name = "merge";
  c.summary = "merge the trace stores of a campaign's shards into one store";
  c.order = 95;
  c.usage_tail = "OUT.h5 IN.h5...";
  c.description =
      "Merges the inputs record by record into OUT (written atomically, under OUT's writers' lock). An OUT\n"
      "that exists must be among the inputs, or --update merges into it (keeps what it holds) or --replace\n"
      "overwrites it; otherwise nothing is done. Relation runs are keyed by (b, seed), profile points by\n"
      "(knob, b), curve points by (b, seed, samples; and the level in a curve of levels), validation rows by\n"
      "(cap, policy, seed, configuration); the same key with the same value in several inputs is kept once,\n"
      "with different values it is an error naming both files.\n"
      "Devices must agree, and the points (runs) of one profile (validation) must name one board model.\n"
      "Means, spreads and r(b) of merged relations are those of the merged runs. See docs/cluster.md.";
  c.add_options = [](po::options_description& d) {
    d.add_options()("out", po::value<std::string>(), "store to write (first positional argument)")(
        "inputs", po::value<std::vector<std::string>>()->multitoken(),
        "stores to merge (further positional arguments)")(
        "update", po::bool_switch()->default_value(false),
        "keep what OUT holds: merge OUT itself in first when it exists (a campaign's store and its shards)")(
        "replace", po::bool_switch()->default_value(false),
        "overwrite an OUT that exists and is not among the inputs: what it holds is dropped");
  };
  c.positional = {"out", "inputs"};
  c.positional_repeat = true;
  c.output_files = {{"out", ""}};
  c.run = run_merge;
  return c;
}

PACER_REGISTER_COMMAND(make);

}  // namespace
}  // namespace pacer::cli
