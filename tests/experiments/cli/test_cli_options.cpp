// Options shared by the commands, which must mean the same in each: one --sensor-rate in Hz
// everywhere, a documented and enforced upper bound on every count, --threads defaulting to one
// thread whatever the load, and flag names added by the CLI to the library's option errors.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "base/cpu_threads.hpp"
#include "base/error.hpp"
#include "base/text.hpp"
#include "tests/support/run_pacer.hpp"
#include "tests/support/saved_env.hpp"
#include "tests/support/small_tmpfs.hpp"
#include "traces/provenance.hpp"
#include "traces/store/store.hpp"

namespace fs = std::filesystem;

namespace {

using Result = pacer::testing::RunResult;

class CliOptions : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("pacer-cli-options-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  Result run(const std::string& args) const { return pacer::testing::run_pacer(args, dir_); }
  Result run_env(const std::string& env, const std::string& args) const {
    return pacer::testing::run_pacer(args, dir_, env);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// How many lines `s` holds (an error is one).
long lines(const std::string& s) {
  return std::count(s.begin(), s.end(), '\n');
}

// A refusal of bad input: exit `code`, one line on stderr that holds `part`, nothing on stdout.
void expect_refusal(const Result& r, int code, const std::string& part, const std::string& what = "") {
  EXPECT_EQ(r.code, code) << what << "\n" << r.err;
  EXPECT_TRUE(has(r.err, part)) << what << "\n" << r.err;
  EXPECT_EQ(lines(r.err), 1) << what << "\n" << r.err;
  EXPECT_TRUE(r.out.empty()) << what << "\n" << r.out;
}

// --help wraps descriptions: compare with runs of white space as one space.
std::string squash(const std::string& s) {
  std::string out;
  for (char c : s)
    if (!std::isspace(static_cast<unsigned char>(c)))
      out += c;
    else if (out.empty() || out.back() != ' ')
      out += ' ';
  return out;
}

// `--sensor-rate 10` is 10 Hz in validate (it was 10 MHz and rejected) ...
TEST_F(CliOptions, SensorRateIsHertzInValidate) {
  auto r = run("validate --store " + path("none.h5") + " --power-limits 5W --sensor-rate 10");
  EXPECT_EQ(r.code, 1) << r.err;  // past the options: the store is missing
  EXPECT_FALSE(has(r.err, "sensor-rate")) << r.err;
  r = run("validate --store " + path("none.h5") + " --power-limits 5W --sensor-rate 20kHz");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "--sensor-rate: 20 kHz is outside")) << r.err;
  r = run("validate --store " + path("none.h5") + " --power-limits 5W --sensor-rate 5W");
  EXPECT_EQ(r.code, 2) << r.err;
}

// ... and the same option with the same unit in profile, where it was --sensor-rate-hz.
TEST_F(CliOptions, SensorRateIsTheSameOptionInProfile) {
  const std::string base =
      "profile --device emulated:jetson-nano --workload cnn --batch-sizes 8 --freqs 921.6 "
      "--measured-batches 2 --min-power-samples 2 --store ";
  auto r = run(base + path("a.h5") + " --sensor-rate 5");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_DOUBLE_EQ(pacer::traces::Store::open(path("a.h5"))
                       .read<pacer::traces::ProfileTable>("cnn@1x28x28")
                       .points.at(0)
                       .sensor_rate_hz,
                   5.0);
  r = run(base + path("b.h5") + " --sensor-rate 1kHz");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_DOUBLE_EQ(pacer::traces::Store::open(path("b.h5"))
                       .read<pacer::traces::ProfileTable>("cnn@1x28x28")
                       .points.at(0)
                       .sensor_rate_hz,
                   1000.0);
  EXPECT_EQ(run(base + path("c.h5") + " --sensor-rate-hz 5").code, 2);
  for (const char* cmd : {"profile", "validate"}) {
    r = run(std::string(cmd) + " --help");
    EXPECT_TRUE(has(r.out, "--sensor-rate arg (=10 Hz)")) << cmd << "\n" << r.out;
  }
}

// The profile table names the knob and formats its values by the knob's own unit.
TEST_F(CliOptions, ProfileTableFormatsTheKnobByItsKind) {
  const auto r =
      run("profile --device emulated:jetson-nano --workload cnn --batch-sizes 8 --freqs 921.6,76.8 "
          "--measured-batches 2 --min-power-samples 2 --store " +
          path("k.h5"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "      f      b")) << r.out;
  EXPECT_TRUE(has(r.out, "921.6 MHz")) << r.out;
  EXPECT_TRUE(has(r.out, "76.8 MHz")) << r.out;
}

TEST_F(CliOptions, CountsHaveDocumentedBoundsEnforcedAtParseTime) {
  struct Case {
    std::string args, flag;
  };
  const std::vector<Case> cases = {
      {"relation --threads 100000", "--threads"},
      {"relation --budget 0", "--budget"},
      {"relation --eval-every 0", "--eval-every"},
      {"relation --pretrain-batch 100000000", "--pretrain-batch"},
      {"relation --seeds 0-100000", "--seeds"},
      {"validate --store x.h5 --power-limits 5W --threads 100000", "--threads"},
      {"sweep --store x.h5 --caps-per-workload 1000000", "--caps-per-workload"},
      {"profile --device emulated:jetson-nano --workload cnn --measured-batches 0", "--measured-batches"},
      {"profile --device emulated:jetson-nano --workload cnn --warmup-batches 10000000", "--warmup-batches"},
      {"calibrate x.h5 --epochs 0", "--epochs"},
      {"bench train --threads 100000", "--threads"},
      {"bench train --adaptive --extrapolation curve", "--extrapolation"},
      {"bench train --cpu-kernels avx2,fastest", "--cpu-kernels"},
      {"bench train --cpu-kernels native --contention", "--cpu-kernels"},
  };
  for (const auto& c : cases) {
    const auto r = run(c.args);
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.err;
    EXPECT_TRUE(has(r.err, c.flag)) << c.args << "\n" << r.err;
  }
  const auto help = squash(run("relation --help").out);
  EXPECT_TRUE(has(help, "[1 .. 1000000000]")) << help;  // --budget, --eval-every
  EXPECT_TRUE(has(help, "[0 .. " + std::to_string(pacer::base::max_cpu_threads()) + "]")) << help;
  EXPECT_TRUE(has(squash(run("sweep --help").out), "1 .. 10000]"));
}

// `bench models --figures` draws the real boards' section (c): without it nothing would be drawn,
// so it is a usage error of one line, before any work (no CSV, no folder).
TEST_F(CliOptions, BenchModelsFiguresWithoutTheRealBoardsIsAUsageError) {
  const auto r = run("bench models --figures " + path("figs") + " --csv " + path("m.csv"));
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "--figures")) << r.err;
  EXPECT_TRUE(has(r.err, "--real")) << r.err;
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_FALSE(fs::exists(path("m.csv")));
  EXPECT_FALSE(fs::exists(path("figs")));
}

