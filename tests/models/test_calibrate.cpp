// Calibration of the analytical and interpolating models, input checks, record round trips.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sys/wait.h>
#include <unistd.h>

#include "base/error.hpp"
#include "models/analytical.hpp"
#include "models/calibrate.hpp"
#include "models/interpolating.hpp"
#include "test_calib_fixtures.hpp"
#include "traces/catalog/catalog.hpp"
#include "traces/store/store.hpp"
#include "tests/support/json_lines.hpp"
#include "tests/support/run_pacer.hpp"

namespace pacer::models {
namespace {

using testing::nano_truth;
using testing::paper_batches;
using testing::table_from;

double rel(double a, double b) { return std::abs(a / b - 1); }

TEST(CalibAnalytical, RecoversParametersExactlyFromNoiseFreeTableWithCatalogVoltage) {
  const auto nano = traces::find_device("jetson-nano");
  const auto truth = nano_truth(nano);
  const auto table = table_from(truth, nano.gpu_freqs_hz, paper_batches());
  AnalyticalFitOptions opt;
  opt.voltage_table = nano.voltage_table;
  // Default priors: a bias far below any measurement noise.
  const auto e_prior = mape(*fit_analytical(table.points, opt), table.points);
  EXPECT_LT(e_prior.time_mape, 0.01);
  EXPECT_LT(e_prior.power_mean_mape, 0.01);
  // Without priors the parameters themselves come back.
  opt.prior_weight = 0;
  const auto model = fit_analytical(table.points, opt);
  const auto& p = model->params();
  EXPECT_FALSE(p.voltage.fitted());
  EXPECT_LT(rel(p.time.fixed_s, truth.time.fixed_s), 1e-4);
  EXPECT_LT(rel(p.time.fixed_per_sample_s, truth.time.fixed_per_sample_s), 1e-4);
  EXPECT_LT(rel(p.time.work_cycles, truth.time.work_cycles), 1e-4);
  EXPECT_LT(rel(p.time.work_per_sample_cycles, truth.time.work_per_sample_cycles), 1e-4);
  for (const auto& [fit, want] : {std::pair{p.power_mean, truth.power_mean}, std::pair{p.power_peak, truth.power_peak}}) {
    EXPECT_LT(rel(fit.idle_w, want.idle_w), 1e-4);
    EXPECT_LT(rel(fit.leak_w_per_v, want.leak_w_per_v), 1e-4);
    EXPECT_LT(rel(fit.cap_base_w_per_hz_v2, want.cap_base_w_per_hz_v2), 1e-4);
    EXPECT_LT(rel(fit.cap_sat_w_per_hz_v2, want.cap_sat_w_per_hz_v2), 1e-4);
    EXPECT_LT(rel(fit.batch_half, want.batch_half), 1e-4);
  }
  // Residual-free data: every in-sample error is ~0.
  const auto e = mape(*model, table.points);
  EXPECT_LT(e.time_mape, 1e-4);
  EXPECT_LT(e.power_mean_mape, 1e-4);
  EXPECT_LT(e.power_peak_mape, 1e-4);
}

TEST(CalibAnalytical, FitsTheVoltageFloorWhenTheCatalogHasNoTable) {
  const auto nano = traces::find_device("jetson-nano");
  auto truth = nano_truth(nano);
  truth.voltage.table.clear();  // relative volts: floor 1, knee 500 MHz, +0.7 per GHz above
  truth.voltage.floor_v = 1.0;
  truth.voltage.knee_hz = 500e6;
  truth.voltage.slope_v_per_hz = 0.7e-9;
  const auto table = table_from(truth, nano.gpu_freqs_hz, paper_batches());
  AnalyticalFitOptions opt;
  opt.voltage = "fit";
  const auto model = fit_analytical(table.points, opt);
  const auto& v = model->params().voltage;
  ASSERT_TRUE(v.fitted());
  EXPECT_NEAR(v.knee_hz, 500e6, 10e6);
  EXPECT_NEAR(v.slope_v_per_hz, 0.7e-9, 0.05e-9);
  const auto e = mape(*model, table.points);
  EXPECT_LT(e.power_mean_mape, 0.1);
  EXPECT_LT(e.time_mape, 1e-3);
  // A wrong shape (no floor) cannot reach that: the fitted knee matters.
  EXPECT_GT(model->params().power_mean.cap_sat_w_per_hz_v2, 0);
}

TEST(CalibAnalytical, NoisyMeasurementsGiveBoundedErrorAgainstTheTruth) {
  const auto nano = traces::find_device("jetson-nano");
  const auto truth = nano_truth(nano);
  const auto noisy = table_from(truth, nano.gpu_freqs_hz, paper_batches(), 0.02, 11);
  const auto clean = table_from(truth, nano.gpu_freqs_hz, paper_batches());
  AnalyticalFitOptions opt;
  opt.voltage_table = nano.voltage_table;
  const auto model = fit_analytical(noisy.points, opt);
  const auto e = mape(*model, clean.points);
  // 2% noise on 72 points: the fitted surface is far closer to the truth than any one reading.
  EXPECT_LT(e.time_mape, 0.8);
  EXPECT_LT(e.power_mean_mape, 0.8);
  EXPECT_LT(e.power_peak_mape, 0.8);
  // ...and the standard errors are finite and of the right order for the main parameters.
  const auto rec = model->to_record();
  for (size_t i = 0; i < rec.param_names.size(); ++i)
    if (rec.param_names[i] == "time_work_per_sample_cycles") {
      EXPECT_TRUE(std::isfinite(rec.param_stderr[i]));
      EXPECT_GT(rec.param_stderr[i], 0);
      EXPECT_LT(rec.param_stderr[i], 0.05 * rec.param_values[i]);
    }
}

TEST(CalibAnalytical, PredictsBatchSizesThatWereNeverProfiled) {
  const auto nano = traces::find_device("jetson-nano");
  const auto truth = nano_truth(nano);
  const auto table = table_from(truth, nano.gpu_freqs_hz, {4, 8, 32, 128});
  AnalyticalFitOptions opt;
  opt.voltage_table = nano.voltage_table;
  const auto model = fit_analytical(table.points, opt);
  const AnalyticalModel exact(truth, {});
  for (int b : {16, 64, 256})
    for (double f : {153.6e6, 537.6e6, 921.6e6}) {
      const auto want = exact.predict({f}, b);
      const auto got = model->predict({f}, b);
      EXPECT_LT(rel(got.time_per_batch_s, want.time_per_batch_s), 1e-3) << "b=" << b << " f=" << f;
      EXPECT_LT(rel(got.power_mean_w, want.power_mean_w), 1e-3) << "b=" << b << " f=" << f;
    }
}

TEST(CalibAnalytical, CalibrateWithPlannedPointsReportsHeldOutError) {
  const auto nano = traces::find_device("jetson-nano");
  const auto table = table_from(nano_truth(nano), nano.gpu_freqs_hz, paper_batches());
  CalibrationOptions opt;
  opt.points = 8;
  opt.analytical.voltage_table = nano.voltage_table;
  const auto cal = calibrate(table, &nano, opt);
  EXPECT_EQ(cal.used.size(), 8u);
  EXPECT_EQ(cal.record.kind, "analytical");
  EXPECT_EQ(cal.record.name, "synthetic@jetson-nano:analytical");
  EXPECT_EQ(cal.record.metrics.at("heldout_points"), 64);
  EXPECT_LT(cal.record.metrics.at("time_mape_heldout"), 0.05);
  EXPECT_LT(cal.record.metrics.at("power_mean_mape_heldout"), 0.5);
  EXPECT_TRUE(std::isfinite(cal.record.metrics.at("time_mape_cv")));
  EXPECT_FALSE(cal.record.settings.at("residuals").empty());
}

// A predicted point stands for as many power samples as the calibration's measured points (their
// median, models::stated_power_samples): the record states it and every predicted table point
// carries it, so the explorer projects a predicted peak as it projects a measured one.
TEST(Calibrate, TheRecordAndThePredictedTableStateTheMeasuredPointsMedianPowerSamples) {
  const auto nano = traces::find_device("jetson-nano");
  auto table = table_from(nano_truth(nano), nano.gpu_freqs_hz, paper_batches());
  for (size_t i = 0; i < table.points.size(); ++i) table.points[i].power_samples = 20 + static_cast<int64_t>(i % 5);
  table.points[0].status = "skipped: out of memory";
  table.points[0].power_samples = 1000;  // not a measurement: left out
  CalibrationOptions opt;
  opt.analytical.voltage_table = nano.voltage_table;
  const auto cal = calibrate(table, &nano, opt);
  EXPECT_EQ(stated_power_samples(table.points), 22);
  EXPECT_EQ(cal.record.metrics.at(kPowerSamplesMetric), 22);
  EXPECT_EQ(stated_power_samples(cal.record), 22);
  const auto predicted = predict_table(*cal.model, table, {{nano.gpu_freqs_hz.back()}}, {16, 32});
  ASSERT_EQ(predicted.points.size(), 2u);
  for (const auto& p : predicted.points) EXPECT_EQ(p.power_samples, 22);
  // A profile without sample counts (an import) states none: the record has no metric.
  for (auto& p : table.points) p.power_samples = 0;
  EXPECT_EQ(calibrate(table, &nano, opt).record.metrics.count(kPowerSamplesMetric), 0u);
}

TEST(CalibAnalytical, CrossValidationSeesTheNoise) {
  const auto nano = traces::find_device("jetson-nano");
  const auto noisy = table_from(nano_truth(nano), nano.gpu_freqs_hz, paper_batches(), 0.03, 5);
  CalibrationOptions opt;
  opt.analytical.voltage_table = nano.voltage_table;
  const auto cal = calibrate(noisy, &nano, opt);
  // The held-out error of noisy readings is the noise itself: ~0.8 * 3% for a Gaussian.
  EXPECT_GT(cal.record.metrics.at("power_mean_mape_cv"), 1.5);
  EXPECT_LT(cal.record.metrics.at("power_mean_mape_cv"), 4.0);
  EXPECT_GE(cal.record.metrics.at("power_mean_mape_cv"), cal.record.metrics.at("power_mean_mape_fit"));
}

TEST(CalibInput, RejectsTooFewPointsBadValuesAndForeignFrequencies) {
  const auto nano = traces::find_device("jetson-nano");
  auto table = table_from(nano_truth(nano), nano.gpu_freqs_hz, paper_batches());
  CalibrationOptions opt;
  opt.points = 3;
  EXPECT_THROW(calibrate(table, &nano, opt), Error);
  opt.points = 500;
  EXPECT_THROW(calibrate(table, &nano, opt), Error);

  auto nan_table = table;
  nan_table.points[5].time_per_batch_mean_s = std::nan("");
  try {
    usable_points(nan_table, &nano);
    FAIL() << "NaN time accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("time per batch"), std::string::npos) << e.what();
  }
  auto neg = table;
  neg.points[3].power_mean_w = -1;
  EXPECT_THROW(usable_points(neg, &nano), Error);
  // A skipped point is not an error: it is left out.
  neg.points[3].status = "skipped: watchdog";
  EXPECT_EQ(usable_points(neg, &nano).size(), table.points.size() - 1);

  auto foreign = table;
  foreign.points[0].knob = {1000e6};
  try {
    usable_points(foreign, &nano);
    FAIL() << "foreign frequency accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not in jetson-nano's frequency table"), std::string::npos) << e.what();
  }
  // Without a device, the frequency cannot be checked and is accepted.
  EXPECT_EQ(usable_points(foreign, nullptr).size(), table.points.size());

