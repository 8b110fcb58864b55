// tegrastats as the power sensor (`pacer profile --power-source tegrastats`). tegrastats ships with
// L4T on a Jetson, not as a Debian package, so it cannot run here: each test writes a stand-in
// script that prints lines in the real format (a Jetson Nano line of L4T 32, as in
// data/jetson/loudva/tegrastats/nano.log) at the --interval it is given, or fails the way a
// broken tegrastats would (exits, prints garbage, prints nothing).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <thread>

#include "hw/emulator/emulated_tree.hpp"
#include "hw/executor.hpp"
#include "hw/jetson/jetson_sysfs.hpp"
#include "hw/jetson/tegrastats_power.hpp"
#include "hw/profiler.hpp"
#include "tests/hw/helpers.hpp"
#include "traces/catalog/catalog.hpp"

namespace pacer::hw {
namespace {
namespace fs = std::filesystem;

// A Nano line with the module total `mw` (its average field and the other rails fixed).
std::string nano_line(int mw) {
  return "RAM 3520/3964MB (lfb 23x1MB) SWAP 1944/1982MB (cached 2MB) IRAM 0/252kB(lfb 252kB) CPU "
         "[19%@1479,4%@1479,8%@1479,27%@1479] EMC_FREQ 7%@1600 GR3D_FREQ 99%@921 APE 25 PLL@19C CPU@23C PMIC@50C "
         "GPU@22C AO@29C thermal@22.5C POM_5V_IN " +
         std::to_string(mw) + "/6000 POM_5V_GPU 2400/2200 POM_5V_CPU 1208/1208";
}

// The stand-in: logs its arguments, sleeps --interval ms between lines. `body` prints one line per
// loop turn given the turn number $i; `after` runs when the loop ends (after `turns` turns, 0: never).
fs::path fake_tegrastats(const fs::path& dir, const std::string& body, int turns = 0, const std::string& after = "") {
  const fs::path script = dir / "tegrastats";
  std::ofstream(script) << "#!/bin/sh\n"
                           "echo \"$*\" > '"
                        << (dir / "args").string()
                        << "'\n"
                           "ms=$2\n"
                           "i=0\n"
                           "while [ "
                        << turns << " -eq 0 ] || [ $i -lt " << turns << " ]; do\n"
                        << body
                        << "\n"
                           "  i=$((i+1))\n"
                           "  sleep $(printf '0.%03d' \"$ms\")\n"
                           "done\n"
                        << after << "\n";
  ::chmod(script.c_str(), 0755);
  return script;
}

std::string alternating() {
  return "  if [ $((i % 2)) -eq 0 ]; then echo '" + nano_line(5000) + "'; else echo '" + nano_line(7000) + "'; fi";
}

// `start_timeout_s`: a hang guard for the stand-ins that print (a busy machine may take seconds to
// start a shell); only the silent stand-in, which never prints, waits it out, with a short one.
TegrastatsOptions options(const fs::path& script, double start_timeout_s = 60) {
  TegrastatsOptions o;
  o.binary = script;
  o.interval_s = 0.02;
  o.start_timeout_s = start_timeout_s;
  return o;
}

TEST(TegrastatsPower, ReadsEachLineOnceWithTheImportersParser) {
  test::TempDir tmp;
  TegrastatsPower power(options(fake_tegrastats(tmp.path(), alternating())));
  EXPECT_EQ(test::slurp(tmp.path() / "args"), "--interval 20");
  EXPECT_EQ(power.rails(), (std::vector<std::string>{"tegrastats:POM_5V_IN", "gpu:POM_5V_GPU"}));
  double a = power.read().total_w, b = power.read().total_w;
  EXPECT_DOUBLE_EQ(a + b, 12.0) << "consecutive lines alternate 5 W and 7 W: no line is read twice";
  EXPECT_NE(a, b);
  EXPECT_DOUBLE_EQ(power.read().gpu_w, 2.4);
  const long pid = power.pid();
  EXPECT_EQ(::kill(static_cast<pid_t>(pid), 0), 0);
}

TEST(TegrastatsPower, StopsItsChildByPid) {
  test::TempDir tmp;
  long pid = -1;
  {
    TegrastatsPower power(options(fake_tegrastats(tmp.path(), alternating())));
    pid = power.pid();
  }
  EXPECT_EQ(::kill(static_cast<pid_t>(pid), 0), -1);
  EXPECT_EQ(errno, ESRCH) << "the child is gone (stopped and reaped)";
}

TEST(TegrastatsPower, StartFailuresAreOneClearError) {
  test::TempDir tmp;
  try {
    TegrastatsPower power(options(fake_tegrastats(tmp.path(), "  :", 0), 2));  // prints nothing
    FAIL() << "a silent tegrastats was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("printed nothing within 2 s"), std::string::npos) << e.what();
  }
  try {
    TegrastatsPower power(options(fake_tegrastats(tmp.path(), "  echo 'RAM 1/2MB no rails here'")));
    FAIL() << "an unreadable first line was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("first line cannot be read"), std::string::npos) << e.what();
  }
  try {
    TegrastatsPower power(options(fake_tegrastats(tmp.path(), "  :", 1, "exit 4")));
    FAIL() << "a tegrastats that exits at once was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("exited with status 4"), std::string::npos) << e.what();
  }
  EXPECT_THROW(TegrastatsPower(options(tmp.path() / "missing")), Error);
}

// The program is judged by its first line even when later ones arrived before the constructor
// looked (a slow start: a loaded machine, qemu-user): a good first line with a garbled second one
// printed at once starts fine (the garbled line is then a read's fault, as any later one).
TEST(TegrastatsPower, AGoodFirstLineStartsEvenWhenABadOneFollowsAtOnce) {
  test::TempDir tmp;
  const auto script = fake_tegrastats(
      tmp.path(), "  if [ $i -eq 0 ]; then printf '%s\\nPOM_5V_IN x/y\\n' '" + nano_line(5000) + "'; sleep 1; fi", 1);
  for (int i = 0; i < 5; ++i) EXPECT_NO_THROW(TegrastatsPower{options(script)});
}

TEST(TegrastatsPower, GarbageAndExitAreSensorFaults) {
  test::TempDir tmp;
  TegrastatsPower power(options(fake_tegrastats(
      tmp.path(), "  if [ $i -eq 0 ]; then echo '" + nano_line(5000) + "'; else echo 'POM_5V_IN x/y'; fi", 4,
      "exit 3")));
  try {
    power.read();
    FAIL() << "a garbage line was read as power";
  } catch (const SensorError& e) {
    EXPECT_EQ(e.fault, SensorFault::garbage) << e.what();
  }
  for (int i = 0; i < 2; ++i) EXPECT_THROW(power.read(), SensorError);
  try {
    power.read();
    FAIL() << "a read after tegrastats exited returned";
  } catch (const SensorError& e) {
    EXPECT_EQ(e.fault, SensorFault::missing) << e.what();
    EXPECT_NE(std::string(e.what()).find("exited with status 3"), std::string::npos) << e.what();
  }
}

// The profiler with tegrastats as the sensor of a Jetson sysfs device (a fake Nano tree), real
// mini-batches being sleeps of the executor: the outcomes are the sysfs faults' ones.
struct Rig {
  test::TempDir tmp;
  fs::path root = tmp.path() / "board";
  Rig() { write_fake_tree(root, traces::find_device("jetson-nano")); }
  // `max_extension`: at most this many times 5 mini-batches to reach 8 readings. The outcome tests
  // give up after 20; a test that needs the readings allows many more, so that a slow machine (a
  // line every 20 ms of a busy shell) only makes the point longer, never short of readings.
  // `read_timeout_s`: a hang guard where the stand-in keeps printing (a busy shell may pause longer
  // than 0.5 s between lines); the silent stand-in's test, which never prints again, uses 0.5 s.
  ProfileReport profile(const fs::path& script, double max_extension = 4, double read_timeout_s = 30) {
    JetsonSysfsOptions so;
    so.root = root;
    so.state_file = tmp.path() / "state";
    TegrastatsPowerDevice dev(std::make_unique<JetsonSysfsDevice>(so), options(script));
    FunctionExecutor::Hooks h;
    h.step = [] { std::this_thread::sleep_for(std::chrono::milliseconds(15)); };
    FunctionExecutor exec(h);
    ProfileOptions o;
    o.workload = "w";
    o.batch_sizes = {8};
    o.knob_values = {921.6e6};
    o.warmup_batches = 0;
    o.measured_batches = 5;
    o.sensor_rate_hz = 50;
    o.min_power_samples = 8;
    o.max_extension = max_extension;
    o.sensor_read_timeout_s = read_timeout_s;
    return run_profile(dev, exec, o);
  }
};

TEST(TegrastatsPower, ProfilesAPointWithTheLinesPower) {
  Rig rig;
  const auto rep = rig.profile(fake_tegrastats(rig.tmp.path(), alternating()), 2000);
  ASSERT_EQ(rep.table.points.size(), 1u);
  const auto& p = rep.table.points[0];
  ASSERT_EQ(p.status, "ok") << p.status;
  EXPECT_DOUBLE_EQ(p.power_peak_w, 7.0);
  EXPECT_NEAR(p.power_mean_w, 6.0, 0.35);  // alternating 5 and 7 W, an odd count may tilt it
  EXPECT_GE(p.power_samples, 8);
}

TEST(TegrastatsPower, AGarbledTegrastatsSkipsThePoint) {
  Rig rig;
  // Garbled lines are no samples, so the point runs to its cap: 200 mini-batches (3 s at least), long
  // enough for a busy shell to print and the sampler to read some of them.
  const auto rep = rig.profile(
      fake_tegrastats(rig.tmp.path(),
                      "  if [ $i -eq 0 ]; then echo '" + nano_line(5000) + "'; else echo 'GR3D_FREQ ?%@'; fi"),
      40);
  ASSERT_EQ(rep.table.points.size(), 1u);
  EXPECT_EQ(rep.table.points[0].status.rfind("skipped: power sensor returns garbage", 0), 0u)
      << rep.table.points[0].status;
}

TEST(TegrastatsPower, AnExitingTegrastatsStopsTheRun) {
  Rig rig;
  try {
    rig.profile(fake_tegrastats(rig.tmp.path(), "  echo '" + nano_line(5000) + "'", 3, "exit 2"));
    FAIL() << "the run went on without a sensor";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("power sensor lost"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("exited with status 2"), std::string::npos) << e.what();
  }
}

TEST(TegrastatsPower, ASilentTegrastatsStopsTheRunLikeABlockedSensor) {
  Rig rig;
  try {
    // Silent for good after its first line (exec: the pid pacer stops is the sleep's): the 0.5 s
    // read timeout is met however slow the machine.
    rig.profile(fake_tegrastats(rig.tmp.path(), "  echo '" + nano_line(5000) + "'", 1, "exec sleep 600"), 4, 0.5);
    FAIL() << "the run went on without readings";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("blocked for more than 0.5 s"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace pacer::hw
