// Few points on a board: the planner's spread, the log form of c(b), transfer from another board's
// sweep, and the coverage of a stated uncertainty.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <set>

#include "base/error.hpp"
#include "models/calibrate.hpp"
#include "models/planner.hpp"
#include "models/uncertainty.hpp"
#include "test_calib_fixtures.hpp"
#include "traces/catalog/catalog.hpp"

namespace pacer::models {
namespace {

// The LoudVA Nano grid: 11 clocks x b = 1..13.
std::vector<PlanPoint> loudva_nano_grid() {
  std::vector<std::vector<double>> settings;
  for (int i = 2; i <= 12; ++i) settings.push_back({76.8e6 * i});
  std::vector<int> bs;
  for (int b = 1; b <= 13; ++b) bs.push_back(b);
  return grid_points(settings, bs);
}

std::set<double> clocks_of(const std::vector<PlanPoint>& pts) {
  std::set<double> f;
  for (const auto& p : pts) f.insert(p.knob[0]);
  return f;
}

TEST(PlannerSpread, PotentialTermsSpreadTheClocksAndKeepTheExtremes) {
  const auto nano = traces::find_device("jetson-nano");
  PlannerOptions opt;
  opt.k = 8;
  opt.voltage_table = nano.voltage_table;
  const auto cands = loudva_nano_grid();
  const auto pts = plan_points(cands, opt);
  ASSERT_EQ(pts.size(), 8u);
  const auto f = clocks_of(pts);
  // The plain D-optimal design piles the points on 3 clocks (the extremes and one knee); the
  // Bayesian design checks the curve in f between them.
  EXPECT_GE(f.size(), 4u);
  EXPECT_EQ(*f.begin(), 153.6e6);
  EXPECT_EQ(*f.rbegin(), 921.6e6);
  std::set<int> b;
  for (const auto& p : pts) b.insert(p.batch_size);
  EXPECT_EQ(*b.begin(), 1);
  EXPECT_EQ(*b.rbegin(), 13);
  EXPECT_GE(b.size(), 3u);  // an interior b too

  opt.potential_tau = 0;  // the plain D-optimal design
  EXPECT_LE(clocks_of(plan_points(cands, opt)).size(), 3u);
}

TEST(CapForm, TheLogFormIsRecoveredAndRoundTrips) {
  const auto nano = traces::find_device("jetson-nano");
  auto truth = testing::nano_truth(nano);
  for (auto* p : {&truth.power_mean, &truth.power_peak}) {
    p->cap_sat_w_per_hz_v2 = 0;
    p->cap_log_w_per_hz_v2 = 0.8e-9;
  }
  const auto table = testing::table_from(truth, nano.gpu_freqs_hz, testing::paper_batches());
  AnalyticalFitOptions o;
  o.voltage = "catalog";
  o.voltage_table = nano.voltage_table;
  o.cap_form = "log";
  const auto model = fit_analytical(table.points, o);
  const auto& pm = model->params().power_mean;
  EXPECT_NEAR(pm.cap_log_w_per_hz_v2 / 0.8e-9, 1.0, 1e-3);
  EXPECT_EQ(pm.cap_sat_w_per_hz_v2, 0);
  EXPECT_NEAR(pm.capacitance(64) / truth.power_mean.capacitance(64), 1.0, 1e-3);
  // The saturating form cannot follow ln b over b = 4..128 as closely.
  o.cap_form = "saturating";
  const auto sat = fit_analytical(table.points, o);
  EXPECT_GT(mape(*sat, table.points).power_mean_mape, mape(*model, table.points).power_mean_mape);
  // The record keeps c_log: the rebuilt model predicts the same.
  const auto back = analytical_from_record(model->to_record());
  EXPECT_NEAR(back->predict({460.8e6}, 32).power_mean_w, model->predict({460.8e6}, 32).power_mean_w, 1e-12);
  o.cap_form = "quadratic";
  EXPECT_THROW(fit_analytical(table.points, o), OptionError);
}

// Board B is board A with a 1.5x faster clock grid, half the time per batch and an affine power
// map; measured with 3% noise. A's whole sweep, mapped by f / f_max, knows B's shape.
struct TwoBoards {
  traces::ProfileTable a, b;
  std::vector<double> freqs_b;
};
TwoBoards two_boards() {
  const auto nano = traces::find_device("jetson-nano");
  TwoBoards t;
  t.a = testing::table_from(testing::nano_truth(nano), nano.gpu_freqs_hz, testing::paper_batches(), 0.01, 3);
  t.a.device = "board-a";
  const AnalyticalModel truth(testing::nano_truth(nano), traces::ModelRecord{});
  const auto noisy = testing::table_from(testing::nano_truth(nano), nano.gpu_freqs_hz, testing::paper_batches(), 0.03, 11);
  t.b = noisy;
  t.b.device = "board-b";
  for (size_t i = 0; i < t.b.points.size(); ++i) {
    auto& p = t.b.points[i];
    const double f_a = noisy.points[i].knob[0];
    const auto exact = truth.predict({f_a}, p.batch_size);
    const double nt = noisy.points[i].time_per_batch_mean_s / exact.time_per_batch_s;
    const double np = noisy.points[i].power_mean_w / exact.power_mean_w;
    p.knob = {1.5 * f_a};
    p.time_per_batch_mean_s = 0.5 * exact.time_per_batch_s * nt;
    p.power_mean_w = (2.0 + 1.8 * exact.power_mean_w) * np;
    p.power_peak_w = traces::kNaN;
  }
  for (double f : nano.gpu_freqs_hz) t.freqs_b.push_back(1.5 * f);
  return t;
}

TEST(Transfer, APriorFromAnotherBoardBeatsTheSameFewPointsAlone) {
  const auto t = two_boards();
  std::vector<PlanPoint> cands;
  for (const auto& p : t.b.points) cands.push_back({p.knob, p.batch_size});
  PlannerOptions po;
  po.k = 5;
  const auto chosen = plan_points(cands, po);
  std::vector<traces::ProfilePoint> train, test;
  for (const auto& p : t.b.points)
    (std::find(chosen.begin(), chosen.end(), PlanPoint{p.knob, p.batch_size}) != chosen.end() ? train : test)
        .push_back(p);
  ASSERT_EQ(train.size(), 5u);
  AnalyticalFitOptions o;
  o.voltage = "fit";  // board B has no V(f) table
  const auto alone = mape(*fit_analytical(train, o), test);

  const auto nano = traces::find_device("jetson-nano");
  AnalyticalFitOptions oa;
  oa.voltage = "catalog";
  oa.voltage_table = nano.voltage_table;
  TransferPrior prior;
  prior.model = fit_analytical(t.a.points, oa);
  prior.knob_max_hz = nano.max_freq_hz();
  const auto transferred =
      mape(*fit_analytical_with_prior(train, o, prior, t.freqs_b.back(), t.freqs_b, t.b.batch_sizes()), test);
  EXPECT_LT(transferred.power_mean_mape, alone.power_mean_mape);
  EXPECT_LT(transferred.time_mape, alone.time_mape);
  EXPECT_LT(transferred.power_mean_mape, 4.0);  // the 3% noise, not the 5 points, sets it

  // The pseudo-points: on B's grid, mapped (not A's clocks), weights summing to the prior's weight.
  const auto pseudo = transfer_pseudo_points(prior, t.freqs_b.back(), train, t.freqs_b, t.b.batch_sizes());
  ASSERT_EQ(pseudo.points.size(), t.freqs_b.size() * t.b.batch_sizes().size());
  double w = 0;
  for (double x : pseudo.weight) w += x;
  EXPECT_NEAR(w, prior.weight, 1e-9);
  EXPECT_EQ(pseudo.points.back().knob[0], t.freqs_b.back());
  const auto* truth_b = t.b.find(pseudo.points.back().knob, pseudo.points.back().batch_size);
  ASSERT_NE(truth_b, nullptr);
  EXPECT_NEAR(pseudo.points.back().power_mean_w / truth_b->power_mean_w, 1.0, 0.08);
  prior.weight = 0;
  EXPECT_THROW(transfer_pseudo_points(prior, t.freqs_b.back(), train, t.freqs_b, t.b.batch_sizes()), Error);
}

TEST(Transfer, CalibrateTakesThePriorAndRecordsIt) {
  const auto t = two_boards();
  CalibrationOptions opt;
  opt.points = 5;
  opt.analytical.voltage = "fit";
  const auto alone = calibrate(t.b, nullptr, opt);
  opt.prior = &t.a;
  opt.prior_name = "a.h5:synthetic";
  const auto with = calibrate(t.b, nullptr, opt);
  EXPECT_EQ(with.record.settings.at("prior"), "a.h5:synthetic");
  // The weight: the gate's pick from transfer_weight_grid() (stored per candidate too).
  const auto wgrid = transfer_weight_grid();
  EXPECT_NE(std::find_if(wgrid.begin(), wgrid.end(),
                         [&](double w) { return with.record.settings.at("transfer_weight") == fmt::format("{:g}", w); }),
            wgrid.end())
      << with.record.settings.at("transfer_weight");
  EXPECT_TRUE(with.record.metrics.count(transfer_weight_metric(TransferChoice::prior)));
  EXPECT_LT(with.record.metrics.at("power_mean_mape_heldout"), alone.record.metrics.at("power_mean_mape_heldout"));
  // The gate (5 points: leave-one-out trusted) kept a prior and stored every candidate's score.
  EXPECT_TRUE(with.record.transfer_gate);
  EXPECT_NE(with.record.transfer_choice, "alone");
  for (const auto c : kTransferChoices)
    EXPECT_TRUE(with.record.metrics.count(transfer_loo_metric(c, "time"))) << to_string(c);
  EXPECT_TRUE(alone.record.transfer_choice.empty());
  opt.transfer_gate = false;
  const auto always = calibrate(t.b, nullptr, opt);
  EXPECT_FALSE(always.record.transfer_gate);
  EXPECT_EQ(always.record.transfer_choice, "prior");
  EXPECT_EQ(always.record.settings.at("transfer_weight"), fmt::format("{:g}", kDefaultTransferWeight));
  EXPECT_FALSE(always.record.metrics.count(transfer_loo_metric(TransferChoice::alone, "time")));
  opt.model = traces::ModelKind::interpolating;
  try {
    calibrate(t.b, nullptr, opt);
    FAIL() << "a prior for the interpolating model was accepted";
  } catch (const OptionError& e) {
    EXPECT_EQ(e.option, "prior");
  }
}

// The transfer gate's fixture: board B measured on the Nano's clocks at b = 1..8 with 2% noise,
// the planner's k points to fit and the rest held out; `prior_truth` is board A's model, whose
// whole noise-free sweep at b = 1, 2, 4, ..., 64 the prior is fitted on. `test` holds the held-out
// points without their noise (what a model should predict).
struct GateCase {
  std::vector<traces::ProfilePoint> train, test;
  std::vector<double> freqs;
  std::vector<int> batch_sizes;
  TransferPrior prior;
  AnalyticalFitOptions options;
};
GateCase gate_case(const std::function<traces::ProfilePoint(double f, int b)>& board_b,
                   const AnalyticalParams& prior_truth, int k = 8, double noise = 0.02) {
  const auto nano = traces::find_device("jetson-nano");
  GateCase g;
  g.freqs = nano.gpu_freqs_hz;
  for (int b = 1; b <= 8; ++b) g.batch_sizes.push_back(b);
  std::mt19937_64 rng(17);
  std::normal_distribution<double> n(0.0, noise);
  std::vector<traces::ProfilePoint> all, clean;
  std::vector<PlanPoint> cands;
  for (double f : g.freqs)
    for (int b : g.batch_sizes) {
      auto p = board_b(f, b);
      p.power_peak_w = traces::kNaN;
      clean.push_back(p);
      p.time_per_batch_mean_s *= 1 + n(rng);
      p.power_mean_w *= 1 + n(rng);
      p.power_peak_w = traces::kNaN;
      all.push_back(p);
      cands.push_back({p.knob, p.batch_size});
    }
  PlannerOptions po;
  po.k = k;
  po.voltage_table = nano.voltage_table;
  const auto chosen = plan_points(cands, po);
  for (size_t i = 0; i < all.size(); ++i) {
    const bool planned =
        std::find(chosen.begin(), chosen.end(), PlanPoint{all[i].knob, all[i].batch_size}) != chosen.end();
    if (planned)
      g.train.push_back(all[i]);
    else
      g.test.push_back(clean[i]);
  }
  g.options.voltage = "catalog";
  g.options.voltage_table = nano.voltage_table;
  g.options.cap_form = "log";  // c(b) = c_base + c_log ln b: a board at b^2 is in the same family
  const auto a = testing::table_from(prior_truth, nano.gpu_freqs_hz, {1, 2, 4, 8, 16, 32, 64});
  g.prior.model = fit_analytical(a.points, g.options);
  g.prior.knob_max_hz = nano.max_freq_hz();
  g.prior.batch_max = 64;
  return g;
}

double time_plus_power(const DeviceModel& m, const std::vector<traces::ProfilePoint>& test) {
  const auto e = mape(m, test);
  return e.time_mape + e.power_mean_mape;
}

// Board B is board A with its batch axis squeezed: B at b runs as A at b^2 (b = 1..8 against A's
// 1..64, i.e. b mapped by ln b / ln b_max), time and power scaled. A is logarithmic in b (time
// t0 + t2 ln b + (w0 + w2 ln b) / f, c(b) = c_base + c_log ln b), so B is in the model's family with
// twice A's ln b slopes. A's model taken as it is puts B's b = 8 at A's b = 8; scaled, it is right,
// and leave-one-out on 6 points sees it (6 points just determine the log time form: what the prior
// settles is the shape in b).
AnalyticalParams log_in_b(const traces::DeviceSpec& nano) {
  AnalyticalParams p = testing::nano_truth(nano);
  p.time = {6e-3, 0, 2.0e6, 0, 4e-3, 3.0e6};
  for (auto* pw : {&p.power_mean, &p.power_peak}) {
    pw->cap_sat_w_per_hz_v2 = 0;
    pw->cap_log_w_per_hz_v2 = 0.8e-9;
  }
  return p;
}
// Board B is board A (log_in_b) at b^2, 0.6x its time and 1 W + 1.3x its power; 6 points of B.
GateCase log_in_b_case(const traces::DeviceSpec& nano) {
  const AnalyticalModel a(log_in_b(nano), traces::ModelRecord{});
  return gate_case(
      [&](double f, int b) {
        const auto q = a.predict({f}, b * b);
        traces::ProfilePoint p;
        p.knob = {f};
        p.batch_size = b;
        p.time_per_batch_mean_s = 0.6 * q.time_per_batch_s;
        p.power_mean_w = 1.0 + 1.3 * q.power_mean_w;
        return p;
      },
      log_in_b(nano), 6);
}
TEST(Transfer, TheGateTakesThePriorOnTheBAxisWhenTheBoardsDifferInTheirBatchRange) {
  const auto nano = traces::find_device("jetson-nano");
  const AnalyticalModel a(log_in_b(nano), traces::ModelRecord{});
  auto g = log_in_b_case(nano);
  ASSERT_EQ(g.train.size(), 6u);
  const auto gate = choose_transfer(g.train, g.options, g.prior, g.freqs.back(), g.freqs, g.batch_sizes);
  EXPECT_TRUE(gate.trusted);
  ASSERT_EQ(gate.loo.size(), std::size(kTransferChoices));  // every candidate scored, time-only ones too
  ASSERT_EQ(gate.loo_own.size(), std::size(kTransferChoices));
  EXPECT_EQ(gate.time, TransferChoice::prior_scaled_b) << gate.label();
  EXPECT_EQ(gate.power, TransferChoice::prior_scaled_b) << gate.label();
  EXPECT_EQ(gate.label(), "prior-scaled-b");
  const auto loo = [&](TransferChoice c) {
    return gate.loo_own.at(c).time_mape + gate.loo_own.at(c).power_mean_mape;
  };
  EXPECT_LT(loo(TransferChoice::prior_scaled_b), loo(TransferChoice::prior));
  EXPECT_LT(loo(TransferChoice::prior_scaled_b), loo(TransferChoice::alone));
  // On the held-out points: the chosen model beats the 8 points alone and the unscaled prior.
  const double alone = time_plus_power(*fit_analytical(g.train, g.options), g.test);
  const double unscaled = time_plus_power(*fit_transfer_candidate(TransferChoice::prior, g.train, g.options, g.prior,
                                                                  g.freqs.back(), g.freqs, g.batch_sizes),
                                          g.test);
  EXPECT_LT(time_plus_power(*gate.model, g.test), alone);
  EXPECT_LT(time_plus_power(*gate.model, g.test), unscaled);
  // The scaled pseudo-points: b = 1 stays A's b = 1, B's largest b is A's 64 (here exactly b^2).
  TransferPrior scaled = g.prior;
  scaled.scale_batch = true;
  const auto pseudo = transfer_pseudo_points(scaled, g.freqs.back(), g.train, g.freqs, g.batch_sizes);
  for (const auto& p : pseudo.points) {
    const auto want = a.predict(p.knob, p.batch_size * p.batch_size);
    EXPECT_NEAR(p.power_mean_w / (1.0 + 1.3 * want.power_mean_w), 1.0, 0.05) << p.batch_size;
  }
  scaled.batch_max = 0;  // the prior board's range unknown: nothing to scale by
  EXPECT_THROW(transfer_pseudo_points(scaled, g.freqs.back(), g.train, g.freqs, g.batch_sizes), Error);
  // Below kMinTransferGatePoints leave-one-out is not trusted: the prior is kept, nothing scored.
  const std::vector<traces::ProfilePoint> four(g.train.begin(), g.train.begin() + 4);
  const auto few = choose_transfer(four, g.options, g.prior, g.freqs.back(), g.freqs, g.batch_sizes);
  EXPECT_FALSE(few.trusted);
  EXPECT_EQ(few.time, TransferChoice::prior);
  EXPECT_EQ(few.power, TransferChoice::prior);
  EXPECT_TRUE(few.loo.empty());
}

// A wrong prior -- a board whose time ignores the clock and whose power is constant -- pulled hard
// (8 points' worth): leave-one-out sees it miss, and the gate fits the 8 points alone.
TEST(Transfer, TheGateGivesWayToThePointsWhenThePriorIsWrong) {
  const auto nano = traces::find_device("jetson-nano");
  const AnalyticalModel b_truth(testing::nano_truth(nano), traces::ModelRecord{});
  AnalyticalParams flat = testing::nano_truth(nano);
  flat.time = {0.05, 1e-3, 0, 0};
  flat.power_mean = {5.0, 0, 0, 0, 12.0};
  flat.power_peak = flat.power_mean;
  auto g = gate_case(
      [&](double f, int b) {
        const auto q = b_truth.predict({f}, b);
        traces::ProfilePoint p;
        p.knob = {f};
        p.batch_size = b;
        p.time_per_batch_mean_s = q.time_per_batch_s;
        p.power_mean_w = q.power_mean_w;
        return p;
      },
      flat);
  g.prior.weight = 8;
  const auto gate = choose_transfer(g.train, g.options, g.prior, g.freqs.back(), g.freqs, g.batch_sizes);
  EXPECT_TRUE(gate.trusted);
  EXPECT_EQ(gate.time, TransferChoice::alone) << gate.label();
  EXPECT_EQ(gate.power, TransferChoice::alone) << gate.label();
  const double alone = time_plus_power(*fit_analytical(g.train, g.options), g.test);
  EXPECT_DOUBLE_EQ(time_plus_power(*gate.model, g.test), alone);
  // The prior really is wrong: forced, it loses on the held-out points.
  const double forced = time_plus_power(*fit_transfer_candidate(TransferChoice::prior, g.train, g.options, g.prior,
                                                                g.freqs.back(), g.freqs, g.batch_sizes),
                                        g.test);
  EXPECT_GT(forced, alone + 1.0);
}

// One choice per axis: board B's time is board A's with the batch axis squeezed (as above: the
// prior, b axis scaled, settles its shape in b), while its power has nothing of A's -- flat in b,
// where A's rises with ln b. A prior that helps time and misleads power: the gate takes it for time
// and the points alone for power, and on the held-out points that beats each single choice (the
// points alone for both miss time, the prior for both misses power).
GateCase only_time_transfers_case() {
  const auto nano = traces::find_device("jetson-nano");
  const AnalyticalModel a(log_in_b(nano), traces::ModelRecord{});
  AnalyticalParams flat_in_b = testing::nano_truth(nano);
  for (auto* pw : {&flat_in_b.power_mean, &flat_in_b.power_peak}) {
    pw->cap_base_w_per_hz_v2 += pw->cap_sat_w_per_hz_v2;
    pw->cap_sat_w_per_hz_v2 = 0;
  }
  const AnalyticalModel b_power(flat_in_b, traces::ModelRecord{});
  auto g = gate_case(
      [&](double f, int b) {
        traces::ProfilePoint p;
        p.knob = {f};
        p.batch_size = b;
        p.time_per_batch_mean_s = 0.6 * a.predict({f}, b * b).time_per_batch_s;
        p.power_mean_w = b_power.predict({f}, b).power_mean_w;
        return p;
      },
      log_in_b(nano), 6);
  g.prior.weight = 2;
  return g;
}
TEST(Transfer, TheGateTakesThePriorForTimeAndThePointsForPowerWhenOnlyTimeTransfers) {
  auto g = only_time_transfers_case();
  ASSERT_EQ(g.train.size(), 6u);
  const auto gate = choose_transfer(g.train, g.options, g.prior, g.freqs.back(), g.freqs, g.batch_sizes,
                                    TransferGateMode::per_axis);
  ASSERT_TRUE(gate.trusted);
  EXPECT_EQ(gate.time, TransferChoice::prior_scaled_b) << gate.label();
  EXPECT_EQ(gate.power, TransferChoice::alone) << gate.label();
  EXPECT_EQ(gate.label(), "time prior-scaled-b, power alone");
  // The scores behind it: each axis's choice is that axis's lowest leave-one-out error, among the
  // three candidates that carry both axes (the time-only ones are the joint gate's).
  ASSERT_EQ(gate.loo.size(), 3u);
  for (const auto& [c, e] : gate.loo) {
    EXPECT_TRUE(c == TransferChoice::alone || transfers_power(c)) << to_string(c);
    EXPECT_LE(gate.loo.at(gate.time).time_mape, e.time_mape) << to_string(c);
    EXPECT_LE(gate.loo.at(gate.power).power_mean_mape, e.power_mean_mape) << to_string(c);
  }
  const auto fit = [&](TransferChoice c) {
    return fit_transfer_candidate(c, g.train, g.options, g.prior, g.freqs.back(), g.freqs, g.batch_sizes);
  };
  const auto alone = mape(*fit(TransferChoice::alone), g.test);
  const auto scaled = mape(*fit(TransferChoice::prior_scaled_b), g.test);
  const auto gated = mape(*gate.model, g.test);
  // The combined model is the scaled prior's time and the points' power, exactly.
  EXPECT_NEAR(gated.time_mape, scaled.time_mape, 1e-9);
  EXPECT_LT(gated.time_mape, alone.time_mape);
  EXPECT_LT(gated.power_mean_mape, scaled.power_mean_mape);
  for (const auto c : {TransferChoice::alone, TransferChoice::prior, TransferChoice::prior_scaled_b})
    EXPECT_LT(gated.time_mape + gated.power_mean_mape, time_plus_power(*fit(c), g.test)) << to_string(c);
  // fit_transfer builds the same model from the two choices.
  const auto again =
      fit_transfer(gate.time, gate.power, g.train, g.options, g.prior, g.freqs.back(), g.freqs, g.batch_sizes);
  EXPECT_DOUBLE_EQ(time_plus_power(*again, g.test), gated.time_mape + gated.power_mean_mape);
}

// The same board B (time A's, b axis squeezed; power flat in b, unlike A's): the joint gate (the
// default) takes the scaled prior for time only -- its pseudo-points join the time fit and the power
// models are fitted on the points, with that time model in their coupled terms -- and on the
// held-out points it beats the points alone and every candidate that carries the prior's power.
TEST(Transfer, TheJointGateTakesThePriorForTimeOnlyWhenItsPowerMisleads) {
  auto g = only_time_transfers_case();
  const auto gate = choose_transfer(g.train, g.options, g.prior, g.freqs.back(), g.freqs, g.batch_sizes);
  ASSERT_TRUE(gate.trusted);
  EXPECT_EQ(gate.time, TransferChoice::prior_scaled_b_time_only) << gate.label();
  EXPECT_EQ(gate.power, gate.time);
  EXPECT_EQ(gate.label(), "prior-scaled-b-time-only");
  const auto fit = [&](TransferChoice c) {
    return fit_transfer_candidate(c, g.train, g.options, g.prior, g.freqs.back(), g.freqs, g.batch_sizes);
  };
  for (const auto c : {TransferChoice::alone, TransferChoice::prior, TransferChoice::prior_scaled_b})
    EXPECT_LT(time_plus_power(*gate.model, g.test), time_plus_power(*fit(c), g.test)) << to_string(c);
  // The time model is the scaled prior's, exactly (the time fit does not see the power targets);
  // the power model is not: the pseudo-points stayed out of it.
  const auto both = fit(TransferChoice::prior_scaled_b);
  const auto mine = fit(TransferChoice::prior_scaled_b_time_only);
  const auto& tb = both->params().time;
  const auto& tm = mine->params().time;
  EXPECT_DOUBLE_EQ(tm.fixed_s, tb.fixed_s);
  EXPECT_DOUBLE_EQ(tm.work_cycles, tb.work_cycles);
  EXPECT_DOUBLE_EQ(tm.work_log_cycles, tb.work_log_cycles);
  const auto e_both = mape(*both, g.test), e_mine = mape(*mine, g.test);
  EXPECT_DOUBLE_EQ(e_mine.time_mape, e_both.time_mape);
  EXPECT_LT(e_mine.power_mean_mape, e_both.power_mean_mape - 1.0);
  // Its power is fitted on the points alone: without the prior in the time fit either, it is the
  // points-alone model (the same fit, given the same time model, reads the same power).
  TransferPrior no_prior_power = g.prior;
  no_prior_power.power = false;
  no_prior_power.scale_batch = true;
  const auto direct =
      fit_analytical_with_prior(g.train, g.options, no_prior_power, g.freqs.back(), g.freqs, g.batch_sizes);
  EXPECT_DOUBLE_EQ(time_plus_power(*direct, g.test), time_plus_power(*mine, g.test));
}

// The weights the joint gate chooses from: half-decades from one point's worth down to a thousandth.
TEST(Transfer, TheWeightGridIsHalfDecadesFromOnePointToAThousandth) {
  const auto grid = transfer_weight_grid();
  ASSERT_EQ(grid.size(), 7u);
  EXPECT_DOUBLE_EQ(grid.front(), 1.0);
  EXPECT_NEAR(grid.back(), 1e-3, 1e-15);
  for (size_t i = 1; i < grid.size(); ++i) EXPECT_NEAR(grid[i - 1] / grid[i], std::sqrt(10.0), 1e-12) << i;
}

// The joint gate with a weight grid (calibrate's default: transfer_weight_grid()): each prior candidate
// is scored at each weight; a prior that is right but should weigh little (a board B that differs
// from A by a staircase in b that A lacks) takes the small weight, and the chosen (candidate, weight)
// is the lowest leave-one-out score of all.
TEST(Transfer, TheJointGateChoosesThePriorsWeightByLeaveOneOut) {
  const auto nano = traces::find_device("jetson-nano");
  auto g = log_in_b_case(nano);
  const std::vector<double> grid = {0.03, 0.25, 2.0};
  const auto gate = choose_transfer(g.train, g.options, g.prior, g.freqs.back(), g.freqs, g.batch_sizes,
                                    TransferGateMode::joint, grid);
  ASSERT_TRUE(gate.trusted);
  // Each prior candidate's score is its best over the grid: no weight alone scores lower.
  for (const auto c : {TransferChoice::prior, TransferChoice::prior_scaled_b}) {
    ASSERT_TRUE(gate.loo_weight.count(c));
    EXPECT_NE(std::find(grid.begin(), grid.end(), gate.loo_weight.at(c)), grid.end());
    for (const double w : grid) {
      TransferPrior p = g.prior;
      p.weight = w;
      const auto single = choose_transfer(g.train, g.options, p, g.freqs.back(), g.freqs, g.batch_sizes);
      const auto& e = single.loo.at(c);
      EXPECT_LE(gate.loo.at(c).time_mape + gate.loo.at(c).power_mean_mape, e.time_mape + e.power_mean_mape + 1e-9)
          << to_string(c) << " at " << w;
    }
  }
  // The choice is the lowest score, fitted at its weight.
  const auto score = [&](TransferChoice c) { return gate.loo.at(c).time_mape + gate.loo.at(c).power_mean_mape; };
  for (const auto c : kTransferChoices) EXPECT_LE(score(gate.time), score(c)) << to_string(c);
  EXPECT_EQ(gate.time, gate.power);
  if (gate.time != TransferChoice::alone) {
    EXPECT_EQ(gate.weight, gate.loo_weight.at(gate.time));
    TransferPrior p = g.prior;
    p.weight = gate.weight;
    const auto again = fit_transfer_candidate(gate.time, g.train, g.options, p, g.freqs.back(), g.freqs, g.batch_sizes);
    EXPECT_DOUBLE_EQ(time_plus_power(*again, g.test), time_plus_power(*gate.model, g.test));
  }
  // Without a grid the gate keeps TransferPrior::weight.
  const auto fixed = choose_transfer(g.train, g.options, g.prior, g.freqs.back(), g.freqs, g.batch_sizes);
  EXPECT_EQ(fixed.weight, g.prior.weight);
}

// combine_transfer_axes: time (and its standard errors and form) from one fit, V(f) and power from the
// other; the record round-trips.
TEST(Transfer, CombiningAxesKeepsEachFitsOwnParameters) {
  const auto nano = traces::find_device("jetson-nano");
  AnalyticalFitOptions opt;
  opt.voltage_table = nano.voltage_table;
  const auto t1 = testing::table_from(testing::nano_truth(nano), nano.gpu_freqs_hz, testing::paper_batches(), 0.01);
  AnalyticalParams other = testing::nano_truth(nano);
  other.time = {0.02, 1e-3, 1e6, 2e6};
  for (auto* pw : {&other.power_mean, &other.power_peak}) pw->idle_w += 1.5;
  const auto t2 = testing::table_from(other, nano.gpu_freqs_hz, testing::paper_batches(), 0.01);
  const auto time_model = fit_analytical(t1.points, opt);
  const auto power_model = fit_analytical(t2.points, opt);
  const auto both = combine_transfer_axes(*time_model, *power_model);
  for (const auto& p : t1.points) {
    const auto q = both->predict(p.knob, p.batch_size);
    EXPECT_DOUBLE_EQ(q.time_per_batch_s, time_model->predict(p.knob, p.batch_size).time_per_batch_s);
  }
  EXPECT_DOUBLE_EQ(both->params().power_mean.idle_w, power_model->params().power_mean.idle_w);
  EXPECT_GT(both->params().power_mean.idle_w, time_model->params().power_mean.idle_w + 1.0);
  const auto r = both->to_record(), rt = time_model->to_record();
  for (size_t i = 0; i < r.param_names.size(); ++i)
    if (r.param_names[i].rfind("time_", 0) == 0) {
      const auto j = std::find(rt.param_names.begin(), rt.param_names.end(), r.param_names[i]) - rt.param_names.begin();
      ASSERT_LT(static_cast<size_t>(j), rt.param_names.size());
      EXPECT_EQ(r.param_values[i], rt.param_values[static_cast<size_t>(j)]) << r.param_names[i];
      if (std::isfinite(rt.param_stderr[static_cast<size_t>(j)])) {
        EXPECT_EQ(r.param_stderr[i], rt.param_stderr[static_cast<size_t>(j)]) << r.param_names[i];
      }
    }
  const auto back = analytical_from_record(r);
  const auto q = back->predict({nano.gpu_freqs_hz.back()}, 4), q0 = both->predict({nano.gpu_freqs_hz.back()}, 4);
  EXPECT_DOUBLE_EQ(q.time_per_batch_s, q0.time_per_batch_s);
  EXPECT_DOUBLE_EQ(q.power_mean_w, q0.power_mean_w);
}

TEST(Coverage, CountsHeldOutErrorsInsideTheStatedSigmaAndTheNinetyPercentInterval) {
  // |e| <= 2.5%: 0.01, -0.02; <= 1.645 * 2.5% = 4.11%: also 0.03; 0.05 is outside both.
  const auto c = coverage({0.01, -0.02, 0.03, 0.05, traces::kNaN}, 0.025);
  EXPECT_EQ(c.points, 4);
  EXPECT_DOUBLE_EQ(c.within_1sigma, 0.5);
  EXPECT_DOUBLE_EQ(c.within_90, 0.75);
  EXPECT_EQ(coverage({0.01}, 0).points, 0);
  // Gaussian errors of sigma s cover ~68% / ~90% at the stated s.
  std::mt19937_64 rng(5);
  std::normal_distribution<double> n(0.0, 0.04);
  std::vector<double> e;
  for (int i = 0; i < 20000; ++i) e.push_back(n(rng));
  const auto g = coverage(e, 0.04);
  EXPECT_NEAR(g.within_1sigma, 0.683, 0.015);
  EXPECT_NEAR(g.within_90, 0.90, 0.015);
  // The stated sigma: MAPE read as a Gaussian sigma, never below the measurement spread.
  EXPECT_NEAR(prediction_sigma(4.0, traces::kNaN), 0.04 * std::sqrt(std::acos(-1.0) / 2), 1e-12);
  EXPECT_DOUBLE_EQ(prediction_sigma(1.0, 0.05), 0.05);
}

}  // namespace
}  // namespace pacer::models