  std::vector<traces::ProfilePoint> one_freq;
  for (const auto& p : table.points)
    if (p.knob[0] == nano.gpu_freqs_hz.back()) one_freq.push_back(p);
  EXPECT_THROW(fit_analytical(one_freq, {}), Error);
  AnalyticalFitOptions cat;
  cat.voltage = "catalog";
  EXPECT_THROW(fit_analytical(table.points, cat), Error);  // no table given
}

// Power-limit knob (Zeus-like): piecewise-linear in the knob, log-linear in b.
traces::ProfileTable power_limit_table() {
  traces::ProfileTable t;
  t.workload = "cifar100/shufflenetv2";
  t.device = "v100";
  t.knob = traces::KnobSpace::power_limit();
  for (int b : {32, 128, 512})
    for (double w : {100.0, 150.0, 200.0, 250.0}) {
      traces::ProfilePoint p;
      p.knob = {w};
      p.batch_size = b;
      p.time_per_batch_mean_s = 0.01 * std::pow(b, 0.8) * (1 + 50.0 / w);
      p.power_mean_w = std::min(w, 60 + 0.4 * b);
      t.points.push_back(p);
    }
  return t;
}

TEST(CalibInterpolating, InterpolatesInTheKnobAndLogLinearlyInBatchSize) {
  const auto t = power_limit_table();
  const auto model = fit_interpolating(t.points, t.knob);
  for (const auto& p : t.points) {
    const auto got = model->predict(p.knob, p.batch_size);
    EXPECT_DOUBLE_EQ(got.time_per_batch_s, p.time_per_batch_mean_s);
    EXPECT_DOUBLE_EQ(got.power_mean_w, p.power_mean_w);
    EXPECT_TRUE(std::isnan(got.power_peak_w));
  }
  const auto at = [&](double w, int b) { return t.find({w}, b)->time_per_batch_mean_s; };
  // Halfway in the knob: the mean of the neighbours.
  EXPECT_NEAR(model->predict({125.0}, 128).time_per_batch_s, 0.5 * (at(100, 128) + at(150, 128)), 1e-12);
  // b = 64 lies halfway between 32 and 128 in log b: the geometric mean.
  EXPECT_NEAR(model->predict({200.0}, 64).time_per_batch_s, std::sqrt(at(200, 32) * at(200, 128)), 1e-12);
  // Outside the knob range: clamped, no invented trend.
  EXPECT_DOUBLE_EQ(model->predict({300.0}, 32).time_per_batch_s, at(250, 32));
  // Beyond the largest b: time extrapolates along b^0.8, power holds.
  EXPECT_NEAR(model->predict({200.0}, 2048).time_per_batch_s, at(200, 512) * std::pow(4.0, 0.8), 1e-9);
  EXPECT_DOUBLE_EQ(model->predict({200.0}, 2048).power_mean_w, t.find({200.0}, 512)->power_mean_w);
  // The analytical model refuses this knob with an actionable error.
  CalibrationOptions opt;
  EXPECT_THROW(calibrate(t, nullptr, opt), Error);
  opt.model = traces::ModelKind::interpolating;
  const auto cal = calibrate(t, nullptr, opt);
  EXPECT_EQ(cal.record.kind, "interpolating");
  EXPECT_TRUE(std::isfinite(cal.record.metrics.at("time_mape_cv")));
}

