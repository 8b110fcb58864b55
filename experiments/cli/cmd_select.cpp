// `pacer select`: the configuration for one power cap, with its predicted time and energy to
// accuracy, the runner-up, and what every other policy would pick.
#include <fmt/format.h>

#include <chrono>
#include <iostream>

#include "experiments/cli/cli.hpp"
#include "experiments/cli/explore_options.hpp"
#include "explore/problem.hpp"
#include "explore/sweep.hpp"
#include "traces/error.hpp"
#include "traces/store.hpp"
#include "traces/units.hpp"

namespace pacer::cli {
namespace {

std::string secs(double s) { return std::isnan(s) ? "-" : units::format(s, units::Dimension::Time); }
std::string joules(double j) { return std::isnan(j) ? "-" : units::format(j, units::Dimension::Energy); }
std::string watts(double w) { return std::isnan(w) ? "-" : units::format(w, units::Dimension::Power); }

int run_select(const po::variables_map& vm) {
  const auto spec = problem_spec(vm);
  const auto store = traces::Store::open(vm["store"].as<std::string>());
  const auto t0 = std::chrono::steady_clock::now();
  const auto pb = explore::load_problem(store, spec);
  const auto t1 = std::chrono::steady_clock::now();
  const double cap = vm["power-limit"].as<units::Power>().w;
  const auto policy = parse_policy(vm["policy"].as<std::string>(), "--policy");
  auto ctx = pb->context();
  ctx.powertrain_batch = vm["powertrain-batch"].as<int>();
  const explore::Space& space = *pb->space;

  std::vector<explore::Selection> ranked;
  const auto choice = explore::select(policy, ctx, cap, &ranked);
  // Time to decide: the policy alone on the prebuilt index, averaged over repetitions because one
  // call takes microseconds.
  const int reps = 1000;
  const auto s0 = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) {
    const auto s = explore::select(policy, ctx, cap);
    if (s.batch_size < 0) std::cerr << "";  // keeps the call from being optimised away
  }
  const double decide_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - s0).count() / reps;

  std::cout << fmt::format("workload {}: {} | {} configurations ({} knob settings x {} batch sizes)\n", pb->workload,
                           space.source(), space.num_knobs() * space.num_batches(), space.num_knobs(),
                           space.num_batches());
  std::cout << fmt::format("feasibility: {} power <= {} | proxy relation {}{}\n", explore::to_string(space.basis()),
                           watts(cap), pb->proxy_set.name,
                           pb->target_set ? " | target " + pb->target_set->name : " | no target (no oracle)");
  if (!choice.feasible) throw Error(fmt::format("{}: {}", explore::to_string(policy), choice.message));

  std::cout << fmt::format("\nchoice ({}, {}): {}, b={}: predicted TT_acc {}, energy {}, power {}\n",
                           explore::to_string(policy), choice.method, space.describe_knob(choice.knob),
                           choice.batch_size, secs(choice.predicted_time_s), joules(choice.predicted_energy_j),
                           watts(choice.power_w));
  if (!std::isnan(choice.predicted_time_lo_s))
    std::cout << fmt::format("90% interval of its TT_acc over the relation's uncertainty: {} - {}\n",
                             secs(choice.predicted_time_lo_s), secs(choice.predicted_time_hi_s));
  if (ranked.size() > 1) {
    const auto& r = ranked[1];
    std::cout << fmt::format("runner-up: {}, b={}: predicted TT_acc {} ({:+.1f}%), energy {}\n",
                             space.describe_knob(r.knob), r.batch_size, secs(r.predicted_time_s),
                             100 * (r.predicted_time_s / choice.predicted_time_s - 1), joules(r.predicted_energy_j));
  } else {
    std::cout << "runner-up: none (one feasible batch size under this policy)\n";
  }
  std::cout << fmt::format("time to decide: {:.2f} us per selection (mean of {}); space and index loaded in {:.1f} ms\n",
                           decide_us, reps, std::chrono::duration<double, std::milli>(t1 - t0).count());

  std::cout << fmt::format("\n{:<12} {:>16} {:>7} {:>14} {:>12} {:>14} {:>12}\n", "policy", "knob", "b", "predicted TT",
                           "energy", "target TT", "vs choice");
  traces::SweepResult saved;
  for (explore::Policy p : explore::kAllPolicies) {
    const auto s = explore::select(p, ctx, cap);
    if (!s.feasible) {
      std::cout << fmt::format("{:<12} infeasible: {}\n", explore::to_string(p), s.message);
      continue;
    }
    double target_tt = traces::kNaN;
    if (pb->target && pb->target->has(s.batch_index))
      target_tt = space.time_per_batch_s(s.batch_index, s.knob_index) * pb->target->samples_by_batch[s.batch_index] /
                  s.batch_size;
    std::cout << fmt::format("{:<12} {:>16} {:>7} {:>14} {:>12} {:>14} {:>12}\n", explore::to_string(p),
                             space.describe_knob(s.knob), s.batch_size, secs(s.predicted_time_s),
                             joules(s.predicted_energy_j), secs(target_tt),
                             fmt::format("{:+.1f}%", 100 * (s.predicted_time_s / choice.predicted_time_s - 1)));
  }
  std::cout << "(predicted TT uses the proxy relation, target TT the target's; the oracle's predicted TT is its target TT)\n";

  const std::string save = vm["save"].as<std::string>();
  if (!save.empty()) {
    explore::SweepWorkload w;
    w.workload = pb->workload;
    w.index = pb->index.get();
    w.proxy = &pb->proxy;
    w.target = pb->target ? &*pb->target : nullptr;
    w.target_set = pb->target_set ? &*pb->target_set : nullptr;
    w.caps_w = {cap};
    explore::SweepOptions so;
    so.powertrain_batch = ctx.powertrain_batch;
    saved.name = save;
    saved.profile = pb->profile_name;
    saved.relation = pb->proxy_set.name;
    saved.target = pb->target_set ? pb->target_set->name : "";
    saved.feasibility = std::string(explore::to_string(space.basis()));
    saved.knob = space.knob();
    saved.rows = explore::sweep(w, so);
    auto rw = traces::Store::open(store.path());
    rw.write_sweep(saved);
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
      "Policies: " +
      explore::policy_names() +
      ".\nAn infeasible cap is an error (exit 1) naming the lowest-power configuration.";
  c.add_options = [](po::options_description& d) {
    add_problem_options(d);
    d.add_options()("power-limit,P", po::value<units::Power>()->required(), "power cap P_max [W] (e.g. 7.5W)")(
        "policy", po::value<std::string>()->default_value(std::string(explore::to_string(explore::kDefaultPolicy))),
        "policy that makes the choice")(
        "save", po::value<std::string>()->default_value(""),
        "also write every policy's choice as a one-cap sweep record with this name");
  };
  c.positional = {"store"};
  c.run = run_select;
  return c;
}

PACER_REGISTER_COMMAND(make);

}  // namespace
}  // namespace pacer::cli
