// `pacer doctor`'s checks (hw/jetson/doctor.hpp) on the emulated trees of every catalog layout: a
// passing tree, one without rails, one whose sysfs is read-only or refuses the writes, one with a
// stale state file, and a root that is not a Jetson.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "base/process.hpp"
#include "hw/emulator/emulated_tree.hpp"
#include "hw/jetson/doctor.hpp"
#include "hw/jetson/restore_guard.hpp"
#include "tests/hw/helpers.hpp"
#include "traces/catalog/catalog.hpp"

namespace pacer::hw {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

const DoctorCheck& find(const DoctorReport& r, const std::string& name) {
  const auto it = std::find_if(r.checks.begin(), r.checks.end(), [&](const DoctorCheck& c) { return c.name == name; });
  if (it == r.checks.end()) throw std::runtime_error("no check named " + name);
  return *it;
}
bool has(const DoctorReport& r, const std::string& name) {
  return std::any_of(r.checks.begin(), r.checks.end(), [&](const DoctorCheck& c) { return c.name == name; });
}

// A tree of `device` under TMP/root, the store folder TMP/store, the state file TMP/state/doctor.
DoctorOptions tree_options(const TempDir& tmp, const traces::DeviceSpec& device, const FakeTreeOptions& fo = {}) {
  write_fake_tree(tmp.path() / "root", device, fo);
  fs::create_directories(tmp.path() / "store");
  DoctorOptions o;
  o.root = tmp.path() / "root";
  o.store_dir = tmp.path() / "store";
  o.state_file = tmp.path() / "state/doctor";
  o.min_free_bytes = 1;
  return o;
}

void make_executable(const fs::path& p) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << "#!/bin/sh\nexit 0\n";
  fs::permissions(p, fs::perms::owner_all);
}

TEST(Doctor, EveryLayoutPasses) {
  for (const auto& d : traces::all_devices()) {
    SCOPED_TRACE(d.name);
    TempDir tmp;
    const auto o = tree_options(tmp, d);
    const auto r = run_doctor(o);
    EXPECT_TRUE(r.jetson);
    EXPECT_TRUE(r.ready()) << format_doctor(r);
    EXPECT_NE(find(r, "board").detail.find(d.display_name), std::string::npos);
    EXPECT_NE(find(r, "gpu devfreq").detail.find(std::to_string(d.gpu_freqs_hz.size()) + " frequencies"),
              std::string::npos)
        << find(r, "gpu devfreq").detail;
    EXPECT_EQ(find(r, "power rails").status, CheckStatus::ok);
    EXPECT_NE(find(r, "power rails").detail.find("(" + d.sensor_layout + ")"), std::string::npos)
        << find(r, "power rails").detail;
    EXPECT_EQ(find(r, "clock control").status, CheckStatus::ok);
    EXPECT_EQ(find(r, "state file").status, CheckStatus::ok);
    EXPECT_FALSE(has(r, "libtorch"));  // not asked for
    EXPECT_NE(format_doctor(r).find("ready: this machine has what a validation needs"), std::string::npos);
  }
}

TEST(Doctor, WritingTheLimitsBackChangesNothing) {
  const auto d = traces::find_device("jetson-nano");
  TempDir tmp;
  const auto o = tree_options(tmp, d);
  const fs::path dir = fake_devfreq_dir(o.root, d);
  const std::string min = test::slurp(dir / "min_freq"), max = test::slurp(dir / "max_freq");
  auto io = std::make_shared<test::KernelSimIo>();
  auto with_io = o;
  with_io.io = io;
  EXPECT_TRUE(run_doctor(with_io).ready());
  ASSERT_EQ(io->log.size(), 2u);
  EXPECT_EQ(test::slurp(dir / "min_freq"), min);
  EXPECT_EQ(test::slurp(dir / "max_freq"), max);
}

TEST(Doctor, WithoutRailsIsMissingUnlessTegrastatsIsThere) {
  const auto d = traces::find_device("jetson-nano");
  TempDir tmp;
  FakeTreeOptions fo;
  fo.sensors = false;
  const auto o = tree_options(tmp, d, fo);
  auto r = run_doctor(o);
  EXPECT_FALSE(r.ready());
  EXPECT_EQ(find(r, "power rails").status, CheckStatus::missing);
  EXPECT_NE(find(r, "power rails").fix.find("tegrastats"), std::string::npos);
  EXPECT_EQ(find(r, "tegrastats").status, CheckStatus::warn);

  make_executable(o.root / "usr/bin/tegrastats");
  r = run_doctor(o);
  EXPECT_TRUE(r.ready()) << format_doctor(r);
  EXPECT_EQ(find(r, "power rails").status, CheckStatus::warn);
  EXPECT_EQ(find(r, "tegrastats").status, CheckStatus::ok);
}