TEST(CalibRecord, ModelFromRecordRoundTripsThroughTheStore) {
  const auto nano = traces::find_device("jetson-nano");
  const auto table = table_from(nano_truth(nano), nano.gpu_freqs_hz, paper_batches(), 0.01, 3);
  const auto dir = std::filesystem::temp_directory_path() / ("pacer_calib_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto store = traces::Store::open_or_create(dir / "s.h5");

  std::vector<std::unique_ptr<DeviceModel>> models;
  {
    CalibrationOptions opt;
    opt.analytical.voltage_table = nano.voltage_table;
    models.push_back(calibrate(table, &nano, opt).model);
    AnalyticalFitOptions fit;
    fit.voltage = "fit";
    models.push_back(fit_analytical(table.points, fit));
    const auto pl = power_limit_table();
    models.push_back(fit_interpolating(pl.points, pl.knob));
  }
  int i = 0;
  for (const auto& m : models) {
    auto rec = m->to_record();
    rec.name = "m" + std::to_string(i++);
    store.write(rec);
    const auto back = model_from_record(store.read<traces::ModelRecord>(rec.name));
    EXPECT_EQ(back->kind(), m->kind());
    const std::vector<double> knob =
        m->knob().kind == traces::KnobKind::gpu_freq ? std::vector<double>{691.2e6} : std::vector<double>{175.0};
    for (int b : {8, 48, 128}) {
      const auto a = m->predict(knob, b);
      const auto c = back->predict(knob, b);
      EXPECT_DOUBLE_EQ(a.time_per_batch_s, c.time_per_batch_s);
      EXPECT_DOUBLE_EQ(a.power_mean_w, c.power_mean_w);
    }
  }
  traces::ModelRecord bad;
  bad.name = "x";
  bad.kind = "quantum";
  EXPECT_THROW(model_from_record(bad), Error);
  bad.kind = "analytical";
  EXPECT_THROW(model_from_record(bad), Error);  // no parameters
  std::filesystem::remove_all(dir);
}

TEST(CalibNnls, MatchesTheConstrainedOptimum) {
  // y = 2*x0 - 1*x1 exactly: the unconstrained solution has a negative coefficient, so NNLS must
  // drop x1 and refit x0 alone.
  Eigen::MatrixXd a(4, 2);
  a << 1, 0, 1, 1, 2, 1, 3, 2;
  Eigen::VectorXd y = a.col(0) * 2 - a.col(1);
  double obj = 0;
  const auto x = nnls(a, y, Eigen::VectorXd::Zero(2), &obj);
  EXPECT_DOUBLE_EQ(x(1), 0);
  const double x0 = a.col(0).dot(y) / a.col(0).squaredNorm();
  EXPECT_NEAR(x(0), x0, 1e-12);
  EXPECT_NEAR(obj, (a.col(0) * x0 - y).squaredNorm(), 1e-12);
}

}  // namespace
}  // namespace pacer::models

