// `pacer demo` (the README's main job) and `pacer experiment` (the same pipeline, every setting open,
// usually from a spec file: experiments/specs/*.ini).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.hpp"
#include "experiments/campaigns/demo.hpp"
#include "experiments/campaigns/validate.hpp"
#include "experiments/cli/cli.hpp"
#include "experiments/cli/explore_options.hpp"
#include "experiments/cli/options.hpp"
#include "experiments/cli/shard_options.hpp"
#include "models/calibrate.hpp"

namespace pacer::cli {
namespace {

void common_options(po::options_description& d, const std::string& default_out) {
  d.add_options()("quick", po::bool_switch()->default_value(false),
                  "fewer batch sizes, seeds and caps (under 2 minutes)")(
      "out,o", po::value<std::string>()->default_value(default_out)->value_name("DIR"),
      "output folder (trace store, checkpoint, report)")(
      "device", po::value<std::string>()->default_value("jetson-nano"), "catalog device to emulate (`pacer devices`)");
  add_guard_option(d);
  d.add_options()("adaptive", po::bool_switch()->default_value(false),
                  "the proxy relation as an adaptive campaign (`pacer relation --adaptive`): only the batch sizes "
                  "that can still win at the experiment's caps on the profiled board are trained on; its decisions are "
                  "stored and printed");
  add_threads_option(d, experiments::DemoOptions{}.threads,
                     "CPU intra-op threads of the training; another count than the default changes the numerics", "");
  add_shard_options(d, experiments::experiment_stages());
}

// --list-jobs, --jobs and --shard first (docs/cluster.md), then the pipeline (whole, or a stage).
int run_pipeline(const po::variables_map& vm, experiments::DemoOptions o) {
  if (const auto done = run_shard_front(vm, experiments::experiment_jobs(o), &o.local_shards_s)) return *done;
  o.stage = stage_option(vm);
  o.shard = shard_option(vm);
  return experiments::run_demo(o);
}

experiments::DemoOptions common(const po::variables_map& vm) {
  experiments::DemoOptions o;
  o.quick = vm["quick"].as<bool>();
  o.out_dir = vm["out"].as<std::string>();
  o.device = vm["device"].as<std::string>();
  o.threads = vm["threads"].as<int>();
  o.adaptive = vm["adaptive"].as<bool>();
  o.guard = parse_guard(vm);
  return o;
}

int run_demo(const po::variables_map& vm) {
  return run_pipeline(vm, common(vm));
}

int run_experiment(const po::variables_map& vm) {
  auto o = common(vm);
  o.name = vm["name"].as<std::string>();
  o.workload = vm["workload"].as<std::string>();
  o.pretrain_dataset = vm["pretrain-dataset"].as<std::string>();
  o.proxy_dataset = vm["proxy-dataset"].as<std::string>();
  o.targets = split_list(vm["targets"].as<std::string>());
  if (vm.count("batch-sizes")) o.batch_sizes = parse_int_list(vm["batch-sizes"].as<std::string>(), "--batch-sizes");
  if (vm.count("seeds")) o.seeds = parse_seeds(vm["seeds"].as<std::string>(), "--seeds");
  if (vm.count("power-limits")) {
    if (!vm["caps"].defaulted())  // as sweep's --caps-per-workload: a count the explicit caps would drop
      throw UsageError(
          "--caps and --power-limits exclude each other: give the caps (--power-limits) or their number (--caps)");
    o.caps_w = vm["power-limits"].as<units::PowerCapList>().w;
  }
  if (vm.count("label")) o.labels = experiments::parse_labels(vm["label"].as<std::vector<std::string>>());
  o.caps = vm["caps"].as<int>();
  require_range(o.caps, 0, 50, "--caps", "caps");
  auto samples = [&](const char* key, int64_t lo) {
    const int64_t v = vm[key].as<int64_t>();
    if (v < lo) throw UsageError(fmt::format("--{}: {} is below {}", key, v, lo));
    return v;
  };
  o.eval_every = samples("eval-every", 0);
  o.eval_samples = samples("eval-samples", 0);
  o.max_train = samples("max-train", -1);
  o.budget = samples("budget", 0);
  o.pretrain_budget = samples("pretrain-budget", 0);
  if (vm.count("target")) o.target = parse_fraction(vm["target"].as<std::string>(), "--target");
  if (vm.count("pretrain-target"))
    o.pretrain_target = parse_fraction(vm["pretrain-target"].as<std::string>(), "--pretrain-target");
  o.calibration_points = vm["calibration-points"].as<int>();
  require_range(o.calibration_points, models::kMinAnalyticalPoints, 10000, "--calibration-points", "points");
  return run_pipeline(vm, o);
}

Command make_demo() {
  Command c;
  c.name = "demo";
  c.summary = "the whole pipeline on an emulated Jetson Nano: profile, calibrate, relations, validate, sweep, report";
  c.order = 5;
  c.description =
      "From nothing: pre-trains a small CNN on Fashion-MNIST classes 0-4, profiles it over the full (f, b)\n"
      "grid of the emulated board (virtual time), calibrates the analytical model on 8 points, measures the\n"
      "proxy relation (classes 5-9, half A), validates Ours, Baseline 1, Baseline 2 and the oracle with real\n"
      "training on the target (classes 5-9, half B) at several caps, sweeps every policy over the cap range,\n"
      "and writes tables and plots. Rerunning resumes from the trace store in --out. `pacer experiment`\n"
      "runs the same pipeline with every setting open.";
  c.add_options = [](po::options_description& d) { common_options(d, "pacer-out/demo"); };
  c.run = run_demo;
  return c;
}

Command make_experiment() {
  Command c;
  c.name = "experiment";
  c.summary = "the demo's pipeline with every setting open (specs: experiments/specs/*.ini)";
  c.order = 6;
  c.description = fmt::format(
      "pre-train -> profile (emulated --device, full grid, virtual time) -> calibrate -> proxy relation ->\n"
      "validate every policy and the oracle on each of --targets with real training -> sweep -> report.\n"
      "Unset values take the demo's settings (--quick or full). Usually driven by a spec file:\n"
      "  pacer experiment --config experiments/specs/vision-nano.ini\n"
      "Rerunning resumes from NAME.h5 in --out. On several processes or machines it runs in stages\n"
      "({}) of independent jobs: --jobs N, or --stage S --shard I/N and\n"
      "`pacer slurm submit --campaign experiment` (docs/cluster.md).",
      fmt::join(experiments::experiment_stages(), ", "));
  c.add_options = [](po::options_description& d) {
    common_options(d, "pacer-out/experiment");
    d.add_options()("name", po::value<std::string>()->default_value("experiment"), "store NAME.h5 and record names")(
        "workload", po::value<std::string>()->default_value("cnn"),
        "workload (`pacer workloads`), default input shape unless @shape")(
        "pretrain-dataset", po::value<std::string>()->default_value("fmnist-pretrain"),
        "pre-training data (`pacer workloads --datasets`)")(
        "proxy-dataset", po::value<std::string>()->default_value("fmnist-proxy"),
        "proxy data: its relation drives Ours")("targets", po::value<std::string>()->default_value("fmnist-target-a"),
                                                "comma-separated target datasets to validate on")(
        "batch-sizes", po::value<std::string>(),
        "batch sizes: list 8,16,32 or doubling range 8:128 (default: the demo's)")(
        "seeds", po::value<std::string>(), "seeds: list 0,1,2 or range 0-4 (default: the demo's)")(
        "caps", po::value<int>()->default_value(0),
        "caps spread over 30-75% of the profiled power range, 0: the demo's [caps]")(
        "power-limits", po::value<units::PowerCapList>(),
        "explicit caps instead: list 5W,6W,none or range 5W:8W:1W [W] (none: swept without a cap, not validated)")(
        "label", po::value<std::vector<std::string>>()->composing()->value_name("NAME=LABEL"),
        "readable name of a data set in the report's tables and figures (a spec's `label =` keys; repeat)")(
        "target", po::value<std::string>(), "held-out metric to reach, fraction or percent (default: each dataset's)")(
        "pretrain-target", po::value<std::string>(),
        "metric at which pre-training stops (default 0.90; 0.85 with --quick)")(
        "eval-every", po::value<int64_t>()->default_value(0), "evaluate every N training samples, 0: 2048 [samples]")(
        "eval-samples", po::value<int64_t>()->default_value(0), "held-out samples per evaluation, 0: 1000 [samples]")(
        "max-train", po::value<int64_t>()->default_value(-1),
        "training samples per dataset, 0: all, -1: the demo's [samples]")(
        "budget", po::value<int64_t>()->default_value(0),
        "censor a fine-tuning run after N samples, 0: 60000 [samples]")(
        "pretrain-budget", po::value<int64_t>()->default_value(0),
        "stop pre-training after N samples, 0: 120000 [samples]")(
        "calibration-points", po::value<int>()->default_value(8),
        "planner-chosen profile points the model is fitted on [points]");
  };
  c.run = run_experiment;
  return c;
}

PACER_REGISTER_COMMAND(make_demo);
PACER_REGISTER_COMMAND(make_experiment);

}  // namespace
}  // namespace pacer::cli