TEST(Doctor, RailThatDoesNotAnswerIsMissing) {
  const auto d = traces::find_device("jetson-nano");
  TempDir tmp;
  const auto o = tree_options(tmp, d);
  for (const auto& f : fake_rail_value_files(o.root, d)) std::ofstream(f) << "not-a-number";
  const auto r = run_doctor(o);
  EXPECT_FALSE(r.ready());
  EXPECT_EQ(find(r, "power rails").status, CheckStatus::missing);
  EXPECT_NE(find(r, "power rails").detail.find("does not answer"), std::string::npos);
}

TEST(Doctor, LimitsAnUnprivilegedUserCannotWriteAreMissing) {
  const auto d = traces::find_device("jetson-agx-xavier");
  TempDir tmp;
  auto o = tree_options(tmp, d);
  auto io = std::make_shared<test::KernelSimIo>();
  io->denied = {"max_freq"};
  o.io = io;
  const auto r = run_doctor(o);
  EXPECT_FALSE(r.ready());
  const auto& c = find(r, "clock control");
  EXPECT_EQ(c.status, CheckStatus::missing);
  EXPECT_NE(c.detail.find("max_freq"), std::string::npos);
  EXPECT_NE(c.fix.find("udev"), std::string::npos);
}

// A read-only sysfs: chmod does not stop root (who runs the suite in CI), so the tree's sys/ is
// bind-mounted read-only, or, where mounting is not allowed, min_freq is made immutable (chattr +i).
TEST(Doctor, ReadOnlyTreeIsMissing) {
  const auto d = traces::find_device("jetson-nano");
  TempDir tmp;
  const auto o = tree_options(tmp, d);
  const fs::path sys = o.root / "sys";
  const fs::path min = fake_devfreq_dir(o.root, d) / "min_freq";
  bool mounted = false, immutable = false;
  if (::mount(sys.c_str(), sys.c_str(), nullptr, MS_BIND, nullptr) == 0) {
    mounted = ::mount(nullptr, sys.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr) == 0;
    if (!mounted) ::umount(sys.c_str());
  }
  if (!mounted) {
    base::RunOptions ro;
    try {
      immutable = base::run_program("chattr", {"+i", min.string()}, ro).exit_code == 0;
    } catch (const Error&) {
    }
  }
  if (!mounted && !immutable) GTEST_SKIP() << "neither a read-only bind mount nor chattr +i is allowed here";
  const auto r = run_doctor(o);
  if (mounted) ::umount(sys.c_str());
  if (immutable) base::run_program("chattr", {"-i", min.string()});
  EXPECT_FALSE(r.ready()) << format_doctor(r);
  const auto& c = find(r, "clock control");
  EXPECT_EQ(c.status, CheckStatus::missing);
  EXPECT_NE(c.detail.find("min_freq"), std::string::npos) << c.detail;
  if (mounted) EXPECT_NE(c.fix.find("read-only"), std::string::npos) << c.fix;
  EXPECT_EQ(find(r, "power rails").status, CheckStatus::ok);  // reading still works
}

TEST(Doctor, StaleStateFileIsMissingAndNamesTheRestore) {
  const auto d = traces::find_device("jetson-nano");
  TempDir tmp;
  const auto o = tree_options(tmp, d);
  const pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ::waitpid(dead, nullptr, 0);
  RestoreState state;
  state.pid = dead;
  state.device = "jetson-nano";
  state.sysfs_root = o.root;
  state.writes = {{fake_devfreq_dir(o.root, d) / "min_freq", "76800000"}};
  write_state_file(o.state_file, state);
  auto r = run_doctor(o);
  EXPECT_FALSE(r.ready());
  auto c = find(r, "state file");
  EXPECT_EQ(c.status, CheckStatus::missing);
  EXPECT_NE(c.detail.find("killed run (pid " + std::to_string(dead)), std::string::npos) << c.detail;
  EXPECT_NE(c.fix.find("pacer restore` on the sysfs root " + o.root.string()), std::string::npos) << c.fix;

  // A run that is alive holds its file: a warning, not a stale file. The holder runs this program
  // (a pacer process is one running pacer's own executable; ctest, the parent, is not one).
  const pid_t holder = ::fork();
  ASSERT_GE(holder, 0);
  if (holder == 0) {
    ::pause();
    ::_exit(0);
  }
  state.pid = holder;
  write_state_file(o.state_file, state);
  r = run_doctor(o);
  ::kill(holder, SIGKILL);
  ::waitpid(holder, nullptr, 0);
  EXPECT_EQ(find(r, "state file").status, CheckStatus::warn);
  EXPECT_TRUE(r.ready());
}

