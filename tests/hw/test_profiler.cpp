// The profiler on the emulated device reproduces the model within the configured noise.
#include <gtest/gtest.h>

#include <cmath>

#include "base/error.hpp"
#include "hw/emulator/emulated.hpp"
#include "hw/executor.hpp"
#include "hw/profiler.hpp"
#include "tests/hw/helpers.hpp"
#include "tests/support/workloads.hpp"
#include "traces/catalog/catalog.hpp"
#include "traces/store/store.hpp"

namespace pacer::hw {
namespace {

struct Bench {
  traces::DeviceSpec spec = traces::find_device("jetson-nano");
  traces::WorkloadInfo workload = testing::resnet8_quarter_fmnist();
  std::unique_ptr<EmulatedJetson> dev;
  std::unique_ptr<VirtualExecutor> exec;
  explicit Bench(EmulatorOptions eo = {}) {
    dev = EmulatedJetson::with_workload(spec, workload, eo);
    exec = std::make_unique<VirtualExecutor>(*dev);
  }
  ProfileOptions options() const {
    ProfileOptions o;
    o.workload = workload.name;
    o.batch_sizes = {8, 32, 128};
    o.warmup_batches = 2;
    o.measured_batches = 20;
    o.device_spec = spec;
    return o;
  }
};

TEST(Profiler, FullGridOnEmulatedNanoMatchesTheModelWithinNoise) {
  EmulatorOptions eo;
  eo.sensor_noise_rel = 0.02;
  eo.time_jitter_rel = 0.01;
  Bench s(eo);
  test::TempDir tmp;
  auto o = s.options();
  o.store = tmp.path() / "campaign.h5";
  o.min_power_samples = 40;  // enough readings that the phase of each sample averages out
  int progress_calls = 0;
  const auto rep = run_profile(*s.dev, *s.exec, o, [&](const auto&, int, int) { ++progress_calls; });
  EXPECT_EQ(rep.grid_points, 12 * 3);
  EXPECT_EQ(rep.measured_points, 36);
  EXPECT_EQ(progress_calls, 36);
  EXPECT_TRUE(rep.table.emulated);
  EXPECT_TRUE(rep.table.virtual_time);
  EXPECT_GT(rep.cost_s, 0);
  for (const auto& p : rep.table.points) {
    ASSERT_EQ(p.status, "ok");
    const auto m = s.dev->expected(p.knob[0], p.batch_size);
    // 20 batches with 1% jitter: the mean is within 4 sigma of the mean (0.9%).
    EXPECT_NEAR(p.time_per_batch_mean_s, m.time_per_batch_s, 0.01 * m.time_per_batch_s)
        << p.knob[0] << " " << p.batch_size;
    EXPECT_NEAR(p.time_per_batch_std_s / m.time_per_batch_s, 0.01, 0.006);
    // Sampled power: mean of peak and low phases with 2% sensor noise, over >= 40 samples.
    EXPECT_NEAR(p.power_mean_w, m.power_mean_w, 0.06 * m.power_mean_w) << p.knob[0] << " " << p.batch_size;
    EXPECT_GE(p.power_samples, 40);
    EXPECT_GT(p.power_peak_w, p.power_mean_w);
    EXPECT_GE(p.samples, 20 * p.batch_size);
    EXPECT_EQ(p.samples % p.batch_size, 0);
  }
  // Written through the store after every point; reading it back gives the same table.
  auto store = traces::Store::open(o.store);
  const auto back = store.read<traces::ProfileTable>(s.workload.name);
  EXPECT_EQ(back.points.size(), 36u);
  EXPECT_TRUE(back.emulated);
  EXPECT_EQ(store.read_device().name, "jetson-nano");

  // Resume: nothing left to measure, the cost is kept.
  Bench again(eo);
  const auto rep2 = run_profile(*again.dev, *again.exec, o);
  EXPECT_EQ(rep2.measured_points, 0);
  EXPECT_EQ(rep2.resumed_points, 36);
  EXPECT_NEAR(rep2.table.profiling_cost_s, rep.cost_s, 1e-9);
}

// What an emulated point measures depends on the point and the seed, not on the points measured
// before it in the same process: a profile resumed after a kill (a new process that skips the
// stored points) measures what an uninterrupted one did, bit for bit. Checked with a held sensor
// value (sensor period) too, whose conversions would otherwise fall at another phase of the point.
TEST(Profiler, AnEmulatedPointDoesNotDependOnThePointsMeasuredBeforeIt) {
  EmulatorOptions eo;
  eo.sensor_period_s = 0.05;
  Bench whole(eo);
  auto o = whole.options();
  o.knob_values = {307.2e6, 921.6e6};
  const auto all = run_profile(*whole.dev, *whole.exec, o).table;
  ASSERT_EQ(all.points.size(), 6u);
  const auto& last = all.points.back();
  Bench alone(eo);
  o.knob_values = {last.knob[0]};
  o.batch_sizes = {last.batch_size};
  const auto one = run_profile(*alone.dev, *alone.exec, o).table;
  ASSERT_EQ(one.points.size(), 1u);
  EXPECT_EQ(one.points[0], last);
  // Another seed is another draw.
  eo.seed = 2;
  Bench other(eo);
  const auto two = run_profile(*other.dev, *other.exec, o).table;
  EXPECT_NE(two.points[0].power_mean_w, last.power_mean_w);
}

TEST(Profiler, ShortBatchesAreMeasuredLongerToGetEnoughPowerSamples) {
  Bench s;
  auto o = s.options();
  o.batch_sizes = {8};
  o.knob_values = {921.6e6};
  o.measured_batches = 2;
  o.sensor_rate_hz = 1;  // the paper's 1 Hz sensor against a few-ms mini-batch
  o.max_extension = 1e6;
  const auto rep = run_profile(*s.dev, *s.exec, o);
  ASSERT_EQ(rep.table.points.size(), 1u);
  EXPECT_EQ(rep.table.points[0].status, "ok");
  EXPECT_GE(rep.table.points[0].power_samples, 3);
  EXPECT_GT(rep.table.points[0].samples, 2 * 8);
  // Capped extension: the point is reported without a power figure rather than with a bad one.
  Bench t;
  o.max_extension = 1;
  const auto rep2 = run_profile(*t.dev, *t.exec, o);
  EXPECT_EQ(rep2.table.points[0].status.rfind("skipped:", 0), 0u) << rep2.table.points[0].status;
  EXPECT_TRUE(std::isnan(rep2.table.points[0].power_mean_w));
}

TEST(Profiler, EfficientWalkFindsTheHighestFeasibleFrequencyPerBatchSize) {
  EmulatorOptions eo;
  eo.sensor_noise_rel = 0;
  eo.time_jitter_rel = 0;
  eo.compute_phase_share = 1.0;  // peak == mean: feasibility is exact
  Bench s(eo);
  auto o = s.options();
  o.mode = "walk";
  o.walk_power = "mean";
  // A cap between the model's powers so every batch size has a different boundary.
  o.power_limit_w = 0.5 * (s.dev->expected(76.8e6, 128).power_mean_w + s.dev->expected(921.6e6, 128).power_mean_w);
  o.watchdog_margin_w = 100;  // no watchdog here
  const auto rep = run_profile(*s.dev, *s.exec, o);
  EXPECT_LT(rep.measured_points, rep.grid_points);
  for (int b : o.batch_sizes) {
    double truth = 0, found = 0;
    for (double f : s.spec.gpu_freqs_hz)
      if (s.dev->expected(f, b).power_mean_w <= o.power_limit_w) truth = f;
    for (const auto& p : rep.table.points)
      if (p.batch_size == b && p.power_mean_w <= o.power_limit_w) found = std::max(found, p.knob[0]);
    EXPECT_EQ(found, truth) << "b=" << b;
  }
}

// A walk under a cap below every setting's power (below the idle power, "5 mW" for 5 W) measured the
// lowest setting of each batch size and returned as if it had profiled (exit 0, no word of the cap):
// now one error naming the lowest power, after the store kept what was measured.
TEST(Profiler, AWalkUnderACapBelowEveryPointIsAnErrorThatKeepsTheMeasuredPoints) {
  EmulatorOptions eo;
  eo.sensor_noise_rel = 0;
  eo.time_jitter_rel = 0;
  eo.compute_phase_share = 1.0;
  Bench s(eo);
  test::TempDir tmp;
  auto o = s.options();
  o.batch_sizes = {8, 32};
  o.mode = "walk";
  o.walk_power = "mean";
  o.power_limit_w = 1.0;
  o.watchdog_margin_w = 100;  // no watchdog here
  o.store = tmp.path() / "w.h5";
  try {
    run_profile(*s.dev, *s.exec, o);
    FAIL() << "a walk with no setting under the cap returned";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("setting of jetson-nano"), std::string::npos) << what;
    EXPECT_NE(what.find("draws at most 1 W (mean power) at any batch size: the lowest measured is "), std::string::npos)
        << what;
    EXPECT_NE(what.find(" at f=76.8 MHz b=8; raise the power limit (the 2 point(s) measured are kept in the store)"),
              std::string::npos)
        << what;
  }
  const auto stored = traces::Store::open(o.store).read<traces::ProfileTable>(o.workload);
  ASSERT_EQ(stored.points.size(), 2u);  // the lowest setting of each batch size
  for (const auto& p : stored.points) EXPECT_EQ(p.knob[0], 76.8e6);
  // With a cap that some batch size meets, the walk is as before: no error.
  o.power_limit_w = s.dev->expected(76.8e6, 8).power_mean_w + 0.01;
  o.store = tmp.path() / "w2.h5";
  EXPECT_NO_THROW(run_profile(*s.dev, *s.exec, o));
}

TEST(Profiler, WatchdogStopsPointsAboveTheCap) {
  EmulatorOptions eo;
  eo.compute_phase_share = 1.0;
  Bench s(eo);
  auto o = s.options();
  o.batch_sizes = {128};
  o.knob_values = {76.8e6, 921.6e6};
  o.power_limit_w = s.dev->expected(76.8e6, 128).power_mean_w + 0.3;
  o.watchdog_margin_w = 0.2;
  o.watchdog_duration_s = 1.0;
  o.measured_batches = 200;
  const auto rep = run_profile(*s.dev, *s.exec, o);
  ASSERT_EQ(rep.table.points.size(), 2u);
  EXPECT_EQ(rep.table.points[0].status, "ok");
  EXPECT_EQ(rep.table.points[1].status.rfind("stopped:", 0), 0u) << rep.table.points[1].status;
  EXPECT_LT(rep.table.points[1].samples, 200 * 128);
  EXPECT_EQ(rep.stopped_points, 1);
  EXPECT_EQ(s.dev->pinned_freq_hz(), s.spec.max_freq_hz());  // restored to the default
}

TEST(Profiler, RefusesABadGridAndAProfileOfAnotherDevice) {
  Bench s;
  auto o = s.options();
  o.knob_values = {900e6};
  EXPECT_THROW(run_profile(*s.dev, *s.exec, o), Error);
  test::TempDir tmp;
  o = s.options();
  o.batch_sizes = {8};
  o.knob_values = {921.6e6};
  o.store = tmp.path() / "c.h5";
  run_profile(*s.dev, *s.exec, o);
  auto tx2 = traces::find_device("jetson-tx2");
  auto other = EmulatedJetson::with_workload(tx2, s.workload);
  VirtualExecutor ex(*other);
  o.device_spec = tx2;
  o.knob_values = {1300.5e6};
  try {
    run_profile(*other, ex, o);
    FAIL();
  } catch (const SettingError& e) {
    EXPECT_EQ(e.option, "profile-name") << e.what();  // the CLI prints it as --profile-name
  }
}

}  // namespace
}  // namespace pacer::hw
