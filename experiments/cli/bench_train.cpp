// `pacer bench train`: training throughput per workload, batch size and thread count, and the wall
// time of a default relation campaign. Ratios are against baselines measured in the same run.
#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <vector>

#include "dnn/train.hpp"
#include "experiments/cli/cli.hpp"
#include "experiments/cli/options.hpp"
#include "experiments/relation.hpp"
#include "experiments/shard.hpp"
#include "traces/cpu_threads.hpp"
#include "traces/error.hpp"
#include "traces/shell.hpp"
#include "traces/store.hpp"
#include "traces/units.hpp"

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

// Runs this executable (or `program`) with `args` (stdout discarded, stderr captured) and times it;
// `env` are `env` arguments in front (-u NAME, NAME=VALUE).
Timed run_self(const std::string& args, const fs::path& dir, const std::string& env = "",
               const fs::path& program = {}) {
  const fs::path err = dir / "stderr.txt";
  const std::string exe = program.empty() ? experiments::self_executable().string() : program.string();
  const std::string cmd = fmt::format("env {} {} {} >/dev/null 2>{} </dev/null", env, traces::shell_quote(exe), args,
                                      traces::shell_quote(err.string()));
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
  return text.substr(begin == std::string::npos ? 0 : begin + 1,
                     end == std::string::npos ? std::string::npos : end - begin - 1);
}

std::string wait_policy_now() {
  if (const char* p = std::getenv("OMP_WAIT_POLICY")) return p;
  if (const char* n = std::getenv("GOMP_SPINCOUNT")) return fmt::format("GOMP_SPINCOUNT={}", n);
  return "the runtime's default";
}

struct Sweep {
  std::string device;
  std::vector<std::string> workloads;
  std::vector<int> batch_sizes;
  std::vector<int> threads;
  double min_time_s = 1;
};

Sweep sweep_from(const po::variables_map& vm) {
  const int kMaxBenchThreads = 4 * traces::max_cpu_threads();
  Sweep sw;
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
                                   t, kMaxBenchThreads, traces::max_cpu_threads()));
  return sw;
}

void run_throughput(const Sweep& sw, const std::string& csv_path) {
  std::cout << fmt::format("training throughput on {} ({}), {} per point\n", sw.device,
                           "forward + backward + Adam step, synthetic data",
                           units::format(sw.min_time_s, units::Dimension::Time));
  std::cout << fmt::format("{} CPUs, {} free now; OpenMP wait policy: {}\n", traces::cpus_available(),
                           traces::free_cpu_threads(), wait_policy_now());
  std::cout << fmt::format("{:<28} {:>5} {:>8} {:>12} {:>14} {:>14}\n", "WORKLOAD", "b", "threads", "samples/s",
                           fmt::format("x vs {} thr", sw.threads.front()),
                           fmt::format("x vs b={}", sw.batch_sizes.front()));
  std::string csv = "workload,batch_size,threads,samples_per_s[1/s]\n";
  for (const auto& w : sw.workloads) {
    std::map<std::pair<int, int>, double> rate;  // (b, threads) -> samples/s
    for (const int b : sw.batch_sizes)
      for (const int t : sw.threads) {
        models::StepRunnerOptions o;
        o.workload = w;
        o.batch_size = b;
        o.threads = t;
        o.device = sw.device;
        const double r = measure_samples_per_s(o, sw.min_time_s);
        rate[{b, t}] = r;
        csv += fmt::format("{},{},{},{:.3f}\n", w, b, t, r);
        std::cout << fmt::format("{:<28} {:>5} {:>8} {:>12.1f} {:>14.2f} {:>14.2f}\n", w, b, t, r,
                                 r / rate[{b, sw.threads.front()}], r / rate[{sw.batch_sizes.front(), t}])
                  << std::flush;
      }
  }
  if (!csv_path.empty()) traces::write_file_atomic(csv_path, csv);
}

// The share of a campaign's training time spent evaluating, from its summary line.
double eval_share_pct(const std::string& err) {
  const std::string line = line_with(err, "evaluation took");
  const auto at = line.find("evaluation took ");
  if (at == std::string::npos) return NAN;
  const std::string rest = line.substr(at + 16);
  return units::to_number(rest.substr(0, rest.find_first_not_of("0123456789.eE+-"))).value_or(NAN);
}

