// `pacer bench policy`: the leave-one-workload-out choice of the pacer policy's constants on the
// Zeus traces (experiments/bench/policy_bench.hpp does the work; this file parses and prints).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>

#include "base/error.hpp"
#include "base/units.hpp"
#include "experiments/bench/policy_bench.hpp"
#include "experiments/bench/transfer_bench.hpp"
#include "experiments/cli/cli.hpp"
#include "experiments/cli/options.hpp"
#include "traces/store/outputs.hpp"
#include "traces/store/store.hpp"

namespace pacer::cli {
namespace {

int run_bench_policy(const po::variables_map& vm) {
  const auto stores = split_list(vm["stores"].as<std::string>());
  if (!stores.empty()) {  // the proxy -> target transfer on experiment stores, instead of the Zeus traces
    for (const char* zeus_only : {"csv", "gpus", "zeus-dir", "resplits", "own-weights", "shrinks"})
      if (vm.count(zeus_only) && !vm[zeus_only].defaulted())
        throw UsageError(
            fmt::format("--{} is an option of the Zeus bench; with --stores give only --caps-per-workload", zeus_only));
    experiments::TransferBenchOptions t;
    for (const auto& s : stores) t.stores.emplace_back(s);
    t.caps_per_workload = vm["caps-per-workload"].as<int>();
    std::cout << experiments::run_transfer_bench(t).markdown();
    return 0;
  }
  experiments::PolicyBenchOptions o;
  o.zeus_dir = vm["zeus-dir"].as<std::string>();  // "": zeus/ of the data folder
  o.gpus = names_or_every(vm, "gpus", "GPU");
  o.own_weights = parse_positive_numbers(vm["own-weights"].as<std::string>(), "--own-weights");
  for (double w : o.own_weights)
    if (w > 1) throw UsageError(fmt::format("--own-weights: {:g} is above 1", w));
  o.shrinks = parse_positive_numbers(vm["shrinks"].as<std::string>(), "--shrinks");
  o.caps_per_workload = vm["caps-per-workload"].as<int>();
  o.resplits = vm["resplits"].as<int>();
  const std::string csv = vm["csv"].as<std::string>();
  const std::string resplits_csv =
      o.resplits > 0 && !csv.empty() ? traces::companion_csv(csv, "-resplits").string() : "";
  if (!csv.empty()) traces::check_output_file(csv, "csv");
  if (!resplits_csv.empty()) traces::check_output_file(resplits_csv, "csv");
  if (o.resplits > 0)
    std::cerr << fmt::format("scoring the policies on {} random proxy halves per GPU as well\n", o.resplits);
  const auto result = experiments::run_policy_bench(o);
  std::cout << result.markdown();
  if (!csv.empty()) write_output(csv, result.csv());
  if (!resplits_csv.empty()) write_output(resplits_csv, result.resplits_csv());
  return 0;
}

Command make() {
  Command c;
  c.name = "bench policy";
  c.summary = "leave-one-workload-out choice of the pacer policy's constants on the Zeus traces";
  c.order = 97;
  c.description =
      "On every GPU of the Zeus traces in --zeus-dir (or those of --gpus), sweeps each workload with the pacer\n"
      "policy for every (own weight, shrink) of the grid, under the traces' replay protocol (docs/explore.md).\n"
      "For each workload held out (all its GPUs together), the constants with the least mean regret on the\n"
      "other workloads (then the least max) are chosen and scored on it. Prints each fold, the held-out\n"
      "regret over all folds, and every grid point on all the data (explore/relation_model.hpp: the\n"
      "constants the code uses). With --resplits N, also scores pacer (the code's constants), Algorithm 1 and\n"
      "Ours-robust on N random draws of the proxy's half of the runs per GPU: how often each misses the\n" +
      fmt::format(
          "goal (mean <= {:g} %, max <= {:g} %) because of which runs the proxy drew; the coverage of pacer's\n"
          "90 % interval of the target's time at its choice (held-back runs' mean; the inflation chosen\n"
          "leaving one GPU and one workload out); and the leave-one-workload-out choice of the threshold at\n"
          "which pacer departs from Algorithm 1's batch size.\n"
          "With --stores A.h5,B.h5 (stores of `pacer experiment`), instead: the proxy -> target transfer of\n"
          "samples-to-target over their proxy/target pairs, leave one pair out (explore/transfer.hpp); the\n"
          "coverage of pacer's interval over the proxy's and the target's seed draws; and the leave-one-pair-out\n"
          "choice of the departure margin (docs/explore.md).",
          100 * experiments::kRegretGoalMean, 100 * experiments::kRegretGoalMax);
  const experiments::PolicyBenchOptions d0;
  c.add_options = [d0](po::options_description& d) {
    d.add_options()("zeus-dir", po::value<std::string>()->default_value(d0.zeus_dir.string())->value_name("DIR"),
                    "folder with summary_train.csv and summary_power_<gpu>.csv (default: zeus/ in $PACER_DATA_DIR, "
                    "else in the data/ folder shipped with pacer)")(
        "gpus", po::value<std::string>()->default_value(""),
        "GPUs, comma-separated (default: every one in the folder)")(
        "own-weights", po::value<std::string>()->default_value(fmt::format("{:g}", fmt::join(d0.own_weights, ","))),
        "grid of the weight of a run's own count against its learning-curve prediction [1], comma-separated")(
        "shrinks", po::value<std::string>()->default_value(fmt::format("{:g}", fmt::join(d0.shrinks, ","))),
        "grid of the seed-noise weight of the shrinkage [1], comma-separated")(
        "caps-per-workload", bounded(10, 1, kMaxCapsPerWorkload, "caps-per-workload"),
        "caps per workload, evenly spaced over its power range (the protocol: 10) [caps]")(
        "resplits", bounded(0, 0, 10000, "resplits"),
        "also score pacer, ours and ours-robust on this many random proxy halves per GPU (outside the protocol: "
        "how much of a policy's regret comes from which runs the proxy drew) [splits]")(
        "stores", po::value<std::string>()->default_value("")->value_name("A.h5,B.h5"),
        "experiment stores, comma-separated: measure the proxy -> target transfer on them instead of the Zeus "
        "traces")("csv", po::value<std::string>()->default_value("")->value_name("FILE"),
                  "also write the tables as CSV (the re-splits to FILE's stem + \"-resplits.csv\")");
  };
  c.output_files = {{"csv", "-resplits"}};
  c.run = run_bench_policy;
  return c;
}

PACER_REGISTER_COMMAND(make);

}  // namespace
}  // namespace pacer::cli
