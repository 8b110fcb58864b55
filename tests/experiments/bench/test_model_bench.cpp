// The verdict of `pacer bench models` comes from the measured rows (the smallest k <= the goal's k
// whose mean errors meet it), never from a hard-coded "met / NOT met" that no measurement backs.
#include <gtest/gtest.h>

#include "experiments/bench/model_bench.hpp"

namespace {

using pacer::experiments::goal_met_from;
using pacer::experiments::ModelBenchRow;
using pacer::experiments::ModelGoal;
using pacer::traces::ModelKind;

ModelBenchRow row(const std::string& workload, int k, double time, double mean, double peak) {
  ModelBenchRow r;
  r.section = "emulated";
  r.device = "jetson-nano";
  r.workload = workload;
  r.model = ModelKind::analytical;
  r.k = k;
  r.error.time_mape = time;
  r.error.power_mean_mape = mean;
  r.error.power_peak_mape = peak;
  return r;
}

TEST(ModelBench, GoalVerdictFollowsTheMeasuredRows) {
  const ModelGoal goal;  // power <= 3 %, time <= 5 %, k <= 8
  // Two workloads; the verdict is on their mean. k = 4 misses on peak power (mean of 5.6 and 1),
  // k = 6 meets it, k = 12 meets it too but is above the goal's k.
  std::vector<ModelBenchRow> rows = {row("a", 4, 0.3, 2.0, 5.6), row("b", 4, 0.4, 2.0, 1.0),
                                     row("a", 6, 0.3, 0.4, 1.1), row("b", 6, 0.3, 0.5, 1.0),
                                     row("a", 12, 0.2, 0.3, 0.9), row("b", 12, 0.2, 0.3, 0.9)};
  EXPECT_EQ(goal_met_from(rows, "emulated", "jetson-nano", ModelKind::analytical, goal), 6);
  // A worse time at k = 6: no k within the goal meets it, whatever k = 12 says.
  rows[2].error.time_mape = 19;
  EXPECT_EQ(goal_met_from(rows, "emulated", "jetson-nano", ModelKind::analytical, goal), 0);
  // Another device or model has no rows: no verdict of "met".
  EXPECT_EQ(goal_met_from(rows, "emulated", "jetson-tx2", ModelKind::analytical, goal), 0);
  EXPECT_EQ(goal_met_from(rows, "emulated", "jetson-nano", ModelKind::learned, goal), 0);
  // A stricter goal moves the verdict.
  rows[2].error.time_mape = 0.3;
  ModelGoal strict = goal;
  strict.power_mape = 1.0;
  EXPECT_EQ(goal_met_from(rows, "emulated", "jetson-nano", ModelKind::analytical, strict), 0);
  strict.max_k = 12;
  EXPECT_EQ(goal_met_from(rows, "emulated", "jetson-nano", ModelKind::analytical, strict), 12);
}

}  // namespace
