// Guards of the hardware layer, which writes to a real board as root: a restore writes only the GPU
// frequency limits of the device it saved, from a state folder private to the user; an emulated
// tree is never served into the kernel's /sys or /proc or over a real devfreq tree; a power-limit
// knob is checked and reported in watts, not as a frequency.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "base/error.hpp"
#include "hw/emulator/emulated.hpp"
#include "hw/emulator/emulated_tree.hpp"
#include "hw/executor.hpp"
#include "hw/jetson/jetson_sysfs.hpp"
#include "hw/jetson/restore_guard.hpp"
#include "hw/nvml/nvml.hpp"
#include "hw/profiler.hpp"
#include "tests/hw/helpers.hpp"
#include "tests/support/workloads.hpp"
#include "traces/catalog/catalog.hpp"

namespace pacer::hw {
namespace {
namespace fs = std::filesystem;
using test::TempDir;

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream out(p);
  out << text;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

struct Board {
  TempDir tmp;
  traces::DeviceSpec spec = traces::find_device("jetson-nano");
  fs::path df;
  fs::path state;
  Board() {
    write_fake_tree(tmp.path(), spec);
    df = fake_devfreq_dir(tmp.path(), spec);
    fs::create_directories(tmp.path() / "state");
    state = tmp.path() / "state" / "pacer.state";
  }
};

TEST(RestoreGuard, StateFileMayOnlyPutBackTheFrequencyLimitsOfItsDevice) {
  Board b;
  const fs::path victim = b.tmp.path() / "victim.txt";
  write_text(victim, "precious");
  // A planted line that names another file: nothing of the file is written, the victim keeps its text.
  write_text(b.state, "pid=0\ndevice=x\nwrite=" + (b.df / "min_freq").string() +
                          "\t76800000\nwrite=" + victim.string() + "\tpwned\n");
  try {
    restore_from_state_file(b.state, b.tmp.path(), real_sysfs_io());
    FAIL() << "a write outside the devfreq limits was replayed";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), victim.string())) << e.what();
  }
  EXPECT_EQ(read_text(victim), "precious");
  // A devfreq-looking name outside the root, and a path that climbs out of the node with "..".
  write_text(b.state, "pid=0\nwrite=/tmp/min_freq\t1\n");
  EXPECT_THROW(restore_from_state_file(b.state, b.tmp.path(), real_sysfs_io()), Error);
  write_text(b.state, "pid=0\nwrite=" + (b.df / "../../../../../victim.txt").string() + "\t1\n");
  EXPECT_THROW(restore_from_state_file(b.state, b.tmp.path(), real_sysfs_io()), Error);
  EXPECT_EQ(read_text(victim), "precious");
  // A state file written for another root is not replayed against this one.
  write_state_file(b.state, {0, "x", {{b.df / "min_freq", "76800000"}}, "/elsewhere", {}});
  EXPECT_THROW(restore_from_state_file(b.state, b.tmp.path(), real_sysfs_io()), Error);
  // The legitimate file is replayed.
  write_state_file(b.state, {0,
                             "x",
                             {{b.df / "max_freq", "921600000"}, {b.df / "min_freq", "76800000"}},
                             fs::weakly_canonical(b.tmp.path()),
                             {}});
  EXPECT_TRUE(contains(restore_from_state_file(b.state, b.tmp.path(), real_sysfs_io()), "restored"));
  EXPECT_EQ(read_text(b.df / "min_freq"), "76800000");
  EXPECT_TRUE(restorable_path(b.df / "max_freq", b.tmp.path()));
  EXPECT_FALSE(restorable_path(b.df / "cur_freq", b.tmp.path()));
  EXPECT_FALSE(restorable_path(victim, b.tmp.path()));
}

TEST(RestoreGuard, StateFolderWritableByOthersIsRefused) {
  Board b;
  write_state_file(b.state, {0, "x", {{b.df / "min_freq", "76800000"}}, {}, {}});
  ASSERT_EQ(::chmod((b.tmp.path() / "state").c_str(), 0777), 0);
  try {
    read_state_file(b.state);
    FAIL() << "a state folder anyone can write was trusted";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "writable by other users")) << e.what();
  }
  EXPECT_THROW(write_state_file(b.state, {0, "x", {}, {}, {}}), Error);
  EXPECT_THROW(restore_from_state_file(b.state, b.tmp.path(), real_sysfs_io()), Error);
  ASSERT_EQ(::chmod((b.tmp.path() / "state").c_str(), 0755), 0);
  EXPECT_NO_THROW(read_state_file(b.state));
}

TEST(RestoreGuard, StateFolderOfAnotherUserIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to hand a folder to another user";
  Board b;
  write_state_file(b.state, {0, "x", {{b.df / "min_freq", "76800000"}}, {}, {}});
  ASSERT_EQ(::chown((b.tmp.path() / "state").c_str(), 54321, 54321), 0);
  try {
    read_state_file(b.state);
    FAIL() << "a state folder of another user was trusted";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "belongs to user 54321")) << e.what();
  }
}

