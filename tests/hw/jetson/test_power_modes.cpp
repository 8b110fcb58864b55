// Power modes as a knob (PowerTrain's space: cores and CPU, GPU and memory clocks together):
// nvpmodel driven through a program path, the mode in force saved and restored on every exit path
// (destructor, exception, SIGTERM, SIGKILL + pacer restore), the emulated board's caps in its sysfs
// tree and in its time and power, the profiler over modes. A real nvpmodel cannot run here (it
// ships with L4T on a Jetson, not as a Debian package): the tests write their own stand-in script
// that records its calls and keeps the mode in a state file.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "hw/emulator/emulated.hpp"
#include "hw/emulator/emulated_modes.hpp"
#include "hw/emulator/emulated_tree.hpp"
#include "hw/executor.hpp"
#include "hw/jetson/nvpmodel.hpp"
#include "hw/jetson/power_mode_device.hpp"
#include "hw/profiler.hpp"
#include "tests/hw/helpers.hpp"
#include "tests/hw/tree_clock.hpp"
#include "tests/support/workloads.hpp"
#include "traces/catalog/catalog.hpp"
#include "traces/catalog/power_modes.hpp"

namespace pacer::hw {
namespace {
namespace fs = std::filesystem;

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream(p) << text;
}

// A stand-in nvpmodel: logs every call, keeps the mode in <dir>/mode, prints what L4T's prints.
// With <dir>/ignore present it accepts -m without changing the mode (a refused change).
fs::path fake_nvpmodel(const fs::path& dir, int boot_mode) {
  const fs::path script = dir / "nvpmodel";
  write_file(script,
             "#!/bin/sh\n"
             "echo \"$*\" >> '" +
                 (dir / "calls").string() +
                 "'\n"
                 "case \"$1\" in\n"
                 "  -q) id=$(cat '" +
                 (dir / "mode").string() +
                 "'); printf 'NV Fan Mode:quiet\\nNV Power Mode: "
                 "MODE_%s\\n%s\\n' \"$id\" \"$id\" ;;\n"
                 "  -m) [ -e '" +
                 (dir / "ignore").string() +
                 "' ] && exit 0\n"
                 "      case \"$2\" in 0|1|2|3) printf '%s\\n' \"$2\" > '" +
                 (dir / "mode").string() +
                 "' ;;\n"
                 "        *) echo \"NVPM ERROR: Invalid power mode: $2\"; exit 1 ;; esac ;;\n"
                 "esac\n");
  ::chmod(script.c_str(), 0755);
  write_file(dir / "mode", std::to_string(boot_mode) + "\n");
  return script;
}

struct ModeBoard {
  test::TempDir tmp;
  traces::DeviceSpec spec = traces::find_device("jetson-agx-orin");
  fs::path root = tmp.path() / "board";
  fs::path nvpmodel;
  fs::path state = tmp.path() / "state";
  ModeBoard() {
    write_fake_tree(root, spec);
    nvpmodel = fake_nvpmodel(tmp.path(), 2);  // AGX Orin boards boot in MODE_30W (PM_CONFIG DEFAULT=2)
  }
  std::unique_ptr<PowerModeDevice> open(bool signals = true) const {
    JetsonSysfsOptions so;
    so.root = root;
    so.state_file = state;
    so.signal_restore = signals;
    PowerModeOptions o;
    o.board = spec;
    o.nvpmodel = nvpmodel;
    o.signal_restore = signals;
    return std::make_unique<PowerModeDevice>(std::make_unique<JetsonSysfsDevice>(so), o);
  }
  std::string mode() const { return test::slurp(tmp.path() / "mode"); }
  std::vector<double> knob(int id) const { return traces::mode_knob(*traces::find_mode_id(spec, id), spec); }
};

TEST(Nvpmodel, ParsesTheQueryOutputOfL4T) {
  const auto m = parse_nvpmodel_query("NV Fan Mode:quiet\nNV Power Mode: MODE_15W\n1\n", "nvpmodel");
  EXPECT_EQ(m.id, 1);
  EXPECT_EQ(m.name, "MODE_15W");
  EXPECT_THROW(parse_nvpmodel_query("NVPM ERROR: failed\n", "nvpmodel"), Error);
}

TEST(PowerModeDevice, PinsAModeAndRestoresTheBootModeWithItsStateFile) {
  ModeBoard b;
  auto dev = b.open();
  EXPECT_EQ(dev->knob().dims.size(), 5u);  // cpu_cores, cpu_freq, gpu_freq, mem_freq, gpu_tpcs
  EXPECT_EQ(dev->settings().size(), 4u);
  EXPECT_EQ(dev->current(), b.knob(2));
  dev->pin(b.knob(1));
  EXPECT_EQ(b.mode(), "1");
  EXPECT_EQ(dev->current(), b.knob(1));
  // The state file names the program and the mode to put back, before anything changed.
  const auto saved = read_state_file(b.state);
  ASSERT_TRUE(saved.mode.has_value());
  EXPECT_EQ(saved.mode->mode_id, 2);
  EXPECT_EQ(saved.mode->nvpmodel, b.nvpmodel);
  dev->pin(b.knob(3));
  EXPECT_EQ(b.mode(), "3");
  EXPECT_EQ(read_state_file(b.state).mode->mode_id, 2) << "the first saved mode is kept, not the last pinned";
  dev->restore();
  EXPECT_EQ(b.mode(), "2");
  EXPECT_FALSE(fs::exists(b.state));
  EXPECT_EQ(test::slurp(b.tmp.path() / "calls"), "-q\n-q\n-m 1\n-q\n-q\n-m 3\n-q\n-m 2\n-q");
}

TEST(PowerModeDevice, RestoresOnAnException) {
  ModeBoard b;
  try {
    auto dev = b.open();
    dev->pin(b.knob(1));
    ASSERT_EQ(b.mode(), "1");
    throw std::runtime_error("training failed");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(b.mode(), "2");
  EXPECT_FALSE(fs::exists(b.state));
}

TEST(PowerModeDevice, RefusedOrUnknownModesAreClearErrors) {
  ModeBoard b;
  auto dev = b.open();
  EXPECT_THROW(dev->pin({1, 1e9, 1e9, 1e9, 8}), Error);  // no such mode of the board
  write_file(b.tmp.path() / "ignore", "");
  EXPECT_THROW(dev->pin(b.knob(0)), SettingNotApplied);  // nvpmodel accepted it but the mode did not change
  fs::remove(b.tmp.path() / "ignore");
  PowerModeOptions o;
  o.board = b.spec;
  o.nvpmodel = b.tmp.path() / "no-such-nvpmodel";
  JetsonSysfsOptions so;
  so.root = b.root;
  so.state_file = b.tmp.path() / "state2";
  EXPECT_THROW(PowerModeDevice(std::make_unique<JetsonSysfsDevice>(so), o), OptionError);
}

// The child pins a mode, reports it, then waits to be killed; returns its pid.
pid_t child_pinning(const ModeBoard& b, int fd_ready) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    try {
      auto dev = b.open();
      dev->pin(b.knob(1));
      (void)!::write(fd_ready, "x", 1);
      for (;;) ::pause();
    } catch (...) {
      ::_exit(3);
    }
  }
  return pid;
}