namespace pacer::models {
namespace {

std::string fmt_path(const std::filesystem::path& p) { return "calibrate '" + p.string() + "'"; }

int run_pacer(const std::string& args, const std::filesystem::path& out) {
  const std::string cmd = std::string(PACER_BINARY) + " " + args + " > " + out.string() + " 2>&1";
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The predicted table is named after the measured profile; only that suffix marks one.
TEST(Calibrate, PredictedProfileNameIsTheMeasuredNameWithItsSuffix) {
  EXPECT_EQ(predicted_profile_name("cnn@1x28x28"), "cnn@1x28x28-predicted");
  EXPECT_TRUE(is_predicted_profile_name(predicted_profile_name("synthetic")));
  EXPECT_FALSE(is_predicted_profile_name("synthetic"));
  EXPECT_FALSE(is_predicted_profile_name("synthetic-predicted-v2"));
  EXPECT_FALSE(is_predicted_profile_name("predicted"));
}

TEST(CalibCli, CalibrateWritesTheModelAndThePredictedTableAndRejectsBadInput) {
  const auto nano = traces::find_device("jetson-nano");
  const auto dir = std::filesystem::temp_directory_path() / ("pacer_calib_cli_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = dir / "c.h5";
  {
    auto store = traces::Store::open_or_create(path);
    store.write_device(nano);
    store.write(testing::table_from(testing::nano_truth(nano), nano.gpu_freqs_hz, testing::paper_batches(), 0.01, 9,
                                    "synthetic"));
  }
  const auto log = dir / "out.txt";
  ASSERT_EQ(run_pacer(fmt_path(path) + " --points 8 --predict", log), 0);
  {
    const auto store = traces::Store::open(path);
    ASSERT_TRUE(store.has<traces::ModelRecord>("synthetic@jetson-nano:analytical"));
    const auto rec = store.read<traces::ModelRecord>("synthetic@jetson-nano:analytical");
    EXPECT_LT(rec.metrics.at("power_mean_mape_heldout"), 2.0);
    const auto predicted = store.read<traces::ProfileTable>("synthetic-predicted");
    EXPECT_EQ(predicted.points.size(), 72u);
  }
  EXPECT_EQ(run_pacer(fmt_path(path) + " --points 3", log), 1);
  EXPECT_EQ(run_pacer(fmt_path(path) + " --model quantum", log), 2);
  {
    auto store = traces::Store::open(path);
    auto bad = store.read<traces::ProfileTable>("synthetic");
    bad.workload = "bad";
    bad.points[4].power_mean_w = std::nan("");
    store.write(bad);
  }
  EXPECT_EQ(run_pacer(fmt_path(path) + " --name bad", log), 1);
  EXPECT_FALSE(traces::Store::open(path).has<traces::ModelRecord>("bad@jetson-nano:analytical"));
  std::filesystem::remove_all(dir);
}

// An infinite (or overwhelming) prior weight pins every prior-carrying parameter to zero and the
// fit degenerates; it is refused, and a good model in the store stays.
TEST(CalibInput, APriorWeightOutsideItsRangeIsRefusedAndTheStoredModelStays) {
  const auto nano = traces::find_device("jetson-nano");
  const auto table = table_from(nano_truth(nano), nano.gpu_freqs_hz, paper_batches(), 0.01, 9, "synthetic");
  for (double w : {double{INFINITY}, std::nan(""), -1.0, 2.0}) {
    CalibrationOptions opt;
    opt.analytical.prior_weight = w;
    try {
      calibrate(table, &nano, opt);
      FAIL() << "prior weight " << w << " accepted";
    } catch (const OptionError& e) {
      EXPECT_EQ(e.option, "prior-weight") << e.what();
      EXPECT_NE(std::string(e.what()).find("[0, 1]"), std::string::npos) << e.what();
    }
  }
  const auto dir = std::filesystem::temp_directory_path() / ("pacer_calib_prior_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = dir / "c.h5";
  {
    auto store = traces::Store::open_or_create(path);
    store.write_device(nano);
    store.write(table);
  }
  const auto log = dir / "out.txt";
  ASSERT_EQ(run_pacer(fmt_path(path) + " --points 8", log), 0);
  const auto good = traces::Store::open(path).read<traces::ModelRecord>("synthetic@jetson-nano:analytical");
  EXPECT_EQ(run_pacer(fmt_path(path) + " --points 8 --prior-weight inf", log), 2);
  EXPECT_TRUE(traces::Store::open(path).read<traces::ModelRecord>("synthetic@jetson-nano:analytical") == good);
  // The power fit's loss: absolute or squared, nothing else (and nothing written).
  EXPECT_EQ(run_pacer(fmt_path(path) + " --points 8 --power-loss huber", log), 2);
  EXPECT_TRUE(traces::Store::open(path).read<traces::ModelRecord>("synthetic@jetson-nano:analytical") == good);
  ASSERT_EQ(run_pacer(fmt_path(path) + " --points 8 --power-loss squared", log), 0);
  EXPECT_EQ(traces::Store::open(path)
                .read<traces::ModelRecord>("synthetic@jetson-nano:analytical")
                .settings.at("power_loss"),
            "squared");
  std::filesystem::remove_all(dir);
}

// `pacer calibrate --prior FILE.h5:NAME`: another store's sweep as the transfer prior; the record
// names it; a missing prior profile, a non-analytical model and a non-positive weight are refused.
TEST(CalibCli, APriorFromAnotherStoreIsUsedAndRecorded) {
  const auto nano = traces::find_device("jetson-nano");
  const auto dir = std::filesystem::temp_directory_path() / ("pacer_calib_transfer_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto a = dir / "a.h5";
  const auto b = dir / "b.h5";
  {
    auto store = traces::Store::open_or_create(a);
    store.write(testing::table_from(testing::nano_truth(nano), nano.gpu_freqs_hz, testing::paper_batches(), 0.01, 3,
                                    "other-board"));
  }
  {
    auto store = traces::Store::open_or_create(b);
    store.write_device(nano);
    store.write(testing::table_from(testing::nano_truth(nano), nano.gpu_freqs_hz, testing::paper_batches(), 0.03, 9,
                                    "synthetic"));
  }
  const auto log = dir / "out.txt";
  const std::string prior = "'" + a.string() + ":other-board'";
  ASSERT_EQ(run_pacer(fmt_path(b) + " --points 5 --prior " + prior, log), 0);
  const auto rec = traces::Store::open(b).read<traces::ModelRecord>("synthetic@jetson-nano:analytical");
  EXPECT_EQ(rec.settings.at("prior"), a.string() + ":other-board");
  // The gate chose the weight from transfer_weight_grid(); --prior-points fixes it.
  const auto wgrid = transfer_weight_grid();
  EXPECT_NE(std::find_if(wgrid.begin(), wgrid.end(),
                         [&](double w) { return rec.settings.at("transfer_weight") == fmt::format("{:g}", w); }),
            wgrid.end())
      << rec.settings.at("transfer_weight");
  ASSERT_EQ(run_pacer(fmt_path(b) + " --points 5 --prior " + prior + " --prior-points 0.5", log), 0);
  EXPECT_EQ(traces::Store::open(b).read<traces::ModelRecord>("synthetic@jetson-nano:analytical").settings.at(
                "transfer_weight"),
            "0.5");
  EXPECT_EQ(run_pacer(fmt_path(b) + " --points 5 --prior '" + a.string() + ":missing'", log), 1);
  EXPECT_EQ(run_pacer(fmt_path(b) + " --points 5 --model interpolating --prior " + prior, log), 2);
  EXPECT_EQ(run_pacer(fmt_path(b) + " --points 5 --prior " + prior + " --prior-points 0", log), 2);

  // The gate's choice and the leave-one-out scores of the three candidates are printed and stored;
  // --prior-always forces the prior (no scores); without --prior it is refused.
  ASSERT_EQ(run_pacer(fmt_path(b) + " --points 6 --prior " + prior, log), 0);
  const auto gated = traces::Store::open(b).read<traces::ModelRecord>("synthetic@jetson-nano:analytical");
  EXPECT_TRUE(gated.transfer_gate);
  const std::string printed = pacer::testing::slurp(log);
  // The choice, its weight (from the grid; none for the points alone), then the scores.
  const std::string at = gated.transfer_choice == "alone" ? "" : ", " + gated.settings.at("transfer_weight") + " points";
  EXPECT_NE(printed.find("transfer: " + gated.transfer_choice + at +
                         " (chosen by leave-one-out time + P mean MAPE: alone "),
            std::string::npos)
      << printed;
  for (const char* c : {", prior ", ", prior-scaled-b "}) EXPECT_NE(printed.find(c), std::string::npos) << c;
  EXPECT_EQ(gated.settings.at("transfer_gate_mode"), "joint");
  // --prior-gate per-axis: each axis its own candidate, the scores of each axis printed.
  ASSERT_EQ(run_pacer(fmt_path(b) + " --points 6 --prior " + prior + " --prior-gate per-axis", log), 0);
  const auto per_axis = traces::Store::open(b).read<traces::ModelRecord>("synthetic@jetson-nano:analytical");
  EXPECT_EQ(per_axis.settings.at("transfer_gate_mode"), "per-axis");
  EXPECT_NE(pacer::testing::slurp(log).find("transfer: " + per_axis.transfer_choice +
                                            " (chosen per axis by leave-one-out MAPE; time: alone "),
            std::string::npos)
      << pacer::testing::slurp(log);
  EXPECT_NE(pacer::testing::slurp(log).find("; P mean with the chosen time model: alone "), std::string::npos);
  EXPECT_EQ(run_pacer(fmt_path(b) + " --points 6 --prior " + prior + " --prior-gate both", log), 2);
  EXPECT_NE(pacer::testing::slurp(log).find("--prior-gate: 'both' is not a transfer gate"), std::string::npos)
      << pacer::testing::slurp(log);
  EXPECT_EQ(run_pacer(fmt_path(b) + " --points 6 --prior-gate per-axis", log), 2);
  // The JSON carries the choice (one label for both axes, or "time X, power Y").
  ASSERT_EQ(run_pacer(fmt_path(b) + " --points 6 --prior " + prior + " --json", log), 0);
  EXPECT_NE(pacer::testing::slurp(log).find("\"transfer_choice\":\"" + gated.transfer_choice + "\""), std::string::npos)
      << pacer::testing::slurp(log);
  ASSERT_EQ(run_pacer(fmt_path(b) + " --points 6 --prior " + prior + " --prior-always", log), 0);
  const auto always = traces::Store::open(b).read<traces::ModelRecord>("synthetic@jetson-nano:analytical");
  EXPECT_FALSE(always.transfer_gate);
  EXPECT_EQ(always.transfer_choice, "prior");
  EXPECT_NE(pacer::testing::slurp(log).find("transfer: the prior always (prior; the gate is off)"), std::string::npos)
      << pacer::testing::slurp(log);
  EXPECT_EQ(run_pacer(fmt_path(b) + " --points 6 --prior-always", log), 2);
}

// `calibrate STORE --json`: one JSON object on stdout (the files written go to stderr); the old
// spelling --profile for the store still works, with a warning naming --store.
TEST(CalibCli, JsonIsOneObjectWithTheParametersAndTheErrors) {
  if (!pacer::testing::have_python3()) GTEST_SKIP() << "python3 is not installed";
  const auto nano = traces::find_device("jetson-nano");
  const auto dir = std::filesystem::temp_directory_path() / ("pacer_calib_json_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = dir / "c.h5";
  {
    auto store = traces::Store::open_or_create(path);
    store.write_device(nano);
    store.write(testing::table_from(testing::nano_truth(nano), nano.gpu_freqs_hz, testing::paper_batches(), 0.01, 9,
                                    "synthetic"));
  }
  auto r = pacer::testing::run_pacer("calibrate " + path.string() + " --points 8 --json", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("wrote " + path.string() + ":/models/synthetic@jetson-nano:analytical"), std::string::npos)
      << r.err;
  const auto rec = traces::Store::open(path).read<traces::ModelRecord>("synthetic@jetson-nano:analytical");
  EXPECT_EQ(pacer::testing::python_checks(r.out, fmt::format(R"(
assert len(rows) == 1, rows
m = rows[0]
assert m["model"] == "synthetic@jetson-nano:analytical" and m["kind"] == "analytical", m
assert m["points_used"] == 8 and m["points"] == {}, m
assert abs(m["metrics"]["power_mean_mape_heldout_pct"] - {:.10g}) < 1e-6, m["metrics"]
assert len(m["parameters"]) == {} and set(m["parameters"]) == set(m["parameter_stderr"])
)",
                                                             nano.gpu_freqs_hz.size() * 6,
                                                             rec.metrics.at("power_mean_mape_heldout"),
                                                             rec.param_names.size())),
            0)
      << r.out;
  r = pacer::testing::run_pacer("calibrate --profile " + path.string() + " --points 8", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("deprecated"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--store"), std::string::npos) << r.err;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace pacer::models