// `-P none` (issue 24): select, sweep and experiment take "none" where they take a cap, the paper's
// uncapped N/A column; a word that is neither a power nor "none" stays a usage error naming the flag.
TEST_F(CliOptions, ACapMayBeNone) {
  for (const std::string args : {"select " + path("none.h5") + " -P none", "select " + path("none.h5") + " -P 5W",
                                 "sweep --store " + path("none.h5") + " --power-limits 5W,none"}) {
    const auto r = run(args);
    EXPECT_EQ(r.code, 1) << args << "\n" << r.err;  // past the options: the store is missing
    EXPECT_FALSE(has(r.err, "power-limit")) << args << "\n" << r.err;
  }
  for (const auto& [args, flag] : std::vector<std::pair<std::string, std::string>>{
           {"select " + path("none.h5") + " -P nothing", "power-limit"},
           {"sweep --store " + path("none.h5") + " --power-limits 5W,no", "power-limits"}}) {
    const auto r = run(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.err;
    EXPECT_TRUE(has(r.err, flag)) << args << "\n" << r.err;
  }
  EXPECT_TRUE(has(squash(run("select --help").out), "none: no cap")) << run("select --help").out;
  EXPECT_TRUE(has(squash(run("report --help").out), "Figure 2")) << run("report --help").out;
  EXPECT_TRUE(has(squash(run("report --help").out), "Figure 5"));
}

// --threads of every command that trains defaults to one thread whatever the machine's load
// (base::kTrainingThreads): libtorch's numerics change with the thread count, so a default that
// followed the CPUs free now (the old one: 2 here on a quiet 2-CPU machine, 1 beside a busy process)
// gave another relation on a busy machine. The load is emulated (kLoadAvgVariable), as is the
// affinity set of one CPU.
TEST_F(CliOptions, ThreadsDefaultToOneWhateverTheLoad) {
  for (const char* loadavg : {"0.00 0.00 0.00 1/300 4242", "2.00 2.00 2.00 3/300 4242"}) {
    ::setenv(pacer::base::kLoadAvgVariable, loadavg, 1);
    for (const char* command : {"relation", "validate", "demo"}) {
      const auto help = run(std::string(command) + " --help");
      EXPECT_TRUE(has(help.out, "--threads arg (=1)")) << command << " at load " << loadavg << "\n" << help.out;
    }
  }
  ::unsetenv(pacer::base::kLoadAvgVariable);
  cpu_set_t saved, one;
  ASSERT_EQ(sched_getaffinity(0, sizeof(saved), &saved), 0);
  CPU_ZERO(&one);
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &saved)) {
      CPU_SET(c, &one);
      break;
    }
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  EXPECT_EQ(pacer::base::cpus_available(), 1);
  EXPECT_EQ(pacer::base::free_cpu_threads(), 1);
  const auto relation = run("relation --help");  // the child inherits the one-CPU affinity
  ASSERT_EQ(sched_setaffinity(0, sizeof(saved), &saved), 0);
  EXPECT_TRUE(has(relation.out, "--threads arg (=1)")) << relation.out;
}