TEST(PowerModeDevice, SigtermRunsNvpmodelToRestoreTheModeBeforeDying) {
  ModeBoard b;
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t pid = child_pinning(b, fds[1]);
  char c;
  ASSERT_EQ(::read(fds[0], &c, 1), 1);
  EXPECT_EQ(b.mode(), "1");
  ::kill(pid, SIGTERM);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << "the signal still ends the process";
  EXPECT_EQ(b.mode(), "2") << "the handler ran nvpmodel -m 2";
  EXPECT_FALSE(fs::exists(b.state));
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST(PowerModeDevice, AfterSigkillTheStateFileRestoresTheMode) {
  ModeBoard b;
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t pid = child_pinning(b, fds[1]);
  char c;
  ASSERT_EQ(::read(fds[0], &c, 1), 1);
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  EXPECT_EQ(b.mode(), "1") << "nothing runs on SIGKILL";
  ASSERT_TRUE(fs::exists(b.state));
  // `pacer restore` replays it (the next run on the same tree does the same first).
  const auto line = restore_from_state_file(b.state, b.root, real_sysfs_io());
  EXPECT_NE(line.find("power mode 2"), std::string::npos) << line;
  EXPECT_EQ(b.mode(), "2");
  EXPECT_FALSE(fs::exists(b.state));
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST(PowerModeDevice, TheNextRunRestoresALeftoverModeFirst) {
  ModeBoard b;
  write_state_file(b.state, {999999, "crashed run", {}, fs::weakly_canonical(b.root), ModeRestore{b.nvpmodel, 2, "X"}});
  write_file(b.tmp.path() / "mode", "3\n");
  auto dev = b.open();  // the sysfs backend replays the state file before anything else
  EXPECT_EQ(b.mode(), "2");
  EXPECT_FALSE(fs::exists(b.state));
}

TEST(PowerModeDevice, AStateFileMayNotNameAnUnsafeProgram) {
  ModeBoard b;
  ::chmod(b.nvpmodel.c_str(), 0777);  // anyone could rewrite what a root restore runs
  write_state_file(b.state, {999999, "x", {}, fs::weakly_canonical(b.root), ModeRestore{b.nvpmodel, 0, "MAXN"}});
  try {
    restore_from_state_file(b.state, b.root, real_sysfs_io());
    FAIL() << "an unsafe nvpmodel path was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("other users may write it"), std::string::npos) << e.what();
  }
  EXPECT_EQ(b.mode(), "2") << "nothing ran";
  EXPECT_FALSE(fs::exists(b.tmp.path() / "calls"));
}

// ---------------------------------------------------------------------------------------------
// The emulated board.

TEST(EmulatedModes, TheTreeReflectsTheCapsTheGeneratedNvpmodelSets) {
  test::TempDir tmp;
  const auto spec = traces::find_device("jetson-agx-orin");
  const fs::path root = tmp.path() / "board";
  write_fake_tree(root, spec);
  const auto tool = Nvpmodel(write_fake_nvpmodel(root, spec));
  EXPECT_EQ(tool.query().id, 0);
  auto caps = read_mode_files(root, spec);
  EXPECT_EQ(caps.cpu_cores, 12);
  EXPECT_DOUBLE_EQ(caps.gpu_freq_hz, 1300.5e6);
  EXPECT_EQ(caps.gpu_tpcs, 8);
  tool.set(1);  // MODE_15W: 4 cores @ 1113.6 MHz, GPU 408 MHz with 3 of 8 TPCs, EMC 2133 MHz
  EXPECT_EQ(tool.query().name, "MODE_15W");
  caps = read_mode_files(root, spec);
  EXPECT_EQ(caps.cpu_cores, 4);
  EXPECT_DOUBLE_EQ(caps.cpu_freq_hz, 1113.6e6);
  EXPECT_DOUBLE_EQ(caps.gpu_freq_hz, 408e6);
  EXPECT_DOUBLE_EQ(caps.mem_freq_hz, 2133e6);
  EXPECT_EQ(caps.gpu_tpcs, 3);
  EXPECT_EQ(test::slurp(root / "sys/devices/system/cpu/cpu4/online"), "0");
  EXPECT_EQ(test::slurp(root / "sys/devices/system/cpu/cpu3/online"), "1");
  EXPECT_EQ(test::slurp(root / "sys/devices/gpu.0/tpc_pg_mask"), "248");  // NVIDIA's own mask for MODE_15W
  EXPECT_EQ(test::slurp(root / spec.devfreq_path / "max_freq"), "408000000");
  EXPECT_THROW(tool.set(7), Error);
}

TEST(EmulatedModes, TimeAndPowerFollowTheModeCaps) {
  const auto spec = traces::find_device("jetson-agx-orin");
  EmulatorOptions eo;
  eo.knob = traces::KnobKind::power_mode;
  auto dev = EmulatedJetson::with_workload(spec, testing::resnet18_cifar(), eo);
  ASSERT_EQ(dev->settings().size(), 4u);
  const auto maxn = dev->settings()[0], m15 = dev->settings()[1];
  EXPECT_EQ(dev->current(), maxn);
  const auto top = dev->expected(dev->effective_freq_hz(32), 32);
  dev->pin(m15);
  EXPECT_EQ(dev->current(), m15);
  EXPECT_DOUBLE_EQ(dev->effective_freq_hz(32), 408e6);
  const auto low = dev->expected(dev->effective_freq_hz(32), 32);
  // 3 of 8 TPCs at 408 instead of 1300.5 MHz: compute ~8.5x slower, and far less power.
  EXPECT_GT(low.time_per_batch_s, 4 * top.time_per_batch_s);
  EXPECT_LT(low.power_mean_w, 0.6 * top.power_mean_w);
  const WorkloadPhysics phys(spec, testing::resnet18_cifar());
  const auto caps = traces::knob_caps(dev->knob(), m15);
  EXPECT_DOUBLE_EQ(low.time_per_batch_s, phys.batch(caps, 32).time_s);
  EXPECT_THROW(dev->pin({12, 2201.6e6, 1300.5e6, 3200e6, 3}), Error) << "not a mode of the board";
  dev->restore();
  EXPECT_EQ(dev->current(), maxn);
  // At the board's maxima the mode physics is the frequency physics, bit for bit.
  EXPECT_DOUBLE_EQ(phys.batch(traces::mode_maxima(spec), 16).time_s, phys.batch(1300.5e6, 16).time_s);
}

TEST(EmulatedModes, TheProfilerWalksModesTimesBatchSizes) {
  const auto spec = traces::find_device("jetson-agx-orin");
  EmulatorOptions eo;
  eo.knob = traces::KnobKind::power_mode;
  eo.sensor_noise_rel = 0;
  eo.time_jitter_rel = 0;
  auto dev = EmulatedJetson::with_workload(spec, testing::resnet18_cifar(), eo);
  VirtualExecutor exec(*dev);
  ProfileOptions o;
  o.workload = "resnet18";
  o.batch_sizes = {8, 32};
  o.measured_batches = 3;
  o.warmup_batches = 1;
  const auto rep = run_profile(*dev, exec, o);
  EXPECT_EQ(rep.table.knob.kind, traces::KnobKind::power_mode);
  ASSERT_EQ(rep.table.points.size(), 8u);
  for (const auto& p : rep.table.points) {
    ASSERT_EQ(p.status, "ok");
    ASSERT_NE(traces::find_mode(spec, p.knob), nullptr);
    const auto caps = traces::knob_caps(rep.table.knob, p.knob);
    const WorkloadPhysics phys(spec, testing::resnet18_cifar());
    EXPECT_NEAR(p.time_per_batch_mean_s, phys.batch(caps, p.batch_size).time_s, 1e-12);
  }
  EXPECT_EQ(dev->current(), dev->settings()[0]) << "restored to the first mode after profiling";
  o.mode = "walk";
  o.power_limit_w = 30;
  EXPECT_THROW(run_profile(*dev, exec, o), Error) << "the walk follows one knob";
  o.mode = "grid";
  o.power_limit_w = 0;
  o.settings = {dev->settings()[2]};
  EXPECT_EQ(run_profile(*dev, exec, o).table.points.size(), 2u);
}

TEST(EmulatedModes, HardwareInTheLoopProfileOverModes) {
  test::TempDir tmp;
  const auto spec = traces::find_device("jetson-agx-orin");
  const auto workload = testing::resnet18_cifar();
  EmulatorOptions eo;
  eo.sensor_noise_rel = 0.01;
  auto emu = EmulatedJetson::with_workload(spec, workload, eo);
  LiveTreeOptions lo;
  lo.time_scale = 0.2;  // MAXN b=32 takes 94 ms of device time: 19 ms of wall time per mini-batch
  lo.tick_s = 0.003;
  LiveEmulatedTree tree(tmp.path() / "board", std::move(emu), nullptr, lo);
  tree.start();
  JetsonSysfsOptions so;
  so.root = tree.root();
  so.state_file = tmp.path() / "state";
  PowerModeOptions po;
  po.board = spec;
  po.nvpmodel = tree.root() / "pacer-emulator/nvpmodel";
  PowerModeDevice dev(std::make_unique<JetsonSysfsDevice>(so), po);
  // Timed by the tree's answers (a fake clock, tests/hw/tree_clock.hpp): a busy machine cannot
  // stretch the recorded times.
  test::TreeClockExecutor exec(tree.root() / "pacer-emulator", workload.name);
  ProfileOptions o;
  o.workload = workload.name;
  o.batch_sizes = {32};
  o.settings = {dev.settings()[0], dev.settings()[1]};
  o.warmup_batches = 1;
  o.measured_batches = 16;
  o.min_power_samples = 5;
  // A pause of the tree's update thread (this busy process's) is no frozen sensor: check off here.
  o.sensor_frozen_s = 0;
  const auto rep = run_profile(dev, exec, o);
  tree.stop();
  ASSERT_EQ(rep.table.points.size(), 2u);
  const WorkloadPhysics phys(spec, workload);
  for (const auto& p : rep.table.points) {
    ASSERT_EQ(p.status, "ok") << p.status;
    const double t = phys.batch(traces::knob_caps(rep.table.knob, p.knob), 32).time_s;
    // The tree answered the model's time under the caps of the mode the backend put in force.
    EXPECT_NEAR(p.time_per_batch_mean_s, t, 1e-6 * t) << rep.table.knob.format(p.knob);
    EXPECT_EQ(p.board_model, spec.display_name) << "the power device's board";
  }
  EXPECT_EQ(Nvpmodel(po.nvpmodel).query().id, 0) << "the boot mode is back";
}

}  // namespace
}  // namespace pacer::hw
