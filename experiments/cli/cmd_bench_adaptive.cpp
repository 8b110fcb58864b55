// `pacer bench adaptive`: the adaptive relation campaign replayed on the Zeus traces against the full
// and the fixed campaigns, its constants chosen leave-one-workload-out (experiments/bench/
// adaptive_bench.hpp does the work; this file parses and prints).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>

#include "base/error.hpp"
#include "base/units.hpp"
#include "experiments/bench/adaptive_bench.hpp"
#include "experiments/cli/cli.hpp"
#include "experiments/cli/options.hpp"
#include "traces/store/outputs.hpp"

namespace pacer::cli {
namespace {

std::vector<std::string> extrapolation_names(const experiments::AdaptiveBenchOptions& o) {
  std::vector<std::string> names;
  for (const auto e : o.extrapolations) names.emplace_back(explore::to_string(e));
  return names;
}

int run_bench_adaptive(const po::variables_map& vm) {
  experiments::AdaptiveBenchOptions o;
  o.zeus_dir = vm["zeus-dir"].as<std::string>();
  o.gpus = names_or_every(vm, "gpus", "GPU");
  o.caps_per_workload = vm["caps-per-workload"].as<int>();
  o.orders = vm["orders"].as<int>();
  o.tolerances = parse_positive_numbers(vm["tolerances"].as<std::string>(), "--tolerances");
  o.initial_fractions = parse_positive_numbers(vm["initial-fractions"].as<std::string>(), "--initial-fractions");
  for (double f : o.initial_fractions)
    if (f > 1) throw UsageError(fmt::format("--initial-fractions: {:g} is above 1", f));
  o.zs = parse_positive_numbers(vm["zs"].as<std::string>(), "--zs");
  o.estimate_zs = parse_positive_numbers(vm["estimate-zs"].as<std::string>(), "--estimate-zs", true);
  // A list of 0 / 1 switches; `off` and `on` name the two in the error.
  const auto switches = [&](const char* key, const char* off, const char* on) {
    std::vector<bool> out;
    for (double v : parse_positive_numbers(vm[key].as<std::string>(), fmt::format("--{}", key), true)) {
      if (v != 0 && v != 1) throw UsageError(fmt::format("--{}: {:g} is neither 0 ({}) nor 1 ({})", key, v, off, on));
      out.push_back(v == 1);
    }
    return out;
  };
  o.extrapolations.clear();
  for (const auto& name : split_list(vm["extrapolations"].as<std::string>()))
    o.extrapolations.push_back(explore::parse_adaptive_extrapolation(name, "extrapolations"));
  if (o.extrapolations.empty())
    throw UsageError(fmt::format("--extrapolations: name at least one ({})",
                                 fmt::join(extrapolation_names(experiments::AdaptiveBenchOptions{}), ", ")));
  o.ratio_lines = switches("ratio-lines", "median", "line");
  o.budget_first_shares =
      parse_positive_numbers(vm["budget-first-shares"].as<std::string>(), "--budget-first-shares", true);
  for (double f : o.budget_first_shares)
    if (f > 1) throw UsageError(fmt::format("--budget-first-shares: {:g} is above 1", f));
  const std::string csv = vm["csv"].as<std::string>();
  if (!csv.empty()) traces::check_output_file(csv, "csv");
  const auto result = experiments::run_adaptive_bench(o);
  std::cout << result.markdown();
  if (!csv.empty()) write_output(csv, result.csv());
  return 0;
}

Command make() {
  Command c;
  c.name = "bench adaptive";
  c.summary = "adaptive relation campaigns replayed on the Zeus traces against the full and fixed campaigns";
  c.order = 98;
  c.description =
      "Replays the adaptive relation campaign (explore/adaptive.hpp) on every GPU of the Zeus traces in --zeus-dir:\n"
      "per workload it buys the proxy's runs (the protocol's half) up to sample counts in rounds, over --orders\n"
      "random orders of that pool, and scores the pacer policy on what it bought against the target (all runs),\n"
      "10 caps per workload. The engine's constants are chosen leave-one-workload-out over the grid (with one\n"
      "value each: those constants, no choice); round 1's share of a compute budget (--budget-first-shares) by its\n"
      "own folds on the campaigns at the fixed cuts' compute. Prints the folds, the table (the full campaign,\n"
      "every fixed cut of `pacer budget`, the adaptive campaign until decided and at each fixed cut's compute)\n"
      "and two goal lines:\n" +
      fmt::format(
          "(a) the full campaign's mean regret at <= {:g} % of its compute, (b) a lower max regret than "
          "every fixed cut at equal compute.",
          100 * experiments::kAdaptiveGoalShare);
  const experiments::AdaptiveBenchOptions d0;
  c.add_options = [d0](po::options_description& d) {
    d.add_options()("zeus-dir", po::value<std::string>()->default_value(d0.zeus_dir.string())->value_name("DIR"),
                    "folder with summary_train.csv and summary_power_<gpu>.csv (default: zeus/ in $PACER_DATA_DIR, "
                    "else in the data/ folder shipped with pacer)")(
        "gpus", po::value<std::string>()->default_value(""),
        "GPUs, comma-separated (default: every one in the folder)")(
        "caps-per-workload", bounded(10, 1, kMaxCapsPerWorkload, "caps-per-workload"),
        "caps per workload, evenly spaced over its power range (the protocol: 10) [caps]")(
        "orders", bounded(d0.orders, 1, 10000, "orders"), "random orders of each workload's pool [orders]")(
        "tolerances", po::value<std::string>()->default_value(fmt::format("{:g}", fmt::join(d0.tolerances, ","))),
        "grid of the expected-regret tolerance [1], comma-separated")(
        "initial-fractions",
        po::value<std::string>()->default_value(fmt::format("{:g}", fmt::join(d0.initial_fractions, ","))),
        "grid of round 1's share of the run budget [1], comma-separated")(
        "zs", po::value<std::string>()->default_value(fmt::format("{:g}", fmt::join(d0.zs, ","))),
        "grid of the contender intervals' z [1], comma-separated")(
        "estimate-zs", po::value<std::string>()->default_value(fmt::format("{:g}", fmt::join(d0.estimate_zs, ","))),
        "grid of the sd above its estimate an unfinished run is stored at [1], comma-separated")(
        "extrapolations",
        po::value<std::string>()->default_value(fmt::format("{}", fmt::join(extrapolation_names(d0), ","))),
        "grid of how an unfinished run's samples to the target are estimated (as pacer relation --adaptive "
        "--extrapolation), comma-separated")(
        "ratio-lines", po::value<std::string>()->default_value("0,1"),
        "grid of the shared ratio's form (0: the median over the runs, 1: a line in log b), comma-separated; in "
        "both the constants' and round 1's share's choice")(
        "budget-first-shares",
        po::value<std::string>()->default_value(fmt::format("{:g}", fmt::join(d0.budget_first_shares, ","))),
        "grid of round 1's share of a compute budget [1], comma-separated (0: --initial-fractions' share of the run "
        "budget)")("csv", po::value<std::string>()->default_value("")->value_name("FILE"),
                   "also write the table as CSV");
  };
  c.output_files = {{"csv", ""}};
  c.run = run_bench_adaptive;
  return c;
}

PACER_REGISTER_COMMAND(make);

}  // namespace
}  // namespace pacer::cli
