// `pacer merge OUT.h5 IN.h5...`: joins the stores that the shards of a campaign wrote (--shard,
// --jobs, Slurm array tasks) record by record (traces/store/merge.hpp has the rules).
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
  const auto report = vm["update"].as<bool>() ? traces::merge_into(out, inputs) : traces::merge_stores(out, inputs);
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
      "Merges the inputs record by record into OUT (written atomically; OUT is replaced, so list it among\n"
      "the inputs, or pass --update, to keep what it holds). Relation runs are keyed by (b, seed), profile\n"
      "points by (knob, b), validation rows by (cap, policy, seed, configuration); the same key with the\n"
      "same value in several inputs is kept once, with different values it is an error naming both files.\n"
      "Devices must agree, and the points (runs) of one profile (validation) must name one board model.\n"
      "Means, spreads and r(b) of merged relations are those of the merged runs. See docs/cluster.md.";
  c.add_options = [](po::options_description& d) {
    d.add_options()("out", po::value<std::string>(), "store to write (first positional argument)")(
        "inputs", po::value<std::vector<std::string>>()->multitoken(),
        "stores to merge (further positional arguments)")(
        "update", po::bool_switch()->default_value(false),
        "keep what OUT holds: merge OUT itself in first when it exists (a campaign's store and its shards)");
  };
  c.positional = {"out", "inputs"};
  c.positional_repeat = true;
  c.run = run_merge;
  return c;
}

PACER_REGISTER_COMMAND(make);

}  // namespace
}  // namespace pacer::cli
