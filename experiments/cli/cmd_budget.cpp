// `pacer budget`: how much of the proxy campaign the policies need. Each cut stops the proxy's runs
// early (at a looser metric level or after a number of samples) and may keep fewer seeds; the cut
// runs' samples-to-target are extrapolated from their learning curves and every policy is swept
// on them; the regret against the share of the proxy's compute goes to the screen, the store (one
// sweep per cut) and a CSV, and `pacer report` draws it (explore/proxy_budget.hpp).
#include <fmt/format.h>

#include <filesystem>
#include <iostream>

#include "base/error.hpp"
#include "experiments/cli/cli.hpp"
#include "experiments/cli/explore_options.hpp"
#include "explore/problem.hpp"
#include "explore/proxy_budget.hpp"
#include "traces/store/outputs.hpp"
#include "traces/store/store.hpp"

namespace pacer::cli {
namespace {

int run_budget(const po::variables_map& vm) {
  auto spec = problem_spec(vm);
  const std::string path = vm["store"].as<std::string>();
  const auto store = traces::Store::open(path);
  if (spec.profile == "all") spec.profile.clear();
  const auto problems = explore::load_problems(store, spec);
  std::vector<const explore::Problem*> views;
  for (const auto& p : problems) {
    if (!p->target)
      throw Error(fmt::format("{}: no target relation: a proxy budget is scored against it", p->workload));
    views.push_back(p.get());
  }
  explore::BudgetRequest request;
  request.name = vm["name"].as<std::string>();
  request.sweep.guard = parse_guard(vm);
  request.sweep.caps_per_workload = vm["caps-per-workload"].as<int>();
  request.sweep.options.policies.clear();
  for (const auto& name : split_list(vm["policies"].as<std::string>()))
    request.sweep.options.policies.push_back(explore::parse_policy(name, "policies"));
  request.sweep.options.policies.push_back(explore::Policy::Oracle);
  for (const auto& text : split_list(vm["cuts"].as<std::string>()))
    request.cuts.push_back(explore::parse_cut(text, "cuts"));
  request.extrapolation = explore::parse_extrapolation(vm["extrapolation"].as<std::string>(), "extrapolation");
  request.adaptive_orders = vm["adaptive"].as<int>();
  const auto csv = vm["csv"].as<std::string>();
  if (!csv.empty()) traces::check_output_file(csv, "csv");
  const auto curves = explore::read_curves(store, views);

  const explore::BudgetResult result = explore::budget_sweep(views, curves, request);
  std::cout << fmt::format(
      "{} workload(s), {} proxy cuts; compute = samples the proxy's runs trained, as a share of "
      "the full proxy's (mean over the workloads)\n",
      problems.size(), result.sweeps.size());
  if (!result.sweeps.empty()) std::cout << fmt::format("feasibility: {}\n", result.sweeps.front().feasibility);
  std::cout << explore::format_budget(result.points);
  auto rw = traces::Store::open(path);
  const auto replace = vm.count("replace") ? traces::Replace::always : traces::Replace::if_not_smaller;
  for (const auto& s : result.sweeps) rw.write(s, replace);
  std::cerr << fmt::format("wrote sweeps/{}@0..{} to {}\n", request.name, result.sweeps.size() - 1, path);
  if (!csv.empty()) write_output(csv, explore::budget_csv(result.points));
  return 0;
}

Command make() {
  Command c;
  c.name = "budget";
  c.summary = "regret against the share of the proxy campaign's compute: proxy runs cut early, extrapolated";
  c.order = 56;
  c.usage_tail = "STORE";
  c.description =
      "For each cut of the proxy's runs (stopped at a looser metric level or after a number of samples,\n"
      "optionally keeping fewer seeds per batch size), estimates every cut run's samples-to-target (by\n"
      "default as its samples to a level all runs reached times one ratio shared by the runs; or from its\n"
      "own learning curve, the metric linear in log samples through its last 3 points), sweeps the\n"
      "policies on the cut relation as `pacer sweep` does, and reports each policy's mean and max regret\n"
      "and how often it makes the full proxy's choice, against the share of the proxy's compute the cut\n"
      "used. Needs the proxy's learning curve (curves/<proxy>: written by `pacer relation` and `pacer\n"
      "import zeus`). Default cuts: the full proxy, then for level curves (Zeus) 1 to 6 metric levels\n"
      "looser than the target (each workload's own levels), for evaluation curves 2-50 % of the longest\n"
      "run's samples; each with all seeds and with one. With --adaptive N, also replays the adaptive relation\n"
      "campaign (explore/adaptive.hpp) on the proxy's runs over N random orders of them: until decided, and at\n"
      "each cut's compute (records tagged \"adaptive ...\", drawn as a curve beside the cuts by `pacer report`).\n"
      "Every workload chooses under its own guard as `pacer select --profile` of it does (--guard: the same\n"
      "for every workload), in each cut's sweep and in the adaptive replays.";
  c.add_options = [](po::options_description& d) {
    add_problem_options(d, false);
    add_guard_option(d);
    d.add_options()("profile", po::value<std::string>()->default_value("all"), "profile to sweep, or all")(
        "cuts", po::value<std::string>()->default_value(""),
        "comma-separated cuts: full | level:<metric> | looser:<k levels> | samples:<count> | fraction:<of the "
        "longest run>, each with an optional @<seeds kept per batch size>, e.g. looser:1@1 (default: as described "
        "above)")(
        "extrapolation",
        po::value<std::string>()->default_value(std::string(explore::to_string(explore::kDefaultExtrapolation))),
        "how a cut run's samples-to-target is estimated: ratio (samples to a common level x one ratio "
        "shared by the runs) | curve (each run's own learning curve)")(
        "caps-per-workload", bounded(10, 1, kMaxCapsPerWorkload, "caps-per-workload"),
        fmt::format("caps per workload over its power range [caps; 1 .. {}]", kMaxCapsPerWorkload).c_str())(
        "policies", po::value<std::string>()->default_value("pacer,ours"),
        "comma-separated policies scored on each cut (the oracle is always added)")(
        "name", po::value<std::string>()->default_value("budget"),
        "name of the campaign: sweep records <name>@0, <name>@1, ... in the store")(
        "csv", po::value<std::string>()->default_value("")->value_name("FILE"),
        "also write the cut x policy table as CSV to this file")(
        "adaptive", bounded(0, 0, 1000, "adaptive"),
        "also replay the adaptive relation campaign over this many random orders of the proxy's runs [orders; 0: "
        "none]")("replace", "replace sweep records of these names even when they have more rows");
  };
  c.positional = {"store"};
  c.input_files = {"device"};
  c.output_files = {{"store", ""}, {"csv", ""}};
  c.run = run_budget;
  return c;
}

PACER_REGISTER_COMMAND(make);

}  // namespace
}  // namespace pacer::cli