// The thread default counts a neighbour that runs now, not only the 1-minute load average (which
// needs about a minute to see a process that just started): on 2 quiet CPUs beside one busy process
// it is 1 thread, where the load average alone gave 2 and the OpenMP team ran 24x slower.
TEST(CpuThreads, TheDefaultLeavesTheCpusThatAreBusyNow) {
  using pacer::base::CpuLoad;
  using pacer::base::free_cpu_threads;
  EXPECT_EQ(free_cpu_threads(CpuLoad{2, 2, 0.0, 0}), 2);
  EXPECT_EQ(free_cpu_threads(CpuLoad{2, 2, 0.1, 1}), 1);  // a neighbour started seconds ago
  EXPECT_EQ(free_cpu_threads(CpuLoad{2, 2, 1.2, 0}), 1);  // a neighbour between bursts
  EXPECT_EQ(free_cpu_threads(CpuLoad{2, 2, 7.0, 6}), 1);  // never below one
  EXPECT_EQ(free_cpu_threads(CpuLoad{16, 16, 2.4, 3}), 13);
  // A 4-CPU cpuset on a 64-CPU node at load 32: its share of the load is 2 busy CPUs, not 32.
  EXPECT_EQ(free_cpu_threads(CpuLoad{4, 64, 32.0, 30}), 2);
  const CpuLoad parsed = pacer::base::parse_loadavg("1.52 0.98 0.40 3/455 12345\n");
  EXPECT_DOUBLE_EQ(parsed.load_1min, 1.52);
  EXPECT_EQ(parsed.running_others, 2);  // the reading task is one of the 3
  EXPECT_THROW(pacer::base::parse_loadavg("1.52 0.98"), pacer::Error);
  EXPECT_THROW(pacer::base::parse_loadavg("-1 0 0 1/2 3"), pacer::Error);
  const CpuLoad now = pacer::base::read_cpu_load();
  EXPECT_EQ(now.cpus, pacer::base::cpus_available());
  EXPECT_GE(now.online_cpus, now.cpus);
  // An emulated load (kLoadAvgVariable, /proc/loadavg's form) is read instead of the machine's; a
  // malformed one is an error naming the variable, not a silent fallback.
  ::setenv(pacer::base::kLoadAvgVariable, "3.00 1.00 0.50 4/300 4242", 1);
  const CpuLoad emulated = pacer::base::read_cpu_load();
  EXPECT_DOUBLE_EQ(emulated.load_1min, 3.0);
  EXPECT_EQ(emulated.running_others, 3);
  EXPECT_EQ(emulated.cpus, pacer::base::cpus_available());
  ::setenv(pacer::base::kLoadAvgVariable, "busy", 1);
  try {
    pacer::base::read_cpu_load();
    ADD_FAILURE() << "a malformed emulated load was accepted";
  } catch (const pacer::Error& e) {
    EXPECT_NE(std::string(e.what()).find(pacer::base::kLoadAvgVariable), std::string::npos) << e.what();
  }
  ::unsetenv(pacer::base::kLoadAvgVariable);
}

// The OpenMP runtime's own view (OMP_DISPLAY_ENV=verbose, printed by libgomp when it loads) of a
// training command: a spin count of 1000, whether started through the `pacer` front or as
// pacer-train itself (which restarts once to set it); a user's own policy is kept.
TEST_F(CliOptions, TrainingThreadsSpinBrieflyUnlessTheUserChoseAWaitPolicy) {
  const std::string front = PACER_BINARY;
  const std::string full = (fs::path(front).parent_path() / "pacer-train").string();
  auto spin_count = [&](const std::string& env, const std::string& program) {
    const std::string err = path("omp.txt");
    const std::string cmd = "env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT OMP_DISPLAY_ENV=verbose " + env + " " + program +
                            " workloads >/dev/null 2>" + err + " </dev/null";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    const std::string text = pacer::testing::slurp(err);
    const auto at = text.rfind("GOMP_SPINCOUNT = '");  // the last start's view
    if (at == std::string::npos) return std::string("none");
    return text.substr(at + 18, text.find('\'', at + 18) - at - 18);
  };
  if (spin_count("", front) == "none") GTEST_SKIP() << "the OpenMP runtime is not libgomp (no OMP_DISPLAY_ENV)";
  EXPECT_EQ(spin_count("", front), "1000");  // the runtime's default spins 300000 times
  EXPECT_EQ(spin_count("", full), "1000");
  EXPECT_EQ(spin_count("OMP_WAIT_POLICY=ACTIVE", front), "30000000000");
  EXPECT_EQ(spin_count("OMP_WAIT_POLICY=PASSIVE", full), "0");
  EXPECT_EQ(spin_count("GOMP_SPINCOUNT=20000", full), "20000");
}

