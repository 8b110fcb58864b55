// The hardware subcommands end to end through the pacer binary.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "helpers.hpp"
#include "traces/store.hpp"

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

TEST(CliHw, ProfileEmulatedNanoFillsAFullTable) {
  test::TempDir tmp;
  const auto store = tmp.path() / "c.h5";
  const auto r = run("profile --device emulated:jetson-nano --workload resnet8-w0.25 --batch-sizes 8:32 "
                     "--measured-batches 5 --store " + store.string(), tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("[EMULATED]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("virtual time"), std::string::npos);
  EXPECT_NE(r.out.find("36-point grid"), std::string::npos) << r.out;
  const auto t = traces::Store::open(store).read_profile("resnet8-w0.25@1x28x28");
  EXPECT_EQ(t.points.size(), 36u);
  EXPECT_TRUE(t.emulated);
  EXPECT_TRUE(t.virtual_time);
  // A rerun resumes: nothing is measured twice.
  const auto again = run("profile --device emulated:jetson-nano --workload resnet8-w0.25 --batch-sizes 8:32 "
                         "--measured-batches 5 --store " + store.string(), tmp.path());
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_NE(again.out.find("measured 0 points this run (36 resumed"), std::string::npos) << again.out;
}

TEST(CliHw, BadInputGivesOneLineAndTheRightExitCode) {
  test::TempDir tmp;
  auto r = run("profile --device emulated:jetson-nano --workload cnn --freqs 900 --store " +
                   (tmp.path() / "x.h5").string(), tmp.path());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("900 MHz is not a gpu_freq setting"), std::string::npos) << r.err;
  r = run("profile --device emulated:jetson-nano --workload cnn --mode walk", tmp.path());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--power-limit"), std::string::npos) << r.err;
  r = run("profile --device jetson --sysfs-root " + tmp.path().string() + " --workload cnn", tmp.path());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("no GPU devfreq node"), std::string::npos) << r.err;
  r = run("restore --sysfs-root " + tmp.path().string() + " --state-file " + (tmp.path() / "none").string(), tmp.path());
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("nothing to restore"), std::string::npos);
}

// Issue 16, item 10: a batch that cannot fit the board's memory (the workload's activation memory
// per sample times b, plus its weights and optimizer state, against the catalog's 4 GiB of the
// Nano) is refused before anything is measured, naming the largest batch size that fits.
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
    ::execl(PACER_BINARY, PACER_BINARY, "emulate", "--device", "jetson-tx2", "--root", root.c_str(), "--time-scale",
            "0.05", "--duration", "120s", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  for (int i = 0; i < 3000 && !fs::exists(root / "pacer-emulator/pid"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(fs::exists(root / "pacer-emulator/pid"));
  const auto store = tmp.path() / "hil.h5";
  const auto r = run("profile --device jetson --sysfs-root " + root.string() + " --state-file " +
                         (tmp.path() / "state").string() +
                         " --workload resnet18 --batch-sizes 16 --freqs 624.75,1300.5 --warmup-batches 1 "
                         "--measured-batches 3 --store " + store.string(),
                     tmp.path());
  ::kill(pid, SIGTERM);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("[EMULATED]"), std::string::npos) << r.out;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const auto t = traces::Store::open(store).read_profile("resnet18@3x32x32");
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

}  // namespace
}  // namespace pacer::hw
