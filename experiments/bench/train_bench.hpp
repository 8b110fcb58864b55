#pragma once
// `pacer bench train`: training throughput (samples/s) per workload, batch size and thread count,
// with ratios against baselines measured in the same run; optionally the wall time of the default
// relation campaign under each way evaluations stop (and of another build's pacer), or each point
// measured quiet and beside one busy process under each OpenMP wait policy, each in a fresh process,
// or under each CPU kernel set (pinned or the CPU's own), each in a fresh process.
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

namespace pacer::experiments {

struct TrainBenchOptions {
  std::string device = "cpu";  // cpu | cuda | cuda:N
  std::vector<std::string> workloads;
  std::vector<int> batch_sizes;
  std::vector<int> threads;   // CPU threads; the first is the baseline of the ratios
  double min_time_s = 1;      // measuring time per point
  std::filesystem::path csv;  // the throughput table as CSV ("" : none)
  // Also time `pacer relation --pretrain` and the default relation campaign under each evaluation
  // stop, and with `baseline` (another build's pacer, "" : none) under its own default.
  bool campaign = false;
  std::filesystem::path baseline;
  // Instead of the throughput table: each point quiet and beside a busy process, in a fresh
  // process per OpenMP wait policy: "default" (libgomp's), "active", "passive" or a spin count.
  bool contention = false;
  std::vector<std::string> wait_policies;
  // Instead of the throughput table: each point in a fresh process under each CPU kernel set,
  // "avx2" (pacer's pin, base::cpu_kernel_pins) or "native"; the first is the ratios' baseline.
  std::vector<std::string> cpu_kernels;
};

// Runs the benchmark, printing its tables to `out` row by row as they are measured. Throws
// OptionError("wait-policies") for a policy it does not know, OptionError("cpu-kernels") for a kernel
// set it does not know, Error when a child run fails.
void run_train_bench(const TrainBenchOptions& o, std::ostream& out);

}  // namespace pacer::experiments
