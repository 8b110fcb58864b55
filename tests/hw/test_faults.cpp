// Sensor and devfreq faults, as a real board shows them, injected by the emulated tree's FaultyIo
// into the unchanged Jetson sysfs backend, sampler and profiler: a rail file that vanishes mid-run,
// garbage readings, a frozen rail, a read that blocks, EBUSY and EACCES on min_freq/max_freq, a
// cur_freq that does not follow. Each has one defined outcome (docs/reliability.md, "Sensor and
// devfreq faults"), and in every case the device ends at the frequency range it had before the run.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "base/error.hpp"
#include "hw/emulator/emulated_tree.hpp"
#include "hw/executor.hpp"
#include "hw/jetson/jetson_sysfs.hpp"
#include "hw/profiler.hpp"
#include "hw/sampler.hpp"
#include "tests/hw/helpers.hpp"
#include "traces/catalog/catalog.hpp"
#include "traces/store/store.hpp"

namespace pacer::hw {
namespace {
namespace fs = std::filesystem;
using test::KernelSimIo;
using test::slurp;
using test::TempDir;

// The kernel of helpers.hpp, plus rail readings that move by a few mW on every read, as a live
// INA3221 does: only a frozen sensor repeats a value for long.
class LiveRailsIo : public KernelSimIo {
 public:
  std::string read(const fs::path& path) const override {
    const std::string v = KernelSimIo::read(path);
    if (path.filename().string().rfind("in_power", 0) != 0) return v;
    return std::to_string(std::stoll(v) + (reads_++ % 5));
  }

 private:
  mutable std::atomic<int64_t> reads_{0};
};

constexpr double kBootMin = 76.8e6, kBootMax = 921.6e6;

struct FaultBench {
  TempDir tmp;
  traces::DeviceSpec spec = traces::find_device("jetson-nano");
  std::shared_ptr<LiveRailsIo> kernel = std::make_shared<LiveRailsIo>();
  std::shared_ptr<FaultyIo> io = std::make_shared<FaultyIo>(kernel);
  fs::path df;
  std::atomic<int> batches{0};
  std::function<void(int)> on_batch;  // called with the batch count before each mini-batch

