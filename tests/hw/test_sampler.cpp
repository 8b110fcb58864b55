// Power sampler statistics against known signals.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <mutex>
#include <thread>
#include <vector>

#include "base/error.hpp"
#include "hw/sampler.hpp"

namespace pacer::hw {
namespace {

TEST(PowerAccumulator, RampHasExactTrapezoidEnergyMeanAndPeak) {
  PowerAccumulator acc(3);
  // p(t) = 2 + t W for t = 0 .. 10 s every 0.1 s: the trapezoid is exact for a line.
  for (int i = 0; i <= 100; ++i) acc.add(0.1 * i, {2.0 + 0.1 * i, 1.0});
  const auto s = acc.stats();
  EXPECT_EQ(s.samples, 101);
  EXPECT_NEAR(s.energy_j, 70.0, 1e-9);  // 2*10 + 10^2/2
  EXPECT_NEAR(s.mean_w, 7.0, 1e-9);
  EXPECT_DOUBLE_EQ(s.peak_w, 12.0);
  EXPECT_NEAR(s.duration_s, 10.0, 1e-12);
  EXPECT_NEAR(s.rate_hz, 10.0, 1e-9);
  EXPECT_DOUBLE_EQ(s.gpu_mean_w, 1.0);
}

TEST(PowerAccumulator, SquareWaveEnergyAndWatchdog) {
  PowerAccumulator acc(3, PowerWatchdog(/*limit_w=*/5.0, /*window_s=*/1.0));
  // 1 s at 4 W, 2 s at 8 W, 1 s at 4 W sampled at 100 Hz.
  for (int i = 0; i <= 400; ++i) {
    const double t = 0.01 * i;
    acc.add(t, {(t >= 1.0 && t < 3.0) ? 8.0 : 4.0, traces::kNaN});
  }
  const auto s = acc.stats();
  EXPECT_NEAR(s.energy_j, 4 * 1 + 8 * 2 + 4 * 1, 0.05);  // edges cost one half-interval each
  EXPECT_DOUBLE_EQ(s.peak_w, 8.0);
  // The 1 s window mean passes 5 W once more than a quarter of it is at 8 W: 26 of 100 samples.
  ASSERT_TRUE(acc.watchdog().tripped());
  EXPECT_NEAR(acc.watchdog().trip().at_s, 1.25, 1e-9);
  EXPECT_NEAR(acc.watchdog().trip().mean_w, 4 + 4 * 0.26, 1e-9);
  EXPECT_TRUE(std::isnan(s.gpu_mean_w));
}

// A board whose power swings within every mini-batch: the watchdog goes by the window mean, not by
// a stretch of samples above the limit (which a dip at every mini-batch would end).
TEST(PowerWatchdog, TripsOnASwingingPowerWhoseWindowMeanIsAboveTheLimit) {
  auto run = [](double high_share) {
    PowerWatchdog w(5.8, 0.5);
    for (int i = 0; i < 2000; ++i) {  // 2 s at 1 kHz; mini-batches of 5 ms
      const double t = 0.001 * i;
      if (w.observe(t, (i % 5) < high_share * 5 ? 8.5 : 2.4)) break;
    }
    return w;
  };
  const auto heavy = run(0.6);  // mean 6.06 W
  ASSERT_TRUE(heavy.tripped());
  EXPECT_NEAR(heavy.trip().at_s, 0.499, 0.002);  // one full window after the start
  EXPECT_NEAR(heavy.trip().mean_w, 6.06, 0.02);
  EXPECT_FALSE(run(0.4).tripped());  // mean 4.84 W: peaks above the limit, the window mean under it
  // Off without a window or a limit; never before a full window.
  PowerWatchdog off(5.8, 0);
  EXPECT_FALSE(off.observe(0, 100) || off.observe(10, 100));
  PowerWatchdog early(5.8, 1.0);
  for (int i = 0; i < 99; ++i) EXPECT_FALSE(early.observe(0.01 * i, 100)) << i;
  EXPECT_TRUE(early.observe(0.99, 100));
}

TEST(PowerAccumulator, RefusesAFigureFromTooFewSamples) {
  PowerAccumulator acc(3);
  acc.add(0, {5, traces::kNaN});
  acc.add_failure();
  acc.add(0.1, {6, traces::kNaN});
  EXPECT_EQ(acc.failed(), 1);
  try {
    acc.stats();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("only 2 power samples"), std::string::npos) << e.what();
  }
}

TEST(PowerSampler, CountsFailedReadsAndMatchesWhatTheReaderReturned) {
  std::mutex mu;
  std::vector<double> returned;
  std::atomic<int> calls{0}, failures{0};
  PowerSampler sampler(
      [&] {
        const int n = calls++;
        if (n % 4 == 3) {
          ++failures;
          throw Error("i2c read timed out");
        }
        std::lock_guard lock(mu);
        returned.push_back(1.0 + (n % 7));
        return PowerReading{returned.back(), traces::kNaN};
      },
      SamplerOptions{500.0, 3, 1.0, 0.0});
  sampler.start();
  while (sampler.count() < 20) std::this_thread::yield();
  sampler.stop();
  const auto s = sampler.stats();
  std::lock_guard lock(mu);
  ASSERT_EQ(s.samples, static_cast<int64_t>(returned.size()));
  EXPECT_EQ(s.failed_reads, failures.load());
  EXPECT_GT(s.failed_reads, 0);
  double sum = 0, peak = 0;
  for (double v : returned) {
    sum += v;
    peak = std::max(peak, v);
  }
  EXPECT_NEAR(s.mean_w, sum / static_cast<double>(returned.size()), 1e-12);
  EXPECT_DOUBLE_EQ(s.peak_w, peak);
  // Timestamps are monotone: the series is usable as a trace.
  const auto series = sampler.series();
  for (size_t i = 1; i < series.time_s.size(); ++i) EXPECT_GE(series.time_s[i], series.time_s[i - 1]);
}

// A read that blocks for many sample periods (a slow I2C bus, or the sampling thread kept off the
// CPU by a busy machine) is followed by the next free slot, not by a burst of reads back to back
// that would see one instant and count as many samples (the count sizes a point's projected peak).
// Whatever the machine's speed, at most one read starts within one period after the slow one ends.
TEST(PowerSampler, ASlotMissedIsSkippedNotMadeUpByABurstOfReads) {
  using clock = std::chrono::steady_clock;
  constexpr double kRateHz = 1000;  // 1 ms period
  constexpr auto kPeriod = std::chrono::microseconds(1000);
  std::mutex mu;
  std::vector<clock::time_point> starts;
  clock::time_point slow_end{};
  std::atomic<int> calls{0};
  PowerSampler sampler(
      [&] {
        const auto start = clock::now();
        const int n = calls++;
        if (n == 2) std::this_thread::sleep_for(20 * kPeriod);  // 20 slots missed
        std::lock_guard lock(mu);
        starts.push_back(start);
        if (n == 2) slow_end = clock::now();
        return PowerReading{1.0 + n % 3, traces::kNaN};
      },
      SamplerOptions{kRateHz, 1, 1.0, 0.0});
  sampler.start();
  while (calls.load() < 8) std::this_thread::yield();
  sampler.stop();
  std::lock_guard lock(mu);
  int within_one_period = 0;
  for (const auto& t : starts)
    if (t >= slow_end && t < slow_end + kPeriod) ++within_one_period;
  EXPECT_LE(within_one_period, 1) << "reads made up for the missed slots back to back";
}

TEST(PowerSampler, StopIsPromptAndIdempotent) {
  PowerSampler sampler([] { return PowerReading{1.0, traces::kNaN}; }, SamplerOptions{0.01, 1, 1.0, 0.0});
  sampler.start();  // the next sample would be 100 s away: stop() must not wait for it
  while (sampler.count() < 1) std::this_thread::yield();
  sampler.stop();
  sampler.stop();
  EXPECT_EQ(sampler.count(), 1);
}

}  // namespace
}  // namespace pacer::hw
