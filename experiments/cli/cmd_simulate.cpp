// `pacer simulate`: a time-domain run to accuracy of one configuration, or of a policy under a
// constant or time-varying cap; writes the power trace for plotting.
#include <fmt/format.h>

#include <iostream>

#include "base/error.hpp"
#include "base/units.hpp"
#include "experiments/cli/cli.hpp"
#include "experiments/cli/explore_options.hpp"
#include "explore/problem.hpp"
#include "explore/simulate.hpp"
#include "sim/replay.hpp"
#include "sim/timeline.hpp"
#include "traces/csv.hpp"
#include "traces/store/outputs.hpp"
#include "traces/store/store.hpp"

namespace pacer::cli {
namespace {

int run_simulate(const po::variables_map& vm) {
  const auto spec = problem_spec(vm);
  const auto guard = parse_guard(vm);
  const std::string path = vm["store"].as<std::string>();
  // Every output before the run: the store and series it writes, the CSV file.
  traces::check_store_output(path, "store", traces::StoreCreation::must_exist);
  traces::check_record_name_option("runs", vm["run-name"].as<std::string>(), "run-name");
  const auto csv = vm["csv"].as<std::string>();
  if (!csv.empty()) traces::check_output_file(csv, "csv");
  const auto pb = explore::load_problem(traces::Store::open(path), spec);

  explore::SimulateRequest req;
  const std::string seed_text = vm["seed"].as<std::string>();
  if (seed_text != "mean") {
    const auto seed = units::to_integer(seed_text, 0, INT32_MAX);
    if (!seed) throw UsageError(fmt::format("--seed: '{}' is neither a seed index nor 'mean'", seed_text));
    req.seed = static_cast<int>(*seed);
  }
  const bool has_schedule = !vm["cap-schedule"].as<std::string>().empty();
  if (has_schedule && vm.count("power-limit")) throw UsageError("--cap-schedule and --power-limit exclude each other");
  if (has_schedule)
    req.caps = sim::read_cap_schedule(vm["cap-schedule"].as<std::string>());
  else if (vm.count("power-limit"))
    req.caps = {{0, vm["power-limit"].as<units::PowerCap>().w}};
  if (vm.count("knob")) {
    if (!vm.count("batch-size")) throw UsageError("--knob needs --batch-size");
    req.knob = explore::parse_knob(vm["knob"].as<std::string>(), pb->space->knob(), "--knob");
    req.batch_size = vm["batch-size"].as<int>();
  } else {
    req.policy = explore::parse_policy(vm["policy"].as<std::string>(), "policy");
    if (req.caps.empty())
      throw UsageError("a policy needs --power-limit or --cap-schedule (or give --knob and --batch-size)");
  }
  req.powertrain_batch = vm["powertrain-batch"].as<int>();
  req.guard = guard;
  req.run.sample_period_s = vm["sample-period"].as<units::Duration>().s;
  req.run.noise_std_w = vm["noise"].as<units::Power>().w;
  req.run.noise_seed = vm["noise-seed"].as<uint64_t>();
  req.run.compute_fraction = vm["compute-fraction"].as<double>();
  require_range(req.run.compute_fraction, 0.01, 1, "--compute-fraction", "");
  req.run.governor = !vm.count("no-governor");
  req.run.name = vm["run-name"].as<std::string>();
  const auto simulation = explore::simulate(*pb, req);
  std::cout << explore::format_simulation(*pb, req, simulation);
  const auto& r = simulation.result;

  // The CSV staged before the store is written and put in place after it (as sweep's).
  StagedOutput series_csv;
  if (!csv.empty()) series_csv = StagedOutput(csv, traces::to_csv(r.series));
  auto rw = traces::Store::open(path);
  rw.write(r.series);
  std::cerr << fmt::format("wrote runs/{} ({} samples) to {}\n", r.series.name, r.series.time_s.size(), path);
  series_csv.commit();
  return 0;
}

Command make() {
  Command c;
  c.name = "simulate";
  c.summary = "time-domain run to accuracy: power trace, cap governor, energy, time-varying caps";
  c.order = 60;
  c.usage_tail = "STORE";
  c.description =
      "Steps mini-batches with the profile (or model): the compute phase of each batch at peak power, the\n"
      "rest at the level that keeps the mean; the sensor samples that power with noise. The circuit-level\n"
      "governor lowers the knob whenever the power would exceed the cap. With --cap-schedule (CSV\n"
      "time_s,cap_w) the policy re-selects at every change and progress carries over as the fraction of\n"
      "samples-to-target done at each batch size. The power series goes to runs/NAME in the store.";
  c.add_options = [](po::options_description& d) {
    add_problem_options(d);
    add_guard_option(d);
    d.add_options()("knob", po::value<std::string>(), "fixed knob setting, e.g. 921.6MHz or 250W (with --batch-size)")(
        "batch-size,b", po::value<int>(), "fixed batch size [samples] (with --knob)")(
        "policy", po::value<std::string>()->default_value(std::string(explore::to_string(explore::kDefaultPolicy))),
        "policy choosing the configuration under the cap")(
        "power-limit,P", po::value<units::PowerCap>(), "constant cap P_max [W], or none (uncapped)")(
        "cap-schedule", po::value<std::string>()->default_value("")->value_name("FILE"),
        "CSV file time_s,cap_w of a time-varying cap")(
        "seed", po::value<std::string>()->default_value("mean"),
        "relation seed whose samples-to-target the run must reach, or mean")(
        "sample-period", duration_opt(0.1, "100ms"), "power sensor period [s]")("noise", power_opt(0.0, "0W"),
                                                                                "sensor noise, standard deviation [W]")(
        "noise-seed", po::value<uint64_t>()->default_value(1), "random seed of the sensor noise")(
        "compute-fraction", po::value<double>()->default_value(0.7),
        "share of a mini-batch at peak power when the data has a peak [1]")(
        "no-governor", "disable the cap governor (to show what the cap would see)")(
        "run-name", po::value<std::string>()->default_value("simulate"), "name of the power series in the store")(
        "csv", po::value<std::string>()->default_value("")->value_name("FILE"), "also write the power series as CSV (- for stdout)");
  };
  c.positional = {"store"};
  c.input_files = {"device", "cap-schedule"};
  c.output_files = {{"store", ""}, {"csv", ""}};
  c.run = run_simulate;
  return c;
}

PACER_REGISTER_COMMAND(make);

}  // namespace
}  // namespace pacer::cli
