// `pacer sweep`: every policy over a range of power caps, for one or all profiles of a store,
// scored by replay against the target relation; table, summary lines, CSV and the trace store.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <set>

#include "experiments/cli/cli.hpp"
#include "experiments/cli/explore_options.hpp"
#include "explore/problem.hpp"
#include "explore/sweep.hpp"
#include "traces/csv.hpp"
#include "traces/error.hpp"
#include "traces/store.hpp"

namespace pacer::cli {
namespace {

int run_sweep(const po::variables_map& vm) {
  auto spec = problem_spec(vm);
  const std::string path = vm["store"].as<std::string>();
  const auto store = traces::Store::open(path);

  std::vector<std::string> names;
  if (!spec.model.empty()) names = {spec.model};
  else if (spec.profile.empty() || spec.profile == "all") names = store.list("profiles");
  else names = {spec.profile};
  if (names.empty()) throw Error(fmt::format("{} has no profile to sweep: run pacer profile or pacer import first", path));
  if (names.size() > 1 && (!spec.relation.empty() || !spec.target.empty()))
    throw UsageError("--relation/--target name one relation: with several profiles each uses <workload>.proxy/.target");

  std::vector<std::unique_ptr<explore::Problem>> problems;
  for (const auto& n : names) {
    auto s = spec;
    if (spec.model.empty()) s.profile = n;
    problems.push_back(explore::load_problem(store, s));
  }

  const auto device_wide = vm["device-wide"].as<std::string>();
  if (device_wide != "all" && device_wide != "self")
    throw UsageError(fmt::format("--device-wide: '{}' is not one of all, self", device_wide));
  std::vector<const explore::Space*> spaces;
  for (const auto& p : problems) spaces.push_back(p->space.get());
  const explore::DeviceWideCap all_cap(spaces);
  const bool mixed_knobs = std::any_of(problems.begin(), problems.end(),
                                       [&](const auto& p) { return p->space->knob() != problems[0]->space->knob(); });
  if (mixed_knobs && device_wide == "all")
    throw UsageError("--device-wide all: the profiles have different knobs; use --device-wide self");

  explore::SweepOptions so;
  so.powertrain_batch = vm["powertrain-batch"].as<int>();
  const auto policy_text = vm["policies"].as<std::string>();
  if (policy_text != "all") {
    so.policies.clear();
    size_t start = 0;
    while (start <= policy_text.size()) {
      size_t comma = policy_text.find(',', start);
      if (comma == std::string::npos) comma = policy_text.size();
      so.policies.push_back(parse_policy(policy_text.substr(start, comma - start), "--policies"));
      start = comma + 1;
    }
  }
  const int per_workload = vm["caps-per-workload"].as<int>();
  if (per_workload < 1) throw UsageError("--caps-per-workload: must be at least 1");

  traces::SweepResult result;
  result.name = vm["name"].as<std::string>();
  result.knob = problems[0]->space->knob();
  std::set<std::string> bases;
  const auto t0 = std::chrono::steady_clock::now();
  size_t selections = 0;
  std::vector<explore::SweepWorkload> swept;
  for (const auto& p : problems) {
    explore::SweepWorkload w;
    w.workload = p->workload;
    w.index = p->index.get();
    w.proxy = &p->proxy;
    w.target = p->target ? &*p->target : nullptr;
    w.target_set = p->target_set ? &*p->target_set : nullptr;
    w.device_cap = device_wide == "all" ? &all_cap : nullptr;
    if (vm.count("power-limits")) w.caps_w = vm["power-limits"].as<units::PowerList>().w;
    else {
      // The replay protocol's caps: evenly spaced over this workload's own power range.
      const double lo = p->space->min_power_w(), hi = p->space->max_power_w();
      for (int i = 0; i < per_workload; ++i)
        w.caps_w.push_back(per_workload == 1 ? hi : lo + (hi - lo) * i / (per_workload - 1));
      w.caps_w.back() = hi;
    }
    if (!p->target) spdlog::warn("{}: no target relation: no oracle and no regret for this workload", p->workload);
    auto rows = explore::sweep(w, so);
    swept.push_back(w);
    selections += w.caps_w.size() * so.policies.size();
    result.rows.insert(result.rows.end(), rows.begin(), rows.end());
    bases.insert(std::string(explore::to_string(p->space->basis())));
    result.profile += (result.profile.empty() ? "" : ",") + p->profile_name;
    result.relation += (result.relation.empty() ? "" : ",") + p->proxy_set.name;
    if (p->target_set) result.target += (result.target.empty() ? "" : ",") + p->target_set->name;
  }
  const double sweep_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  result.feasibility = bases.size() == 1 ? *bases.begin() : "peak,mean (per profile)";

  if (!vm.count("quiet")) std::cout << explore::format_table(result.rows, result.knob);
  std::cout << fmt::format("\n{} workload(s), {} caps, feasibility by {} power, Baseline 1/2 cap: {}\n", problems.size(),
                           result.rows.size() / std::max<size_t>(1, so.policies.size()), result.feasibility,
                           device_wide == "all" ? "device-wide over every profile swept" : "each profile alone");
  const auto summary = explore::summarize(result.rows);
  std::cout << explore::format_summary(summary);
  const int resamples = vm["bootstrap"].as<int>();
  const auto intervals = explore::bootstrap_regret(swept, result.rows, resamples);
  std::cout << explore::format_intervals(intervals, resamples);
  std::cout << fmt::format("{} selections with replay in {:.1f} ms\n", selections, sweep_ms);

  auto rw = traces::Store::open(path);
  rw.write_sweep(result);
  std::cerr << fmt::format("wrote sweeps/{} to {}\n", result.name, path);
  const auto csv = vm["csv"].as<std::string>();
  if (!csv.empty()) {
    traces::write_file_atomic(csv, traces::to_csv(result));
    const auto summary_path = std::filesystem::path(csv).replace_extension("").string() + "-summary.csv";
    traces::write_file_atomic(summary_path, explore::summary_csv(summary, intervals));
    std::cerr << fmt::format("wrote {} and {}\n", csv, summary_path);
  }
  return 0;
}

Command make() {
  Command c;
  c.name = "sweep";
  c.summary = "every policy over a range of power caps; regret vs the oracle, speed-ups, CSV and store";
  c.order = 55;
  c.usage_tail = "STORE";
  c.description =
      "For each profile (default: all of the store) and each cap, runs every policy, replays its choice on the\n"
      "target relation's seeds and reports TT_acc relative to the oracle; summary lines give each policy's\n"
      "mean and max regret and the speed-up of ours over Baselines 1 and 2 (geometric mean, max).\n"
      "Without --power-limits: N caps per workload, evenly spaced from its lowest to its highest power\n"
      "(the Zeus replay protocol). Policies: " +
      explore::policy_names() + ".";
  c.add_options = [](po::options_description& d) {
    add_problem_options(d, false);
    d.add_options()("profile", po::value<std::string>()->default_value("all"), "profile to sweep, or all")(
        "power-limits", po::value<units::PowerList>(), "caps [W]: range 2W:10W:0.5W or list 5W,7.5W")(
        "caps-per-workload", po::value<int>()->default_value(10),
        "without --power-limits: caps per workload over its power range [caps]")(
        "policies", po::value<std::string>()->default_value("all"), "comma-separated policies, or all")(
        "device-wide", po::value<std::string>()->default_value("all"),
        "Baseline 1/2 knob cap from: all (every profile swept, the paper's device-wide cap) | self")(
        "name", po::value<std::string>()->default_value("sweep"), "name of the sweep record in the store")(
        "csv", po::value<std::string>()->default_value(""),
        "also write the rows as CSV to this file, and the summary to <file stem>-summary.csv")(
        "bootstrap", po::value<int>()->default_value(0),
        "resamples of the target runs for 90% intervals of each policy's mean and max regret (0: none)")(
        "quiet,q", "print only the summary lines");
  };
  c.positional = {"store"};
  c.run = run_sweep;
  return c;
}

PACER_REGISTER_COMMAND(make);

}  // namespace
}  // namespace pacer::cli
