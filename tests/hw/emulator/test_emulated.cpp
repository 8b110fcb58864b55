// Emulated Jetson physics and non-idealities.
#include <gtest/gtest.h>

#include <cmath>

#include "base/error.hpp"
#include "hw/emulator/emulated.hpp"
#include "tests/support/workloads.hpp"
#include "traces/catalog/catalog.hpp"

namespace pacer::hw {
namespace {

traces::WorkloadInfo resnet18() { return testing::resnet18_cifar(); }

TEST(EmulatedPhysics, NanoVoltageHasItsFloorAndFollowsTheCatalog) {
  const auto nano = traces::find_device("jetson-nano");
  PhysicsParams p;
  EXPECT_DOUBLE_EQ(gpu_voltage_v(nano, p, 76.8e6), 0.81875);
  EXPECT_DOUBLE_EQ(gpu_voltage_v(nano, p, 460.8e6), 0.81875);
  EXPECT_DOUBLE_EQ(gpu_voltage_v(nano, p, 921.6e6), 1.057);
  // TX2 has no public table: the assumed curve, floored.
  const auto tx2 = traces::find_device("jetson-tx2");
  EXPECT_DOUBLE_EQ(gpu_voltage_v(tx2, p, 114.75e6), p.v_floor_v);
  EXPECT_NEAR(gpu_voltage_v(tx2, p, 1300.5e6), p.v0_v + p.v_slope_v_per_ghz * 1.3005, 1e-12);
}

TEST(EmulatedPhysics, NanoResnet18IsPlausibleAndMonotone) {
  const auto nano = traces::find_device("jetson-nano");
  WorkloadPhysics phys(nano, resnet18());
  const auto hi = phys.batch(921.6e6, 64), lo = phys.batch(76.8e6, 64);
  // Power at full clock within the Nano's measured envelope (facts/jetson.md s6: 8 W heavy load, 10 W budget).
  EXPECT_GT(hi.power_mean_w, 5.0);
  EXPECT_LT(hi.power_peak_w, 10.0 + 1e-9);
  EXPECT_GE(hi.power_peak_w, hi.power_mean_w);
  EXPECT_GT(lo.time_s, 5 * hi.time_s);
  // Below the voltage floor, power barely falls with f (facts/jetson.md s6, Seeed article).
  const double drop_floor = phys.batch(460.8e6, 64).power_mean_w - lo.power_mean_w;
  const double drop_top = hi.power_mean_w - phys.batch(537.6e6, 64).power_mean_w;
  EXPECT_LT(drop_floor, drop_top);
  // Time per sample falls with b (occupancy), power rises with b at a fixed f.
  EXPECT_LT(phys.batch(921.6e6, 128).time_s / 128, phys.batch(921.6e6, 4).time_s / 4);
  EXPECT_GT(phys.batch(921.6e6, 128).power_mean_w, phys.batch(921.6e6, 4).power_mean_w);
  // Memory-bound share varies with b.
  const auto small = phys.batch(921.6e6, 4), big = phys.batch(921.6e6, 128);
  EXPECT_NE(small.memory_time_s / small.time_s, big.memory_time_s / big.time_s);
}

TEST(EmulatedJetson, PowerCapThrottlesLikeTheGovernor) {
  const auto nano = traces::find_device("jetson-nano");
  EmulatorOptions eo;
  eo.power_cap_w = 6.0;
  eo.time_jitter_rel = 0;
  auto dev = EmulatedJetson::with_workload(nano, resnet18(), eo);
  dev->pin({921.6e6});
  const double f = dev->effective_freq_hz(64);
  EXPECT_LT(f, 921.6e6);
  EXPECT_LE(dev->expected(f, 64).power_mean_w, 6.0);
  // One step above the governor's choice would break the cap.
  const auto& fs = nano.gpu_freqs_hz;
  const auto it = std::find(fs.begin(), fs.end(), f);
  ASSERT_NE(it + 1, fs.end());
  EXPECT_GT(dev->expected(*(it + 1), 64).power_mean_w, 6.0);
  EXPECT_DOUBLE_EQ(dev->run_batch(64), dev->expected(f, 64).time_per_batch_s);
}

TEST(EmulatedJetson, SensorPeriodHoldsValuesAndNoiseHasTheConfiguredSpread) {
  const auto nano = traces::find_device("jetson-nano");
  EmulatorOptions eo;
  eo.sensor_period_s = 0.5;
  eo.sensor_noise_rel = 0.02;
  auto dev = EmulatedJetson::with_workload(nano, resnet18(), eo);
  dev->pin({921.6e6});
  for (int i = 0; i < 200; ++i) dev->run_batch(64);
  const auto a = dev->power_at(10.01), b = dev->power_at(10.49);
  EXPECT_DOUBLE_EQ(a.total_w, b.total_w);  // same conversion period
  // Many reads over the run: mean and relative spread match the model and the noise setting.
  EmulatorOptions quiet = eo;
  quiet.sensor_period_s = 0;
  quiet.compute_phase_share = 1.0;  // flat power inside a batch isolates the sensor noise
  auto flat = EmulatedJetson::with_workload(nano, resnet18(), quiet);
  flat->pin({921.6e6});
  for (int i = 0; i < 100; ++i) flat->run_batch(64);
  const double expect = flat->expected(921.6e6, 64).power_mean_w;
  double sum = 0, ss = 0;
  const int n = 4000;
  for (int i = 0; i < n; ++i) {
    const double v = flat->power_at(flat->now_s() * i / n).total_w;
    sum += v;
    ss += v * v;
  }
  const double mean = sum / n, sd = std::sqrt(ss / n - mean * mean);
  EXPECT_NEAR(mean, expect, 0.003 * expect);
  EXPECT_NEAR(sd / expect, 0.02, 0.002);
}

TEST(EmulatedJetson, ThermalDriftRaisesPowerOverTime) {
  const auto nano = traces::find_device("jetson-nano");
  EmulatorOptions eo;
  eo.thermal_drift = true;
  eo.sensor_noise_rel = 0;
  eo.compute_phase_share = 1.0;
  auto dev = EmulatedJetson::with_workload(nano, resnet18(), eo);
  dev->pin({921.6e6});
  dev->run_batch(64);
  const double early = dev->power_at(dev->now_s() - 1e-6).total_w;
  for (int i = 0; i < 200; ++i) dev->run_batch(64);
  const double late = dev->power_at(dev->now_s() - 1e-6).total_w;
  EXPECT_GT(dev->temperature_c(), 40.0);
  EXPECT_GT(late, early * 1.01);
}

// Any DeviceModel drives the emulator in place of the default physics.
class FixedModel final : public models::DeviceModel {
 public:
  traces::ModelKind kind() const override { return traces::ModelKind::table; }
  const traces::KnobSpace& knob() const override { return knob_; }
  models::Prediction predict(const std::vector<double>& k, int b) const override {
    return {0.001 * b * 1e9 / k[0], 3.0 + k[0] / 1e9, 3.0 + k[0] / 1e9};
  }
  traces::ModelRecord to_record() const override { return {}; }

 private:
  traces::KnobSpace knob_ = traces::KnobSpace::gpu_frequency();
};

TEST(EmulatedJetson, AcceptsACalibratedModel) {
  const auto nano = traces::find_device("jetson-nano");
  EmulatorOptions eo;
  eo.time_jitter_rel = 0;
  eo.sensor_noise_rel = 0;
  EmulatedJetson dev(nano, std::make_shared<FixedModel>(), eo);
  dev.pin({460.8e6});
  EXPECT_NEAR(dev.run_batch(10), 0.01 * 1e9 / 460.8e6, 1e-12);
  EXPECT_NEAR(dev.power_at(dev.now_s() / 2).total_w, 3.4608, 1e-9);
  EXPECT_THROW(dev.pin({460e6}), Error);
  EXPECT_EQ(dev.power_rails(), (std::vector<std::string>{"POM_5V_IN", "gpu:POM_5V_GPU"}));
}

}  // namespace
}  // namespace pacer::hw
