// Hardware in the loop: the real sysfs backend and the real profiler against a live emulated tree.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "hw/emulator/emulated_tree.hpp"
#include "hw/executor.hpp"
#include "hw/jetson/jetson_sysfs.hpp"
#include "hw/profiler.hpp"
#include "tests/hw/helpers.hpp"
#include "tests/hw/tree_clock.hpp"
#include "tests/support/workloads.hpp"
#include "traces/catalog/catalog.hpp"

namespace pacer::hw {
namespace {

TEST(HardwareInTheLoop, SysfsBackendAgreesWithTheEmulator) {
  test::TempDir tmp;
  const auto spec = traces::find_device("jetson-nano");
  const auto workload = testing::resnet18_cifar();
  EmulatorOptions eo;
  eo.sensor_noise_rel = 0.01;
  auto emu = EmulatedJetson::with_workload(spec, workload, eo);
  const EmulatedJetson& model = *emu;  // kept alive by the tree
  LiveTreeOptions lo;
  lo.time_scale = 0.04;
  lo.tick_s = 0.003;
  LiveEmulatedTree tree(tmp.path() / "board", std::move(emu), nullptr, lo);
  tree.start();

  JetsonSysfsOptions so;
  so.root = tree.root();
  so.state_file = tmp.path() / "state";
  JetsonSysfsDevice dev(so);
  EXPECT_TRUE(dev.emulated());
  EXPECT_EQ(dev.power_rails(), (std::vector<std::string>{"POM_5V_IN", "gpu:POM_5V_GPU"}));
  // Timed by the tree's answers (a fake clock, tests/hw/tree_clock.hpp): a busy machine cannot
  // stretch the recorded times; the mini-batches still sleep on the tree's schedule.
  test::TreeClockExecutor exec(tree.root() / "pacer-emulator", workload.name);
  EXPECT_DOUBLE_EQ(exec.time_scale(), 0.04);

  ProfileOptions o;
  o.workload = workload.name;
  o.batch_sizes = {16, 32};
  o.knob_values = {460.8e6, 921.6e6};
  o.warmup_batches = 1;
  o.measured_batches = 24;
  o.sensor_rate_hz = 10;
  // The power figures rest on a count of readings, not on how many a busy machine took in 24
  // mini-batches: a point runs until 200 of them (each a 1 % noisy draw of the phase it met).
  o.min_power_samples = 200;
  // The tree's update thread is a thread of this process: on a busy machine it may pause 0.2 s of
  // wall time, 5 s of device time at this scale, which the frozen-sensor check would take for a
  // stopped INA3221. That check is tested by SensorFaults.* (test_faults.cpp); off here.
  o.sensor_frozen_s = 0;
  const auto wall0 = std::chrono::steady_clock::now();
  const auto rep = run_profile(dev, exec, o);
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  tree.stop();
  // The executor slept: the mini-batches took at least their scheduled time (more on a busy machine).
  EXPECT_GE(wall_s, exec.scheduled_s() * (1 - 1e-9));
  EXPECT_EQ(tree.violations(), 0) << "the backend wrote min_freq above max_freq";
  ASSERT_EQ(rep.table.points.size(), 4u);
  EXPECT_TRUE(rep.table.emulated);
  EXPECT_FALSE(rep.table.virtual_time);
  for (const auto& p : rep.table.points) {
    ASSERT_EQ(p.status, "ok") << p.status;
    const auto m = model.expected(p.knob[0], p.batch_size);
    // The tree answered the model's time for the clock the backend pinned (min_freq/max_freq).
    EXPECT_NEAR(p.time_per_batch_mean_s, m.time_per_batch_s, 1e-6 * m.time_per_batch_s)
        << p.knob[0] << " b=" << p.batch_size;
    // The sensor files carry the model's power phases (the peak for the compute share of every
    // mini-batch, the rest at the level that keeps the mean; mW integers, 1% noise): the sampled
    // peak is the model's peak (5 % is 5 sigma of the noise: the largest of a few hundred draws
    // stays inside). The sampled mean lies between the two levels; where between depends on which
    // phases the readings met, and a busy machine that pauses the tree's thread holds one phase on
    // the files for a while, so its agreement with the model's mean is not checked here.
    EXPECT_NEAR(p.power_peak_w, m.power_peak_w, 0.05 * m.power_peak_w) << p.knob[0] << " b=" << p.batch_size;
    const double share = std::clamp(model.options().compute_phase_share, 0.05, 1.0);
    const double low =
        share < 1 ? std::max(0.0, (m.power_mean_w - share * m.power_peak_w) / (1 - share)) : m.power_mean_w;
    EXPECT_GE(p.power_mean_w, 0.95 * low) << p.knob[0] << " b=" << p.batch_size;
    EXPECT_LE(p.power_mean_w, 1.05 * m.power_peak_w) << p.knob[0] << " b=" << p.batch_size;
  }
  // The profiler restored the frequency range of the boot tree.
  EXPECT_EQ(test::slurp(tree.root() / spec.devfreq_path / "min_freq"), "76800000");
  EXPECT_EQ(test::slurp(tree.root() / spec.devfreq_path / "max_freq"), "921600000");
}

}  // namespace
}  // namespace pacer::hw