// OpenBLAS's own view (openblas_get_corename, through `doctor --torch-line`) of the kernels a
// training program runs: pinned to its AVX2 set on any x86-64 CPU with AVX2, whether started through
// the front or as pacer-train itself (which restarts once to pin them), so that a relation is the
// same record with or without AVX-512; a user's own choice is kept. Records name the kernels.
TEST_F(CliOptions, TrainingProgramsRunOneCpuKernelSetOnEveryAvx2Machine) {
  // Whatever the caller exported (PACER_CPU_KERNELS=native, its own OPENBLAS_CORETYPE), each case
  // below sets what it tests; restored at the end.
  const pacer::testing::SavedEnvironment saved(pacer::base::cpu_kernel_variables());
  const std::string front = PACER_BINARY;
  const std::string full = (fs::path(front).parent_path() / "pacer-train").string();
  auto blas = [&](const std::string& env, const std::string& program) {
    const std::string out = path("blas.txt");
    const std::string cmd = "env " + env + " " + program + " doctor --torch-line >" + out + " 2>&1 </dev/null";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd << ": " << pacer::testing::slurp(out);
    const std::string text = pacer::testing::slurp(out);
    const auto at = text.rfind(" blas=");
    return at == std::string::npos ? std::string("none") : std::string(pacer::base::trim(text.substr(at + 6)));
  };
  if (pacer::base::cpu_kernel_pins().empty()) GTEST_SKIP() << "this CPU has no AVX2 and FMA: nothing to pin";
  if (blas("", full) == "unknown") GTEST_SKIP() << "the BLAS pacer-train loads is not OpenBLAS";
  EXPECT_EQ(blas("", front), "Haswell");
  EXPECT_EQ(blas("", full), "Haswell");
  EXPECT_EQ(blas("OPENBLAS_CORETYPE=Prescott", full), "Prescott");  // SSE3: runs on every x86-64
  EXPECT_EQ(blas("OPENBLAS_CORETYPE=Prescott", front), "Prescott");
  // A value pacer does not know is one error line, not a silent pin.
  const auto refused = run_env("PACER_CPU_KERNELS=avx512", "workloads");
  EXPECT_EQ(refused.code, 2);
  EXPECT_TRUE(has(refused.err, "PACER_CPU_KERNELS=avx512: give avx2")) << refused.err;

  const std::string store = path("kernels.h5");
  ASSERT_EQ(run("profile --device emulated:jetson-nano --workload cnn --batch-sizes 8 --store " + store).code, 0);
  EXPECT_TRUE(has(run("export " + store + " device").out, "# cpu_kernels: avx2\n"));
  // The user's way out (the CPU's own kernels, faster on some CPUs): nothing pinned, and said so.
  const std::string native = path("native.h5");
  const std::string opt_out = fmt::format("{}={}", pacer::base::kCpuKernelsVariable, pacer::base::kNativeCpuKernels);
  const auto made =
      run_env(opt_out, "profile --device emulated:jetson-nano --workload cnn --batch-sizes 8 --store " + native);
  ASSERT_EQ(made.code, 0) << made.err;
  EXPECT_TRUE(has(run("export " + native + " device").out, "# cpu_kernels: native\n"));
}

// `pacer --version` names what this build's records will carry: the version CMake sets (not a copy
// of it) and the commit the sources were at when it was built.
TEST_F(CliOptions, VersionNamesTheBuildsVersionAndCommit) {
  const pacer::traces::Provenance p = pacer::traces::this_process();  // the same build's library
  const auto r = run("--version");
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out.rfind(fmt::format("pacer {} (commit {}, CPU kernels ", p.pacer_version, p.git_commit), 0), 0u)
      << r.out;
  EXPECT_NE(p.pacer_version, "unknown");
}

// A library option error carries the option's key; the CLI names the flag.
TEST_F(CliOptions, CliNamesTheFlagOfALibraryOptionError) {
  auto r = run("profile --device emulated: --workload cnn --store " + path("x.h5"));
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "pacer profile: --device: emulated:NAME needs a device name")) << r.err;
  r = run("emulate --device jetson-nano --root / --duration 1s");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "--root: / would put the emulated tree into the kernel's own /sys")) << r.err;
}

// One guard option, one range, [0, 0.5), in every command that chooses: the demo had its own,
// [0, 0.49], and refused 0.495, which validate took; select, sweep and simulate had none.
TEST_F(CliOptions, GuardHasOneRangeInValidateAndTheDemo) {
  pacer::traces::Store::open_or_create(path("empty.h5"));
  const std::vector<std::string> commands = {"validate --store " + path("empty.h5") + " --power-limits 5W",
                                             "demo --out " + path("demo") + " --device no-such-board",
                                             "select " + path("empty.h5") + " -P 5W", "sweep " + path("empty.h5"),
                                             "simulate " + path("empty.h5") + " -P 5W"};
  for (const auto& cmd : commands) {
    auto r = run(cmd + " --guard 0.5");
    EXPECT_EQ(r.code, 2) << cmd << "\n" << r.err;
    EXPECT_TRUE(has(r.err, "--guard: 0.5 is not a fraction in [0, 0.5)")) << cmd << "\n" << r.err;
    r = run(cmd + " --guard 0.495");
    EXPECT_NE(r.code, 0) << cmd << "\n" << r.err;  // past the guard: the store has no profile, no such board
    EXPECT_FALSE(has(r.err, "guard")) << cmd << "\n" << r.err;
    EXPECT_TRUE(has(r.err, "profile") || has(r.err, "no-such-board")) << cmd << "\n" << r.err;
  }
  for (const char* cmd : {"demo", "validate", "select", "sweep", "simulate"})
    EXPECT_TRUE(
        has(squash(run(std::string(cmd) + " --help").out), "peak-power error (95th percentile, kept within 3%..25%)"))
        << cmd;
}

// The guard 0 in any spelling is the guard 0 ("0.0" and "0.0%" were refused as "not a fraction in
// (0, 1]" while "0" was taken), and every guard out of range is refused with the one range,
// [0, 0.5) ("--guard 5" named (0, 1], a range the guard never had).
TEST_F(CliOptions, GuardZeroInAnySpellingIsTakenAndEveryRefusalNamesItsOneRange) {
  pacer::traces::Store::open_or_create(path("empty.h5"));
  const std::vector<std::string> commands = {"select " + path("empty.h5") + " -P 5W", "sweep " + path("empty.h5"),
                                             "simulate " + path("empty.h5") + " -P 5W"};
  for (const auto& cmd : commands) {
    for (const char* zero : {"0", "0.0", "0.0%", "0e0", "-0"}) {
      const auto r = run(cmd + " --guard " + zero);
      EXPECT_NE(r.code, 0) << cmd << " --guard " << zero;  // past the guard: the store has no profile
      EXPECT_FALSE(has(r.err, "guard")) << cmd << " --guard " << zero << "\n" << r.err;
      EXPECT_TRUE(has(r.err, "profile")) << cmd << " --guard " << zero << "\n" << r.err;
    }
    for (const auto& [given, shown] :
         std::vector<std::pair<std::string, std::string>>{{"5", "5"}, {"60%", "0.6"}, {"-1%", "-0.01"}}) {
      const auto r = run(cmd + " --guard " + given);
      EXPECT_EQ(r.code, 2) << cmd << " --guard " << given << "\n" << r.err;
      EXPECT_TRUE(has(r.err, "--guard: " + shown + " is not a fraction in [0, 0.5)"))
          << cmd << " --guard " << given << "\n"
          << r.err;
      EXPECT_EQ(lines(r.err), 1) << r.err;
    }
    for (const char* given : {"5WW", "nan", "1e999"}) {
      const auto r = run(cmd + " --guard " + given);
      EXPECT_EQ(r.code, 2) << r.err;
      EXPECT_TRUE(has(r.err, "--guard: '" + std::string(given) +
                                 "' is not auto, a fraction (0.05) or a percentage (5%): give one in [0, 0.5)"))
          << cmd << "\n"
          << r.err;
    }
  }
}