  FaultBench() {
    FakeTreeOptions fo;
    fo.min_freq_hz = kBootMin;
    fo.max_freq_hz = kBootMax;
    fo.idle_power_w = 5.0;
    write_fake_tree(tmp.path(), spec, fo);
    df = tmp.path() / spec.devfreq_path;
  }
  ~FaultBench() {
    // A read a test left blocked must end before the fixture's files go.
    io->set({});
    for (int i = 0; i < 1000 && io->blocked_reads() > 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  JetsonSysfsOptions device_options() const {
    JetsonSysfsOptions o;
    o.root = tmp.path();
    o.io = io;
    o.state_file = state_file();
    o.verify_timeout_s = 0.05;
    o.signal_restore = false;
    o.busy_retry = {5, 0.001};
    return o;
  }
  fs::path state_file() const { return tmp.path() / "pacer.state"; }
  fs::path store() const { return tmp.path() / "faults.h5"; }
  FunctionExecutor executor(double batch_s = 0.002) {
    FunctionExecutor::Hooks h;
    h.kind = "sleep";
    h.step = [this, batch_s] {
      if (on_batch) on_batch(batches.load());
      ++batches;
      std::this_thread::sleep_for(std::chrono::duration<double>(batch_s));
    };
    return FunctionExecutor(h);
  }
  ProfileOptions options(std::vector<double> freqs) const {
    ProfileOptions o;
    o.workload = "cnn@1x28x28";
    o.batch_sizes = {8};
    o.knob_values = std::move(freqs);
    o.warmup_batches = 1;
    o.measured_batches = 10;
    o.sensor_rate_hz = 500;
    o.min_power_samples = 3;
    // A hang guard where reads return (a busy machine may hold the sampler's thread off the CPU
    // for a while); the blocked-read test sets 0.2 s, which its read, blocked for good, always meets.
    o.sensor_read_timeout_s = 30;
    o.sensor_frozen_s = 0.15;
    o.store = store();
    return o;
  }
  void expect_boot_range() const {
    EXPECT_EQ(slurp(df / "min_freq"), "76800000");
    EXPECT_EQ(slurp(df / "max_freq"), "921600000");
    EXPECT_FALSE(fs::exists(state_file())) << "the device was restored, its state file must be gone";
  }
  traces::ProfileTable stored() const { return traces::Store::open(store()).read<traces::ProfileTable>("cnn@1x28x28"); }
};

// Runs the profile and returns the Error message it must end with.
std::string profile_error(FaultBench& b, const ProfileOptions& o, const ProgressFn& progress = {}) {
  JetsonSysfsDevice dev(b.device_options());
  auto exec = b.executor();
  try {
    run_profile(dev, exec, o, progress);
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "the profile should have stopped with an Error";
  return "";
}

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

// ---------------------------------------------------------------------------------------------
// Power rails.

TEST(RailReadings, GarbageAndImplausibleValuesAreSensorErrorsAndTheIdleOffsetIsZero) {
  FaultBench b;
  const auto rails = select_rails(discover_rails(b.tmp.path(), real_sysfs_io()));
  const PowerRail total = rails.total.at(0);
  ASSERT_EQ(total.name, "POM_5V_IN");
  auto reading = [&](const std::string& content) {
    SysfsFaults f;
    f.rail = SysfsFaults::Rail::garbage;
    f.garbage = content;
    b.io->set(f);
    return read_rail_w(total, *b.io);
  };
  EXPECT_DOUBLE_EQ(reading("4999"), 4.999);
  EXPECT_DOUBLE_EQ(reading("-30"), 0.0);  // shunt offset of an idle rail
  for (const std::string bad : {"not-a-number", "", "12abc", "-5000", "2000000", "99999999999999999999999"}) {
    try {
      reading(bad);
      ADD_FAILURE() << "'" << bad << "' was accepted";
    } catch (const SensorError& e) {
      EXPECT_EQ(e.fault, SensorFault::garbage) << bad;
      EXPECT_TRUE(contains(e.what(), "POM_5V_IN")) << e.what();
      EXPECT_TRUE(contains(e.what(), "in_power0_input")) << e.what();
      EXPECT_TRUE(contains(e.what(), "garbage")) << e.what();
    }
  }
  SysfsFaults vanish;
  vanish.rail = SysfsFaults::Rail::vanish;
  b.io->set(vanish);
  try {
    read_rail_w(total, *b.io);
    ADD_FAILURE() << "a vanished rail was read";
  } catch (const SensorError& e) {
    EXPECT_EQ(e.fault, SensorFault::missing);
    EXPECT_TRUE(contains(e.what(), "disappeared")) << e.what();
  }
}

TEST(SensorFaults, RailThatVanishesMidRunStopsTheRunKeepsMeasuredPointsAndRestores) {
  FaultBench b;
  auto o = b.options({153.6e6, 230.4e6, 307.2e6});
  // Mid-point: the rail files go before the 5th mini-batch of the second point (after its warm-up).
  std::atomic<int> second_point_from{-1};
  b.on_batch = [&](int n) {
    if (second_point_from >= 0 && n == second_point_from + 1 + 4) {
      SysfsFaults f;
      f.rail = SysfsFaults::Rail::vanish;
      b.io->set(f);
    }
  };
  const std::string msg = profile_error(b, o, [&](const auto&, int done, int) {
    if (done == 1) second_point_from = b.batches.load();
  });
  EXPECT_TRUE(contains(msg, "power sensor lost")) << msg;
  EXPECT_TRUE(contains(msg, "in_power0_input")) << msg;
  EXPECT_TRUE(contains(msg, "restored")) << msg;
  EXPECT_TRUE(contains(msg, "rerun to resume")) << msg;
  EXPECT_EQ(std::count(msg.begin(), msg.end(), '\n'), 0) << "one line";
  b.expect_boot_range();
  // The first point was measured before the fault; nothing measured with a vanished rail is kept.
  const auto t = b.stored();
  ASSERT_GE(t.points.size(), 1u);
  EXPECT_NE(t.find({153.6e6}, 8), nullptr);
  EXPECT_EQ(t.find({307.2e6}, 8), nullptr);
  for (const auto& p : t.points) EXPECT_EQ(p.status, "ok");

  // Once the sensor is back, a rerun resumes and completes.
  b.io->set({});
  b.on_batch = nullptr;
  JetsonSysfsDevice dev(b.device_options());
  auto exec = b.executor();
  const auto rep = run_profile(dev, exec, o);
  EXPECT_EQ(rep.resumed_points, static_cast<int>(t.points.size()));
  ASSERT_EQ(rep.table.points.size(), 3u);
  for (const auto& p : rep.table.points) EXPECT_EQ(p.status, "ok");
}

TEST(SensorFaults, GarbageReadingsSkipThePointWithTheReasonAndARerunMeasuresItAgain) {
  for (const std::string garbage : {"not-a-number", "-5000", "99999999999999"}) {
    FaultBench b;
    SysfsFaults f;
    f.rail = SysfsFaults::Rail::garbage;
    f.garbage = garbage;
    b.io->set(f);
    auto o = b.options({153.6e6, 230.4e6});
    ProfileReport rep;
    {
      JetsonSysfsDevice dev(b.device_options());
      auto exec = b.executor();
      // The sensor recovers after the first point.
      rep = run_profile(dev, exec, o, [&](const auto&, int, int) { b.io->set({}); });
    }
    ASSERT_EQ(rep.table.points.size(), 2u);
    const auto& bad = rep.table.points[0];
    EXPECT_EQ(bad.status.rfind("skipped: power sensor returns garbage", 0), 0u) << bad.status;
    EXPECT_TRUE(contains(bad.status, "in_power0_input")) << bad.status;
    EXPECT_TRUE(contains(bad.status, garbage)) << bad.status;
    EXPECT_TRUE(std::isnan(bad.power_mean_w)) << "no power figure from a garbage sensor";
    EXPECT_GT(bad.samples, 0);  // the time per batch was measured
    EXPECT_EQ(rep.table.points[1].status, "ok");
    EXPECT_NEAR(rep.table.points[1].power_mean_w, 5.0, 0.01);
    b.expect_boot_range();

    // The rerun measures the skipped point again (the fault is gone) and keeps the good one.
    JetsonSysfsDevice dev(b.device_options());
    auto exec = b.executor();
    const auto again = run_profile(dev, exec, o);
    EXPECT_EQ(again.resumed_points, 1);
    EXPECT_EQ(again.measured_points, 1);
    ASSERT_EQ(again.table.points.size(), 2u);
    for (const auto& p : again.table.points) EXPECT_EQ(p.status, "ok") << garbage;
  }
}

TEST(SensorFaults, FrozenRailSkipsThePoint) {
  FaultBench b;
  auto o = b.options({153.6e6, 230.4e6});
  o.measured_batches = 60;  // 60 x 5 ms: twice the 0.15 s a value may stay unchanged
  // And at least 250 readings at 500 Hz: the sampler's fixed schedule spreads them over 0.5 s however
  // late its thread runs, so the frozen stretch is long enough on a busy machine too.
  o.min_power_samples = 250;
  SysfsFaults frozen;
  frozen.rail = SysfsFaults::Rail::frozen;
  ProfileReport rep;
  {
    JetsonSysfsDevice dev(b.device_options());
    auto exec = b.executor(0.005);
    // Frozen during the second point only.
    rep = run_profile(dev, exec, o, [&](const auto&, int done, int) { b.io->set(done == 1 ? frozen : SysfsFaults{}); });
  }
  ASSERT_EQ(rep.table.points.size(), 2u);
  EXPECT_EQ(rep.table.points[0].status, "ok") << "live readings move on every read";
  const auto& p = rep.table.points[1];
  EXPECT_EQ(p.status.rfind("skipped: power sensor frozen", 0), 0u) << p.status;
  EXPECT_TRUE(contains(p.status, "POM_5V_IN")) << p.status;
  EXPECT_TRUE(std::isnan(p.power_mean_w));
  b.expect_boot_range();
}

// A point shorter than the frozen limit (here at least 1.5 s against 600 s, so that a busy machine,
// which only lengthens the point, keeps it shorter) whose readings never move for the whole point,
// longer than a live INA3221 can stay still, is a frozen sensor too: measured against the point's
// own length.
TEST(SensorFaults, FrozenRailIsCaughtInAPointShorterThanTheFrozenLimit) {
  FaultBench b;
  auto o = b.options({153.6e6, 230.4e6});
  o.sensor_frozen_s = 600;  // far above the point's length on any machine (the default is 5 s)
  o.measured_batches = 30;  // 30 x 50 ms = 1.5 s per point, at least
  o.sensor_rate_hz = 100;
  // Readings over 1.5 s of the sampler's schedule: beyond the 1.1 s a live sensor stays still.
  o.min_power_samples = 150;
  SysfsFaults frozen;
  frozen.rail = SysfsFaults::Rail::frozen;
  ProfileReport rep;
  {
    JetsonSysfsDevice dev(b.device_options());
    auto exec = b.executor(0.05);
    rep = run_profile(dev, exec, o, [&](const auto&, int done, int) { b.io->set(done == 1 ? frozen : SysfsFaults{}); });
  }
  ASSERT_EQ(rep.table.points.size(), 2u);
  EXPECT_EQ(rep.table.points[0].status, "ok") << "a live sensor in a short point is not frozen";
  const auto& p = rep.table.points[1];
  EXPECT_EQ(p.status.rfind("skipped: power sensor frozen", 0), 0u) << p.status;
  EXPECT_NE(p.status.find("the whole point"), std::string::npos) << p.status;
  EXPECT_TRUE(std::isnan(p.power_mean_w));
  b.expect_boot_range();
}

TEST(SensorFaults, BlockedRailReadStopsTheRunAfterTheTimeoutAndRestores) {
  FaultBench b;
  auto o = b.options({153.6e6, 230.4e6});
  o.sensor_read_timeout_s = 0.2;
  SysfsFaults block;
  block.rail = SysfsFaults::Rail::block;  // blocks until released: longer than any timeout
  const std::string msg = profile_error(b, o, [&](const auto&, int, int) { b.io->set(block); });
  EXPECT_TRUE(contains(msg, "power sensor read blocked for more than 0.2 s")) << msg;
  EXPECT_TRUE(contains(msg, "f=230.4 MHz")) << msg;
  EXPECT_TRUE(contains(msg, "restored")) << msg;
  b.expect_boot_range();
  const auto t = b.stored();
  ASSERT_EQ(t.points.size(), 1u);
  EXPECT_EQ(t.points[0].status, "ok");
  EXPECT_GE(b.io->blocked_reads(), 1) << "the abandoned read is still blocked, and harmless";
}

TEST(PowerSampler, AbandonsAReadBlockedPastTheTimeoutAndKeepsWhatItHad) {
  struct Gate {
    std::mutex mu;
    std::condition_variable cv;
    bool released = false;
    std::atomic<int> calls{0};
  };
  auto gate = std::make_shared<Gate>();  // owned by the reader too: it outlives this test's frame
  auto reader = [gate]() -> PowerReading {
    if (++gate->calls <= 3) return {4.0, traces::kNaN};
    std::unique_lock lock(gate->mu);
    gate->cv.wait(lock, [&] { return gate->released; });
    throw SensorError("released", SensorFault::read_error);
  };
  {
    PowerSampler sampler(reader, SamplerOptions{200.0, 3, 1.0, 0.0, 0.0, 0.1});
    sampler.start();
    while (gate->calls.load() < 4) std::this_thread::yield();
    sampler.stop();  // returns although the read never does
    EXPECT_TRUE(sampler.abandoned());
    EXPECT_EQ(sampler.stats().samples, 3);
    EXPECT_DOUBLE_EQ(sampler.stats().mean_w, 4.0);
  }
  // The detached thread owns its state: releasing it after the sampler is gone is safe
  // (AddressSanitizer checks this in the sanitizer build).
  {
    std::lock_guard lock(gate->mu);
    gate->released = true;
  }
  gate->cv.notify_all();
}

TEST(PowerAccumulator, TracksFailuresByKindAndTheLongestUnchangedStretch) {
  PowerAccumulator acc(3);
  const double values[] = {5.0, 5.1, 5.1, 5.1, 5.2, 5.2};
  for (int i = 0; i < 6; ++i) acc.add(0.5 * i, {values[i], traces::kNaN});
  acc.add_failure(SensorFault::garbage, "g1");
  acc.add_failure(SensorFault::missing, "m1");
  const auto& h = acc.health();
  EXPECT_EQ(h.reads, 8);
  EXPECT_EQ(h.failed, 2);
  EXPECT_EQ(h.garbage, 1);
  EXPECT_EQ(h.missing, 1);
  EXPECT_TRUE(h.last_failed);
  EXPECT_EQ(h.last_fault, SensorFault::missing);
  EXPECT_EQ(h.first_error, "g1");
  EXPECT_EQ(h.last_error, "m1");
  EXPECT_DOUBLE_EQ(h.failed_share(), 0.25);
  EXPECT_DOUBLE_EQ(h.longest_unchanged_s, 1.0);  // 5.1 at t = 0.5, 1.0, 1.5
  EXPECT_DOUBLE_EQ(h.unchanged_w, 5.1);
  acc.add(3.0, {5.3, traces::kNaN});
  EXPECT_FALSE(acc.health().last_failed);
}

// ---------------------------------------------------------------------------------------------
// devfreq.

TEST(DevfreqFaults, TransientEbusyIsRetriedAndThePointIsMeasured) {
  FaultBench b;
  SysfsFaults busy;
  busy.busy_writes = 3;  // fewer than the 5 attempts
  b.io->set(busy);
  ProfileReport rep;
  {
    JetsonSysfsDevice dev(b.device_options());
    auto exec = b.executor();
    rep = run_profile(dev, exec, b.options({230.4e6}));
  }
  EXPECT_EQ(b.io->busy_answers(), 3);
  ASSERT_EQ(rep.table.points.size(), 1u);
  EXPECT_EQ(rep.table.points[0].status, "ok");
  b.expect_boot_range();
}

TEST(DevfreqFaults, EbusyThatOutlastsTheRetriesStopsWithAClearErrorAndRestores) {
  FaultBench b;
  SysfsFaults busy;
  busy.busy_writes = 5;  // every attempt of one write; the restore afterwards goes through
  const std::string msg =
      profile_error(b, b.options({153.6e6, 460.8e6}), [&](const auto&, int, int) { b.io->set(busy); });
  EXPECT_TRUE(contains(msg, "max_freq")) << msg;  // going up: max_freq is written first
  EXPECT_TRUE(contains(msg, "busy")) << msg;
  EXPECT_TRUE(contains(msg, "5 attempts")) << msg;
  EXPECT_TRUE(contains(msg, "rerun")) << msg;
  EXPECT_EQ(b.io->busy_answers(), 5);
  b.expect_boot_range();
  EXPECT_EQ(b.stored().points.size(), 1u);
}

TEST(DevfreqFaults, EbusyThatOutlastsTheRestoreKeepsTheStateFileForPacerRestore) {
  FaultBench b;
  SysfsFaults busy;
  busy.busy_writes = -1;  // the node stays busy: the restore cannot go through either
  const std::string msg =
      profile_error(b, b.options({153.6e6, 460.8e6}), [&](const auto&, int, int) { b.io->set(busy); });
  EXPECT_TRUE(contains(msg, "busy")) << msg;
  ASSERT_TRUE(fs::exists(b.state_file())) << "an unrestored device keeps its state file";
  EXPECT_EQ(slurp(b.df / "max_freq"), "153600000");
  b.io->set({});
  EXPECT_TRUE(contains(restore_from_state_file(b.state_file(), b.tmp.path(), *b.io), "restored"));
  b.expect_boot_range();
}

TEST(DevfreqFaults, PermissionDeniedStopsTheProfileAndRestores) {
  FaultBench b;
  const std::string msg = profile_error(b, b.options({153.6e6, 460.8e6}),
                                        [&](const auto&, int, int) { b.kernel->denied = {"max_freq"}; });
  EXPECT_TRUE(contains(msg, "permission denied")) << msg;
  EXPECT_TRUE(contains(msg, "root")) << msg;
  // max_freq is refused now, but the pinned point left max at 153.6 MHz: the restore writes
  // min, max, min and the refused max stays wrong, so the state file is kept for `pacer restore`.
  ASSERT_TRUE(fs::exists(b.state_file()));
  EXPECT_EQ(slurp(b.df / "max_freq"), "153600000");
  b.kernel->denied.clear();
  EXPECT_TRUE(contains(restore_from_state_file(b.state_file(), b.tmp.path(), *b.io), "restored"));
  b.expect_boot_range();
}

TEST(DevfreqFaults, CurFreqThatDoesNotFollowSkipsThePointNamingBothFrequencies) {
  FaultBench b;
  SysfsFaults stuck;
  stuck.cur_freq_hz = 76.8e6;  // e.g. throttled
  b.io->set(stuck);
  auto o = b.options({230.4e6, 307.2e6});
  ProfileReport rep;
  {
    JetsonSysfsDevice dev(b.device_options());
    auto exec = b.executor();
    rep = run_profile(dev, exec, o, [&](const auto&, int, int) { b.io->set({}); });
  }
  ASSERT_EQ(rep.table.points.size(), 2u);
  const auto& p = rep.table.points[0];
  EXPECT_EQ(p.status.rfind("skipped: cur_freq reads 76.8 MHz but 230.4 MHz was requested", 0), 0u) << p.status;
  EXPECT_TRUE(std::isnan(p.time_per_batch_mean_s)) << "nothing was run at a frequency the GPU does not have";
  EXPECT_EQ(p.samples, 0);
  EXPECT_EQ(rep.table.points[1].status, "ok");
  b.expect_boot_range();
  // A rerun measures it again.
  JetsonSysfsDevice dev(b.device_options());
  auto exec = b.executor();
  const auto again = run_profile(dev, exec, o);
  EXPECT_EQ(again.measured_points, 1);
  for (const auto& q : again.table.points) EXPECT_EQ(q.status, "ok");
}

TEST(DevfreqFaults, SettingNotAppliedCarriesBothFrequencies) {
  FaultBench b;
  SysfsFaults stuck;
  stuck.cur_freq_hz = 153.6e6;
  b.io->set(stuck);
  JetsonSysfsDevice dev(b.device_options());
  try {
    dev.pin({460.8e6});
    FAIL();
  } catch (const SettingNotApplied& e) {
    EXPECT_EQ(e.requested, std::vector<double>{460.8e6});
    EXPECT_EQ(e.actual, std::vector<double>{153.6e6});
  }
}

TEST(SysfsFaults, ParsesTheEmulatorOption) {
  EXPECT_EQ(parse_sysfs_fault("rail-vanish").rail, SysfsFaults::Rail::vanish);
  EXPECT_EQ(parse_sysfs_fault("rail-garbage=-5").garbage, "-5");
  EXPECT_EQ(parse_sysfs_fault("rail-block").rail, SysfsFaults::Rail::block);
  EXPECT_DOUBLE_EQ(parse_sysfs_fault("cur-freq=76.8").cur_freq_hz, 76.8e6);
  EXPECT_EQ(parse_sysfs_fault("none").rail, SysfsFaults::Rail::none);
  EXPECT_THROW(parse_sysfs_fault("rail-melt"), UsageError);
  EXPECT_THROW(parse_sysfs_fault("cur-freq="), UsageError);
}

}  // namespace
}  // namespace pacer::hw
