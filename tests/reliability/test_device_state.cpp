// Device state at the process level (a killed run must not leave the board pinned): `pacer profile
// --device jetson` runs against a sysfs tree served by `pacer emulate` (Jetson TX2 layout) and is
// killed mid-campaign. After SIGKILL the GPU range is left pinned and the state file remains;
// `pacer restore`, or simply the next pacer run on the same tree, puts back the boot range. SIGTERM
// and SIGINT restore before the process dies. (tests/hw covers the same paths inside one process;
// this drives the real binary.)
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "tests/support/child_pacer.hpp"

namespace {
namespace fs = std::filesystem;

std::string slurp(const fs::path& p) { return pacer::testing::read_trimmed(p.string()); }

pid_t spawn(const std::vector<std::string>& args, const fs::path& log) {
  return pacer::testing::spawn_pacer(args, log.string(), log.string());
}

// Waits until `log` holds `needle` (or the process ended); true when found.
bool wait_for(const fs::path& log, const std::string& needle, pid_t pid, int timeout_s = 120) {
  for (int i = 0; i < timeout_s * 100; ++i) {
    if (slurp(log).find(needle) != std::string::npos) return true;
    siginfo_t info{};
    // WNOWAIT: look without reaping, so the caller still gets the exit status.
    if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid)
      return slurp(log).find(needle) != std::string::npos;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

using pacer::testing::wait_status;

class DeviceState : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("pacer-devstate-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    root_ = dir_ / "board";
    emulator_ = spawn({"emulate", "--device", "jetson-tx2", "--root", root_.string(), "--time-scale", "0.05",
                       "--duration", "600s"},
                      dir_ / "emulate.log");
    for (int i = 0; i < 6000 && !fs::exists(root_ / "pacer-emulator/pid"); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ASSERT_TRUE(fs::exists(root_ / "pacer-emulator/pid")) << slurp(dir_ / "emulate.log");
    boot_min_ = slurp(devfreq() / "min_freq");
    boot_max_ = slurp(devfreq() / "max_freq");
    ASSERT_EQ(boot_max_, "1300500000");
  }
  void TearDown() override {
    if (emulator_ > 0) {
      ::kill(emulator_, SIGTERM);
      wait_status(emulator_);
    }
    fs::remove_all(dir_);
  }
  fs::path devfreq() const { return root_ / "sys/devices/17000000.gp10b/devfreq/17000000.gp10b"; }
  fs::path state() const { return dir_ / "state"; }
  std::vector<std::string> profile_args(const std::string& freqs) {
    ++runs_;  // a fresh store per run: resumed points print no progress line
    return {"profile", "--device", "jetson", "--sysfs-root", root_.string(), "--state-file", state().string(),
            "--workload", "cnn@1x28x28", "--batch-sizes", "4,8,16,32", "--freqs", freqs, "--warmup-batches", "1",
            "--measured-batches", "3", "--threads", "1", "--store",
            (dir_ / fmt::format("p{}.h5", runs_)).string()};
  }
  // Starts a profile and returns once it has reported its first point (the clock is pinned).
  pid_t start_profile() {
    const pid_t pid = spawn(profile_args("420.75,624.75,854.25"), dir_ / "profile.log");
    EXPECT_TRUE(wait_for(dir_ / "profile.log", "] f=", pid)) << slurp(dir_ / "profile.log");
    return pid;
  }
  void expect_boot_range() const {
    EXPECT_EQ(slurp(devfreq() / "min_freq"), boot_min_);
    EXPECT_EQ(slurp(devfreq() / "max_freq"), boot_max_);
  }

  fs::path dir_, root_;
  pid_t emulator_ = -1;
  int runs_ = 0;
  std::string boot_min_, boot_max_;
};

TEST_F(DeviceState, SigkillLeavesStateFileThatPacerRestoreReplays) {
  const pid_t pid = start_profile();
  ::kill(pid, SIGKILL);
  const int status = wait_status(pid);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  ASSERT_TRUE(fs::exists(state())) << "a killed run must leave its state file";
  EXPECT_NE(slurp(devfreq() / "max_freq"), boot_max_) << "the kill should leave the clock pinned";

  const pid_t restore = spawn({"restore", "--sysfs-root", root_.string(), "--state-file", state().string()},
                              dir_ / "restore.log");
  const int rs = wait_status(restore);
  ASSERT_TRUE(WIFEXITED(rs) && WEXITSTATUS(rs) == 0) << slurp(dir_ / "restore.log");
  expect_boot_range();
  EXPECT_FALSE(fs::exists(state()));
}

TEST_F(DeviceState, SigkillIsRepairedByTheNextRunAutomatically) {
  const pid_t pid = start_profile();
  ::kill(pid, SIGKILL);
  wait_status(pid);
  ASSERT_TRUE(fs::exists(state()));
  const std::string pinned_max = slurp(devfreq() / "max_freq");
  ASSERT_NE(pinned_max, boot_max_);
  // A normal run puts back the range it found: only a replay of the stale state file before it
  // starts makes that range the boot one.
  auto args = profile_args("624.75");
  args[10] = "4";  // --batch-sizes 4
  const pid_t next = spawn(args, dir_ / "next.log");
  const int ns = wait_status(next);
  ASSERT_TRUE(WIFEXITED(ns) && WEXITSTATUS(ns) == 0) << slurp(dir_ / "next.log");
  expect_boot_range();
  EXPECT_FALSE(fs::exists(state()));
}

TEST_F(DeviceState, SigtermAndSigintRestoreImmediately) {
  for (int sig : {SIGTERM, SIGINT}) {
    const pid_t pid = start_profile();
    ::kill(pid, sig);
    const int status = wait_status(pid);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig) << "signal " << sig;
    expect_boot_range();
    EXPECT_FALSE(fs::exists(state())) << "signal " << sig;
  }
}

}  // namespace
