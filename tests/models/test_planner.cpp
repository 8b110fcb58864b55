// The profiling planner: distinct, valid, informative points.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "base/error.hpp"
#include "models/calibrate.hpp"
#include "models/planner.hpp"
#include "test_calib_fixtures.hpp"
#include "traces/catalog/catalog.hpp"

namespace pacer::models {
namespace {

std::vector<PlanPoint> nano_grid() {
  const auto nano = traces::find_device("jetson-nano");
  std::vector<std::vector<double>> settings;
  for (double f : nano.gpu_freqs_hz) settings.push_back({f});
  return grid_points(settings, testing::paper_batches());
}

TEST(PlannerPoints, AreDistinctValidAndIncludeTheCorners) {
  const auto nano = traces::find_device("jetson-nano");
  const auto cands = nano_grid();
  ASSERT_EQ(cands.size(), 72u);
  for (int k : {1, 4, 6, 8, 12, 20, 50}) {
    PlannerOptions opt;
    opt.k = k;
    opt.voltage_table = nano.voltage_table;
    const auto pts = plan_points(cands, opt);
    ASSERT_EQ(pts.size(), static_cast<size_t>(k));
    std::set<std::pair<double, int>> seen;
    for (const auto& p : pts) {
      EXPECT_NE(std::find(cands.begin(), cands.end(), p), cands.end());
      EXPECT_TRUE(seen.insert({p.knob[0], p.batch_size}).second) << "duplicate at k=" << k;
    }
    EXPECT_EQ(pts.front(), (PlanPoint{{921.6e6}, 128}));  // fastest corner first
    if (k >= 4) {
      for (const auto& corner : {PlanPoint{{76.8e6}, 4}, PlanPoint{{921.6e6}, 4}, PlanPoint{{76.8e6}, 128}})
        EXPECT_NE(std::find(pts.begin(), pts.end(), corner), pts.end()) << "k=" << k;
    }
    // Deterministic.
    EXPECT_EQ(plan_points(cands, opt), pts);
  }
}

TEST(PlannerPoints, SpreadOverFrequenciesAndBatchSizesSoTheModelIsIdentifiable) {
  const auto nano = traces::find_device("jetson-nano");
  PlannerOptions opt;
  opt.k = 8;
  opt.voltage_table = nano.voltage_table;
  const auto pts = plan_points(nano_grid(), opt);
  std::set<double> freqs;
  std::set<int> batches;
  for (const auto& p : pts) {
    freqs.insert(p.knob[0]);
    batches.insert(p.batch_size);
  }
  // V(f) has a knee and c(b) a saturation: both need an interior point.
  EXPECT_GE(freqs.size(), 3u);
  EXPECT_GE(batches.size(), 3u);
  // And fitting on exactly these 8 points predicts the other 64 of a noise-free table.
  const auto table = testing::table_from(testing::nano_truth(nano), nano.gpu_freqs_hz, testing::paper_batches());
  std::vector<traces::ProfilePoint> chosen, rest;
  for (const auto& p : table.points)
    (std::find(pts.begin(), pts.end(), PlanPoint{p.knob, p.batch_size}) != pts.end() ? chosen : rest).push_back(p);
  AnalyticalFitOptions fit;
  fit.voltage_table = nano.voltage_table;
  const auto e = mape(*fit_analytical(chosen, fit), rest);
  EXPECT_LT(e.time_mape, 0.05);
  EXPECT_LT(e.power_mean_mape, 0.5);
}

TEST(PlannerPoints, BeatsANaiveDesignOfTheSameSize) {
  // Eight points, six of them at the largest b on the lowest clocks (all on the voltage floor),
  // cannot pin down V(f)'s effect or c(b); the planner's can. Compare held-out errors on a noise-free table.
  const auto nano = traces::find_device("jetson-nano");
  const auto table = testing::table_from(testing::nano_truth(nano), nano.gpu_freqs_hz, testing::paper_batches());
  std::vector<traces::ProfilePoint> naive;
  int at_128 = 0;
  for (const auto& p : table.points)
    if ((p.batch_size == 128 && at_128++ < 6) || (p.batch_size == 4 && p.knob[0] > 900e6) ||
        (p.batch_size == 4 && p.knob[0] < 80e6))
      naive.push_back(p);
  ASSERT_EQ(naive.size(), 8u);
  AnalyticalFitOptions fit;
  fit.voltage_table = nano.voltage_table;
  const auto naive_err = mape(*fit_analytical(naive, fit), table.points);
  CalibrationOptions opt;
  opt.points = 8;
  opt.analytical.voltage_table = nano.voltage_table;
  const auto planned = calibrate(table, &nano, opt);
  const auto planned_err = mape(*planned.model, table.points);
  EXPECT_LT(planned_err.power_mean_mape, naive_err.power_mean_mape);
}

TEST(PlannerPoints, WorksForAPowerLimitKnobAndRejectsBadBudgets) {
  std::vector<std::vector<double>> limits;
  for (double w = 100; w <= 250; w += 25) limits.push_back({w});
  const auto cands = grid_points(limits, {8, 32, 128, 512, 2048});
  PlannerOptions opt;
  opt.knob = traces::KnobSpace::power_limit();
  opt.k = 10;
  const auto pts = plan_points(cands, opt);
  EXPECT_EQ(pts.size(), 10u);
  std::set<std::pair<double, int>> seen;
  for (const auto& p : pts) EXPECT_TRUE(seen.insert({p.knob[0], p.batch_size}).second);
  opt.k = 1000;
  EXPECT_EQ(plan_points(cands, opt).size(), cands.size());
  opt.k = 0;
  EXPECT_THROW(plan_points(cands, opt), Error);
  opt.k = 3;
  EXPECT_THROW(plan_points({}, opt), Error);
}

}  // namespace
}  // namespace pacer::models
