// The verdict of `pacer bench models` comes from the measured rows (the smallest k <= the goal's k
// whose mean errors meet it), never from a hard-coded "met / NOT met" that no measurement backs.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include "experiments/bench/model_bench.hpp"
#include "experiments/report/plot.hpp"

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

// Issue 25: the real section prints every goal line (power, time, coverage, transfer), the k = 4,
// 8, 12 / every-point summary, and with a figure folder draws the k-curve and the planner's points.
// Both LoudVA boards (they are each other's transfer prior and leave-one-board-out scale), few k.
TEST(ModelBench, RealSectionPrintsTheGoalLinesTheSummaryAndDrawsTheKCurve) {
  const std::filesystem::path loudva = std::filesystem::path(PACER_SOURCE_DIR) / "data" / "jetson" / "loudva";
  if (!std::filesystem::exists(loudva / "nano") || !std::filesystem::exists(loudva / "agx-xavier"))
    GTEST_SKIP() << "no LoudVA data under " << loudva;
  pacer::experiments::ModelBenchOptions o;
  o.emulated = o.zeus = false;
  o.real = true;
  o.learned_real = false;
  o.loudva_dir = loudva;
  o.ks = {8};
  o.curve_ks = {4, 8, 12};
  o.coverage_ks = {8};
  o.transfer_ks = {8};
  const auto dir = std::filesystem::temp_directory_path() / ("pacer-model-bench-" + std::to_string(::getpid()));
  o.figure_dir = dir;
  const auto r = pacer::experiments::run_model_bench(o);
  for (const char* board : {"jetson-nano", "jetson-agx-xavier"}) {
    for (const char* what : {" power MAPE at k = 8 within 1 pp", " time MAPE at k = 8 within 1.5 pp",
                             " stated sigma at k = 8 covers held-out points"})
      EXPECT_NE(r.markdown.find(std::string(": ") + board + what), std::string::npos) << board << what;
    EXPECT_NE(r.markdown.find(std::string("| ") + board + " | "), std::string::npos) << "summary row of " << board;
  }
  EXPECT_NE(r.markdown.find("goal PASS: jetson-nano time MAPE at k = 8"), std::string::npos) << r.markdown;
  EXPECT_NE(r.markdown.find("transfer jetson-agx-xavier -> jetson-nano at k = 8 beats"), std::string::npos);
  EXPECT_NE(r.markdown.find("transfer jetson-nano -> jetson-agx-xavier at k = 8 beats"), std::string::npos);
  EXPECT_NE(r.markdown.find("| board | k = 4 | k = 8 | k = 12 | every point (CV) |"), std::string::npos);
  for (const char* board : {"jetson-nano", "jetson-agx-xavier"})
    EXPECT_NE(r.markdown.find(std::string("power sigma's parts (") + board + ", unscaled, noise / jackknife): k = 8: "),
              std::string::npos)
        << board;
  ASSERT_EQ(r.curves.size(), 2u);
  EXPECT_EQ(r.curves[0].planned.size(), 8u);
  EXPECT_EQ(r.curves[0].k, (std::vector<int>{4, 8, 12}));
  for (const char* f : {"models-k-curve.dat", "models-k-curve.gp", "models-planner-points.dat"})
    EXPECT_TRUE(std::filesystem::exists(dir / f)) << f;
  if (!pacer::experiments::gnuplot_path().empty()) EXPECT_TRUE(std::filesystem::exists(dir / "models-k-curve.png"));
  std::filesystem::remove_all(dir);
}