// A range refusal of a plain number has no stray spaces ("--eta: 2  is out of range [0, 1]  (see ...")
// and one of a quantity names its unit on both sides.
TEST_F(CliOptions, ARangeRefusalReadsAsOneSentence) {
  pacer::traces::Store::open_or_create(path("empty.h5"));
  auto r = run("select " + path("empty.h5") + " -P 5W --eta 2");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "pacer select: --eta: 2 is out of range [0, 1] (see pacer select --help)")) << r.err;
  r = run("emulate --device jetson-nano --root " + path("er") + " --time-scale 0");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "--time-scale: 0 is out of range [0.0001, 10000] (see")) << r.err;
  r = run("emulate --device jetson-nano --root " + path("er") + " --tick 20s");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "--tick: 20 s is out of range [0.0001, 10] s (see")) << r.err;
  EXPECT_FALSE(fs::exists(path("er")));
}

// Every command refuses an unknown policy name with the one line of explore::parse_policy (validate
// had its own, without "one of"), as a usage error (exit 2); a --powertrain-batch that is no batch
// size is a usage error too (it was exit 1); and --caps-per-workload with --power-limits, which
// ignored the count, is refused as contradictory.
TEST_F(CliOptions, PolicyNamesBatchAndCapCountsAreRefusedAsUsageErrorsWithOneWording) {
  ASSERT_EQ(run("import zeus --out " + path("z.h5")).code, 0);
  const std::string store = path("z.h5") + " --profile imagenet.resnet50.adadelta";
  const std::string one_of = "unknown policy 'fastest' (one of ours, ours-robust, baseline1";
  for (const auto& [cmd, option] : std::vector<std::pair<std::string, std::string>>{
           {"select " + store + " -P 200W --policy fastest", "--policy"},
           {"simulate " + store + " -P 200W --policy fastest", "--policy"},
           {"sweep " + store + " --policies ours,fastest", "--policies"},
           {"validate --store " + path("z.h5") + " --power-limits 200W --policies ours,fastest", "--policies"},
           {"report " + path("z.h5") + " -o " + path("rep") + " --policies fastest", "--policies"}}) {
    const auto r = run(cmd);
    expect_refusal(r, 2, option + ": " + one_of, cmd);
  }
  EXPECT_FALSE(fs::exists(path("rep")));
  auto r = run("select " + store + " -P 200W --powertrain-batch -1");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "pacer select: --powertrain-batch: -1 is not a batch size")) << r.err;
  EXPECT_EQ(r.out, "");
  const auto before = pacer::traces::Store::open(path("z.h5")).list("sweeps");
  r = run("sweep " + store + " --power-limits 100W,200W --caps-per-workload 5");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "--caps-per-workload and --power-limits exclude each other")) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(pacer::traces::Store::open(path("z.h5")).list("sweeps"), before) << "no sweep record written";
  EXPECT_EQ(run("sweep " + store + " --power-limits 100W,200W -q").code, 0);
  EXPECT_EQ(run("sweep " + store + " --caps-per-workload 5 -q").code, 0);
}

// `sweep --csv` and `simulate --csv` on a full disk: the store's record was written ("wrote
// sweeps/full"), then the CSV failed, exit 1 -- a record without the CSV asked for. Now the CSVs are
// staged before the store is written: the error comes first and the store is left as it was.
TEST_F(CliOptions, ACsvThatDoesNotFitLeavesTheStoreAsItWas) {
  const fs::path mnt = dir_ / "full";
  pacer::testing::SmallTmpfs small(mnt, "256k");
  if (!small.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here (needs root): disk-full test skipped";
  ASSERT_EQ(run("import zeus --out " + path("z.h5")).code, 0);
  const std::string store = path("z.h5") + " --profile imagenet.resnet50.adadelta";
  small.fill_leaving(0);
  const auto before = pacer::traces::Store::open(path("z.h5"));
  const auto sweeps = before.list("sweeps"), runs = before.list("runs");
  auto r = run("sweep " + store + " -q --name full --csv " + (mnt / "s.csv").string());
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_TRUE(has(r.err, (mnt / "s.csv").string() + ": not enough space to write it")) << r.err;
  EXPECT_FALSE(has(r.err, "wrote")) << r.err;
  r = run("simulate " + store + " -P 200W --run-name full --csv " + (mnt / "t.csv").string());
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_TRUE(has(r.err, (mnt / "t.csv").string() + ": not enough space to write it")) << r.err;
  EXPECT_FALSE(has(r.err, "wrote")) << r.err;
  const auto after = pacer::traces::Store::open(path("z.h5"));
  EXPECT_EQ(after.list("sweeps"), sweeps);
  EXPECT_EQ(after.list("runs"), runs);
  for (const auto& e : fs::directory_iterator(mnt)) EXPECT_EQ(e.path().filename(), "filler") << e.path();
  // With room, both are written, the store's record and the CSVs.
  r = run("sweep " + store + " -q --name roomy --csv " + path("s.csv"));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.err, "wrote sweeps/roomy")) << r.err;
  EXPECT_TRUE(fs::exists(path("s.csv")) && fs::exists(path("s-summary.csv")));
}