TEST(RestoreGuard, NewStateFolderIsPrivate) {
  TempDir tmp;
  const fs::path dir = tmp.path() / "fresh";
  write_state_file(dir / "pacer.state", {1, "x", {}, {}, {}});
  struct stat st {};
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

// Without HOME the state folder is /tmp/pacer-state-<uid>, which anyone could have created first.
TEST(RestoreGuard, TmpStateFolderWithoutHomeGetsTheSameCheck) {
  const char* keep[] = {"PACER_STATE_DIR", "XDG_STATE_HOME", "HOME"};
  std::vector<std::pair<std::string, std::string>> saved;
  for (const char* k : keep)
    if (const char* v = std::getenv(k)) saved.emplace_back(k, v);
  for (const char* k : keep) ::unsetenv(k);
  const fs::path dir = default_state_dir();
  for (const auto& [k, v] : saved) ::setenv(k.c_str(), v.c_str(), 1);
  EXPECT_EQ(dir, fs::path("/tmp/pacer-state-" + std::to_string(::getuid())));
  if (fs::exists(dir)) GTEST_SKIP() << dir << " exists: not touching a real state folder";
  fs::create_directories(dir);
  ::chmod(dir.c_str(), 0777);  // as an attacker's pre-created folder would be
  EXPECT_THROW(write_state_file(dir / "jetson-sysfs.state", {1, "x", {}, {}, {}}), Error);
  EXPECT_THROW(read_state_file(dir / "jetson-sysfs.state"), Error);
  fs::remove_all(dir);
}

TEST(EmulationRoot, RefusesTheKernelsTreesAndARealDevfreqTree) {
  EXPECT_THROW(check_emulation_root("/"), OptionError);  // its sys/ is the real /sys
  EXPECT_THROW(check_emulation_root("/sys"), OptionError);
  EXPECT_THROW(check_emulation_root("/sys/kernel/pacer"), OptionError);
  EXPECT_THROW(check_emulation_root("/proc/self"), OptionError);
  EXPECT_THROW(check_emulation_root("/tmp/../sys/x"), OptionError);
  TempDir tmp;
  EXPECT_NO_THROW(check_emulation_root(tmp.path() / "new"));
  EXPECT_NO_THROW(check_emulation_root("/sysfoo-not-sys"));
  // A devfreq tree pacer did not write (a copied board tree) is not overwritten ...
  fs::create_directories(tmp.path() / "board/sys/class/devfreq");
  try {
    check_emulation_root(tmp.path() / "board");
    FAIL();
  } catch (const OptionError& e) {
    EXPECT_EQ(e.option, "root");
    EXPECT_TRUE(contains(e.what(), "devfreq")) << e.what();
  }
  // ... but pacer's own emulated tree is served again.
  fs::create_directories(tmp.path() / "board/pacer-emulator");
  EXPECT_NO_THROW(check_emulation_root(tmp.path() / "board"));
  // The live tree checks before writing anything.
  const auto spec = traces::find_device("jetson-nano");
  auto emu = std::make_unique<EmulatedJetson>(
      spec, std::make_shared<WorkloadPhysics>(spec, pacer::testing::resnet8_quarter_fmnist()), EmulatorOptions{});
  EXPECT_THROW(LiveEmulatedTree("/", std::move(emu), nullptr, LiveTreeOptions{}), OptionError);
  EXPECT_THROW(write_fake_tree("/proc/pacer", spec), OptionError);
}

// A power-limit knob is checked against the device's limits and reported in watts.
TEST(ProfilerKnob, PowerLimitSettingsAreCheckedAndNamedInWatts) {
  NvmlOptions n;
  n.library = FAKE_NVML_LIBRARY;
  n.knob = traces::KnobKind::power_limit;
  n.allow_control = true;
  ::setenv("FAKE_NVML_PRIVILEGED", "1", 1);
  {
    NvmlDevice dev(n);
    FunctionExecutor::Hooks h;
    h.step = [] {};
    FunctionExecutor exec(h);
    ProfileOptions o;
    o.workload = "w";
    o.batch_sizes = {8};
    o.knob_values = {160.0};  // the fake GPU's limits are 100 W .. 300 W in 25 W steps
    o.measured_batches = 1;
    o.min_power_samples = 1;
    o.max_extension = 1;
    try {
      run_profile(dev, exec, o);
      FAIL() << "160 W is not a setting";
    } catch (const Error& e) {
      EXPECT_TRUE(contains(e.what(), "160 W is not a power_limit setting")) << e.what();
      EXPECT_TRUE(contains(e.what(), "(100 W .. 300 W)")) << e.what();
    }
    o.knob_values = {150.0002};  // parsed from "150W": snapped to the device's value
    o.sensor_rate_hz = 1000;
    const auto r = run_profile(dev, exec, o);
    ASSERT_EQ(r.table.points.size(), 1u);
    EXPECT_DOUBLE_EQ(r.table.points[0].knob[0], 150.0);
    EXPECT_EQ(r.table.knob.kind, traces::KnobKind::power_limit);
    EXPECT_EQ(r.table.knob.format(r.table.points[0].knob), "150 W");
    EXPECT_EQ(knob_label(r.table.knob), "P_limit");
    EXPECT_EQ(knob_label(traces::KnobSpace::gpu_frequency()), "f");
  }
  ::unsetenv("FAKE_NVML_PRIVILEGED");
}

}  // namespace
}  // namespace pacer::hw
