// Sensor and devfreq faults at the process level, where a real board's faults reach the user:
// `pacer emulate --fault ...` serves a Jetson Nano tree that misbehaves from a chosen profiled
// point on, and the real `pacer profile --device jetson` runs against it. Each fault has its
// documented outcome (docs/reliability.md, "Sensor and devfreq faults"): a vanished or blocked rail
// stops the run with one error line, a garbage rail or a cur_freq that does not follow skips the
// point with the reason; in every case the boot frequency range is back and no state file is left.
// (tests/hw/test_faults.cpp covers the same outcomes and EBUSY inside one process.)
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/child_pacer.hpp"
#include "traces/store/store.hpp"

namespace {
namespace fs = std::filesystem;

std::string slurp(const fs::path& p) { return pacer::testing::read_trimmed(p.string()); }

pid_t spawn(const std::vector<std::string>& args, const fs::path& out, const fs::path& err) {
  return pacer::testing::spawn_pacer(args, out.string(), err.string());
}
using pacer::testing::wait_status;

std::vector<std::string> lines_with(const std::string& text, const std::string& needle) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.find(needle) != std::string::npos) out.push_back(line);
  return out;
}

class SensorFaultsCli : public ::testing::Test {
 protected:
  void TearDown() override {
    if (emulator_ > 0) {
      ::kill(emulator_, SIGTERM);
      wait_status(emulator_);
    }
    fs::remove_all(dir_);
  }
  // Serves a Nano tree with `fault` from the workload side's request `from` on (one per point).
  void serve(const std::string& fault, int from) {
    dir_ = fs::temp_directory_path() / ("pacer-faults-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    root_ = dir_ / "board";
    emulator_ = spawn({"emulate", "--device", "jetson-nano", "--root", root_.string(), "--time-scale", "0.05",
                       "--duration", "300s", "--fault", fault, "--fault-from-request", std::to_string(from)},
                      dir_ / "emulate.out", dir_ / "emulate.err");
    for (int i = 0; i < 6000 && !fs::exists(root_ / "pacer-emulator/pid"); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ASSERT_TRUE(fs::exists(root_ / "pacer-emulator/pid")) << slurp(dir_ / "emulate.err");
  }
  // Profiles three points (76.8, 230.4, 307.2 MHz at b = 8); returns the wait status. The sensor
  // timeout is a hang guard (5 s) where reads return; the blocked-read test gives 0.5 s, which its
  // read, blocked for good, always meets. The frozen-sensor check is off: at time scale 0.05 a pause
  // of 0.25 s of the busy emulator's updates is 5 s of device time, no frozen sensor.
  int profile(const std::string& sensor_timeout = "5s") {
    const pid_t pid = spawn({"profile", "--device", "jetson", "--sysfs-root", root_.string(), "--state-file",
                             state().string(), "--workload", "cnn@1x28x28", "--batch-sizes", "8", "--freqs",
                             "76.8,230.4,307.2", "--warmup-batches", "1", "--measured-batches", "10",
                             "--sensor-rate", "50Hz", "--sensor-timeout", sensor_timeout, "--sensor-frozen", "0", "--store",
                             store().string()},
                            dir_ / "profile.out", dir_ / "profile.err");
    return wait_status(pid);
  }
  fs::path devfreq() const { return root_ / "sys/devices/gpu.0/devfreq/57000000.gpu"; }
  fs::path state() const { return dir_ / "state"; }
  fs::path store() const { return dir_ / "p.h5"; }
  std::string err() const { return slurp(dir_ / "profile.err"); }
  pacer::traces::ProfileTable table() const {
    return pacer::traces::Store::open(store()).read<pacer::traces::ProfileTable>("cnn@1x28x28");
  }
  void expect_restored() const {
    EXPECT_EQ(slurp(devfreq() / "min_freq"), "76800000");
    EXPECT_EQ(slurp(devfreq() / "max_freq"), "921600000");
    EXPECT_FALSE(fs::exists(state()));
    EXPECT_EQ(slurp(root_ / "pacer-emulator/violations"), "0") << "min_freq above max_freq was written";
  }
  // Exit status 1 and exactly one error line containing every `needle`.
  void expect_one_error_line(int status, const std::vector<std::string>& needles) const {
    ASSERT_TRUE(WIFEXITED(status)) << err();
    EXPECT_EQ(WEXITSTATUS(status), 1) << err();
    const auto errors = lines_with(err(), "error:");
    ASSERT_EQ(errors.size(), 1u) << err();
    for (const auto& n : needles) EXPECT_NE(errors[0].find(n), std::string::npos) << errors[0];
  }

  fs::path dir_, root_;
  pid_t emulator_ = -1;
};

TEST_F(SensorFaultsCli, RailThatVanishesStopsTheRunWithOneErrorLineAndKeepsThePointBefore) {
  serve("rail-vanish", 2);
  expect_one_error_line(profile(), {"pacer profile: error: power sensor lost at f=230.4 MHz b=8", "in_power0_input",
                                    "No such file", "restored", "rerun to resume"});
  expect_restored();
  const auto t = table();
  ASSERT_EQ(t.points.size(), 1u);
  EXPECT_EQ(t.points[0].status, "ok");
  EXPECT_DOUBLE_EQ(t.points[0].knob[0], 76.8e6);
}

TEST_F(SensorFaultsCli, RailReadThatBlocksStopsTheRunAfterTheSensorTimeout) {
  serve("rail-block", 2);  // the rail files become FIFOs: open(2) blocks like a hung I2C read
  expect_one_error_line(profile("0.5s"),
                        {"power sensor read blocked for more than 0.5 s at f=230.4 MHz b=8", "POM_5V_IN", "restored"});
  expect_restored();
  EXPECT_EQ(table().points.size(), 1u);
}

TEST_F(SensorFaultsCli, GarbageRailSkipsThePointsWithTheReason) {
  serve("rail-garbage=-5000", 2);
  const int status = profile();
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << err();
  expect_restored();
  const auto t = table();
  ASSERT_EQ(t.points.size(), 3u);
  EXPECT_EQ(t.points[0].status, "ok");
  for (size_t i = 1; i < 3; ++i) {
    EXPECT_EQ(t.points[i].status.rfind("skipped: power sensor returns garbage", 0), 0u) << t.points[i].status;
    EXPECT_NE(t.points[i].status.find("-5000 mW"), std::string::npos) << t.points[i].status;
  }
}

TEST_F(SensorFaultsCli, CurFreqThatDoesNotFollowSkipsThePointsNamingBothFrequencies) {
  serve("cur-freq=76.8", 0);  // stuck at the lowest clock, as a throttled GPU
  const int status = profile();
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << err();
  expect_restored();
  const auto t = table();
  ASSERT_EQ(t.points.size(), 3u);
  EXPECT_EQ(t.points[0].status, "ok") << "76.8 MHz is what cur_freq reads";
  EXPECT_EQ(t.points[1].status.rfind("skipped: cur_freq reads 76.8 MHz but 230.4 MHz was requested", 0), 0u)
      << t.points[1].status;
  EXPECT_EQ(t.points[2].status.rfind("skipped: cur_freq reads 76.8 MHz but 307.2 MHz was requested", 0), 0u)
      << t.points[2].status;
}

}  // namespace