// A scratch folder of a benchmark, removed with everything in it on every way out.
struct ScratchDir {
  fs::path path;
  explicit ScratchDir(const std::string& name)
      : path(fs::temp_directory_path() / fmt::format("{}-{}", name, ::getpid())) {
    fs::create_directories(path);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
};

// The default relation campaign, timed through this executable: once per way evaluations stop
// early, on the same threads, with the samples-to-target compared with full evaluations'; then,
// with a `baseline` program (another build's pacer), once more through it with its own defaults.
void run_campaign_bench(const fs::path& baseline) {
  const ScratchDir scratch("pacer-bench-train");
  const fs::path& dir = scratch.path;
  const std::string ckpt = (dir / "cnn-pretrain.pt").string();
  const int threads = experiments::RelationRequest{}.train.threads;
  std::cout << fmt::format("\ndefault relation campaign (cnn, fmnist-proxy, b 4..64, seeds 0,1,2, {} threads):\n",
                           threads);
  const Timed pre = run_self(
      fmt::format("relation --pretrain --checkpoint {} --threads {}", traces::shell_quote(ckpt), threads), dir);
  if (pre.code != 0) throw Error("bench train: pre-training failed: " + line_with(pre.err, "error"));
  std::cout << fmt::format("  pre-training (pacer relation --pretrain): {:.1f} s\n", pre.wall_s);
  std::cout << fmt::format("  {:<32} {:>8} {:>12} {:>16} {:>26}\n", "campaign (pacer relation ...)", "wall s",
                           "x pretrain", "evaluation share", "samples-to-target as full");
  std::vector<traces::RelationRun> reference;
  std::vector<std::string> modes = {models::TrainOptions::kFull, models::TrainOptions::kScreened,
                                    models::TrainOptions::kHardestFirst};
  if (!baseline.empty()) modes.push_back("");  // the baseline build's own default
  for (const std::string& mode : modes) {
    const fs::path store = dir / ((mode.empty() ? "baseline" : mode) + ".h5");
    const std::string args = fmt::format("relation --checkpoint {} --out {} --threads {}", traces::shell_quote(ckpt),
                                         traces::shell_quote(store.string()), threads);
    const Timed camp = mode.empty() ? run_self(args, dir, "", baseline) : run_self(args + " --eval-stop " + mode, dir);
    if (camp.code != 0) throw Error("bench train: relation campaign failed: " + camp.err.substr(0, 300));
    const auto runs = traces::Store::open(store).read_relation("fmnist-proxy").runs;
    if (reference.empty()) reference = runs;
    int same = 0;
    for (size_t i = 0; i < runs.size() && i < reference.size(); ++i)
      same += runs[i].batch_size == reference[i].batch_size && runs[i].seed == reference[i].seed &&
              runs[i].reached == reference[i].reached && runs[i].samples == reference[i].samples;
    const std::string label = mode.empty() ? "baseline build, its default" : "--eval-stop " + mode;
    std::cout << fmt::format("  {:<32} {:>8.1f} {:>12.2f} {:>15.1f}% {:>26}\n", label, camp.wall_s,
                             camp.wall_s / pre.wall_s, eval_share_pct(camp.err),
                             fmt::format("{} of {} runs", same, reference.size()));
  }
}

// ----- contention: throughput beside a busy process -------------------------------------------

// A CPU-bound process beside the benchmark: a forked copy that only spins, stopped by its pid.
class BusyProcess {
 public:
  BusyProcess() : pid_(::fork()) {
    if (pid_ < 0) throw Error("bench train: cannot fork the busy process");
    if (pid_ == 0) {
      volatile unsigned long spins = 0;
      for (;;) spins = spins + 1;
    }
  }
  ~BusyProcess() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  BusyProcess(const BusyProcess&) = delete;
  BusyProcess& operator=(const BusyProcess&) = delete;
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_;
};

// An OpenMP wait policy as the environment of a child: libgomp's default (300,000 spins, about
// 3 ms, then sleep), ACTIVE (spin), PASSIVE (sleep at once) or a spin count.
struct WaitPolicy {
  std::string label;
  std::string env;  // `env` arguments
};

WaitPolicy wait_policy(const std::string& name) {
  if (name == "default") return {"default", "-u OMP_WAIT_POLICY GOMP_SPINCOUNT=300000"};
  if (name == "active" || name == "passive") {
    std::string upper = name;
    for (auto& ch : upper) ch = static_cast<char>(std::toupper(ch));
    return {upper, "-u GOMP_SPINCOUNT OMP_WAIT_POLICY=" + upper};
  }
  const auto spins = parse_int_list(name, "--wait-policies");
  if (spins.size() != 1)
    throw UsageError(fmt::format("--wait-policies: '{}' is not default, active, passive or a spin count", name));
  return {fmt::format("spin {}", spins.front()), fmt::format("-u OMP_WAIT_POLICY GOMP_SPINCOUNT={}", spins.front())};
}

// samples/s of one (workload, b, threads) point measured by a child under `policy`.
double child_rate(const Sweep& sw, const std::string& w, int b, int t, const WaitPolicy& policy, const fs::path& dir) {
  const fs::path csv = dir / "point.csv";
  const Timed r = run_self(fmt::format("bench train --workloads {} --batch-sizes {} --threads {} --min-time {}s "
                                       "--device {} --csv {}",
                                       traces::shell_quote(w), b, t, sw.min_time_s, traces::shell_quote(sw.device),
                                       traces::shell_quote(csv.string())),
                           dir, policy.env);
  if (r.code != 0)
    throw Error(
        fmt::format("bench train: the point {} b={} {} threads failed: {}", w, b, t, line_with(r.err, "error")));
  std::ifstream in(csv);
  std::stringstream text;
  text << in.rdbuf();
  const auto table = traces::parse_csv(text.str(), csv.string());
  if (table.rows.size() != 1) throw Error("bench train: the child wrote no measurement");
  const std::string& cell = table.rows[0].at(static_cast<size_t>(table.column("samples_per_s[1/s]", csv.string())));
  const auto rate = units::to_number(cell);
  if (!rate) throw Error(fmt::format("bench train: the child wrote '{}' as its samples/s, not a number", cell));
  return *rate;
}

void run_contention(const Sweep& sw, const std::vector<std::string>& policy_names) {
  const ScratchDir scratch("pacer-bench-contention");
  const fs::path& dir = scratch.path;
  std::vector<WaitPolicy> policies;
  for (const auto& n : policy_names) policies.push_back(wait_policy(n));
  const traces::CpuLoad quiet = traces::read_cpu_load();
  std::cout << fmt::format(
      "contention: {} CPUs (load {:.2f}, {} running besides this at the start); each point measured quiet, then\n"
      "beside one busy process (a spinning loop started and stopped by pid), {} per point, in a fresh process\n",
      quiet.cpus, quiet.load_1min, quiet.running_others, units::format(sw.min_time_s, units::Dimension::Time));
  std::cout << fmt::format("{:<20} {:>5} {:<14} {:>7} {:>10} {:>10} {:>10} {:>14}\n", "WORKLOAD", "b", "WAIT POLICY",
                           "threads", "quiet/s", "busy/s", "busy/quiet",
                           fmt::format("busy / quiet {}t", sw.threads.front()));
  int busy_default_threads = 0;
  for (const auto& w : sw.workloads)
    for (const int b : sw.batch_sizes)
      for (const auto& p : policies) {
        double quiet_first = 0;
        for (const int t : sw.threads) {
          const double q = child_rate(sw, w, b, t, p, dir);
          double busy = 0;
          {
            BusyProcess neighbour;
            busy = child_rate(sw, w, b, t, p, dir);
            if (busy_default_threads == 0) busy_default_threads = traces::free_cpu_threads();
          }
          if (t == sw.threads.front()) quiet_first = q;
          std::cout << fmt::format("{:<20} {:>5} {:<14} {:>7} {:>10.1f} {:>10.1f} {:>10.3f} {:>14.3f}\n", w, b, p.label,
                                   t, q, busy, busy / q, busy / quiet_first)
                    << std::flush;
        }
      }
  std::cout << fmt::format(
      "pacer trains with GOMP_SPINCOUNT={} (unless OMP_WAIT_POLICY or GOMP_SPINCOUNT is set) and, by default,\n"
      "the free CPUs: {} thread(s) at the start of this run, {} beside the busy process\n",
      traces::kOpenMpSpinCount, traces::free_cpu_threads(quiet), busy_default_threads);
}

int run_bench(const po::variables_map& vm) {
  const Sweep sw = sweep_from(vm);
  if (vm["contention"].as<bool>()) {
    for (const char* other : {"campaign", "baseline", "csv"})
      if (vm.count(other) && !vm[other].defaulted())
        throw UsageError(fmt::format("--{}: does not apply to --contention (which prints its own tables)", other));
    run_contention(sw, split_list(vm["wait-policies"].as<std::string>()));
    return 0;
  }
  if (vm.count("baseline") && !vm["campaign"].as<bool>()) throw UsageError("--baseline: applies to --campaign only");
  if (vm.count("baseline") && ::access(vm["baseline"].as<std::string>().c_str(), X_OK) != 0)
    throw UsageError(
        fmt::format("--baseline: {} is not an executable pacer program", vm["baseline"].as<std::string>()));
  run_throughput(sw, vm.count("csv") ? vm["csv"].as<std::string>() : "");
  if (vm["campaign"].as<bool>())
    run_campaign_bench(vm.count("baseline") ? fs::path(vm["baseline"].as<std::string>()) : fs::path());
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
      "  pacer bench train --contention --workloads cnn --batch-sizes 4,16,64 --min-time 2s";
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
        po::value<std::string>()->default_value(fmt::format("default,passive,{}", traces::kOpenMpSpinCount)),
        fmt::format("--contention: OpenMP wait policies: default (libgomp's: spin 300000, then sleep), active, "
                    "passive, or a spin count (pacer's own: {})",
                    traces::kOpenMpSpinCount)
            .c_str());
  };
  c.run = run_bench;
  return c;
}

PACER_REGISTER_COMMAND(make);

}  // namespace
}  // namespace pacer::cli
