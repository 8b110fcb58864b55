// Jetson sysfs backend against fake trees of every catalog layout.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>

#include "base/error.hpp"
#include "hw/emulator/emulated_tree.hpp"
#include "hw/jetson/jetson_sysfs.hpp"
#include "tests/hw/helpers.hpp"
#include "traces/catalog/catalog.hpp"

namespace pacer::hw {
namespace {
namespace fs = std::filesystem;
using test::KernelSimIo;
using test::slurp;
using test::TempDir;

struct Board {
  const char* device;
  std::vector<std::string> total;  // expected rails in the total
  const char* gpu;                 // expected GPU rail, "" for none
};

class SysfsLayouts : public ::testing::TestWithParam<Board> {};

TEST_P(SysfsLayouts, DiscoversGpuNodeAndSelectsRails) {
  const Board b = GetParam();
  const auto spec = traces::find_device(b.device);
  TempDir tmp;
  write_fake_tree(tmp.path(), spec);
  const auto node = discover_gpu_devfreq(tmp.path(), real_sysfs_io());
  EXPECT_EQ(node.of_name, spec.gpu_arch);
  EXPECT_EQ(node.node, spec.devfreq_node);  // the decoy 15340000.vic sorts first and must be skipped
  EXPECT_EQ(node.dir, fs::canonical(tmp.path() / spec.devfreq_path));

  const auto sel = select_rails(discover_rails(tmp.path(), real_sysfs_io()));
  std::vector<std::string> names;
  for (const auto& r : sel.total) names.push_back(r.name);
  EXPECT_EQ(names, b.total);
  EXPECT_EQ(sel.summed, b.total.size() > 1);
  EXPECT_EQ(sel.gpu ? sel.gpu->name : std::string(), std::string(b.gpu));
  for (const auto& r : sel.total) EXPECT_NE(r.name, "NC");

  // Known rail values: the reading must be the total rail, or the sum when there is none.
  std::vector<std::pair<std::string, double>> rails;
  double expected_total = 0;
  int i = 0;
  for (const auto& r : spec.rails) {
    const double w = r.role == "nc" ? 0.0 : 1.0 + 0.5 * i++;
    rails.emplace_back(r.name, w);
  }
  for (const auto& n : b.total)
    for (const auto& [name, w] : rails)
      if (name == n) expected_total += w;
  write_fake_rails(tmp.path(), spec, rails);
  JetsonSysfsOptions o;
  o.root = tmp.path();
  o.state_file = tmp.path() / "state";
  JetsonSysfsDevice dev(o);
  const auto p = dev.read_power();
  // hwmon gives V x I with 1 mA at 5 V: 5 mW resolution per rail.
  EXPECT_NEAR(p.total_w, expected_total, 0.005 * static_cast<double>(b.total.size()));
  if (std::string(b.gpu).empty())
    EXPECT_TRUE(std::isnan(p.gpu_w));
  else
    EXPECT_GT(p.gpu_w, 0.99);
  EXPECT_EQ(dev.settings().size(), spec.gpu_freqs_hz.size());
  EXPECT_FALSE(dev.emulated());
  EXPECT_NEAR(dev.temperature_c(), 30.5, 1e-9);
}

INSTANTIATE_TEST_SUITE_P(
    Catalog, SysfsLayouts,
    ::testing::Values(
        Board{"jetson-nano", {"POM_5V_IN"}, "POM_5V_GPU"}, Board{"jetson-tx2", {"VDD_IN"}, "VDD_SYS_GPU"},
        Board{"jetson-tx2-nx", {"VDD_IN"}, ""}, Board{"jetson-xavier-nx", {"VDD_IN"}, ""},
        Board{"jetson-agx-xavier", {"GPU", "CPU", "SOC", "CV", "VDDRQ", "SYS5V"}, "GPU"},
        Board{"jetson-agx-orin", {"VDD_GPU_SOC", "VDD_CPU_CV", "VIN_SYS_5V0", "VDDQ_VDD2_1V8AO"}, "VDD_GPU_SOC"},
        Board{"jetson-orin-nano", {"VDD_IN"}, ""}),
    [](const auto& info) {
      std::string n = info.param.device;
      for (auto& c : n)
        if (c == '-') c = '_';
      return n;
    });

struct Fixture {
  TempDir tmp;
  traces::DeviceSpec spec = traces::find_device("jetson-nano");
  std::shared_ptr<KernelSimIo> io = std::make_shared<KernelSimIo>();
  fs::path df;
  explicit Fixture(double min_hz = 0, double max_hz = 0) {
    FakeTreeOptions fo;
    fo.min_freq_hz = min_hz;
    fo.max_freq_hz = max_hz;
    write_fake_tree(tmp.path(), spec, fo);
    df = tmp.path() / spec.devfreq_path;
  }
  JetsonSysfsOptions options() const {
    JetsonSysfsOptions o;
    o.root = tmp.path();
    o.io = io;
    o.state_file = tmp.path() / "pacer.state";
    o.verify_timeout_s = 0.05;
    o.signal_restore = false;
    return o;
  }
};

TEST(JetsonSysfs, PinsInKernelSafeOrderBothDirections) {
  Fixture fx(307.2e6, 614.4e6);
  {
    JetsonSysfsDevice dev(fx.options());
    // Up: above the current max, so max must go first or the kernel refuses min > max.
    dev.pin({921.6e6});
    ASSERT_EQ(fx.io->log.size(), 2u);
    EXPECT_EQ(fx.io->log[0].first, "max_freq");
    EXPECT_EQ(slurp(fx.df / "cur_freq"), "921600000");
    // Down: below the current min, so min must go first.
    fx.io->log.clear();
    dev.pin({76.8e6});
    ASSERT_EQ(fx.io->log.size(), 2u);
    EXPECT_EQ(fx.io->log[0].first, "min_freq");
    EXPECT_EQ(dev.current()[0], 76.8e6);
    EXPECT_TRUE(fs::exists(fx.tmp.path() / "pacer.state"));
  }
  // The destructor restored the boot range and removed the state file.
  EXPECT_EQ(slurp(fx.df / "min_freq"), "307200000");
  EXPECT_EQ(slurp(fx.df / "max_freq"), "614400000");
  EXPECT_FALSE(fs::exists(fx.tmp.path() / "pacer.state"));
}

TEST(JetsonSysfs, KernelSimRejectsTheWrongOrder) {
  // Guards the fixture itself: a naive min-then-max pin upwards must fail on it.
  Fixture fx(307.2e6, 614.4e6);
  EXPECT_THROW(fx.io->write(fx.df / "min_freq", "921600000"), IoError);
}

TEST(JetsonSysfs, RestoresOnException) {
  Fixture fx(76.8e6, 921.6e6);
  try {
    JetsonSysfsDevice dev(fx.options());
    dev.pin({460.8e6});
    EXPECT_EQ(slurp(fx.df / "max_freq"), "460800000");
    throw std::runtime_error("training crashed");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(slurp(fx.df / "min_freq"), "76800000");
  EXPECT_EQ(slurp(fx.df / "max_freq"), "921600000");
  EXPECT_FALSE(fs::exists(fx.tmp.path() / "pacer.state"));
}

TEST(JetsonSysfs, FrequencyNotInTableIsRefusedBeforeAnyWrite) {
  Fixture fx;
  JetsonSysfsDevice dev(fx.options());
  try {
    dev.pin({900e6});
    FAIL() << "900 MHz is not a Nano frequency";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not in"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fx.io->log.empty());
  EXPECT_FALSE(fs::exists(fx.tmp.path() / "pacer.state"));
}

TEST(JetsonSysfs, PermissionDeniedGivesActionableErrorAndLeavesDeviceAsItWas) {
  Fixture fx(76.8e6, 921.6e6);
  fx.io->denied = {"max_freq"};
  {
    JetsonSysfsDevice dev(fx.options());
    try {
      dev.pin({460.8e6});  // down: min is written (allowed), then max fails
      FAIL() << "EACCES must surface";
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("permission denied"), std::string::npos) << m;
      EXPECT_NE(m.find("root"), std::string::npos) << m;
    }
  }
  EXPECT_EQ(slurp(fx.df / "min_freq"), "76800000");
  EXPECT_EQ(slurp(fx.df / "max_freq"), "921600000");
  EXPECT_FALSE(fs::exists(fx.tmp.path() / "pacer.state"));
}

TEST(JetsonSysfs, CurFreqThatDoesNotFollowIsAnError) {
  Fixture fx;
  auto o = fx.options();
  o.io = nullptr;  // plain files: nobody updates cur_freq, like a throttled or railgated GPU
  JetsonSysfsDevice dev(o);
  try {
    dev.pin({460.8e6});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cur_freq"), std::string::npos) << e.what();
  }
}

TEST(JetsonSysfs, MissingSensorAndMissingGpuAreClearErrors) {
  TempDir tmp;
  const auto spec = traces::find_device("jetson-tx2");
  FakeTreeOptions fo;
  fo.sensors = false;
  write_fake_tree(tmp.path(), spec, fo);
  JetsonSysfsOptions o;
  o.root = tmp.path();
  o.state_file = tmp.path() / "s";
  JetsonSysfsDevice dev(o);
  try {
    dev.read_power();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("power sensor not found"), std::string::npos) << e.what();
  }
  TempDir empty;
  o.root = empty.path();
  try {
    JetsonSysfsDevice none(o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no GPU devfreq node"), std::string::npos) << e.what();
  }
}

// Forks a child that pins the GPU and then waits to be killed with `sig`.
void pin_in_child_and_kill(const Fixture& fx, int sig) {
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(ready[0]);
    // A test run in the background (nohup, `ctest &`) inherits SIGINT ignored; the handler under
    // test hands a signal on to the disposition it found, so the child starts from the defaults.
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    try {
      auto o = fx.options();
      o.io = std::make_shared<KernelSimIo>();
      o.signal_restore = true;
      JetsonSysfsDevice dev(o);
      dev.pin({153.6e6});
      const char c = 'r';
      if (::write(ready[1], &c, 1) != 1) ::_exit(3);
      for (;;) ::pause();
    } catch (...) {
      ::_exit(2);
    }
  }
  ::close(ready[1]);
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1) << "child failed to pin";
  ::close(ready[0]);
  EXPECT_EQ(slurp(fx.df / "max_freq"), "153600000");
  ::kill(pid, sig);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), sig);
}

