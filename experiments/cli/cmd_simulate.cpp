// `pacer simulate`: a time-domain run to accuracy of one configuration, or of a policy under a
// constant or time-varying cap; writes the power trace for plotting.
#include <fmt/format.h>

#include <iostream>

#include "experiments/cli/cli.hpp"
#include "experiments/cli/explore_options.hpp"
#include "explore/problem.hpp"
#include "sim/replay.hpp"
#include "sim/timeline.hpp"
#include "traces/csv.hpp"
#include "traces/error.hpp"
#include "traces/store.hpp"
#include "traces/units.hpp"

namespace pacer::cli {
namespace {

std::string secs(double s) { return std::isnan(s) ? "-" : units::format(s, units::Dimension::Time); }
std::string watts(double w) { return std::isnan(w) ? "none" : units::format(w, units::Dimension::Power); }

int run_simulate(const po::variables_map& vm) {
  const auto spec = problem_spec(vm);
  const std::string path = vm["store"].as<std::string>();
  const auto store = traces::Store::open(path);
  const auto pb = explore::load_problem(store, spec);
  const explore::Space& space = *pb->space;
  auto ctx = pb->context();
  ctx.powertrain_batch = vm["powertrain-batch"].as<int>();

  // What the run must reach: one seed of the target (or of the proxy without a target), or the mean.
  const traces::RelationSet& rel = pb->target_set ? *pb->target_set : pb->proxy_set;
  const std::string seed_text = vm["seed"].as<std::string>();
  sim::RunInput in;
  for (int b : space.batch_sizes()) {
    double n = traces::kNaN;
    if (seed_text == "mean") n = rel.mean_samples(b);
    else {
      int seed = 0;
      try {
        seed = std::stoi(seed_text);
      } catch (const std::exception&) {
        throw UsageError(fmt::format("--seed: '{}' is neither a seed index nor 'mean'", seed_text));
      }
      for (const auto& r : rel.runs)
        if (r.batch_size == b && r.seed == seed && r.reached) n = static_cast<double>(r.samples);
    }
    if (!std::isnan(n)) in.samples_to_target[b] = n;
  }
  if (in.samples_to_target.empty())
    throw Error(fmt::format("relation '{}' has no reached run for seed '{}' at any batch size of the space", rel.name,
                            seed_text));
  in.knob_settings = space.knob_settings();

  const bool has_knob = vm.count("knob") > 0;
  const bool has_schedule = !vm["cap-schedule"].as<std::string>().empty();
  if (has_schedule && vm.count("power-limit"))
    throw UsageError("--cap-schedule and --power-limit exclude each other");
  if (has_schedule) in.caps = sim::read_cap_schedule(vm["cap-schedule"].as<std::string>());
  else if (vm.count("power-limit")) in.caps = {{0, vm["power-limit"].as<units::Power>().w}};

  std::string what;
  if (has_knob) {
    if (!vm.count("batch-size")) throw UsageError("--knob needs --batch-size");
    const auto knob = explore::parse_knob(vm["knob"].as<std::string>(), space.knob(), "--knob");
    const size_t ki = explore::match_knob(space, knob, "--knob");
    const int b = vm["batch-size"].as<int>();
    const auto bi = space.batch_index(b);
    if (!bi || !space.has(*bi, ki)) throw UsageError(fmt::format("--batch-size: b={} is not in the space at that knob", b));
    const sim::Choice c{space.knob_settings()[ki], b};
    in.select = [c](double) { return std::optional<sim::Choice>(c); };
    what = fmt::format("fixed configuration {}, b={}", space.describe_knob(c.knob), b);
  } else {
    const auto policy = parse_policy(vm["policy"].as<std::string>(), "--policy");
    if (in.caps.empty()) throw UsageError("a policy needs --power-limit or --cap-schedule (or give --knob and --batch-size)");
    in.select = [ctx, policy](double cap) -> std::optional<sim::Choice> {
      const auto s = explore::select(policy, ctx, cap);
      if (!s.feasible) return std::nullopt;
      return sim::Choice{s.knob, s.batch_size};
    };
    what = fmt::format("policy {} re-selecting at every cap change", explore::to_string(policy));
  }

  sim::RunOptions o;
  o.sample_period_s = vm["sample-period"].as<units::Duration>().s;
  o.noise_std_w = vm["noise"].as<units::Power>().w;
  o.noise_seed = vm["noise-seed"].as<uint64_t>();
  o.compute_fraction = vm["compute-fraction"].as<double>();
  require_range(o.compute_fraction, 0.01, 1, "--compute-fraction", "");
  o.governor = !vm.count("no-governor");
  o.name = vm["run-name"].as<std::string>();
  const auto r = sim::run(*pb->model, in, o);

  std::cout << fmt::format("simulated {} on {} ({} power) to the target of relation {} ({} seed)\n", what,
                           space.source(), explore::to_string(space.basis()), rel.name, seed_text);
  std::cout << fmt::format("time to accuracy {} | energy {} (sampled at {}: {}) | {} mini-batches\n", secs(r.time_s),
                           units::format(r.energy_j, units::Dimension::Energy),
                           secs(r.series.time_s.size() > 1 ? r.series.time_s[1] - r.series.time_s[0] : o.sample_period_s),
                           units::format(r.energy_sampled_j, units::Dimension::Energy), r.batches);
  std::cout << fmt::format("power: max true {} | max measured {} (noise {}) | governor {} | throttled batches {} | "
                           "time above the cap {}\n",
                           watts(r.max_true_power_w), watts(r.max_measured_power_w), watts(o.noise_std_w),
                           o.governor ? "on" : "off", r.throttled_batches, secs(r.time_over_cap_s));
  std::cout << fmt::format("\n{:>10} {:>10} {:>10} {:>16} {:>7} {:>9} {:>10}\n", "start", "end", "cap", "requested",
                           "b", "batches", "progress");
  for (const auto& s : r.segments)
    std::cout << fmt::format("{:>10} {:>10} {:>10} {:>16} {:>7} {:>9} {:>9.1f}%\n", secs(s.start_s), secs(s.end_s),
                             watts(s.cap_w), space.describe_knob(s.requested.knob), s.requested.batch_size, s.batches,
                             100 * (s.progress_end - s.progress_start));
  const bool violated = r.time_over_cap_s > 0;
  if (!in.caps.empty())
    std::cout << (violated ? "CAP EXCEEDED: the true power was above the cap (the lowest setting does not fit)\n"
                           : "never above P_max on the (noise-free) power trace\n");

  auto rw = traces::Store::open(path);
  rw.write_series(r.series);
  std::cerr << fmt::format("wrote runs/{} ({} samples) to {}\n", r.series.name, r.series.time_s.size(), path);
  const auto csv = vm["csv"].as<std::string>();
  if (!csv.empty()) {
    traces::write_file_atomic(csv, traces::to_csv(r.series));
    std::cerr << fmt::format("wrote {}\n", csv);
  }
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
    d.add_options()("knob", po::value<std::string>(), "fixed knob setting, e.g. 921.6MHz or 250W (with --batch-size)")(
        "batch-size,b", po::value<int>(), "fixed batch size [samples] (with --knob)")(
        "policy", po::value<std::string>()->default_value(std::string(explore::to_string(explore::kDefaultPolicy))),
        "policy choosing the configuration under the cap")(
        "power-limit,P", po::value<units::Power>(), "constant cap P_max [W]")(
        "cap-schedule", po::value<std::string>()->default_value(""), "CSV file time_s,cap_w of a time-varying cap")(
        "seed", po::value<std::string>()->default_value("mean"),
        "relation seed whose samples-to-target the run must reach, or mean")(
        "sample-period", duration_opt(0.1, "100ms"), "power sensor period [s]")(
        "noise", power_opt(0.0, "0W"), "sensor noise, standard deviation [W]")(
        "noise-seed", po::value<uint64_t>()->default_value(1), "random seed of the sensor noise")(
        "compute-fraction", po::value<double>()->default_value(0.7),
        "share of a mini-batch at peak power when the data has a peak [1]")(
        "no-governor", "disable the cap governor (to show what the cap would see)")(
        "run-name", po::value<std::string>()->default_value("simulate"), "name of the power series in the store")(
        "csv", po::value<std::string>()->default_value(""), "also write the power series as CSV");
  };
  c.positional = {"store"};
  c.run = run_simulate;
  return c;
}

PACER_REGISTER_COMMAND(make);

}  // namespace
}  // namespace pacer::cli