// A plain number option that does not read (a count written 1e3, a weight written 0.5x) said only
// "the argument ('1e3') for option '--bootstrap' is invalid": now it says what the option takes.
TEST_F(CliOptions, AMalformedPlainNumberSaysWhatTheOptionTakes) {
  pacer::traces::Store::open_or_create(path("empty.h5"));
  for (const std::string& cmd :
       {"sweep " + path("empty.h5") + " --bootstrap 1e3", "select " + path("empty.h5") + " -P 5W --eta 0.5x",
        "select " + path("empty.h5") + " -P 5W --powertrain-batch 99999999999999999999"}) {
    const auto r = run(cmd);
    EXPECT_EQ(r.code, 2) << cmd << "\n" << r.err;
    EXPECT_TRUE(has(r.err, "is invalid: give a plain number, a whole one for a count (1000, not 1e3 or 1k)"))
        << cmd << "\n"
        << r.err;
    EXPECT_EQ(lines(r.err), 1) << r.err;
  }
}

// `simulate --knob K --batch-size B` with a B the space lacks at K said so and stopped there: now
// it names the batch sizes there are.
TEST_F(CliOptions, AFixedBatchSizeNotInTheSpaceNamesTheOnesThereAre) {
  ASSERT_EQ(run("import zeus --out " + path("z.h5")).code, 0);
  const auto r = run("simulate " + path("z.h5") + " --profile imagenet.resnet50.adadelta --knob 100W --batch-size 7");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "the fixed batch size b=7 is not in the space at 100 W: give one of b=")) << r.err;
  EXPECT_TRUE(has(r.err, "give one of b=64,128,192,256,360 (see pacer simulate --help)")) << r.err;
  EXPECT_EQ(r.out, "");
}

// `profile --knob power_mode --freqs 921.6MHz` measured nothing and said "9.216e+08 is not a
// power_mode setting of jetson-nano (emulated) (4 CPU@1.479 GHz, ...)" after opening the device: the
// two options contradict each other, as --modes without --knob power_mode does.
TEST_F(CliOptions, FrequenciesWithThePowerModeKnobAreRefusedAsContradictory) {
  const auto r =
      run("profile --device emulated:jetson-nano --workload cnn --batch-sizes 8 --knob power_mode "
          "--freqs 921.6MHz --store " +
          path("p.h5"));
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "pacer profile: --freqs and --knob power_mode exclude each other")) << r.err;
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_FALSE(fs::exists(path("p.h5")));
}

// --jobs N beside --shard I/N is refused (before, --jobs 2 --shard 0/2 ran shard 0 alone, exit 0, as
// if --jobs had not been given), from the command line or a config file, before anything is measured;
// --jobs 1 (what the local shard processes and the Slurm tasks are given) goes with --shard.
TEST_F(CliOptions, JobsBesideAShardIsRefusedAsContradictory) {
  const std::string profile =
      "profile --device emulated:jetson-nano --workload cnn@1x12x12 --batch-sizes 8,16 --freqs 921.6MHz --store ";
  auto r = run(profile + path("p.h5") + " --jobs 2 --shard 0/2");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "pacer profile: --jobs 2 and --shard 0/2 exclude each other")) << r.err;
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_FALSE(fs::exists(path("p.h5")));
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_EQ(e.path().filename().string().find("p.shard-"), std::string::npos) << e.path();
  {
    std::ofstream ini(path("jobs.ini"));
    ini << "jobs = 2\n";
  }
  r = run(profile + path("q.h5") + " --config " + path("jobs.ini") + " --shard 1/2");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "--jobs 2 and --shard 1/2 exclude each other")) << r.err;
  r = run(profile + path("q.h5") + " --config " + path("jobs.ini") + " --shard 1/2 --jobs 1");
  EXPECT_EQ(r.code, 0) << r.err;
}

// `pacer workloads NAME` of an unknown name is one error line and nothing on stdout (the table's
// heading was printed before the name was looked up).
TEST_F(CliOptions, AnUnknownWorkloadIsOneErrorLineAndNoTable) {
  const auto r = run("workloads no-such-net");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(has(r.err, "unknown workload 'no-such-net'")) << r.err;
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_TRUE(has(run("workloads cnn").out, "WORKLOAD")) << "the table of a known workload";
}

