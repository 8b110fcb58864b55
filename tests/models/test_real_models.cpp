// Models on real boards: V(f) chosen per device by cross-validation, the predictions CSV, and the
// planner and calibration on the real LoudVA grids (data/jetson/loudva).
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <sstream>

#include "models/calibrate.hpp"
#include "models/planner.hpp"
#include "test_calib_fixtures.hpp"
#include "traces/catalog/catalog.hpp"
#include "traces/import/loudva.hpp"

namespace pacer::models {
namespace {

const std::filesystem::path kLoudva = std::filesystem::path(PACER_SOURCE_DIR) / "data" / "jetson" / "loudva";

TEST(RealModels, CrossValidationChoosesTheVoltageCurveTheDataFollow) {
  const auto nano = traces::find_device("jetson-nano");
  AnalyticalFitOptions opt;
  opt.voltage_table = nano.voltage_table;
  // Data generated with the catalog's V(f): the catalog curve wins.
  const auto on_table =
      testing::table_from(testing::nano_truth(nano), nano.gpu_freqs_hz, testing::paper_batches(), 0.005);
  std::string why;
  EXPECT_EQ(choose_voltage(on_table.points, opt, 0, &why).voltage, "catalog") << why;
  // Data from a board whose V(f) rises from 300 MHz on, steeply: the computed table misleads and a
  // fitted curve wins.
  auto truth = testing::nano_truth(nano);
  truth.voltage.table.clear();
  truth.voltage.floor_v = 1.0;
  truth.voltage.knee_hz = 300e6;
  truth.voltage.slope_v_per_hz = 1.2e-9;
  const auto off_table = testing::table_from(truth, nano.gpu_freqs_hz, testing::paper_batches(), 0.005);
  const auto chosen = choose_voltage(off_table.points, opt, 0, &why);
  EXPECT_EQ(chosen.voltage, "fit") << why;
  EXPECT_NE(why.find("catalog V(f)"), std::string::npos);
  // Without a table there is nothing to choose.
  EXPECT_EQ(choose_voltage(off_table.points, AnalyticalFitOptions{}, 0).voltage, "auto");
}

TEST(RealModels, PredictionsCsvHasOneRowPerMeasuredPoint) {
  const auto nano = traces::find_device("jetson-nano");
  auto table = testing::table_from(testing::nano_truth(nano), nano.gpu_freqs_hz, testing::paper_batches());
  for (auto& p : table.points) p.power_peak_w = traces::kNaN;  // a source with means only
  CalibrationOptions opt;
  opt.points = 8;
  opt.analytical.voltage_table = nano.voltage_table;
  const auto cal = calibrate(table, &nano, opt);
  const std::string csv = predictions_csv(*cal.model, table.knob, cal.all, cal.used);
  std::istringstream in(csv);
  std::string header, line;
  std::getline(in, header);
  EXPECT_EQ(header.rfind("gpu_freq[Hz],b,used_for_fit,time_per_batch_measured[s],time_per_batch_predicted[s]", 0), 0u);
  int rows = 0, used = 0;
  while (std::getline(in, line)) {
    ++rows;
    std::vector<std::string> f;
    std::stringstream ls(line);
    for (std::string c; std::getline(ls, c, ',');) f.push_back(c);
    if (line.back() == ',') f.push_back("");
    ASSERT_EQ(f.size(), 9u) << line;
    used += f[2] == "1";
    EXPECT_TRUE(f[7].empty() && f[8].empty()) << "peak must be empty without peak readings: " << line;
    // Noise-free data from the model's own form: predicted equals measured closely.
    EXPECT_NEAR(std::stod(f[4]) / std::stod(f[3]), 1.0, 0.02) << line;
  }
  EXPECT_EQ(rows, static_cast<int>(table.points.size()));
  EXPECT_EQ(used, 8);
}

TEST(RealModels, PlannerAndCalibrationOnTheRealAgxXavierGrid) {
  ASSERT_TRUE(std::filesystem::exists(kLoudva / "agx-xavier")) << "no LoudVA data under " << kLoudva;
  traces::loudva::ImportOptions o;
  o.dir = kLoudva / "agx-xavier";
  o.device = traces::find_device("jetson-agx-xavier");
  const auto table = traces::loudva::import_dir(o).profiles.at(0).table;
  CalibrationOptions opt;
  opt.points = 8;
  const auto cal = calibrate(table, &o.device, opt);
  ASSERT_EQ(cal.used.size(), 8u);
  std::set<double> freqs;
  std::set<int> batches;
  for (const auto& p : cal.used) freqs.insert(p.knob[0]), batches.insert(p.batch_size);
  EXPECT_GE(freqs.size(), 3u);
  EXPECT_GE(batches.size(), 3u);
  EXPECT_TRUE(batches.count(1) && batches.count(128)) << "the corners of the b range";
  // Measured with `pacer bench models --real` (docs/models.md): about 8.7 % time, 5.3 % power held out.
  EXPECT_LT(cal.record.metrics.at("time_mape_heldout"), 12.0);
  EXPECT_LT(cal.record.metrics.at("power_mean_mape_heldout"), 8.0);
  EXPECT_EQ(cal.record.metrics.at("heldout_points"), 1772 - 8);
}

TEST(RealModels, NanoSweepWithEightPointsMeetsThePowerGoal) {
  ASSERT_TRUE(std::filesystem::exists(kLoudva / "nano")) << "no LoudVA data under " << kLoudva;
  traces::loudva::ImportOptions o;
  o.dir = kLoudva / "nano";
  o.device = traces::find_device("jetson-nano");
  const auto table = traces::loudva::import_dir(o).profiles.at(0).table;
  CalibrationOptions opt;
  opt.points = 8;
  opt.analytical.voltage_table = o.device.voltage_table;
  const auto cal = calibrate(table, &o.device, opt);
  EXPECT_LE(cal.record.metrics.at("power_mean_mape_heldout"), 3.0);
  EXPECT_LT(cal.record.metrics.at("time_mape_heldout"), 6.0);
  EXPECT_NE(cal.record.settings.at("voltage_choice").find("catalog V(f)"), std::string::npos);
}

}  // namespace
}  // namespace pacer::models
