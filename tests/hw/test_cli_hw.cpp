// The hardware subcommands end to end through the pacer binary.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "hw/emulator/emulated_modes.hpp"
#include "hw/emulator/emulated_tree.hpp"
#include "hw/jetson/doctor.hpp"
#include "hw/jetson/restore_guard.hpp"
#include "tests/hw/helpers.hpp"
#include "traces/catalog/catalog.hpp"
#include "traces/store/store.hpp"

namespace pacer::hw {
namespace {
namespace fs = std::filesystem;

struct Result {
  int code;
  std::string out, err;
};

Result run(const std::string& args, const fs::path& dir) {
  const fs::path out = dir / "stdout.txt", err = dir / "stderr.txt";
  const std::string cmd = std::string(PACER_BINARY) + " " + args + " >" + out.string() + " 2>" + err.string();
  const int status = std::system(cmd.c_str());
  auto slurp = [](const fs::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
}

// `pacer emulate --device DEVICE --root ROOT` in the background, once its tree is served; its
// output goes to ROOT/../emulate.txt.
pid_t serve(const std::string& device, const fs::path& root, const std::string& time_scale = "0.05") {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const std::string out = (root.parent_path() / "emulate.txt").string();
    const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execl(PACER_BINARY, PACER_BINARY, "emulate", "--device", device.c_str(), "--root", root.c_str(), "--time-scale",
            time_scale.c_str(), "--duration", "300s", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  for (int i = 0; i < 3000 && !fs::exists(root / "pacer-emulator/pid"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return pid;
}

void stop(pid_t pid) {
  ::kill(pid, SIGTERM);
  ::waitpid(pid, nullptr, 0);
}

// `pacer ARGS` in the background (stdout and stderr to `log`).
pid_t spawn(const std::string& args, const fs::path& log) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    // A test run in the background inherits SIGINT ignored; the signal tests need the defaults.
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    ::execl("/bin/sh", "sh", "-c",
            ("exec " + std::string(PACER_BINARY) + " " + args + " >" + log.string() + " 2>&1").c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

TEST(CliHw, ProfileEmulatedNanoFillsAFullTable) {
  test::TempDir tmp;
  const auto store = tmp.path() / "c.h5";
  const auto r =
      run("profile --device emulated:jetson-nano --workload resnet8-w0.25 --batch-sizes 8:32 "
          "--measured-batches 5 --store " +
              store.string(),
          tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("[EMULATED]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("virtual time"), std::string::npos);
  EXPECT_NE(r.out.find("36-point grid"), std::string::npos) << r.out;
  const auto t = traces::Store::open(store).read<traces::ProfileTable>("resnet8-w0.25@1x28x28");
  EXPECT_EQ(t.points.size(), 36u);
  EXPECT_TRUE(t.emulated);
  EXPECT_TRUE(t.virtual_time);
  // A rerun resumes: nothing is measured twice.
  const auto again =
      run("profile --device emulated:jetson-nano --workload resnet8-w0.25 --batch-sizes 8:32 "
          "--measured-batches 5 --store " +
              store.string(),
          tmp.path());
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_NE(again.out.find("measured 0 points this run (36 resumed"), std::string::npos) << again.out;
}

TEST(CliHw, BadInputGivesOneLineAndTheRightExitCode) {
  test::TempDir tmp;
  auto r =
      run("profile --device emulated:jetson-nano --workload cnn --freqs 900 --store " + (tmp.path() / "x.h5").string(),
          tmp.path());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("900 MHz is not a gpu_freq setting"), std::string::npos) << r.err;
  // One line: the refusal comes before the "profiling ..." info line (it came after it), no store.
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_FALSE(std::filesystem::exists(tmp.path() / "x.h5"));
  r = run("profile --device emulated:jetson-nano --workload cnn --mode walk", tmp.path());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--power-limit"), std::string::npos) << r.err;
  r = run("profile --device jetson --sysfs-root " + tmp.path().string() + " --workload cnn", tmp.path());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("no GPU devfreq node"), std::string::npos) << r.err;
  r = run("restore --sysfs-root " + tmp.path().string() + " --state-file " + (tmp.path() / "none").string(),
          tmp.path());
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("nothing to restore"), std::string::npos);
}

// A batch that cannot fit the board's memory (the workload's activation memory per sample times b,
// plus its weights and optimizer state, against the catalog's 4 GiB of the Nano) is refused before
// anything is measured, naming the largest batch size that fits.
TEST(CliHw, ProfileRefusesABatchThatCannotFitTheBoardsMemory) {
  test::TempDir tmp;
  const auto store = tmp.path() / "big.h5";
  auto r =
      run("profile --device emulated:jetson-nano --workload cnn --batch-sizes 8,1073741824 --store " + store.string(),
          tmp.path());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--batch-sizes"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("1073741824 samples"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("4 GiB"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("at most 25"), std::string::npos) << "cnn@1x28x28 holds 169 kB per sample\n" << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_FALSE(fs::exists(store));
}

TEST(CliHw, ProfileThroughTheSysfsBackendAgainstAServedTree) {
  test::TempDir tmp;
  const fs::path root = tmp.path() / "board";
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const std::string out = (tmp.path() / "emulate.txt").string();
    const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    // Half speed: mini-batches of 0.21 and 0.43 s of wall time, so the order of their measured times
    // below holds however late a busy machine wakes the sleeping executor.
    ::execl(PACER_BINARY, PACER_BINARY, "emulate", "--device", "jetson-tx2", "--root", root.c_str(), "--time-scale",
            "0.5", "--duration", "300s", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  for (int i = 0; i < 3000 && !fs::exists(root / "pacer-emulator/pid"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(fs::exists(root / "pacer-emulator/pid"));
  const auto store = tmp.path() / "hil.h5";
  const auto r =
      run("profile --device jetson --sysfs-root " + root.string() + " --state-file " + (tmp.path() / "state").string() +
              " --workload resnet18 --batch-sizes 16 --freqs 624.75,1300.5 --warmup-batches 1 "
              "--measured-batches 3 --store " +
              store.string(),
          tmp.path());
  ::kill(pid, SIGTERM);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("[EMULATED]"), std::string::npos) << r.out;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const auto t = traces::Store::open(store).read<traces::ProfileTable>("resnet18@3x32x32");
  ASSERT_EQ(t.points.size(), 2u);
  EXPECT_TRUE(t.emulated);
  EXPECT_FALSE(t.virtual_time);
  // Higher clock: faster and hungrier, as the emulator says.
  EXPECT_LT(t.points[1].time_per_batch_mean_s, t.points[0].time_per_batch_mean_s);
  EXPECT_GT(t.points[1].power_mean_w, t.points[0].power_mean_w);
  // The TX2 tree exposes VDD_IN: the state after the run is the boot range.
  EXPECT_EQ(test::slurp(root / "sys/devices/17000000.gp10b/devfreq/17000000.gp10b/max_freq"), "1300500000");
  EXPECT_EQ(test::slurp(root / "sys/devices/17000000.gp10b/devfreq/17000000.gp10b/min_freq"), "114750000");
}

// Power modes end to end on an emulated AGX Orin: a MAXN frequency sweep and three of its four
// nvpmodel modes profiled, the caps model calibrated (predicting the fourth, unprofiled mode), and
// a selection over every mode of the board.
TEST(CliHw, PowerModesProfileCalibrateSelectOnAnEmulatedOrin) {
  test::TempDir tmp;
  const auto store = tmp.path() / "orin.h5";
  const std::string common =
      " --workload resnet8-w0.25 --batch-sizes 8:64 --measured-batches 3 --store " + store.string();
  auto r = run("profile --device emulated:jetson-agx-orin --profile-name sweep" + common, tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  r = run("profile --device emulated:jetson-agx-orin --knob power_mode --modes 0,1,3" + common, tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("4 CPU@1.114 GHz, GPU 408 MHz, EMC 2.133 GHz (3 TPC)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("GPU 612 MHz"), std::string::npos) << "mode 2 was not asked for";
  {  // The table's columns line up: every row's batch size ends where the heading's "b" does.
    const size_t heading = r.out.find("power_mode ");
    ASSERT_NE(heading, std::string::npos) << r.out;
    const size_t line_start = r.out.rfind('\n', heading) + 1;
    const size_t b_end = r.out.find(" b ", heading) + 2 - line_start;
    std::istringstream lines(r.out.substr(r.out.find('\n', heading) + 1));
    int rows = 0;
    for (std::string line; std::getline(lines, line) && line.find("GHz") != std::string::npos; ++rows) {
      ASSERT_GT(line.size(), b_end) << line;
      EXPECT_NE(line[b_end - 1], ' ') << "batch size not under its heading:\n" << r.out;
      EXPECT_EQ(line[b_end], ' ') << "batch size not under its heading:\n" << r.out;
    }
    EXPECT_EQ(rows, 12) << r.out;
  }
  const auto t = traces::Store::open(store).read<traces::ProfileTable>("resnet8-w0.25@1x28x28");
  EXPECT_EQ(t.knob.kind, traces::KnobKind::power_mode);
  EXPECT_EQ(t.points.size(), 3u * 4u);
  r = run("calibrate " + store.string() + " --name resnet8-w0.25@1x28x28 --frequency-profile sweep --predict",
          tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("mode model chosen by leave-one-mode-out"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("lomo"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(4 settings x 4 batch sizes)"), std::string::npos) << "every mode predicted: " << r.out;
  // The emulated board pins nothing it does not model: its spread is the emulated sensor's alone.
  EXPECT_NE(r.out.find("uncertainty: measurement spread"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no clock floated while measuring"), std::string::npos) << r.out;
  {
    auto rw = traces::Store::open(store);
    traces::RelationSet rel;
    rel.name = "resnet8-w0.25@1x28x28.proxy";
    rel.workload = "resnet8-w0.25@1x28x28";
    rel.metric = "accuracy";
    rel.target = 0.9;
    for (int b : {8, 16, 32, 64})
      for (int seed : {0, 1}) rel.runs.push_back({b, seed, true, 20000 + 300 * b + 500 * seed, 1000000});
    rw.write(rel);
  }
  r = run("select " + store.string() + " --model resnet8-w0.25@1x28x28@jetson-agx-orin:modes -P 20W", tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("(4 knob settings x 4 batch sizes)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("choice (pacer"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("CPU@"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("model uncertainty (1 sigma, lomo error)"), std::string::npos) << r.out;
}

TEST(CliHw, PowerModeBadInput) {
  test::TempDir tmp;
  const std::string store = " --store " + (tmp.path() / "x.h5").string();
  auto r =
      run("profile --device emulated:jetson-agx-orin --knob power_mode --modes 7 --workload cnn" + store, tmp.path());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("has no nvpmodel mode 7"), std::string::npos) << r.err;
  r = run("profile --device emulated:jetson-orin-nano --knob power_mode --workload cnn" + store, tmp.path());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("cpu_cores"), std::string::npos) << "an incomplete mode names what to add: " << r.err;
  r = run("profile --device emulated:jetson-nano --power-source tegrastats --workload cnn" + store, tmp.path());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--power-source"), std::string::npos) << r.err;
  r = run("profile --device emulated:jetson-nano --modes 0 --workload cnn" + store, tmp.path());
  EXPECT_EQ(r.code, 2);
  EXPECT_FALSE(fs::exists(tmp.path() / "x.h5")) << "no partial store";
}

// `pacer restore` puts back a power mode a killed run left changed (the stand-in nvpmodel of an
// emulated tree plays the board's).
TEST(CliHw, RestorePutsBackAPowerMode) {
  test::TempDir tmp;
  const auto spec = traces::find_device("jetson-agx-orin");
  const fs::path root = tmp.path() / "board";
  write_fake_tree(root, spec);
  const fs::path nvpmodel = write_fake_nvpmodel(root, spec);
  write_state_file(tmp.path() / "state",
                   {999999, "killed run", {}, fs::weakly_canonical(root), ModeRestore{nvpmodel, 0, "MAXN"}});
  ASSERT_EQ(std::system((nvpmodel.string() + " -m 1 >/dev/null").c_str()), 0);
  const auto r =
      run("restore --sysfs-root " + root.string() + " --state-file " + (tmp.path() / "state").string(), tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("power mode 0 MAXN"), std::string::npos) << r.out;
  EXPECT_EQ(test::slurp(root / "pacer-emulator/nvpmodel_mode"), "0");
  EXPECT_EQ(test::slurp(root / "sys/devices/system/cpu/cpu11/online"), "1");
  EXPECT_FALSE(fs::exists(tmp.path() / "state"));
}

// A power-mode profile on a served AGX Orin tree stopped by SIGTERM or SIGINT: the process's
// handler runs the tree's nvpmodel (a stand-in script, as a real one ships only with L4T) to put
// back the mode it found, then dies of the signal; nothing is left to restore.
TEST(CliHw, PowerModeProfileStoppedBySignalPutsBackTheBootMode) {
  test::TempDir tmp;
  const fs::path root = tmp.path() / "board";
  const pid_t emulator = serve("jetson-agx-orin", root);
  struct StopEmulator {  // on every way out of the test, failed assertions included
    pid_t pid;
    ~StopEmulator() { stop(pid); }
  } stop_emulator{emulator};
  const fs::path mode = root / "pacer-emulator/nvpmodel_mode", state = tmp.path() / "state";
  // The emulator writes its pid file first, then its nvpmodel and the mode file.
  for (int i = 0; i < 3000 && !(fs::exists(root / "pacer-emulator/nvpmodel") && fs::exists(mode)); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(fs::exists(root / "pacer-emulator/nvpmodel")) << test::slurp(tmp.path() / "emulate.txt");
  ASSERT_EQ(test::slurp(mode), "0");
  for (int sig : {SIGTERM, SIGINT}) {
    const pid_t pid =
        spawn("profile --device jetson --sysfs-root " + root.string() + " --state-file " + state.string() +
                  " --knob power_mode --modes 1,3 --nvpmodel " + (root / "pacer-emulator/nvpmodel").string() +
                  " --workload resnet8-w0.25 --batch-sizes 8,16,32,64 --measured-batches 20 --store " +
                  (tmp.path() / ("p" + std::to_string(sig) + ".h5")).string(),
              tmp.path() / "profile.txt");
    for (int i = 0; i < 6000 && test::slurp(mode) != "1"; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ASSERT_EQ(test::slurp(mode), "1") << test::slurp(tmp.path() / "profile.txt");
    EXPECT_EQ(test::slurp(root / "sys/devices/system/cpu/cpu4/online"), "0") << "MODE_15W runs 4 cores";
    ASSERT_TRUE(fs::exists(state)) << "the boot mode is saved before the first change";
    ::kill(pid, sig);
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig) << "signal " << sig << ": " << status;
    EXPECT_EQ(test::slurp(mode), "0") << "signal " << sig;
    EXPECT_EQ(test::slurp(root / "sys/devices/system/cpu/cpu11/online"), "1") << "signal " << sig;
    EXPECT_FALSE(fs::exists(state)) << "signal " << sig;
  }
}

// Imported real Nano modes (LoudVA: MAXN and 5W, clocks free within each mode) with the MAXN
// GPU-frequency sweep: calibrate the modes model and select over the board's modes.
TEST(CliHw, PowerModesImportCalibrateSelectOnTheRealNanoModes) {
  const fs::path loudva = fs::path(PACER_SOURCE_DIR) / "data/jetson/loudva";
  ASSERT_TRUE(fs::exists(loudva / "nano-modes")) << "no LoudVA data under " << loudva;
  test::TempDir tmp;
  const std::string store = (tmp.path() / "nano.h5").string();
  auto r = run("import loudva --dir " + (loudva / "nano").string() + " --device jetson-nano -o " + store, tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  r = run("import loudva --dir " + (loudva / "nano-modes").string() + " --device jetson-nano -o " + store, tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("profile inceptionv3-triton.modes"), std::string::npos) << r.out;
  r = run("calibrate " + store + " --name inceptionv3-triton.modes --frequency-profile inceptionv3-triton --predict",
          tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("mode model chosen by leave-one-mode-out"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("clocks that floated while measuring: gpu, cpu, emc (each under the mode's cap)"),
            std::string::npos)
      << r.out;
  const auto rec = traces::Store::open(store).read<traces::ModelRecord>("inceptionv3-triton@jetson-nano:modes");
  // Measured on 2026-11-25 (docs/models.md, "Power modes"): each mode predicted from the sweep and
  // the other mode within about 5%.
  EXPECT_LE(rec.metrics.at("time_mape_lomo"), 6.0);
  EXPECT_LE(rec.metrics.at("power_mean_mape_lomo"), 6.0);
  EXPECT_EQ(rec.settings.at("uncertainty_basis"), "lomo");
  EXPECT_GT(rec.metrics.at("power_mean_noise_pct"), 0);
  // Under 5 W only the 5W mode fits (the model puts MAXN at 5.9 W and more at every b); under 10 W MAXN is faster.
  r = run("select " + store + " --model inceptionv3-triton@jetson-nano:modes -P 5W", tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("(2 knob settings x 13 batch sizes)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("choice (pacer, front): 2 CPU@918 MHz, GPU 614.4 MHz"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("model uncertainty (1 sigma, lomo error)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("clocks that floated: gpu, cpu, emc"), std::string::npos) << r.out;
  r = run("select " + store + " --model inceptionv3-triton@jetson-nano:modes -P 10W", tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("choice (pacer, front): 4 CPU@1.479 GHz, GPU 921.6 MHz"), std::string::npos) << r.out;
  r = run("select " + store + " --model inceptionv3-triton@jetson-nano:modes -P 1W", tmp.path());
  EXPECT_NE(r.err.find("raise the cap"), std::string::npos) << r.err;
  EXPECT_EQ(r.code, 1) << "below the board's idle power";
}

// `pacer profile --power-source tegrastats` on a served Nano tree: the GPU clock pinned through
// sysfs, the power read from a tegrastats child. tegrastats ships only with L4T, so a stand-in
// script replays the real Nano log (data/jetson/loudva/tegrastats/nano.log, an idle board:
// POM_5V_IN 1.0 to 1.9 W) at the interval it is given; the emulated board's own rails read
// 5.1 and 6.9 W at these two points, so only power from tegrastats lies in the log's range.
TEST(CliHw, ProfileWithTegrastatsAsThePowerSource) {
  const fs::path log = fs::path(PACER_SOURCE_DIR) / "data/jetson/loudva/tegrastats/nano.log";
  ASSERT_TRUE(fs::exists(log)) << "no tegrastats log at " << log;
  test::TempDir tmp;
  const fs::path root = tmp.path() / "board", script = tmp.path() / "tegrastats";
  std::ofstream(script) << "#!/bin/sh\n"
                           "echo $$ > '"
                        << (tmp.path() / "pid").string() << "'\necho \"$*\" > '" << (tmp.path() / "args").string()
                        << "'\nwhile :; do while IFS= read -r line; do echo \"$line\"; sleep 0.02; done < '"
                        << log.string() << "'; done\n";
  fs::permissions(script, fs::perms::owner_all);
  // Real time: mini-batches of 26 and 45 ms of wall time (at 0.05 they were 1.3 and 2.3 ms, which
  // a busy machine's late wake-ups swapped), so their order below holds on a busy machine too.
  const pid_t emulator = serve("jetson-nano", root, "1");
  ASSERT_TRUE(fs::exists(root / "pacer-emulator/pid")) << test::slurp(tmp.path() / "emulate.txt");
  const auto store = tmp.path() / "t.h5";
  const auto r =
      run("profile --device jetson --sysfs-root " + root.string() + " --state-file " + (tmp.path() / "state").string() +
              " --power-source tegrastats --tegrastats " + script.string() +
              " --tegrastats-interval 20ms --workload resnet8-w0.25 --batch-sizes 16 --freqs 460.8,921.6 "
              "--warmup-batches 1 --measured-batches 5 --store " +
              store.string(),
          tmp.path());
  stop(emulator);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("power from tegrastats"), std::string::npos) << r.out;
  EXPECT_EQ(test::slurp(tmp.path() / "args"), "--interval 20");
  // Stopped by its pid when the run ended (an orphan left running would still answer).
  const pid_t child = std::stoi(test::slurp(tmp.path() / "pid"));
  EXPECT_EQ(::kill(child, 0), -1) << "tegrastats still runs";
  const auto t = traces::Store::open(store).read<traces::ProfileTable>("resnet8-w0.25@1x28x28");
  ASSERT_EQ(t.points.size(), 2u);
  for (const auto& p : t.points) {
    ASSERT_EQ(p.status, "ok") << p.status;
    EXPECT_GE(p.power_mean_w, 1.001);
    EXPECT_LE(p.power_peak_w, 1.863);
    EXPECT_LE(p.power_mean_w, p.power_peak_w);
    EXPECT_EQ(p.board_model, traces::find_device("jetson-nano").display_name) << "the inner device's board";
  }
  EXPECT_LT(t.points[1].time_per_batch_mean_s, t.points[0].time_per_batch_mean_s) << "the clock was pinned";
}

}  // namespace
}  // namespace pacer::hw

namespace pacer::hw {
namespace {

// `pacer doctor` on a tree served by `pacer emulate` (exit 0, the libtorch line from pacer-train),
// and on this machine, which is not a Jetson (exit 1).
TEST(CliHw, DoctorOnAServedTreeAndOnThisMachine) {
  test::TempDir tmp;
  const fs::path root = tmp.path() / "root";
  fs::create_directories(tmp.path() / "store");
  const pid_t emulator = serve("jetson-tx2", root);
  const std::string common = " --store-dir " + (tmp.path() / "store").string() + " --state-file " +
                             (tmp.path() / "state/doctor").string() + " --min-free 0.001";
  auto r = run("doctor --root " + root.string() + common, tmp.path());
  stop(emulator);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("ok      power rails: 6 rails (iio)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("libtorch: libtorch "), std::string::npos) << r.out;  // pacer-train answered
  EXPECT_NE(r.out.find("ready: this machine has what a validation needs"), std::string::npos) << r.out;

  r = run("doctor --no-torch" + common, tmp.path());
  if (fs::exists("/etc/nv_tegra_release")) GTEST_SKIP() << "this machine is a Jetson";
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("not a Jetson: emulated and replay only"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("libtorch"), std::string::npos) << r.out;

  r = run("doctor --torch-line", tmp.path());  // what pacer-train answers for the light front
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(parse_torch_line(r.out).linked) << r.out;
}

}  // namespace
}  // namespace pacer::hw
