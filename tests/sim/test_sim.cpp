// Replay over seeds, the time-domain run: energy against closed forms, the cap governor, and a
// time-varying cap with re-selection and progress accounting.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "base/error.hpp"
#include "sim/replay.hpp"
#include "sim/timeline.hpp"

namespace pacer::sim {
namespace {

// t(f, b) = b * 1e8 / f * 0.01 s; peak = 1 + 2 * f / 1e8 + b / 8 W; mean = 0.8 * peak.
class ToyModel : public models::DeviceModel {
 public:
  traces::ModelKind kind() const override { return traces::ModelKind::table; }
  const traces::KnobSpace& knob() const override { return knob_; }
  models::Prediction predict(const std::vector<double>& k, int b) const override {
    const double peak = 1 + 2 * k[0] / 1e8 + b / 8.0;
    return {b * 1e8 / k[0] * 0.01, with_peak_ ? peak : traces::kNaN, 0.8 * peak};
  }
  traces::ModelRecord to_record() const override { return {}; }
  bool with_peak_ = true;

 private:
  traces::KnobSpace knob_ = traces::KnobSpace::gpu_frequency();
};

const std::vector<std::vector<double>> kFreqs = {{1e8}, {2e8}, {3e8}, {4e8}};

traces::RelationSet target() {
  traces::RelationSet s;
  s.name = "toy-target";
  s.runs = {{8, 0, true, 800, 0}, {8, 1, true, 1200, 0}, {8, 2, false, 5000, 5000}, {16, 0, true, 1600, 0}};
  return s;
}

TEST(Replay, DistributionOverSeeds) {
  const PointCost c{0.5, 4.0, 6.0};
  const auto r = replay(c, 8, target());
  EXPECT_EQ(r.seeds_total, 3);
  EXPECT_EQ(r.seeds_reached, 2);
  ASSERT_EQ(r.seeds.size(), 3u);
  EXPECT_DOUBLE_EQ(r.seeds[0].time_s, 50.0);  // 800 / 8 batches x 0.5 s
  EXPECT_DOUBLE_EQ(r.seeds[1].time_s, 75.0);
  EXPECT_FALSE(r.seeds[2].reached);
  EXPECT_DOUBLE_EQ(r.time_mean_s, 62.5);
  EXPECT_NEAR(r.time_std_s, std::sqrt(2 * 12.5 * 12.5), 1e-12);
  EXPECT_DOUBLE_EQ(r.energy_mean_j, 250.0);  // mean power, not peak
  // From a model: the same numbers through DeviceModel::predict.
  const ToyModel m;
  const auto rm = replay(m, {2e8}, 8, target());
  EXPECT_DOUBLE_EQ(rm.time_mean_s, (800 + 1200) / 2.0 / 8 * 0.04);
}

// A batch size that the relation never ran (a relation and a profile recorded at different batch
// sizes) is an error naming the batch sizes, not a silent NaN that spreads into every table.
TEST(Replay, BatchSizeMissingFromTheRelationIsAnError) {
  try {
    replay(PointCost{0.5, 4.0, 6.0}, 64, target());
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("batch size 64"), std::string::npos) << m;
    EXPECT_NE(m.find("it has 8"), std::string::npos) << m;
  }
}

TEST(TableModel, AnswersProfiledPointsAndRejectsOthers) {
  traces::ProfileTable t;
  t.workload = "w";
  t.points.push_back({});
  t.points[0].knob = {1e8};
  t.points[0].batch_size = 4;
  t.points[0].time_per_batch_mean_s = 0.3;
  t.points[0].power_mean_w = 2.0;
  const TableModel m(t);
  EXPECT_DOUBLE_EQ(m.predict({1e8}, 4).time_per_batch_s, 0.3);
  EXPECT_THROW(m.predict({2e8}, 4), Error);
  EXPECT_EQ(knob_settings(t).size(), 1u);
}

RunInput fixed(const Choice& c, std::vector<CapStep> caps = {}) {
  RunInput in;
  in.knob_settings = kFreqs;
  in.samples_to_target = {{8, 800}, {16, 1600}};
  in.caps = std::move(caps);
  in.select = [c](double) { return std::optional<Choice>(c); };
  return in;
}

TEST(Timeline, EnergyMatchesClosedFormWithConstantPower) {
  ToyModel m;
  m.with_peak_ = false;  // constant power within a batch: P = 0.8 * (1 + 4 + 1) = 4.8 W
  RunOptions o;
  o.sample_period_s = 0.01;
  const auto r = run(m, fixed({{2e8}, 8}), o);
  ASSERT_TRUE(r.reached);
  EXPECT_EQ(r.batches, 100);
  EXPECT_NEAR(r.time_s, 100 * 0.04, 1e-9);
  EXPECT_NEAR(r.energy_j, 4.8 * 4.0, 1e-9);
  EXPECT_NEAR(r.energy_sampled_j, 4.8 * 4.0, 1e-9);  // constant power: the trapezoid is exact
  EXPECT_NEAR(r.max_true_power_w, 4.8, 1e-12);
  EXPECT_NEAR(static_cast<double>(r.series.time_s.size()), 400, 1);  // 4 s at 100 Hz
  EXPECT_EQ(r.series.freq_hz.front(), 2e8);
}

TEST(Timeline, TwoPhasePowerKeepsTheMeanAndShowsThePeak) {
  const ToyModel m;  // at (2e8, 8): peak 6 W, mean 4.8 W
  RunOptions o;
  o.sample_period_s = 0.0005;
  o.noise_std_w = 0.05;
  const auto r = run(m, fixed({{2e8}, 8}), o);
  EXPECT_NEAR(r.energy_j, 4.8 * 4.0, 1e-9);  // exact integral: mean x time
  EXPECT_NEAR(r.energy_sampled_j, 4.8 * 4.0, 0.02 * 4.8 * 4.0);
  EXPECT_NEAR(r.max_true_power_w, 6.0, 1e-12);
  EXPECT_GT(r.max_measured_power_w, 6.0);  // the sensor noise shows on the trace
}

TEST(Timeline, GovernorNeverExceedsTheCap) {
  const ToyModel m;  // peaks at b=16: 5, 7, 9, 11 W for f = 1..4e8
  for (double cap : {5.0, 7.5, 8.99, 10.0}) {
    RunOptions o;
    o.sample_period_s = 0.001;
    const auto r = run(m, fixed({{4e8}, 16}, {{0, cap}}), o);
    EXPECT_LE(r.max_true_power_w, cap) << cap;
    EXPECT_EQ(r.time_over_cap_s, 0.0) << cap;
    EXPECT_EQ(r.throttled_batches, r.batches) << cap;  // 11 W never fits
    for (double p : r.series.power_w) EXPECT_LE(p, cap);
  }
  RunOptions off;
  off.governor = false;
  const auto r = run(m, fixed({{4e8}, 16}, {{0, 7.5}}), off);
  EXPECT_GT(r.time_over_cap_s, 0.0);
  EXPECT_NEAR(r.max_true_power_w, 11.0, 1e-12);
}

TEST(Timeline, GovernorThrottlesAtOnceWhenTheCapDropsMidBatch) {
  const ToyModel m;
  RunOptions o;
  o.sample_period_s = 0.001;
  RunInput in = fixed({{4e8}, 16}, {{0, 20}, {0.013, 7.5}});  // drops inside the first batch (0.04 s)
  in.select = [](double) { return std::optional<Choice>(Choice{{4e8}, 16}); };
  const auto r = run(m, in, o);
  EXPECT_EQ(r.time_over_cap_s, 0.0);
  EXPECT_EQ(r.reselections, 1);
  for (size_t i = 0; i < r.series.time_s.size(); ++i) {
    if (r.series.time_s[i] >= 0.013) {
      EXPECT_LE(r.series.power_w[i], 7.5);
    }
  }
}

TEST(Timeline, CapScheduleReselectsAndAccountsProgress) {
  // A table model: b=8 takes 1 s at 8 W (mean = peak), b=16 1.5 s... at 4 W under the lower cap.
  traces::ProfileTable t;
  auto add = [&](double f, int b, double time, double p) {
    traces::ProfilePoint pt;
    pt.knob = {f};
    pt.batch_size = b;
    pt.time_per_batch_mean_s = time;
    pt.power_mean_w = p;
    t.points.push_back(pt);
  };
  add(1e8, 8, 2.0, 3.0);
  add(2e8, 8, 1.0, 8.0);
  add(1e8, 16, 3.0, 3.5);
  add(2e8, 16, 1.5, 4.0);
  const TableModel m(t);
  RunInput in;
  in.knob_settings = knob_settings(t);
  in.samples_to_target = {{8, 800}, {16, 3200}};  // 100 batches at b=8, 200 at b=16
  in.caps = {{0, 10}, {10, 5}};
  in.select = [](double cap) { return std::optional<Choice>(cap >= 8 ? Choice{{2e8}, 8} : Choice{{2e8}, 16}); };
  RunOptions o;
  const auto r = run(m, in, o);
  // 10 batches at b=8 (10 % of the samples to target), then 90 % of 200 batches at b=16.
  ASSERT_EQ(r.segments.size(), 2u);
  EXPECT_EQ(r.segments[0].batches, 10);
  EXPECT_NEAR(r.segments[0].progress_end, 0.1, 1e-12);
  EXPECT_EQ(r.segments[1].batches, 180);
  EXPECT_EQ(r.segments[1].requested.batch_size, 16);
  EXPECT_NEAR(r.time_s, 10 + 180 * 1.5, 1e-9);
  EXPECT_NEAR(r.energy_j, 10 * 8.0 + 270 * 4.0, 1e-9);
  EXPECT_EQ(r.reselections, 1);
  EXPECT_EQ(r.time_over_cap_s, 0.0);
}

// Issue 22 item 22: sensor settings outside their ranges are refused naming the setting, before any
// sample is drawn (1e-9 s made 358,822 samples; 1e18 W of noise a meaningless trace); a cap
// schedule that is a folder is named as one.
TEST(SimRunOptions, SensorSettingsOutsideTheirRangesAreRefused) {
  const ToyModel m;
  const auto refused = [&](double period, double noise) -> std::string {
    RunOptions o;
    o.sample_period_s = period;
    o.noise_std_w = noise;
    try {
      run(m, fixed({{2e8}, 8}), o);
    } catch (const SettingError& e) {
      return e.option;
    }
    return "";
  };
  EXPECT_EQ(refused(1e-9, 0), "sample-period");
  EXPECT_EQ(refused(0, 0), "sample-period");
  EXPECT_EQ(refused(7200, 0), "sample-period");
  EXPECT_EQ(refused(std::nan(""), 0), "sample-period");
  EXPECT_EQ(refused(0.1, 1e18), "noise");
  EXPECT_EQ(refused(0.1, -1), "noise");
  EXPECT_EQ(refused(0.1, 0.05), "");
  const auto dir = std::filesystem::temp_directory_path();
  try {
    read_cap_schedule(dir);
    ADD_FAILURE() << "a folder was read as a cap schedule";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is a folder"), std::string::npos) << e.what();
  }
}

TEST(CapSchedule, ParsesAndRejectsBadFiles) {
  const auto s = parse_cap_schedule("time_s,cap_w\n0,10\n60,5.5\n", "caps.csv");
  ASSERT_EQ(s.size(), 2u);
  EXPECT_DOUBLE_EQ(cap_at(s, 59.9), 10.0);
  EXPECT_DOUBLE_EQ(cap_at(s, 60), 5.5);
  EXPECT_TRUE(std::isnan(cap_at({}, 1)));
  EXPECT_THROW(parse_cap_schedule("time_s,cap_w\n5,10\n", "x"), Error);       // must start at 0
  EXPECT_THROW(parse_cap_schedule("time_s,cap_w\n0,10\n0,5\n", "x"), Error);  // not increasing
  EXPECT_THROW(parse_cap_schedule("t,c\n0,10\n", "x"), Error);                // wrong header
  EXPECT_THROW(parse_cap_schedule("time_s,cap_w\n0,abc\n", "x"), Error);
}

// Cells with units are read by the option parser's units, not truncated at the unit by stod.
TEST(CapSchedule, CellsWithUnitsParseLikeOptions) {
  const auto s = parse_cap_schedule("time_s,cap_w\n0,7000mW\n2min,5.5W\n1h,0.004kW\n", "caps.csv");
  ASSERT_EQ(s.size(), 3u);
  EXPECT_DOUBLE_EQ(s[0].cap_w, 7.0);
  EXPECT_DOUBLE_EQ(s[1].time_s, 120.0);
  EXPECT_DOUBLE_EQ(s[1].cap_w, 5.5);
  EXPECT_DOUBLE_EQ(s[2].time_s, 3600.0);
  EXPECT_DOUBLE_EQ(s[2].cap_w, 4.0);
  EXPECT_THROW(parse_cap_schedule("time_s,cap_w\n0,7MHz\n", "x"), Error);   // a frequency is not a cap
  EXPECT_THROW(parse_cap_schedule("time_s,cap_w\n0,7W\n2W,5\n", "x"), Error);  // a power is not a time
  EXPECT_THROW(parse_cap_schedule("time_s,cap_w\n0,7Wx\n", "x"), Error);
}

TEST(Timeline, InfeasibleInitialCapIsAClearError) {
  const ToyModel m;
  RunInput in = fixed({{1e8}, 8}, {{0, 1}});
  in.select = [](double) { return std::optional<Choice>(); };
  try {
    run(m, in, RunOptions{});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("initial cap"), std::string::npos);
  }
}

}  // namespace
}  // namespace pacer::sim