TEST(JetsonSysfs, RestoresOnSigtermAndSigint) {
  for (int sig : {SIGTERM, SIGINT}) {
    Fixture fx(76.8e6, 921.6e6);
    pin_in_child_and_kill(fx, sig);
    EXPECT_EQ(slurp(fx.df / "min_freq"), "76800000") << strsignal(sig);
    EXPECT_EQ(slurp(fx.df / "max_freq"), "921600000") << strsignal(sig);
    EXPECT_FALSE(fs::exists(fx.tmp.path() / "pacer.state")) << strsignal(sig);
  }
}

TEST(JetsonSysfs, CrashLeavesStateFileThatRestoreAndNextRunReplay) {
  {
    Fixture fx(76.8e6, 921.6e6);
    pin_in_child_and_kill(fx, SIGKILL);  // no handler runs: the state file is the only record
    ASSERT_TRUE(fs::exists(fx.tmp.path() / "pacer.state"));
    EXPECT_EQ(slurp(fx.df / "max_freq"), "153600000");
    const auto msg = restore_from_state_file(fx.tmp.path() / "pacer.state", fx.tmp.path(), *fx.io);
    EXPECT_NE(msg.find("restored"), std::string::npos);
    EXPECT_EQ(slurp(fx.df / "min_freq"), "76800000");
    EXPECT_EQ(slurp(fx.df / "max_freq"), "921600000");
    EXPECT_FALSE(fs::exists(fx.tmp.path() / "pacer.state"));
  }
  {
    Fixture fx(230.4e6, 768e6);
    pin_in_child_and_kill(fx, SIGKILL);
    JetsonSysfsDevice next(fx.options());  // the next run restores before anything else
    EXPECT_EQ(slurp(fx.df / "min_freq"), "230400000");
    EXPECT_EQ(slurp(fx.df / "max_freq"), "768000000");
    EXPECT_FALSE(fs::exists(fx.tmp.path() / "pacer.state"));
  }
}

