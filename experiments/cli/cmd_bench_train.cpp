// `pacer bench train`: training throughput per workload, batch size and thread count, and the wall
// time of a default relation campaign (experiments/bench/train_bench.hpp does the work; this file parses).
#include <fmt/format.h>
#include <unistd.h>

#include <iostream>
#include <string>

#include "base/cpu_threads.hpp"
#include "base/error.hpp"
#include "base/units.hpp"
#include "experiments/bench/adaptive_train_bench.hpp"
#include "experiments/bench/train_bench.hpp"
#include "experiments/cli/cli.hpp"
#include "experiments/cli/explore_options.hpp"
#include "experiments/cli/options.hpp"

namespace pacer::cli {
namespace {

experiments::TrainBenchOptions options_from(const po::variables_map& vm) {
  const int kMaxBenchThreads = 4 * base::max_cpu_threads();
  experiments::TrainBenchOptions sw;
  sw.device = vm["device"].as<std::string>();
  sw.workloads = split_list(vm["workloads"].as<std::string>());
  sw.batch_sizes = parse_int_list(vm["batch-sizes"].as<std::string>(), "--batch-sizes");
  sw.threads = parse_int_list(vm["threads"].as<std::string>(), "--threads");
  sw.min_time_s = vm["min-time"].as<units::Duration>().s;
  require_range(sw.min_time_s, 0.01, 600, "--min-time", "s");
  if (sw.workloads.empty()) throw UsageError("--workloads: give at least one workload");
  for (const int t : sw.threads)
    if (t > kMaxBenchThreads)
      throw UsageError(fmt::format("--threads: {} is above {} (at most 4x the CPUs, {} here, to show oversubscription)",
                                   t, kMaxBenchThreads, base::max_cpu_threads()));
  sw.contention = vm["contention"].as<bool>();
  if (sw.contention) {
    for (const char* other : {"campaign", "baseline", "csv", "cpu-kernels"})
      if (vm.count(other) && !vm[other].defaulted())
        throw UsageError(fmt::format("--{}: does not apply to --contention (which prints its own tables)", other));
    sw.wait_policies = split_list(vm["wait-policies"].as<std::string>());
    return sw;
  }
  if (!vm["wait-policies"].defaulted())  // as --baseline without --campaign: not dropped without a word
    throw UsageError("--wait-policies: applies to --contention only");
  if (vm.count("cpu-kernels")) {
    for (const char* other : {"campaign", "baseline", "csv"})
      if (vm.count(other) && !vm[other].defaulted())
        throw UsageError(fmt::format("--{}: does not apply to --cpu-kernels (which prints its own table)", other));
    sw.cpu_kernels = split_list(vm["cpu-kernels"].as<std::string>());
    if (sw.cpu_kernels.empty())
      throw UsageError(
          fmt::format("--cpu-kernels: give {}, {} or both", base::kPinnedCpuKernels, base::kNativeCpuKernels));
    return sw;
  }
  sw.campaign = vm["campaign"].as<bool>();
  if (vm.count("baseline")) {
    if (!sw.campaign) throw UsageError("--baseline: applies to --campaign only");
    sw.baseline = vm["baseline"].as<std::string>();
    if (::access(sw.baseline.c_str(), X_OK) != 0)
      throw UsageError(fmt::format("--baseline: {} is not an executable pacer program", sw.baseline.string()));
  }
  if (vm.count("csv")) sw.csv = vm["csv"].as<std::string>();
  return sw;
}

// --adaptive: the adaptive relation campaign against the full one (experiments/bench/adaptive_train_bench.hpp).
experiments::AdaptiveTrainBenchOptions adaptive_options_from(const po::variables_map& vm) {
  experiments::AdaptiveTrainBenchOptions a;
  for (const char* other : {"campaign", "baseline", "csv", "contention", "cpu-kernels", "wait-policies"})
    if (vm.count(other) && !vm[other].defaulted())
      throw UsageError(fmt::format("--{}: does not apply to --adaptive (which prints its own table)", other));
  if (!vm["workloads"].defaulted()) a.workloads = split_list(vm["workloads"].as<std::string>());
  if (!vm["batch-sizes"].defaulted())
    a.batch_sizes = parse_int_list(vm["batch-sizes"].as<std::string>(), "--batch-sizes");
  if (!vm["threads"].defaulted()) a.threads = parse_int_list(vm["threads"].as<std::string>(), "--threads").front();
  a.seeds = parse_seeds(vm["seeds"].as<std::string>(), "--seeds");
  a.max_train = vm["max-train"].as<int64_t>();
  a.budget = vm["budget"].as<int64_t>();
  a.eval_every = vm["eval-every"].as<int64_t>();
  a.eval_samples = vm["eval-samples"].as<int64_t>();
  a.image_target = parse_fraction(vm["image-target"].as<std::string>(), "--image-target");
  a.text_target = parse_fraction(vm["text-target"].as<std::string>(), "--text-target");
  a.adaptive.caps = vm["caps"].as<int>();
  a.adaptive.tolerance = parse_fraction(vm["tolerance"].as<std::string>(), "--tolerance");
  a.adaptive.extrapolation = parse_extrapolation_option(vm);
  if (vm.count("adaptive-budget"))
    a.budget_of_full = parse_fraction(vm["adaptive-budget"].as<std::string>(), "--adaptive-budget");
  a.out = vm["out"].as<std::string>();
  return a;
}

int run_bench(const po::variables_map& vm) {
  if (vm["adaptive"].as<bool>()) {
    experiments::run_adaptive_train_bench(adaptive_options_from(vm), std::cout);
    return 0;
  }
  experiments::run_train_bench(options_from(vm), std::cout);
  return 0;
}

Command make() {
  Command c;
  c.name = "bench train";
  c.summary = "benchmark training throughput (samples/s) and a default relation campaign";
  c.order = 95;
  c.description =
      "Runs full training steps (forward, backward, optimizer) on synthetic data of each workload's shape\n"
      "for every batch size and thread count, reporting samples/s and ratios against the first thread\n"
      "count and the first batch size measured in the same run. --campaign also times `pacer relation\n"
      "--pretrain` and the default `pacer relation` campaign under each --eval-stop (full, screened,\n"
      "hardest-first), with the evaluation share and whether the samples-to-target equal full evaluations'.\n"
      "--contention measures every point twice, quiet and beside one busy process that it starts and stops,\n"
      "under each OpenMP wait policy, each in a fresh process (the runtime reads the policy when it loads):\n"
      "  pacer bench train --contention --workloads cnn --batch-sizes 4,16,64 --min-time 2s\n"
      "--cpu-kernels measures every point in a fresh process under pacer's pinned CPU kernels and this CPU's own\n"
      "(docs/reliability.md, \"Results that do not depend on the machine\"):\n"
      "  pacer bench train --cpu-kernels " +
      std::string(base::kPinnedCpuKernels) + "," + base::kNativeCpuKernels +
      " --workloads cnn --batch-sizes 16,64 --threads 1 --min-time 2s";
  c.add_options = [](po::options_description& d) {
    d.add_options()("workloads",
                    po::value<std::string>()->default_value("cnn,resnet8-w0.25,mobilenetv2-w0.25,chartransformer-tiny"),
                    "comma-separated workloads")("batch-sizes", po::value<std::string>()->default_value("4,16,64"),
                                                 "batch sizes: list or doubling range 4:64")(
        "threads", po::value<std::string>()->default_value("1,2"),
        "CPU thread counts to compare [each 1 .. 4x the CPUs]")("min-time", duration_opt(1.0, "1s"),
                                                                "measuring time per point [s]")(
        "device", po::value<std::string>()->default_value("cpu"), "cpu | cuda | cuda:N")(
        "campaign", po::bool_switch()->default_value(false),
        "also time the default relation campaign, once per evaluation stop (minutes)")(
        "baseline", po::value<std::string>()->value_name("FILE"),
        "--campaign: also time the default campaign with this pacer program of another build (before/after in one "
        "run)")("csv", po::value<std::string>()->value_name("FILE"), "also write the throughput table as CSV")(
        "contention", po::bool_switch()->default_value(false),
        "measure each point quiet and beside one busy process, under each --wait-policies, each in a fresh process")(
        "wait-policies",
        po::value<std::string>()->default_value(fmt::format("default,passive,{}", base::kOpenMpSpinCount)),
        fmt::format("--contention: OpenMP wait policies: default (libgomp's: spin 300000, then sleep), active, "
                    "passive, or a spin count (pacer's own: {})",
                    base::kOpenMpSpinCount)
            .c_str())(
        "cpu-kernels", po::value<std::string>()->value_name("LIST"),
        fmt::format("instead: each point in a fresh process under each CPU kernel set, {} (pacer's pin: the same "
                    "records on every x86-64 CPU with AVX2) or {} (this CPU's own: {}={}); ratios against the first",
                    base::kPinnedCpuKernels, base::kNativeCpuKernels, base::kCpuKernelsVariable,
                    base::kNativeCpuKernels)
            .c_str());
    const experiments::AdaptiveTrainBenchOptions a;
    d.add_options()("adaptive", po::bool_switch()->default_value(false),
                    "instead: the adaptive relation campaign against the full one, both trained for real at equal "
                    "seeds per workload (default cnn and chartransformer-tiny, b 8,16,32,64, one thread): compute "
                    "used and the share of caps with the full campaign's choice (minutes)")(
        "seeds", po::value<std::string>()->default_value("0-2"), "--adaptive: seeds of both campaigns");
    add_count_option(d, "max-train", a.max_train, int64_t{0}, kMaxSamples, "--adaptive: training samples, 0: all");
    add_count_option(d, "budget", a.budget, int64_t{1}, kMaxSamples, "--adaptive: run budget [samples]");
    add_count_option(d, "eval-every", a.eval_every, int64_t{1}, kMaxSamples,
                     "--adaptive: evaluation cadence [samples]");
    add_count_option(d, "eval-samples", a.eval_samples, int64_t{0}, kMaxSamples,
                     "--adaptive: held-out samples, 0: all");
    add_count_option(d, "caps", a.adaptive.caps, 1, 1000, "--adaptive: caps over the board's power range");
    add_extrapolation_option(d);
    d.add_options()("image-target", po::value<std::string>()->default_value(fmt::format("{:g}", a.image_target)),
                    "--adaptive: the image task's target accuracy (from scratch on fmnist-proxy)")(
        "text-target", po::value<std::string>()->default_value(fmt::format("{:g}", a.text_target)),
        "--adaptive: the text task's target character accuracy (from scratch on austen-proxy)")(
        "tolerance", po::value<std::string>()->default_value(fmt::format("{:g}%", 100 * a.adaptive.tolerance)),
        "--adaptive: expected regret at which a cap is decided")(
        "adaptive-budget", po::value<std::string>(),
        "--adaptive: compute budget of the adaptive campaign, a share of the full campaign's compute (samples "
        "trained) measured in the same run (default: none)")(
        "out", po::value<std::string>()->default_value(a.out.string()),
        "--adaptive: folder of the stores (one per workload; a rerun resumes)");
  };
  c.input_files = {"baseline"};
  c.output_files = {{"csv", ""}};
  c.run = run_bench;
  return c;
}

PACER_REGISTER_COMMAND(make);

}  // namespace
}  // namespace pacer::cli
