#include "experiments/bench/train_bench.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "base/cpu_threads.hpp"
#include "base/error.hpp"
#include "base/process.hpp"
#include "base/units.hpp"
#include "dnn/train.hpp"
#include "experiments/campaigns/relation.hpp"
#include "experiments/cluster/shard.hpp"
#include "traces/csv.hpp"
#include "traces/store/store.hpp"

namespace pacer::experiments {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double measure_samples_per_s(const dnn::StepRunnerOptions& o, double min_time_s) {
  dnn::StepRunner runner(o);
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
// `env` changes the child's environment (the OpenMP wait policy).
Timed run_self(const std::vector<std::string>& args, const base::RunOptions& env = {}, const fs::path& program = {}) {
  base::RunOptions o = env;
  o.keep_stdout = false;
  o.merge_stderr = false;
  const auto t0 = Clock::now();
  const auto r = base::run_program(program.empty() ? self_executable().string() : program.string(), args, o);
  Timed t;
  t.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  t.code = r.exit_code;
  t.err = r.errors;
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

void run_throughput(const TrainBenchOptions& sw, std::ostream& out) {
  out << fmt::format("training throughput on {} ({}), {} per point\n", sw.device,
                     "forward + backward + Adam step, synthetic data",
                     units::format(sw.min_time_s, units::Dimension::Time));
  out << fmt::format("{} CPUs, {} free now; OpenMP wait policy: {}\n", base::cpus_available(), base::free_cpu_threads(),
                     wait_policy_now());
  out << fmt::format("{:<28} {:>5} {:>8} {:>12} {:>14} {:>14}\n", "WORKLOAD", "b", "threads", "samples/s",
                     fmt::format("x vs {} thr", sw.threads.front()), fmt::format("x vs b={}", sw.batch_sizes.front()));
  std::string csv = "workload,batch_size,threads,samples_per_s[1/s]\n";
  for (const auto& w : sw.workloads) {
    std::map<std::pair<int, int>, double> rate;  // (b, threads) -> samples/s
    for (const int b : sw.batch_sizes)
      for (const int t : sw.threads) {
        dnn::StepRunnerOptions o;
        o.workload = w;
        o.batch_size = b;
        o.threads = t;
        o.device = sw.device;
        const double r = measure_samples_per_s(o, sw.min_time_s);
        rate[{b, t}] = r;
        csv += fmt::format("{},{},{},{:.3f}\n", w, b, t, r);
        out << fmt::format("{:<28} {:>5} {:>8} {:>12.1f} {:>14.2f} {:>14.2f}\n", w, b, t, r,
                           r / rate[{b, sw.threads.front()}], r / rate[{sw.batch_sizes.front(), t}])
            << std::flush;
      }
  }
  if (!sw.csv.empty()) traces::write_file_atomic(sw.csv, csv);
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
void run_campaign_bench(const fs::path& baseline, std::ostream& out) {
  const ScratchDir scratch("pacer-bench-train");
  const fs::path& dir = scratch.path;
  const std::string ckpt = (dir / "cnn-pretrain.pt").string();
  const int threads = RelationRequest{}.train.threads;
  out << fmt::format("\ndefault relation campaign (cnn, fmnist-proxy, b 4..64, seeds 0,1,2, {} threads):\n", threads);
  const std::vector<std::string> pretrain = {"relation", "--pretrain"};  // the command lines it times
  std::vector<std::string> args = pretrain;
  args.insert(args.end(), {"--checkpoint", ckpt, "--threads", std::to_string(threads)});
  const Timed pre = run_self(args);
  if (pre.code != 0) throw Error("bench train: pre-training failed: " + line_with(pre.err, "error"));
  out << fmt::format("  pre-training (pacer {}): {:.1f} s\n", fmt::join(pretrain, " "), pre.wall_s);
  out << fmt::format("  {:<32} {:>8} {:>12} {:>16} {:>26}\n", "campaign (pacer relation ...)", "wall s", "x pretrain",
                     "evaluation share", "samples-to-target as full");
  std::vector<traces::RelationRun> reference;
  std::vector<std::string> modes = {dnn::TrainOptions::kFull, dnn::TrainOptions::kScreened,
                                    dnn::TrainOptions::kHardestFirst};
  if (!baseline.empty()) modes.push_back("");  // the baseline build's own default
  for (const std::string& mode : modes) {
    const fs::path store = dir / ((mode.empty() ? "baseline" : mode) + ".h5");
    const std::vector<std::string> stop = {"--eval-stop", mode};  // the command lines it times
    args = {"relation", "--checkpoint", ckpt, "--out", store.string(), "--threads", std::to_string(threads)};
    if (!mode.empty()) args.insert(args.end(), stop.begin(), stop.end());
    const Timed camp = run_self(args, {}, mode.empty() ? baseline : fs::path());
    if (camp.code != 0) throw Error("bench train: relation campaign failed: " + camp.err.substr(0, 300));
    const auto runs = traces::Store::open(store).read<traces::RelationSet>("fmnist-proxy").runs;
    if (reference.empty()) reference = runs;
    int same = 0;
    for (size_t i = 0; i < runs.size() && i < reference.size(); ++i)
      same += runs[i].batch_size == reference[i].batch_size && runs[i].seed == reference[i].seed &&
              runs[i].reached == reference[i].reached && runs[i].samples == reference[i].samples;
    const std::string label = mode.empty() ? "baseline build, its default" : fmt::format("{}", fmt::join(stop, " "));
    out << fmt::format("  {:<32} {:>8.1f} {:>12.2f} {:>15.1f}% {:>26}\n", label, camp.wall_s, camp.wall_s / pre.wall_s,
                       eval_share_pct(camp.err), fmt::format("{} of {} runs", same, reference.size()));
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

// The environment of a child that measures one point, with its label in the tables.
struct ChildEnv {
  std::string label;
  base::RunOptions env;  // its unset_env and set_env
};

// An OpenMP wait policy as the environment of a child: libgomp's default (300,000 spins, about
// 3 ms, then sleep), ACTIVE (spin), PASSIVE (sleep at once) or a spin count.
ChildEnv wait_policy(const std::string& name) {
  ChildEnv p;
  if (name == "active" || name == "passive") {
    std::string upper = name;
    for (auto& ch : upper) ch = static_cast<char>(std::toupper(ch));
    p.label = upper;
    p.env.unset_env = {"GOMP_SPINCOUNT"};
    p.env.set_env = {{"OMP_WAIT_POLICY", upper}};
    return p;
  }
  int spins = 300000;  // libgomp's default
  if (name != "default") {
    const auto given = units::to_integer(name, 1, int64_t{1} << 30);
    if (!given)
      throw OptionError("wait-policies",
                        fmt::format("'{}' is not default, active, passive or a spin count (1 .. 2^30)", name));
    spins = static_cast<int>(*given);
  }
  p.label = name == "default" ? "default" : fmt::format("spin {}", spins);
  p.env.unset_env = {"OMP_WAIT_POLICY"};
  p.env.set_env = {{"GOMP_SPINCOUNT", std::to_string(spins)}};
  return p;
}

// samples/s of one (workload, b, threads) point measured by a child under `policy`.
double child_rate(const TrainBenchOptions& sw, const std::string& w, int b, int t, const ChildEnv& policy,
                  const fs::path& dir) {
  const fs::path csv = dir / "point.csv";
  const std::vector<std::string> args = {// the command line of one point, in a fresh process
                                         "bench",         "train",
                                         "--workloads",   w,
                                         "--batch-sizes", std::to_string(b),
                                         "--threads",     std::to_string(t),
                                         "--min-time",    fmt::format("{}s", sw.min_time_s),
                                         "--device",      sw.device,
                                         "--csv",         csv.string()};
  const Timed r = run_self(args, policy.env);
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

void run_contention(const TrainBenchOptions& sw, std::ostream& out) {
  const ScratchDir scratch("pacer-bench-contention");
  const fs::path& dir = scratch.path;
  std::vector<ChildEnv> policies;
  for (const auto& n : sw.wait_policies) policies.push_back(wait_policy(n));
  const base::CpuLoad quiet = base::read_cpu_load();
  out << fmt::format(
      "contention: {} CPUs (load {:.2f}, {} running besides this at the start); each point measured quiet, then\n"
      "beside one busy process (a spinning loop started and stopped by pid), {} per point, in a fresh process\n",
      quiet.cpus, quiet.load_1min, quiet.running_others, units::format(sw.min_time_s, units::Dimension::Time));
  out << fmt::format("{:<20} {:>5} {:<14} {:>7} {:>10} {:>10} {:>10} {:>14}\n", "WORKLOAD", "b", "WAIT POLICY",
                     "threads", "quiet/s", "busy/s", "busy/quiet", fmt::format("busy / quiet {}t", sw.threads.front()));
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
            if (busy_default_threads == 0) busy_default_threads = base::free_cpu_threads();
          }
          if (t == sw.threads.front()) quiet_first = q;
          out << fmt::format("{:<20} {:>5} {:<14} {:>7} {:>10.1f} {:>10.1f} {:>10.3f} {:>14.3f}\n", w, b, p.label, t, q,
                             busy, busy / q, busy / quiet_first)
              << std::flush;
        }
      }
  out << fmt::format(
      "pacer trains with GOMP_SPINCOUNT={} (unless OMP_WAIT_POLICY or GOMP_SPINCOUNT is set) and, by default,\n"
      "the free CPUs: {} thread(s) at the start of this run, {} beside the busy process\n",
      base::kOpenMpSpinCount, base::free_cpu_threads(quiet), busy_default_threads);
}

// ----- CPU kernels: the pinned set against this CPU's own ------------------------------------------

// The CPU kernels of a child: pacer's pinned set (base::cpu_kernel_pins) or the libraries' own pick.
ChildEnv cpu_kernels_env(const std::string& name) {
  ChildEnv k;
  k.label = name;
  k.env.unset_env = base::cpu_kernel_variables();
  if (name == base::kNativeCpuKernels)
    k.env.set_env = {{base::kCpuKernelsVariable, base::kNativeCpuKernels}};
  else if (name != base::kPinnedCpuKernels)
    throw OptionError("cpu-kernels", fmt::format("'{}' is not {} (pacer's pin) or {} (this CPU's own)", name,
                                                 base::kPinnedCpuKernels, base::kNativeCpuKernels));
  return k;
}

void run_cpu_kernels(const TrainBenchOptions& sw, std::ostream& out) {
  std::vector<ChildEnv> kernels;
  for (const auto& n : sw.cpu_kernels) kernels.push_back(cpu_kernels_env(n));
  const ScratchDir scratch("pacer-bench-kernels");
  out << fmt::format(
      "CPU kernels: each point in a fresh process under each kernel set ({}: pacer's default, the same records on\n"
      "every x86-64 CPU with AVX2; {}: what the libraries pick on this CPU), {} per point\n",
      base::kPinnedCpuKernels, base::kNativeCpuKernels, units::format(sw.min_time_s, units::Dimension::Time));
  if (base::cpu_kernel_pins().empty()) out << "this CPU has no AVX2 and FMA: nothing is pinned, every set is its own\n";
  out << fmt::format("{:<28} {:>5} {:>8} {:<8} {:>12} {:>12}\n", "WORKLOAD", "b", "threads", "KERNELS", "samples/s",
                     fmt::format("x vs {}", kernels.front().label));
  for (const auto& w : sw.workloads)
    for (const int b : sw.batch_sizes)
      for (const int t : sw.threads) {
        double first = 0;
        for (const auto& k : kernels) {
          const double r = child_rate(sw, w, b, t, k, scratch.path);
          if (first == 0) first = r;
          out << fmt::format("{:<28} {:>5} {:>8} {:<8} {:>12.1f} {:>12.3f}\n", w, b, t, k.label, r, r / first)
              << std::flush;
        }
      }
}

}  // namespace

void run_train_bench(const TrainBenchOptions& o, std::ostream& out) {
  dnn::check_training_device(o.device, "device");  // before the table's heading
  if (o.contention) {
    run_contention(o, out);
    return;
  }
  if (!o.cpu_kernels.empty()) {
    run_cpu_kernels(o, out);
    return;
  }
  run_throughput(o, out);
  if (o.campaign) run_campaign_bench(o.baseline, out);
}

}  // namespace pacer::experiments