TEST(Doctor, NotAJetson) {
  TempDir tmp;
  DoctorOptions o;
  o.root = tmp.path();
  o.store_dir = tmp.path();
  o.state_file = tmp.path() / "state/doctor";
  o.min_free_bytes = 1;
  const auto r = run_doctor(o);
  EXPECT_FALSE(r.jetson);
  EXPECT_FALSE(r.ready());
  EXPECT_EQ(find(r, "board").status, CheckStatus::missing);
  EXPECT_FALSE(has(r, "clock control"));
  EXPECT_NE(format_doctor(r).find("not a Jetson: emulated and replay only"), std::string::npos);
  EXPECT_EQ(find(r, "store").status, CheckStatus::ok);
}

TEST(Doctor, StoreAndDisk) {
  const auto d = traces::find_device("jetson-nano");
  TempDir tmp;
  auto o = tree_options(tmp, d);
  o.store_dir = tmp.path() / "no-such-folder";
  auto r = run_doctor(o);
  EXPECT_EQ(find(r, "store").status, CheckStatus::missing);
  EXPECT_EQ(find(r, "disk").status, CheckStatus::missing);
  EXPECT_FALSE(r.ready());
  o.store_dir = tmp.path() / "store";
  o.min_free_bytes = 1e30;
  r = run_doctor(o);
  EXPECT_EQ(find(r, "store").status, CheckStatus::ok);
  EXPECT_EQ(find(r, "disk").status, CheckStatus::missing);
  EXPECT_NE(find(r, "disk").fix.find("store folder"), std::string::npos);
}

TEST(Doctor, L4tReleaseAndPrograms) {
  const auto d = traces::find_device("jetson-orin-nano");
  TempDir tmp;
  const auto o = tree_options(tmp, d);
  auto r = run_doctor(o);
  EXPECT_EQ(find(r, "l4t").status, CheckStatus::warn);
  fs::create_directories(o.root / "etc");
  std::ofstream(o.root / "etc/nv_tegra_release")
      << "# R36 (release), REVISION: 3.0, GCID: 36923193, BOARD: generic, EABI: aarch64, DATE: Fri Jul 19 2024\n";
  make_executable(o.root / "usr/sbin/nvpmodel");
  r = run_doctor(o);
  EXPECT_EQ(find(r, "l4t").status, CheckStatus::ok);
  EXPECT_NE(find(r, "l4t").detail.find("L4T R36.3.0"), std::string::npos);
  EXPECT_EQ(find(r, "nvpmodel").status, CheckStatus::ok);
}

TEST(Doctor, TorchLine) {
  TorchInfo t;
  t.linked = true;
  t.version = "2.3.0a0+40ec155e58.nv24.03";
  t.cuda = true;
  t.cuda_devices = 1;
  t.blas_kernels = "SkylakeX";
  const auto back = parse_torch_line("some log line\n" + torch_line(t) + "\n");
  EXPECT_TRUE(back.linked);
  EXPECT_EQ(back.version, t.version);
  EXPECT_TRUE(back.cuda);
  EXPECT_EQ(back.cuda_devices, 1);
  EXPECT_EQ(back.blas_kernels, "SkylakeX");
  // The line of a pacer-train built before it named its BLAS kernels.
  EXPECT_EQ(parse_torch_line("libtorch 1.13.1 cuda=no devices=0").blas_kernels, "unknown");
  const auto none = parse_torch_line("error while loading shared libraries: libtorch_cpu.so");
  EXPECT_FALSE(none.linked);
  EXPECT_NE(none.note.find("libtorch_cpu.so"), std::string::npos);

  TempDir tmp;
  DoctorOptions o;
  o.root = tmp.path();
  o.store_dir = tmp.path();
  o.state_file = tmp.path() / "state/doctor";
  o.min_free_bytes = 1;
  o.torch = none;
  EXPECT_EQ(find(run_doctor(o), "libtorch").status, CheckStatus::missing);
  t.cuda = false;
  o.torch = t;
  EXPECT_EQ(find(run_doctor(o), "libtorch").status, CheckStatus::warn);
}

TEST(Doctor, L4tReleaseParse) {
  EXPECT_EQ(parse_l4t_release("# R32 (release), REVISION: 7.4, GCID: 33514132, BOARD: t210ref, EABI: aarch64\n"),
            "R32.7.4");
  EXPECT_EQ(parse_l4t_release(""), "");
  EXPECT_EQ(parse_l4t_release("R35 4.1"), "");
}

}  // namespace
}  // namespace pacer::hw
