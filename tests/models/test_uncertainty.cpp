// A model's uncertainty (models/uncertainty.hpp): the measurement spread that no model smooth in b
// can follow, estimated without a model, stored with the calibrated model beside the error off the
// fitted points, and kept apart from the model's bias.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <numbers>
#include <random>

#include "models/calibrate.hpp"
#include "models/uncertainty.hpp"
#include "test_calib_fixtures.hpp"
#include "tests/support/temp_store.hpp"
#include "traces/catalog/catalog.hpp"
#include "traces/store/store.hpp"

namespace pacer::models {
namespace {

traces::ProfilePoint point(double f_hz, int b, double time_s, double power_w) {
  traces::ProfilePoint p;
  p.knob = {f_hz};
  p.batch_size = b;
  p.time_per_batch_mean_s = time_s;
  p.power_mean_w = power_w;
  p.power_peak_w = traces::kNaN;  // a source with means only
  return p;
}

TEST(Uncertainty, RepeatedSettingsGiveThePooledSpreadOfLogValues) {
  // Setting A measured three times (log deviations 0, +0.02, -0.02 from their mean), setting B twice
  // (+-0.01): pooled sigma = sqrt((0.0008 + 0.0002) / (2 + 1)). A per-point (n = 5) divisor would
  // give 0.0141, a spread of the raw values another figure.
  const std::vector<traces::ProfilePoint> pts = {point(1e9, 8, 0.1, 5.0),
                                                 point(1e9, 8, 0.1 * std::exp(0.02), 5.0 * std::exp(0.02)),
                                                 point(1e9, 8, 0.1 * std::exp(-0.02), 5.0 * std::exp(-0.02)),
                                                 point(5e8, 8, 0.3 * std::exp(0.01), 3.0),
                                                 point(5e8, 8, 0.3 * std::exp(-0.01), 3.0),
                                                 point(5e8, 16, 0.5, 3.5)};
  const auto f = noise_floor(pts);
  EXPECT_EQ(f.method, "repeats");
  EXPECT_EQ(f.terms, 3);
  EXPECT_NEAR(f.time_rel, std::sqrt(0.001 / 3), 1e-12);
  EXPECT_NEAR(f.power_mean_rel, std::sqrt(0.0008 / 3), 1e-12) << "B's power does not vary";
  EXPECT_TRUE(std::isnan(f.power_peak_rel)) << "no peak readings, no peak spread";
}

TEST(Uncertainty, NeighboursInBSeeNoiseButNotASmoothTrend) {
  const std::vector<double> freqs = {3e8, 6e8, 9e8, 1.2e9};
  std::vector<traces::ProfilePoint> smooth, noisy;
  std::mt19937_64 rng(3);
  std::normal_distribution<double> n(0.0, 1.0);
  for (double f : freqs)
    for (int b = 1; b <= 40; ++b) {
      // Time affine in b, power saturating in b: smooth, far from linear in log over 1..40.
      const double t = 0.004 + 0.0005 * b + (1e6 + 2e6 * b) / f;
      const double p = 2 + 4e-9 * f * b / (b + 6.0);
      smooth.push_back(point(f, b, t, p));
      noisy.push_back(point(f, b, t * std::exp(0.02 * n(rng)), p * std::exp(0.03 * n(rng))));
    }
  const auto s = noise_floor(smooth);
  EXPECT_EQ(s.method, "neighbours");
  EXPECT_EQ(s.terms, 4 * 38);
  // A smooth trend leaves only its curvature between neighbours in log b (0.49% and 0.11% here;
  // against b rather than log b the time would read 0.73%).
  EXPECT_LT(s.time_rel, 0.0055);
  EXPECT_LT(s.power_mean_rel, 0.0015);
  const auto z = noise_floor(noisy);
  // 152 triples: over 200 seeds 98% of the estimates lie within 15% of the injected 2% and 3%
  // (plus the trend's curvature). Unweighted differences (c = 1) would read sqrt(1.5) = 1.22 times
  // too high, a spread of the raw values instead of logs would not be relative.
  EXPECT_NEAR(z.time_rel, 0.0205, 0.003);
  EXPECT_NEAR(z.power_mean_rel, 0.03, 0.0045);
  // Fewer than three batch sizes per setting and no repeats: nothing to estimate from.
  const auto none = noise_floor({point(1e9, 8, 0.1, 5), point(1e9, 16, 0.2, 6), point(5e8, 8, 0.3, 3)});
  EXPECT_TRUE(none.method.empty());
  EXPECT_TRUE(std::isnan(none.time_rel));
  ModelUncertainty u;
  u.floor = none;
  EXPECT_NE(describe_uncertainty(u).find("too few points per setting"), std::string::npos);
}

// A profile of the analytical form on a dense b grid, with `noise` (relative, Gaussian) on every
// reading and power off by `bias` on every other GPU clock: a bias the model cannot follow but
// that is smooth in b.
traces::ProfileTable nano_table(double noise, double bias, unsigned seed) {
  const auto nano = traces::find_device("jetson-nano");
  std::vector<int> bs;
  for (int b = 2; b <= 64; b += 2) bs.push_back(b);
  auto t = testing::table_from(testing::nano_truth(nano), nano.gpu_freqs_hz, bs, noise, seed);
  for (auto& p : t.points) {
    const auto i = std::find(nano.gpu_freqs_hz.begin(), nano.gpu_freqs_hz.end(), p.knob[0]) - nano.gpu_freqs_hz.begin();
    if (i % 2) p.power_mean_w *= 1 + bias, p.power_peak_w *= 1 + bias;
  }
  return t;
}

TEST(Uncertainty, CalibrationStoresTheSpreadBesideTheHeldOutErrorAndTheStoreKeepsIt) {
  const auto nano = traces::find_device("jetson-nano");
  auto table = nano_table(0.02, 0, 5);
  table.floating_clocks = "cpu, emc";
  CalibrationOptions opt;
  opt.points = 8;
  opt.analytical.voltage_table = nano.voltage_table;
  const auto cal = calibrate(table, &nano, opt);
  const auto& m = cal.record.metrics;
  // 2% per reading, estimated from 12 x 30 triples of neighbouring b.
  EXPECT_NEAR(m.at("time_noise_pct"), 2.0, 0.25);
  EXPECT_NEAR(m.at("power_mean_noise_pct"), 2.0, 0.25);
  EXPECT_NEAR(m.at("power_peak_noise_pct"), 2.0, 0.25);
  EXPECT_EQ(m.at("noise_terms"), 12 * 30);
  // The prediction's sigma is the held-out error read as a Gaussian sigma, at least the spread.
  const double k = std::sqrt(std::numbers::pi / 2);
  for (const std::string target : {"time", "power_mean", "power_peak"})
    EXPECT_NEAR(m.at(target + "_sigma_pct"), std::max(k * m.at(target + "_mape_heldout"), m.at(target + "_noise_pct")),
                1e-9)
        << target;
  EXPECT_GE(m.at("power_mean_sigma_pct"), 2.0 * 0.9) << "no model beats the spread of its measurements";

  const pacer::testing::TempStore path("uncertainty");
  traces::Store::open_or_create(path).write(cal.record);
  const auto back = read_uncertainty(traces::Store::open(path).read<traces::ModelRecord>(cal.record.name));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->basis, "heldout");
  EXPECT_EQ(back->floating_clocks, "cpu, emc");
  EXPECT_EQ(back->floor.method, "neighbours");
  EXPECT_DOUBLE_EQ(100 * back->power_mean_rel, m.at("power_mean_sigma_pct"));
  EXPECT_DOUBLE_EQ(100 * back->floor.time_rel, m.at("time_noise_pct"));
  EXPECT_DOUBLE_EQ(back->power_mean_mape_pct, m.at("power_mean_mape_heldout"));
  const auto line = describe_uncertainty(*back);
  EXPECT_NE(line.find("clocks that floated while measuring: cpu, emc"), std::string::npos) << line;
  EXPECT_NE(line.find("prediction 1 sigma (heldout)"), std::string::npos) << line;
  EXPECT_EQ(cal.record.settings.at("uncertainty"), line);
  // A record written before models carried an uncertainty has none.
  traces::ModelRecord old = cal.record;
  old.settings.erase("noise_method");
  EXPECT_FALSE(read_uncertainty(old).has_value());
}

TEST(Uncertainty, ABiasTheModelCannotFollowIsErrorNotSpread) {
  // Power 6% high on every other clock, no noise: the held-out power error is large, the spread
  // along b (each clock's points lie on a smooth curve) stays near zero. A spread pooled across
  // clocks, or taken from the model's residuals, would call the bias noise.
  const auto nano = traces::find_device("jetson-nano");
  auto table = nano_table(0, 0.06, 5);
  CalibrationOptions opt;
  opt.points = 8;
  opt.analytical.voltage_table = nano.voltage_table;
  const auto cal = calibrate(table, &nano, opt);
  const auto& m = cal.record.metrics;
  EXPECT_LT(m.at("power_mean_noise_pct"), 0.2);
  EXPECT_GT(m.at("power_mean_mape_heldout"), 1.5);
  EXPECT_GT(m.at("power_mean_sigma_pct"), 1.5 * std::sqrt(std::numbers::pi / 2));
  const auto u = read_uncertainty(cal.record);
  ASSERT_TRUE(u.has_value());
  EXPECT_NE(describe_uncertainty(*u).find("no clock floated"), std::string::npos);
  EXPECT_NE(describe_uncertainty(*u).find("heldout MAPE above that floor"), std::string::npos);
}

// A MAPE under the noise floor (the floor is an estimate) is "at the floor", never a negative
// amount "above" it.
TEST(Uncertainty, AnErrorUnderTheFloorIsNeverNegativeAboveIt) {
  ModelUncertainty u;
  u.basis = "heldout";
  u.floor.method = "repeats";
  u.floor.terms = 10;
  u.floor.time_rel = 0.05;        // a perfect model's MAPE: 3.99 %
  u.floor.power_mean_rel = 0.01;  // 0.80 %
  u.time_mape_pct = 2.0;          // under the floor
  u.power_mean_mape_pct = 1.8;    // 1.0 pp above it
  const std::string text = describe_uncertainty(u);
  EXPECT_NE(text.find("MAPE above that floor: time none (at the floor), P mean 1 pp"), std::string::npos) << text;
  EXPECT_EQ(text.find("above that floor: time -"), std::string::npos) << text;
  EXPECT_EQ(text.find("+"), std::string::npos) << text;
}

}  // namespace
}  // namespace pacer::models
