// `pacer sweep`: every policy over a range of power caps, for one or all profiles of a store,
// scored by replay against the target relation; table, summary lines, CSV and the trace store.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <set>

#include "base/error.hpp"
#include "experiments/cli/cli.hpp"
#include "experiments/cli/explore_options.hpp"
#include "explore/choose.hpp"
#include "explore/problem.hpp"
#include "explore/sweep.hpp"
#include "traces/csv.hpp"
#include "traces/json_rows.hpp"
#include "traces/store/outputs.hpp"
#include "traces/store/store.hpp"

namespace pacer::cli {
namespace {

int run_sweep(const po::variables_map& vm) {
  auto spec = problem_spec(vm);
  const auto guard = parse_guard(vm);
  const std::string path = vm["store"].as<std::string>();
  // Every output before the sweep: the store and record it writes, the CSV files.
  traces::check_store_output(path, "store", traces::StoreCreation::must_exist);
  traces::check_record_name_option("sweeps", vm["name"].as<std::string>(), "name");
  const auto csv = vm["csv"].as<std::string>();
  const std::string summary_path = csv.empty() ? "" : traces::companion_csv(csv, "-summary").string();
  if (!csv.empty()) {
    traces::check_output_file(csv, "csv");
    if (!summary_path.empty()) traces::check_output_file(summary_path, "csv");
  }
  const auto store = traces::Store::open(path);

  if (spec.profile == "all") spec.profile.clear();
  const auto problems = explore::load_problems(store, spec);

  explore::SweepRequest request;
  request.name = vm["name"].as<std::string>();
  request.options.powertrain_batch = vm["powertrain-batch"].as<int>();
  request.guard = guard;
  const auto policy_text = vm["policies"].as<std::string>();
  if (policy_text != "all") {
    request.options.policies.clear();
    for (const auto& name : split_list(policy_text))
      request.options.policies.push_back(explore::parse_policy(name, "policies"));
    if (request.options.policies.empty())
      throw UsageError(fmt::format("--policies: give at least one policy, or all ({})", explore::policy_names()));
  }
  request.caps_per_workload = vm["caps-per-workload"].as<int>();
  if (request.caps_per_workload < 1) throw UsageError("--caps-per-workload: must be at least 1");
  if (vm.count("power-limits")) {
    if (!vm["caps-per-workload"].defaulted())
      throw UsageError(
          "--caps-per-workload and --power-limits exclude each other: give the caps (--power-limits) or their "
          "number per workload (--caps-per-workload)");
    request.caps_w = vm["power-limits"].as<units::PowerCapList>().w;
    request.refuse_unrunnable_caps = true;
  }
  std::vector<const explore::Problem*> views;
  for (const auto& p : problems) {
    if (!p->target) spdlog::warn("{}: no target relation: no oracle and no regret for this workload", p->workload);
    views.push_back(p.get());
  }
  const auto t0 = std::chrono::steady_clock::now();
  const traces::SweepResult result = explore::sweep_record(views, request);
  const double sweep_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const size_t policies = request.options.policies.size();

  const bool json = vm.count("json") > 0;
  if (json) std::cout << traces::rows_json(traces::kSweepRowColumns, result.rows, &result.knob);
  if (!json && !vm.count("quiet")) std::cout << explore::format_table(result.rows, result.knob);
  // With --json stdout holds the rows alone; the summary lines go to stderr.
  std::ostream& text = json ? std::cerr : std::cout;
  text << fmt::format("\n{} workload(s), {} caps, feasibility: {}; Baseline 1/2 cap: {}\n", problems.size(),
                      result.rows.size() / std::max<size_t>(1, policies), result.feasibility,
                      "device-wide over every profile of the device in the store");
  if (std::find(request.options.policies.begin(), request.options.policies.end(), explore::Policy::ZeusCost) !=
      request.options.policies.end())
    for (const auto& p : problems) text << fmt::format("{}: {}\n", p->workload, explore::describe_max_power(*p->index));
  const auto summary = explore::summarize(result.rows);
  text << explore::format_summary(summary);
  const int resamples = vm["bootstrap"].as<int>();
  const auto intervals = explore::bootstrap_regret(views, result.rows, resamples, 1,
                                                   explore::recorded_rule(result.guard, result.feasibility));
  text << explore::format_intervals(intervals, resamples);
  text << fmt::format("{} selections with replay in {:.1f} ms\n", result.rows.size(), sweep_ms);

  // The CSVs staged before the store is written and put in place after it: a full disk or a
  // refused record leaves neither a record without its CSVs nor CSVs without their record.
  StagedOutput rows_csv, summary_csv;
  if (!csv.empty()) {
    rows_csv = StagedOutput(csv, traces::to_csv(result));
    // "-", a device or a FIFO: no file is made beside it.
    if (!summary_path.empty()) summary_csv = StagedOutput(summary_path, explore::summary_csv(summary, intervals));
  }
  auto rw = traces::Store::open(path);
  rw.write(result, vm.count("replace") ? traces::Replace::always : traces::Replace::if_not_smaller);
  std::cerr << fmt::format("wrote sweeps/{} to {}\n", result.name, path);
  rows_csv.commit();
  summary_csv.commit();
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
      "(the Zeus replay protocol). Policies:\n" +
      explore::policy_help();
  c.add_options = [](po::options_description& d) {
    add_problem_options(d, false);
    add_guard_option(d);
    d.add_options()("profile", po::value<std::string>()->default_value(""),
                    "profile to sweep, or all (default: all, or none with --model)")(
        "power-limits", po::value<units::PowerCapList>(),
        "caps [W]: range 2W:10W:0.5W or list 5W,7.5W,none (none: no cap, the N/A column)")(
        "caps-per-workload", bounded(10, 1, kMaxCapsPerWorkload, "caps-per-workload"),
        fmt::format("without --power-limits: caps per workload over its power range [caps; 1 .. {}]",
                    kMaxCapsPerWorkload)
            .c_str())("policies", po::value<std::string>()->default_value("all"), "comma-separated policies, or all")(
        "name", po::value<std::string>()->default_value("sweep"), "name of the sweep record in the store")(
        "csv", po::value<std::string>()->default_value("")->value_name("FILE"),
        "also write the rows as CSV to this file (- for stdout), and the summary to <file stem>-summary.csv (not "
        "beside -, a device or a FIFO)")(
        "bootstrap", bounded(0, 0, 100000, "bootstrap"),
        "resamples of the target runs for 90% intervals of each policy's mean and max regret [resamples; 0 .. "
        "100000; 0: none]")("replace", "replace a sweep record of this name even when it has more rows")(
        "quiet,q", "print only the summary lines")(
        "json",
        "print the rows as JSON Lines on stdout, one object per (workload, cap, policy) with units in the "
        "keys as in the CSV (cap_w, predicted_time_s, ...); the summary lines go to stderr");
  };
  c.positional = {"store"};
  c.input_files = {"device"};
  c.output_files = {{"store", ""}, {"csv", "-summary"}};
  c.run = run_sweep;
  return c;
}

PACER_REGISTER_COMMAND(make);

}  // namespace
}  // namespace pacer::cli
