// `pacer bench train`: training throughput per workload, batch size and thread count, and the wall
// time of a default relation campaign. Ratios are against baselines measured in the same run.
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "experiments/cli/cli.hpp"
#include "experiments/cli/options.hpp"
#include "experiments/relation.hpp"
#include "dnn/train.hpp"
#include "traces/cpu_threads.hpp"
#include "traces/error.hpp"

namespace pacer::cli {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double measure_samples_per_s(const models::StepRunnerOptions& o, double min_time_s) {
  models::StepRunner runner(o);
  for (int i = 0; i < 3; ++i) runner.step();  // warm-up: allocator, thread pool, first-touch
  int64_t steps = 0;
  const auto t0 = Clock::now();
  double elapsed = 0;
  while (elapsed < min_time_s || steps < 5) {
    runner.step();
    ++steps;
    elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  }
  return static_cast<double>(steps) * o.batch_size / elapsed;
}

struct Timed {
  int code = -1;
  double wall_s = 0;
  std::string err;
};

// Runs this executable with `args` (stdout discarded, stderr captured) and times it.
Timed run_self(const std::string& args, const fs::path& dir) {
  const fs::path err = dir / "stderr.txt";
  const std::string exe = fs::read_symlink("/proc/self/exe").string();
  const std::string cmd = fmt::format("'{}' {} >/dev/null 2>'{}' </dev/null", exe, args, err.string());
  const auto t0 = Clock::now();
  const int status = std::system(cmd.c_str());
  Timed t;
  t.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  t.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(err);
  std::stringstream ss;
  ss << in.rdbuf();
  t.err = ss.str();
  return t;
}

std::string line_with(const std::string& text, const std::string& needle) {
  const auto pos = text.find(needle);
  if (pos == std::string::npos) return "";
  const auto begin = text.rfind('\n', pos);
  const auto end = text.find('\n', pos);
  return text.substr(begin == std::string::npos ? 0 : begin + 1, end == std::string::npos ? std::string::npos : end - begin - 1);
}

int run_bench(const po::variables_map& vm) {
  const int kMaxBenchThreads = 4 * traces::max_cpu_threads();
  const auto workloads = split_list(vm["workloads"].as<std::string>());
  const auto batch_sizes = parse_int_list(vm["batch-sizes"].as<std::string>(), "--batch-sizes");
  const auto threads = parse_int_list(vm["threads"].as<std::string>(), "--threads");
  const double min_time_s = vm["min-time"].as<units::Duration>().s;
  require_range(min_time_s, 0.01, 600, "--min-time", "s");
  if (workloads.empty()) throw UsageError("--workloads: give at least one workload");
  for (const int t : threads)
    if (t > kMaxBenchThreads)
      throw UsageError(fmt::format("--threads: {} is above {} (at most 4x the CPUs, {} here, to show oversubscription)",
                                   t, kMaxBenchThreads, traces::max_cpu_threads()));

  std::cout << fmt::format("training throughput on {} ({}), {} per point\n", vm["device"].as<std::string>(),
                           "forward + backward + Adam step, synthetic data", units::format(min_time_s, units::Dimension::Time));
  std::cout << fmt::format("{:<28} {:>5} {:>8} {:>12} {:>14} {:>14}\n", "WORKLOAD", "b", "threads", "samples/s",
                           fmt::format("x vs {} thr", threads.front()), fmt::format("x vs b={}", batch_sizes.front()));
  for (const auto& w : workloads) {
    std::map<std::pair<int, int>, double> rate;  // (b, threads) -> samples/s
    for (const int b : batch_sizes)
      for (const int t : threads) {
        models::StepRunnerOptions o;
        o.workload = w;
        o.batch_size = b;
        o.threads = t;
        o.device = vm["device"].as<std::string>();
        const double r = measure_samples_per_s(o, min_time_s);
        rate[{b, t}] = r;
        std::cout << fmt::format("{:<28} {:>5} {:>8} {:>12.1f} {:>14.2f} {:>14.2f}\n", w, b, t, r,
                                 r / rate[{b, threads.front()}], r / rate[{batch_sizes.front(), t}])
                  << std::flush;
      }
  }

  if (vm["campaign"].as<bool>()) {
    const fs::path dir = fs::temp_directory_path() / fmt::format("pacer-bench-train-{}", ::getpid());
    fs::create_directories(dir);
    const std::string ckpt = (dir / "cnn-pretrain.pt").string();
    std::cout << fmt::format("\ndefault relation campaign (cnn, fmnist-proxy, b 4..64, seeds 0,1,2, {} threads):\n",
                             experiments::RelationRequest{}.train.threads);
    const Timed pre = run_self(fmt::format("relation --pretrain --checkpoint '{}'", ckpt), dir);
    if (pre.code != 0) throw Error("bench train: pre-training failed: " + line_with(pre.err, "error"));
    const Timed camp = run_self(
        fmt::format("relation --checkpoint '{}' --out '{}'", ckpt, (dir / "relations.h5").string()), dir);
    if (camp.code != 0) throw Error("bench train: relation campaign failed: " + camp.err.substr(0, 300));
    std::cout << fmt::format("  pre-training (pacer relation --pretrain): {:.1f} s\n", pre.wall_s);
    std::cout << fmt::format("  campaign (pacer relation, 15 runs):       {:.1f} s ({:.2f}x the pre-training)\n",
                             camp.wall_s, camp.wall_s / pre.wall_s);
    const std::string share = line_with(camp.err, "evaluation took");
    if (!share.empty()) std::cout << "  " << share.substr(share.find("] ") == std::string::npos ? 0 : share.find("] ") + 2) << "\n";
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
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
      "--pretrain` and the default `pacer relation` campaign and reports the evaluation share.";
  c.add_options = [](po::options_description& d) {
    d.add_options()
        ("workloads", po::value<std::string>()->default_value("cnn,resnet8-w0.25,mobilenetv2-w0.25,chartransformer-tiny"), "comma-separated workloads")
        ("batch-sizes", po::value<std::string>()->default_value("4,16,64"), "batch sizes: list or doubling range 4:64")
        ("threads", po::value<std::string>()->default_value("1,2"), "CPU thread counts to compare [each 1 .. 4x the CPUs]")
        ("min-time", duration_opt(1.0, "1s"), "measuring time per point [s]")
        ("device", po::value<std::string>()->default_value("cpu"), "cpu | cuda | cuda:N")
        ("campaign", po::bool_switch()->default_value(false), "also time the default relation campaign (minutes)");
  };
  c.run = run_bench;
  return c;
}

PACER_REGISTER_COMMAND(make);

}  // namespace
}  // namespace pacer::cli