// A calibration that cannot start is one error line naming its flag, and no model in the store:
// `calibrate --points 2` printed an info line and then an error that named no option, and an
// option out of its range (--prior-weight 2) was refused only after the info line. The demo's and
// experiment's --calibration-points took 3, which the analytical model then refused mid-pipeline.
TEST_F(CliOptions, ACalibrationThatCannotStartIsOneErrorLineNamingItsFlag) {
  ASSERT_EQ(run("import loudva --device jetson-nano -o " + path("nano.h5")).code, 0);
  struct Case {
    const char* args;
    int code;
    const char* part;
  };
  for (const Case& c : {Case{"--points 2", 1, "error: --points: the analytical model needs at least 4 points"},
                        Case{"--points 500", 1, "error: --points: 500 planned points are more than"},
                        Case{"--prior-weight 2", 2, "--prior-weight: 2 is not a prior weight in [0, 1]"},
                        Case{"--power-loss foo", 2, "--power-loss: 'foo' is not a loss of the power fit"}}) {
    const auto r = run(fmt::format("calibrate {} {}", path("nano.h5"), c.args));
    expect_refusal(r, c.code, c.part, c.args);
  }
  EXPECT_FALSE(has(run("export " + path("nano.h5")).out, "models/")) << "no model was written";
  const auto r = run("experiment --calibration-points 3 --out " + path("e"));
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "--calibration-points: 3 points is out of range [4, 10000]")) << r.err;
  EXPECT_FALSE(fs::exists(path("e")));
}

// `--help` names the options a command cannot run without (they were not marked; a missing one was
// found only by running the command), and none where there are none.
TEST_F(CliOptions, HelpNamesTheRequiredOptions) {
  EXPECT_TRUE(has(run("validate --help").out, "\nRequired: --store, --power-limits\n")) << run("validate --help").out;
  EXPECT_TRUE(has(run("select --help").out, "\nRequired: --store, --power-limit\n")) << run("select --help").out;
  EXPECT_TRUE(has(run("profile --help").out, "\nRequired: --device, --workload\n"));
  EXPECT_FALSE(has(run("demo --help").out, "Required:"));
}

// A store given both as the first argument and as --store read "option '--store' cannot be specified
// more than once", which the user had not done; validate took no positional store where select,
// sweep, simulate and budget do.
TEST_F(CliOptions, AStoreGivenBothWaysSaysSoAndValidateTakesItAsItsArgument) {
  for (const std::string& cmd :
       {std::string("select a.h5 --store a.h5 -P 5W"), std::string("merge m.h5 a.h5 --out m.h5")}) {
    const auto r = run(cmd);
    EXPECT_EQ(r.code, 2) << cmd;
    EXPECT_TRUE(has(r.err, "is also the command's first argument; give it one way")) << r.err;
    EXPECT_EQ(lines(r.err), 1) << r.err;
  }
  const auto r = run("validate " + path("none.h5") + " --power-limits 5W");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_TRUE(has(r.err, path("none.h5"))) << r.err;  // the argument is the store, not an unknown extra
  EXPECT_TRUE(has(run("validate --help").out, "Usage: pacer validate [options] STORE\n"));
}

// A relation campaign that cannot start -- an adaptive one without its device's profile, a named
// checkpoint that is not there -- refuses before it loads its data (it printed "loading fmnist-proxy"
// and the data set's size first): one line, nothing written.
TEST_F(CliOptions, ARelationCampaignThatCannotStartRefusesBeforeLoadingItsData) {
  std::ofstream(path("garbage.pt")) << "not a checkpoint\n";  // present, corrupt: was read after the data loaded
  for (const auto& [extra, message] : std::vector<std::pair<std::string, std::string>>{
           {"--checkpoint none --adaptive --profile-store " + path("none.h5"),
            "an adaptive campaign needs the device's profile"},
           {"--checkpoint none --adaptive", "an adaptive campaign needs the device's profile"},
           {"--checkpoint " + path("none.pt"), "none.pt not found"},
           {"--checkpoint " + path("garbage.pt"), "garbage.pt: cannot read checkpoint (missing or corrupt file)"}}) {
    const auto r = run("relation --out " + path("r.h5") + " --workload cnn " + extra);
    EXPECT_EQ(r.code, 1) << extra << "\n" << r.err;
    EXPECT_EQ(lines(r.err), 1) << extra << "\n" << r.err;
    EXPECT_TRUE(has(r.err, message)) << r.err;
    EXPECT_FALSE(fs::exists(path("r.h5")));
  }
}

// A config section that names no command ([selct] for [select]) was skipped without a word: its
// options were never read and the command ran on its defaults. A section of another command stays
// that command's (one spec configures several steps).
TEST_F(CliOptions, AConfigSectionThatNamesNoCommandIsAUsageError) {
  std::ofstream(path("typo.ini")) << "[selct]\npower-limit = 5W\n";
  auto r = run("select " + path("none.h5") + " --config " + path("typo.ini"));
  expect_refusal(r, 2, "section [selct] names no pacer command; did you mean [select]?");
  std::ofstream(path("steps.ini"))
      << "[import-zeus]\ngpu = v100\n[sweep]\nbootstrap = 10\n[select]\npower-limit = 5W\n";
  r = run("select " + path("none.h5") + " --config " + path("steps.ini"));
  EXPECT_EQ(r.code, 1) << r.err;  // past the config: the store is missing
  EXPECT_TRUE(has(r.err, path("none.h5"))) << r.err;
}

// `experiment --caps 3 --power-limits 5W` ran at 5 W and dropped the count without a word, where
// sweep refuses --caps-per-workload beside --power-limits.
TEST_F(CliOptions, ExperimentCapsBesidePowerLimitsIsRefusedAsContradictory) {
  const auto r = run("experiment --quick --caps 3 --power-limits 5W --out " + path("e"));
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "--caps and --power-limits exclude each other")) << r.err;
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_FALSE(fs::exists(path("e")));
  EXPECT_EQ(run("experiment --quick --power-limits 5W --out " + path("e") + " --list-jobs").code, 0);
}

