// `pacer select`: the configuration for one power cap, with its predicted time and energy to
// accuracy, the runner-up, and what every other policy would pick.
#include <fmt/format.h>

#include <iostream>

#include "base/error.hpp"
#include "base/units.hpp"
#include "experiments/cli/cli.hpp"
#include "experiments/cli/explore_options.hpp"
#include "explore/choose.hpp"
#include "explore/problem.hpp"
#include "explore/sweep.hpp"
#include "traces/store/outputs.hpp"
#include "traces/store/store.hpp"

namespace pacer::cli {
namespace {

int run_select(const po::variables_map& vm) {
  const auto spec = problem_spec(vm);
  const auto guard = parse_guard(vm);
  const std::string save = vm["save"].as<std::string>();
  if (!save.empty()) {  // the record it saves, before choosing
    traces::check_store_output(vm["store"].as<std::string>(), "store", traces::StoreCreation::must_exist);
    traces::check_record_name_option("sweeps", save, "save");
  }
  const auto store = traces::Store::open(vm["store"].as<std::string>());
  const auto pb = explore::load_problem(store, spec);
  const double cap = vm["power-limit"].as<units::PowerCap>().w;
  const auto policy = explore::parse_policy(vm["policy"].as<std::string>(), "policy");
  auto ctx = pb->context();
  ctx.powertrain_batch = vm["powertrain-batch"].as<int>();
  const auto report = explore::choose(*pb, ctx, policy, cap, explore::choice_rule(*pb, guard));
  std::cout << (vm.count("json") ? explore::choice_json(*pb, report) : explore::format_choice(*pb, report));

  if (!save.empty()) {
    explore::SweepRequest request;
    request.name = save;
    request.caps_w = {cap};
    request.options.powertrain_batch = ctx.powertrain_batch;
    request.guard = guard;
    auto rw = traces::Store::open(store.path());
    rw.write(explore::sweep_record({pb.get()}, request),
             vm.count("replace") ? traces::Replace::always : traces::Replace::if_not_smaller);
    std::cerr << fmt::format("saved every policy's choice as sweeps/{} in {}\n", save, store.path().string());
  }
  return 0;
}

Command make() {
  Command c;
  c.name = "select";
  c.summary = "pick (knob, batch size) for one power cap: choice, prediction, runner-up, baselines";
  c.order = 50;
  c.usage_tail = "STORE";
  c.description =
      "Ours is Algorithm 1 of the paper: per batch size the highest knob setting under the cap (binary search\n"
      "when power rises with the knob), then the smallest t_batch x N_acc(b) / b with the proxy relation.\n"
      "Policies:\n" +
      explore::policy_help() + "An infeasible cap is an error (exit 1) naming the lowest-power configuration.";
  c.add_options = [](po::options_description& d) {
    add_problem_options(d);
    add_guard_option(d);
    d.add_options()("power-limit,P", po::value<units::PowerCap>()->required(),
                    "power cap P_max [W] (e.g. 7.5W; none: no cap)")(
        "policy", po::value<std::string>()->default_value(std::string(explore::to_string(explore::kDefaultPolicy))),
        "policy that makes the choice")(
        "save", po::value<std::string>()->default_value(""),
        "also write every policy's choice as a one-cap sweep record with this name")(
        "replace", "with --save: replace a sweep record of this name even when it has more rows")(
        "json", "print JSON Lines instead of the text: one object per policy at the cap (\"chosen\": true for "
                "--policy's), units in the keys as in the CSV (cap_w, power_w, predicted_time_s, ...)");
  };
  c.positional = {"store"};
  c.input_files = {"device"};
  c.output_files = {{"store", ""}};
  c.run = run_select;
  return c;
}

PACER_REGISTER_COMMAND(make);

}  // namespace
}  // namespace pacer::cli