TEST(JetsonSysfs, RefusesAStateFileOfALiveProcess) {
  Fixture fx;
  // A live process running this program (a pacer process: the same executable) holds the state.
  const pid_t holder = ::fork();
  ASSERT_GE(holder, 0);
  if (holder == 0) {
    ::pause();
    ::_exit(0);
  }
  write_state_file(fx.tmp.path() / "pacer.state",
                   {static_cast<long>(holder), "other", {{fx.df / "min_freq", "76800000"}}, {}, {}});
  try {
    JetsonSysfsDevice dev(fx.options());
    ADD_FAILURE() << "the state of a live pacer process was replayed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("still holds"), std::string::npos) << e.what();
  }
  ::kill(holder, SIGKILL);
  ::waitpid(holder, nullptr, 0);
}

// A sysfs whose every file holds one text, as read(2) returns it (no trimming).
class OneTextIo : public SysfsIo {
 public:
  explicit OneTextIo(std::string text) : text_(std::move(text)) {}
  std::string read(const fs::path&) const override { return text_; }

 private:
  std::string text_;
};

// The devfreq/thermal reader (parse_sysfs_int) and the power-rail reader (read_rail_w) read an
// integer the same way: the whole text, blanks around it allowed. "5000abc" used to be 5000 for
// the first and garbage for the second.
TEST(JetsonSysfs, BothIntegerReadersAgreeOnWhatIsAnInteger) {
  PowerRail rail;
  rail.name = "VDD_IN";
  rail.power_file = "/sys/bus/i2c/drivers/ina3221x/6-0040/iio:device0/in_power0_input";
  const fs::path freq_file = "/sys/class/devfreq/57000000.gpu/cur_freq";
  auto rail_mw = [&](const std::string& text) { return read_rail_w(rail, OneTextIo(text)) * 1000; };

  EXPECT_EQ(parse_sysfs_int(" 5000\n", freq_file), 5000);
  EXPECT_DOUBLE_EQ(rail_mw(" 5000\n"), 5000);
  for (const std::string bad : {"5000abc", "abc"}) {
    try {
      parse_sysfs_int(bad, freq_file);
      ADD_FAILURE() << "parse_sysfs_int accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(freq_file.string()), std::string::npos) << e.what();
    }
    try {
      rail_mw(bad);
      ADD_FAILURE() << "read_rail_w accepted '" << bad << "'";
    } catch (const SensorError& e) {
      EXPECT_EQ(e.fault, SensorFault::garbage) << bad;
      EXPECT_NE(std::string(e.what()).find(rail.power_file.string()), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace pacer::hw