// `export z.h5 profiles/` read as a damaged store ("cannot read 'profiles/' (damaged file?):
// H5Lexists failed"), `export z.h5 device` of a store without a device record (an import of
// traces) as one "not written by this pacer, or damaged".
TEST_F(CliOptions, ExportOfAnEmptyNameOrAnAbsentDeviceSaysSoNotDamaged) {
  ASSERT_EQ(run("import zeus --out " + path("z.h5")).code, 0);
  auto r = run("export " + path("z.h5") + " profiles/");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "record 'profiles/' names no record after 'profiles/'")) << r.err;
  EXPECT_FALSE(has(r.err, "damaged")) << r.err;
  EXPECT_EQ(lines(r.err), 1) << r.err;
  r = run("export " + path("z.h5") + " device -o " + path("d.csv"));
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_TRUE(has(r.err, "no device record in this store")) << r.err;
  EXPECT_FALSE(has(r.err, "damaged")) << r.err;
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_FALSE(fs::exists(path("d.csv")));
}

// `bench policy --gpus ''` (and bench adaptive's) ran on every GPU, as if --gpus were left out.
TEST_F(CliOptions, AnEmptyGpuListIsRefusedNotReadAsEveryGpu) {
  for (const std::string cmd : {"bench policy", "bench adaptive"}) {
    const auto r = run(cmd + " --gpus ''");
    expect_refusal(r, 2, "--gpus: name at least one GPU, or leave --gpus out for every one", cmd);
  }
}

// `bench train --adaptive --out FILE` printed "filesystem error: cannot create directories: Not a
// directory [FILE]".
TEST_F(CliOptions, AnAdaptiveTrainBenchIntoAFileSaysToNameAFolder) {
  std::ofstream(path("f.txt")) << "x\n";
  const auto r = run("bench train --adaptive --out " + path("f.txt"));
  expect_refusal(r, 1, "--out: " + path("f.txt") + " is a file, not a folder: name a folder");
}

// A report of a store with neither a sweep nor a validation wrote an index of nothing and exited 0.
TEST_F(CliOptions, AReportOfAStoreWithNothingToReportIsAnErrorAndNoFolder) {
  ASSERT_EQ(run("import zeus --out " + path("z.h5")).code, 0);
  const auto r = run("report " + path("z.h5") + " -o " + path("rep"));
  expect_refusal(r, 1, "nothing to report: no sweep and no validation");
  EXPECT_FALSE(fs::exists(path("rep")));
}

// `doctor --root nope` (a missing or mistyped root) printed a page of checks ending "not a Jetson",
// exit 1, as for a machine that has no board.
TEST_F(CliOptions, DoctorOfARootThatIsNotAFolderIsOneErrorLine) {
  std::ofstream(path("f.txt")) << "x\n";
  for (const auto& [root, why] : {std::pair<std::string, std::string>{path("nope"), "does not exist"},
                                  std::pair<std::string, std::string>{path("f.txt"), "is not a folder"}}) {
    const auto r = run("doctor --no-torch --root " + root);
    expect_refusal(r, 2, "--root: " + root + " " + why);
  }
  fs::create_directories(path("tree"));
  EXPECT_TRUE(
      has(run("doctor --no-torch --root " + path("tree") + " --store-dir " + path("tree")).out, "not a Jetson"));
}

// `bench models --sections b --zeus-dir nope` skipped every GPU and wrote a CSV of 0 rows, exit 0,
// where bench policy and bench adaptive refuse a folder without the traces.
TEST_F(CliOptions, AModelBenchOnAFolderWithoutZeusTracesIsAnErrorAndNoCsv) {
  const auto r = run("bench models --sections b --zeus-dir " + path("nope") + " --csv " + path("m.csv"));
  expect_refusal(r, 1, "--zeus-dir: " + path("nope") + ": no Zeus power traces");
  EXPECT_FALSE(fs::exists(path("m.csv")));
}

// `bench train --device tpu` printed the table's heading, then the error, exit 1; `relation --device
// tpu` loaded its data set first.
TEST_F(CliOptions, AnUnknownTrainingDeviceIsOneErrorLineBeforeAnyOutput) {
  for (const std::string& cmd :
       {std::string("bench train --device tpu --workloads cnn --batch-sizes 4 --threads 1"),
        "relation --device tpu --dataset fmnist-proxy --batch-sizes 8 --seeds 0 --checkpoint none --out " +
            path("r.h5"),
        std::string("bench train --device cuda:x --workloads cnn --batch-sizes 4 --threads 1")}) {
    const auto r = run(cmd);
    expect_refusal(r, 2, "--device: unknown training device", cmd);
  }
  EXPECT_FALSE(fs::exists(path("r.h5")));
}

// `bench train --wait-policies nope` without --contention ran the plain benchmark and dropped the
// option without a word (as --baseline without --campaign is refused).
TEST_F(CliOptions, WaitPoliciesWithoutContentionAreRefused) {
  for (const std::string& extra : {std::string(""), std::string(" --adaptive")}) {
    const auto r = run("bench train --wait-policies passive --workloads cnn --batch-sizes 4 --threads 1" + extra);
    expect_refusal(r, 2, "--wait-policies: ");
  }
}

}  // namespace
