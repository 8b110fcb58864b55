// The pacer policy and its relation model (explore/relation_model.hpp) on hand-made relations:
// the leave-one-out curve and the shrinkage, censored runs, the learning-curve point, the expected-
// time rule with its interval, a relation where Algorithm 1 provably picks wrong and pacer right,
// and the regret on the real Zeus traces when they are present.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>

#include "explore/pacer_policy.hpp"
#include "explore/relation_model.hpp"
#include "explore/sweep.hpp"
#include "explore/transfer.hpp"
#include "traces/import/zeus.hpp"

namespace pacer::explore {
namespace {

traces::RelationRun run(int b, int seed, int64_t samples, bool reached = true, int64_t budget = 0) {
  traces::RelationRun r;
  r.batch_size = b;
  r.seed = seed;
  r.reached = reached;
  r.samples = samples;
  r.budget_samples = budget ? budget : samples;
  return r;
}

// Five batch sizes, two seeds each (800 and 1300 samples), except b=32 whose seeds were lucky
// (`lucky` and `lucky` + 500): with 500, its mean dips 31 % below its neighbours; with 600, 19 %.
traces::RelationSet dip_relation(int64_t lucky = 500) {
  traces::RelationSet s;
  s.name = "dip";
  for (int b : {8, 16, 32, 64, 128}) {
    s.runs.push_back(run(b, 0, b == 32 ? lucky : 800));
    s.runs.push_back(run(b, 1, b == 32 ? lucky + 500 : 1300));
  }
  return s;
}

// One knob setting; time per sample 1.0, 0.9, 0.8, 0.78, 0.9 s for b = 8..128 (b=64 the fastest).
traces::ProfileTable dip_profile() {
  traces::ProfileTable t;
  t.workload = "dip";
  t.device = "test";
  const int bs[] = {8, 16, 32, 64, 128};
  const double per_sample_s[] = {1.0, 0.9, 0.8, 0.78, 0.9};
  for (int i = 0; i < 5; ++i) {
    traces::ProfilePoint p;
    p.knob = {100e6};
    p.batch_size = bs[i];
    p.time_per_batch_mean_s = per_sample_s[i] * bs[i];
    p.power_mean_w = 5;
    t.points.push_back(p);
  }
  return t;
}

TEST(RelationModel, LeaveOneOutCurveAndShrinkageByHand) {
  const auto m = fit_relation_model(dip_relation());
  ASSERT_EQ(m.by_batch.size(), 5u);
  const double lo = std::log(800.0), hi = std::log(1300.0), dlo = std::log(500.0), dhi = std::log(1000.0);
  // Pooled within-b variance of log samples: four b with (hi-lo)^2/2, one with (dhi-dlo)^2/2.
  const double s2 = (4 * (hi - lo) * (hi - lo) / 2 + (dhi - dlo) * (dhi - dlo) / 2) / 5;
  EXPECT_NEAR(m.seed_var, s2, 1e-12);
  const double flat = (lo + hi) / 2, dip = (dlo + dhi) / 2, d = flat - dip;
  // Priors from the neighbours alone: interpolation inside, linear extrapolation at the ends.
  EXPECT_NEAR(m.by_batch[2].prior_log, flat, 1e-12);          // b=32 between 16 and 64
  EXPECT_NEAR(m.by_batch[1].prior_log, flat - d / 2, 1e-12);  // b=16 between 8 and 32
  EXPECT_NEAR(m.by_batch[0].prior_log, flat + d, 1e-12);      // b=8 extrapolated from 16 and 32
  const double tau2 = (3 * d * d + 2 * (d / 2) * (d / 2)) / 5 - s2 / 2;
  EXPECT_NEAR(m.between_var, tau2, 1e-12);
  // Posterior of b=32: precision-weighted mean of the prior and its own mean, pulled up toward
  // its neighbours, not all the way.
  const double w_prior = 1 / tau2, w_data = 2 / (kPacerShrink * s2);
  EXPECT_NEAR(m.by_batch[2].log_mean, (w_prior * flat + w_data * dip) / (w_prior + w_data), 1e-12);
  EXPECT_NEAR(m.by_batch[2].log_var, 1 / (w_prior + w_data), 1e-12);
  EXPECT_GT(m.by_batch[2].log_mean, dip + 0.5 * d);
  EXPECT_LT(m.by_batch[2].log_mean, flat);
  // E = exp(m + v/2).
  const auto& p = m.by_batch[2];
  EXPECT_NEAR(p.expected_samples(), std::exp(p.log_mean + p.log_var / 2), 1e-9);
  // The proxy's mean with nothing left out: shrink 1 and the prior's own variance (b=32 is halfway
  // between b=16 and b=64 in log b: weights 1/2, 1/2 on means of two seeds each).
  const double prior_var = tau2 + 0.25 * s2 / 2 + 0.25 * s2 / 2;
  EXPECT_NEAR(p.proxy_log_var, 1 / (1 / prior_var + 2 / s2), 1e-12);
  EXPECT_NEAR(p.proxy_log_mean, (flat / prior_var + dip * 2 / s2) / (1 / prior_var + 2 / s2), 1e-12);
  // The 90 % interval is the target's mean over two seeds: the proxy mean's uncertainty plus the
  // seed spread of a two-seed mean, inflated, centred on the mean of a log-normal.
  EXPECT_NEAR(p.target_log_mean, p.log_mean + s2 / 2, 1e-12);
  EXPECT_NEAR(p.target_log_sd, kIntervalInflation * std::sqrt(p.proxy_log_var + s2 / 2), 1e-12);
  EXPECT_NEAR(std::log(p.upper_samples()) - p.target_log_mean, kInterval90Z * p.target_log_sd, 1e-12);
  EXPECT_LT(p.lower_samples(), p.expected_samples());
  EXPECT_GT(p.upper_samples(), p.expected_samples());
  // It is wider than the posterior's own 90 % interval, which ignored the seed spread of a mean the
  // target measures: the "6.135 s - 6.137 s" for runs 16 % apart.
  EXPECT_GT(p.target_log_sd, 3 * std::sqrt(p.log_var));
}

TEST(RelationModel, WholeEpochCountsWidenTheInterval) {
  // Identical seeds counted in whole epochs of 100 samples: no seed spread to see, but each count
  // is uncertain by one epoch.
  traces::RelationSet s;
  s.samples_per_epoch = 100;
  for (int b : {8, 16, 32, 64})
    for (int seed = 0; seed < 2; ++seed) s.runs.push_back(run(b, seed, 500));
  const auto m = fit_relation_model(s);
  EXPECT_EQ(m.seed_var, 0);
  const auto& p = *m.find(32);
  const double q = (100.0 / 500) * (100.0 / 500) / 12;
  EXPECT_NEAR(p.proxy_log_var, q / 2, 1e-12);
  EXPECT_NEAR(p.target_log_sd, kIntervalInflation * std::sqrt(q / 2 + q / 2), 1e-12);
  EXPECT_LT(p.lower_samples(), 500);
  EXPECT_GT(p.upper_samples(), 500);
}

TEST(RelationModel, IdenticalSeedsAreTakenAsExact) {
  traces::RelationSet s;
  for (int b : {8, 16, 32, 64}) {
    s.runs.push_back(run(b, 0, 1000 * b));
    s.runs.push_back(run(b, 1, 1000 * b));
  }
  s.runs[4].samples = s.runs[5].samples = 20000;  // b=32 off the curve, but with no seed noise at all
  const auto m = fit_relation_model(s);
  EXPECT_EQ(m.seed_var, 0);
  EXPECT_NEAR(m.find(32)->expected_samples(), 20000, 1e-6);
  EXPECT_EQ(m.find(32)->log_var, 0);
}

TEST(RelationModel, CensoredRunsCountAtLeastTheirBudget) {
  traces::RelationSet s;
  s.samples_per_epoch = 100;
  s.runs = {run(8, 0, 1000), run(8, 1, 0, false, 2000),    // censored at 20 epochs: at least 21
            run(16, 0, 1000), run(16, 1, 0, false, 500)};  // censored early: at least the other seed
  const auto m = fit_relation_model(s);
  EXPECT_NEAR(m.find(8)->observed_log_mean, (std::log(1000.0) + std::log(2100.0)) / 2, 1e-12);
  EXPECT_NEAR(m.find(16)->observed_log_mean, std::log(1000.0), 1e-12);
  // Fewer than three batch sizes: no curve, the means with their seed noise.
  EXPECT_TRUE(std::isnan(m.find(8)->prior_log));
  EXPECT_NEAR(m.find(8)->log_mean, m.find(8)->observed_log_mean, 1e-12);
  // The raw mean ignores the censored run: it would rank b=8 as fast as b=16.
  EXPECT_DOUBLE_EQ(s.mean_samples(8), s.mean_samples(16));
  EXPECT_GT(m.find(8)->expected_samples(), m.find(16)->expected_samples());
}

TEST(RelationModel, LooserLevelDequantisesTheRuns) {
  // Two seeds at each b reach the target at the same epoch count, but one got to the looser level
  // much later: the learning curve says that run was slower.
  traces::RelationSet strict, looser;
  strict.samples_per_epoch = looser.samples_per_epoch = 100;
  for (int b : {8, 16}) {
    strict.runs.push_back(run(b, 0, 500));
    strict.runs.push_back(run(b, 1, 500));
    looser.runs.push_back(run(b, 0, 300));
    looser.runs.push_back(run(b, 1, b == 8 ? 300 : 400));
  }
  strict.runs.push_back(run(16, 2, 0, false, 400));  // censored before the target, but the curve knows it
  looser.runs.push_back(run(16, 2, 400));
  const auto plain = fit_relation_model(strict);
  const auto curve = fit_relation_model(strict, &looser);
  EXPECT_NEAR(plain.find(8)->observed_log_mean, std::log(500.0), 1e-12);
  // The last step d(b) = log 500 - log looser, as a line in log b through the four runs that reached
  // both levels: log(5/3) at b = 8 (both runs), (log(5/3) + log(5/4)) / 2 at b = 16.
  const double g8 = std::log(5.0 / 3), g16 = (std::log(5.0 / 3) + std::log(5.0 / 4)) / 2;
  const double w = kPacerOwnWeight, own = std::log(500.0);
  const double fast8 = w * own + (1 - w) * (std::log(300.0) + g8);  // = own: b = 8's runs sit on the line
  const double fast16 = w * own + (1 - w) * (std::log(300.0) + g16);
  const double slow16 = w * own + (1 - w) * (std::log(400.0) + g16);
  EXPECT_NEAR(curve.find(8)->observed_log_mean, fast8, 1e-12);
  EXPECT_NEAR(fast8, own, 1e-12);
  const double censored = std::max(std::log(400.0) + g16, std::log(500.0));
  EXPECT_NEAR(curve.find(16)->observed_log_mean, (fast16 + slow16 + censored) / 3, 1e-12);
  EXPECT_GT(slow16, fast16);  // the run that was late to the looser level counts as slower
  RelationModelOptions off;
  off.use_learning_curve = false;
  EXPECT_NEAR(fit_relation_model(strict, &looser, off).find(8)->observed_log_mean, std::log(500.0), 1e-12);
}

TEST(RelationModel, LearningCurveStepIsALineInLogB) {
  // The last step grows with b, as on the Zeus traces: step(b) = 1.5 (b / 8)^(1/3), 1.5x the looser
  // level's samples at b = 8 and 3x at b = 64, a line in log b. Fitted as one offset for every b, it
  // would move b = 8's and b = 64's values by 0.26 in log samples; fitted as a line, every run's
  // value is its own count.
  traces::RelationSet strict, looser;
  for (int b : {8, 16, 32, 64})
    for (int seed = 0; seed < 2; ++seed) {
      const double l = 100000.0 + 10000.0 * seed;
      looser.runs.push_back(run(b, seed, static_cast<int64_t>(l)));
      const double step = 1.5 * std::cbrt(b / 8.0);
      strict.runs.push_back(run(b, seed, static_cast<int64_t>(std::llround(l * step))));
    }
  const auto m = fit_relation_model(strict, &looser);
  for (int b : {8, 16, 32, 64}) {
    double own = 0;
    for (const auto& r : strict.runs)
      if (r.batch_size == b) own += std::log(static_cast<double>(r.samples)) / 2;
    EXPECT_NEAR(m.find(b)->observed_log_mean, own, 1e-4) << "b=" << b;
  }
}

TEST(PacerPolicy, AlgorithmOneProvablyWrongPacerRight) {
  const Space space = Space::from_profile(dip_profile());
  const Index index(space);
  // b=32's seeds (600, 1100) dip 19 % under its neighbours', less than the seeds' own spread (800
  // against 1300 at every other b): the dip is noise, the between-b variance estimate is nil, and
  // the posterior pools b=32 with the curve of the others. (Ranking alone: with two seeds the
  // relation is too thin to act on it, PacerPolicy.ThinRelationKeepsAlgorithmOnesBatchSize.)
  RelationModelOptions ranking;
  ranking.depart_z = -INFINITY;
  const Relation proxy = Relation::from_set(dip_relation(600), space, nullptr, ranking);
  // The truth: 1050 samples at every b, so the fastest time per sample (b=64) is optimal.
  traces::RelationSet truth;
  for (int b : {8, 16, 32, 64, 128}) truth.runs.push_back(run(b, 0, 1050));
  const Relation target = Relation::from_set(truth, space);
  PolicyContext ctx;
  ctx.index = &index;
  ctx.proxy = &proxy;
  ctx.target = &target;
  // Algorithm 1 trusts b=32's lucky mean (850): 0.8 * 850 < 0.78 * 1050.
  EXPECT_EQ(select(Policy::Ours, ctx, 10).batch_size, 32);
  EXPECT_EQ(select(Policy::OursRobust, ctx, 10).batch_size, 32);
  EXPECT_EQ(select(Policy::Oracle, ctx, 10).batch_size, 64);
  std::vector<Selection> ranked;
  const Selection s = select(Policy::Pacer, ctx, 10, &ranked);
  ASSERT_TRUE(s.feasible);
  EXPECT_EQ(s.policy, Policy::Pacer);
  EXPECT_EQ(s.batch_size, 64);
  ASSERT_EQ(ranked.size(), 5u);
  EXPECT_EQ(ranked[0].batch_size, 64);
  EXPECT_EQ(ranked[1].batch_size, 32);
  // Predicted time = t_batch * E[N] / b, with its 90 % interval around it.
  EXPECT_NEAR(s.predicted_time_s, 0.78 * proxy.expected_samples_by_batch[3], 1e-9);
  EXPECT_LT(s.predicted_time_lo_s, s.predicted_time_s);
  EXPECT_GT(s.predicted_time_hi_s, s.predicted_time_s);
  EXPECT_NEAR(s.predicted_time_hi_s, 0.78 * proxy.samples_hi_by_batch[3], 1e-9);
  // Other policies give no interval.
  EXPECT_TRUE(std::isnan(select(Policy::Ours, ctx, 10).predicted_time_lo_s));
}

// One knob setting; time per sample 1.0, 0.6, 0.4, 0.3, 0.25 s for b = 8..128.
traces::ProfileTable curve_profile() {
  traces::ProfileTable t = dip_profile();
  const double per_sample_s[] = {1.0, 0.6, 0.4, 0.3, 0.25};
  for (int i = 0; i < 5; ++i) t.points[i].time_per_batch_mean_s = per_sample_s[i] * t.points[i].batch_size;
  return t;
}

// The truth of curve_profile's workload: 400, 500, 700, 1100, 2000 samples at b = 8..128, so the
// times per batch size are 400, 300, 280, 330, 500 s and b=32 is optimal.
traces::RelationSet curve_truth() {
  traces::RelationSet s;
  s.name = "truth";
  const int bs[] = {8, 16, 32, 64, 128};
  const int64_t n[] = {400, 500, 700, 1100, 2000};
  for (int i = 0; i < 5; ++i) s.runs.push_back(run(bs[i], 0, n[i]));
  return s;
}

// Two seeds per b drawn about curve_truth (15 % log-normal): the curve's linear extrapolation to
// b=8 from b=16 and b=32 (whose second seed is slow) makes b=8 look 9 % faster than b=16 to the old
// pacer policy, which moved there (43 % regret); the runs' own means, nothing left out, still
// favour Algorithm 1's b=16 (7 % regret): the relation cannot separate the two, and pacer keeps
// Algorithm 1's batch size and says so.
TEST(PacerPolicy, ThinRelationKeepsAlgorithmOnesBatchSize) {
  const Space space = Space::from_profile(curve_profile());
  const Index index(space);
  traces::RelationSet thin;
  thin.name = "thin";
  const std::map<int, std::pair<int64_t, int64_t>> seeds = {
      {8, {390, 370}}, {16, {590, 450}}, {32, {700, 1030}}, {64, {1280, 1200}}, {128, {1950, 1640}}};
  for (const auto& [b, n] : seeds) {
    thin.runs.push_back(run(b, 0, n.first));
    thin.runs.push_back(run(b, 1, n.second));
  }
  RelationModelOptions old_rule;
  old_rule.depart_z = -INFINITY;  // depart whenever the expected time is shorter: the old policy
  const Relation before = Relation::from_set(thin, space, nullptr, old_rule);
  const Relation proxy = Relation::from_set(thin, space);
  PolicyContext ctx;
  ctx.index = &index;
  ctx.proxy = &before;
  EXPECT_EQ(select(Policy::Pacer, ctx, 10).batch_size, 8);
  ctx.proxy = &proxy;
  const Selection ours = select(Policy::Ours, ctx, 10);
  ASSERT_EQ(ours.batch_size, 16);
  std::vector<Selection> ranked;
  const Selection s = select(Policy::Pacer, ctx, 10, &ranked);
  ASSERT_TRUE(s.feasible);
  EXPECT_EQ(s.policy, Policy::Pacer);
  EXPECT_EQ(s.batch_size, ours.batch_size);
  EXPECT_EQ(s.knob, ours.knob);
  EXPECT_NE(s.message.find("too thin to separate b=8 from Algorithm 1's b=16"), std::string::npos) << s.message;
  EXPECT_NE(s.method.find("thin relation"), std::string::npos) << s.method;
  ASSERT_FALSE(ranked.empty());
  EXPECT_EQ(ranked[0].batch_size, 16);  // the ranking leads with what was chosen
  EXPECT_EQ(ranked[0].message, s.message);
  EXPECT_FALSE(std::isnan(s.predicted_time_lo_s));  // with its interval
}

// Six seeds per batch size about curve_truth; half of b=64's runs were censored at 2000 samples and
// Algorithm 1's mean drops them (700: b=64 looks fastest). The relation is thick enough to separate:
// the proxy's own means, the censored runs counted, put b=64 behind b=32, so pacer departs to b=32,
// the oracle's.
TEST(PacerPolicy, ThickRelationStillDepartsFromAlgorithmOne) {
  const Space space = Space::from_profile(curve_profile());
  const Index index(space);
  traces::RelationSet proxy_set;
  proxy_set.name = "thick";
  for (const auto& r : curve_truth().runs)
    for (int seed = 0; seed < 6; ++seed) {
      if (r.batch_size == 64)
        proxy_set.runs.push_back(seed < 3 ? run(64, seed, 700) : run(64, seed, 0, false, 2000));
      else
        proxy_set.runs.push_back(run(r.batch_size, seed, r.samples * (50 + seed) / 50));
    }
  const Relation proxy = Relation::from_set(proxy_set, space);
  const traces::RelationSet truth = curve_truth();
  const Relation target = Relation::from_set(truth, space);
  PolicyContext ctx;
  ctx.index = &index;
  ctx.proxy = &proxy;
  ctx.target = &target;
  EXPECT_EQ(select(Policy::Ours, ctx, 10).batch_size, 64);
  const Selection s = select(Policy::Pacer, ctx, 10);
  EXPECT_EQ(s.batch_size, 32);
  EXPECT_EQ(s.batch_size, select(Policy::Oracle, ctx, 10).batch_size);
  EXPECT_TRUE(s.message.empty()) << s.message;
  EXPECT_EQ(s.method, "front");
}

// Issue 23 item 4: a target data set that learns faster than the proxy at every b by a factor seen
// in the other proxy/target pairs (Austen's Emma: -0.255 in log). The old interval (seeds only) is
// far too narrow for it; with the transfer term of another data set it covers the target's mean.
TEST(TransferInterval, CoversATargetThatLearnsFasterByAnotherPairsFactor) {
  const Space space = Space::from_profile(dip_profile());
  traces::RelationSet proxy, target;
  proxy.name = "proxy";
  proxy.dataset = "austen-proxy";
  target.name = "target-true";
  target.dataset = "austen-emma";
  const double factor = std::exp(-0.255);
  for (int b : {8, 16, 32, 64, 128})
    for (int seed = 0; seed < 3; ++seed) {
      const int64_t n = 950 + 50 * seed;  // a tight proxy: seeds 5 % apart
      proxy.runs.push_back(run(b, seed, n));
      target.runs.push_back(run(b, seed, std::llround(static_cast<double>(n) * factor)));
    }
  const size_t bi = 2;  // b = 32
  const double truth = target.mean_samples(32);
  const Relation seeds_only = Relation::from_set(proxy, space);
  EXPECT_LT(truth, seeds_only.samples_lo_by_batch[bi]);  // the old interval misses it
  const TransferSd sd = transfer_sd(proxy, &target);
  EXPECT_DOUBLE_EQ(sd.level, kTransferLogSd);
  RelationModelOptions o;
  o.transfer_log_sd = sd.level;
  o.transfer_shape_sd = sd.shape;
  const Relation with_transfer = Relation::from_set(proxy, space, nullptr, o);
  EXPECT_GT(truth, with_transfer.samples_lo_by_batch[bi]);
  EXPECT_LT(truth, with_transfer.samples_hi_by_batch[bi]);
  // The expected samples (the ranking) do not move: only the interval widens.
  EXPECT_DOUBLE_EQ(with_transfer.expected_samples_by_batch[bi], seeds_only.expected_samples_by_batch[bi]);
}

TEST(TransferInterval, NoTransferTermForRunsOfTheProxysOwnDataSet) {
  traces::RelationSet a, b;
  a.dataset = "cifar100 (zeus train trace, runs 1-2 of each b)";
  b.dataset = "cifar100 (zeus train trace, all runs)";
  EXPECT_TRUE(same_data_set(a, b));
  EXPECT_EQ(transfer_sd(a, &b).level, 0);
  EXPECT_EQ(transfer_sd(a, &b).shape, 0);
  b.dataset = "fmnist-target-a";
  EXPECT_FALSE(same_data_set(a, b));
  EXPECT_EQ(transfer_sd(a, &b).level, kTransferLogSd);
  EXPECT_EQ(transfer_sd(a, nullptr).shape, kTransferShapeSd);  // no target: another data set, the premise
}

TEST(TransferInterval, PairStatisticsByHand) {
  traces::RelationSet p, t;
  // One seed each: no seed noise; log ratios +0.1 and +0.3 at b = 16 and 32.
  p.runs = {run(16, 0, 1000), run(32, 0, 2000)};
  t.runs = {run(16, 0, std::llround(1000 * std::exp(0.1))), run(32, 0, std::llround(2000 * std::exp(0.3)))};
  const TransferPair tp = transfer_pair(p, t);
  EXPECT_EQ(tp.batches, 2);
  EXPECT_NEAR(tp.mean_log_ratio, 0.2, 1e-3);
  EXPECT_NEAR(tp.level_var, (0.01 + 0.09) / 2, 1e-3);
  EXPECT_NEAR(tp.shape_var, 0.02, 1e-3);  // (0.1^2 + 0.1^2) / (2 - 1)
  EXPECT_NEAR(pooled_transfer_sd({tp, tp}).level, std::sqrt(0.05), 1e-3);
  EXPECT_TRUE(std::isnan(pooled_transfer_sd({tp}, 0).level));  // nothing left
}

// Issue 23 item 5: a near-tie (pacer's b 1 % faster by the proxy's means, 0.22 sd of their
// uncertainty) departs from Algorithm 1 on runs of the proxy's own data set (the Zeus rule), and is
// kept at Algorithm 1's b on another data set, where the per-b transfer error is larger than the gain.
TEST(PacerPolicy, TransferMarginKeepsAlgorithmOnesBatchSizeOnAnotherDataSet) {
  Relation proxy;
  proxy.name = "p";
  proxy.samples_by_batch = proxy.expected_samples_by_batch = {1000, 1000};
  proxy.proxy_log_mean_by_batch = {std::log(1000.0), std::log(1000.0)};
  proxy.proxy_log_var_by_batch = {0.001, 0.001};
  Selection pacer, ours;
  pacer.batch_index = 0;
  pacer.batch_size = 16;
  pacer.predicted_time_s = 99;
  ours.batch_index = 1;
  ours.batch_size = 32;
  ours.predicted_time_s = 100;
  EXPECT_EQ(thin_relation_reason(proxy, pacer, ours), "");  // same data set: departs
  proxy.transfer_shape_sd = kTransferShapeSd;
  const std::string why = thin_relation_reason(proxy, pacer, ours);
  EXPECT_NE(why.find("another data set"), std::string::npos) << why;
  // A gain beyond the margin still departs.
  pacer.predicted_time_s = 80;
  EXPECT_EQ(thin_relation_reason(proxy, pacer, ours), "");
}

TEST(PacerPolicy, SweepSummaryCsvAndBootstrapIntervals) {
  const Space space = Space::from_profile(dip_profile());
  const Index index(space);
  RelationModelOptions ranking;  // the ranking alone (the relation is thin)
  ranking.depart_z = -INFINITY;
  const Relation proxy = Relation::from_set(dip_relation(600), space, nullptr, ranking);
  traces::RelationSet truth;  // identical seeds: every resample is the same relation
  for (int b : {8, 16, 32, 64, 128})
    for (int seed = 0; seed < 3; ++seed) truth.runs.push_back(run(b, seed, 1050));
  const Relation target = Relation::from_set(truth, space);
  SweepWorkload w;
  w.workload = "dip";
  w.index = &index;
  w.proxy = &proxy;
  w.target = &target;
  w.target_set = &truth;
  w.caps_w = {10};
  SweepOptions so;
  so.policies = {Policy::Ours, Policy::Pacer, Policy::Oracle};
  const auto rows = sweep(w, so);
  const auto intervals = bootstrap_regret({w}, rows, 30);
  ASSERT_EQ(intervals.size(), 3u);
  EXPECT_EQ(intervals[0].policy, "ours");
  EXPECT_NEAR(intervals[0].mean_lo, 0.8 / 0.78 - 1, 1e-12);  // b=32 instead of b=64, every resample
  EXPECT_NEAR(intervals[0].max_hi, 0.8 / 0.78 - 1, 1e-12);
  EXPECT_NEAR(intervals[1].mean_hi, 0, 1e-12);
  const std::string csv = summary_csv(summarize(rows), intervals);
  EXPECT_NE(csv.find("\nours,1,1,0.025641,0.025641,0,0.025641,0.025641,0.025641,0.025641\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\npacer,1,1,0,0,1,0,0,0,0\n"), std::string::npos) << csv;
  // Seeds that differ give an interval of nonzero width for Algorithm 1's choice.
  truth.runs[6].samples = 2000;  // b=32, seed 0
  const auto wide = bootstrap_regret({w}, sweep(w, so), 200);
  EXPECT_LT(wide[0].mean_lo, wide[0].mean_hi);
}

TEST(PacerPolicy, WithoutRunsItRanksLikeOursRobust) {
  const Space space = Space::from_profile(dip_profile());
  const Index index(space);
  Relation means;
  means.samples_by_batch = {1000, 1000, 700, 1000, 1000};  // no posterior: nothing to shrink with
  PolicyContext ctx{&index, &means};
  EXPECT_EQ(select(Policy::Pacer, ctx, 10).batch_size, select(Policy::OursRobust, ctx, 10).batch_size);
  EXPECT_FALSE(select(Policy::Pacer, ctx, 1).feasible);  // under every configuration's power
  EXPECT_EQ(policy_from_string("pacer"), Policy::Pacer);
  EXPECT_EQ(kDefaultPolicy, Policy::Pacer);
}

TEST(PacerPolicy, ZeusImporterKeepsTheNextLooserLevel) {
  const char* power =
      "dataset,network,batch_size,optimizer,power_limit,time_per_epoch,average_power\n"
      "toy,net,8,adam,100,10,90\ntoy,net,16,adam,100,7,95\n";
  // Levels 0.5 < 0.6 < 0.7; every run reaches 0.7: target 0.7, looser 0.6.
  std::string train = "dataset,network,batch_size,optimizer,learning_rate,run,target_metric,target_epoch\n";
  for (int b : {8, 16})
    for (int r = 1; r <= 4; ++r)
      train += fmt::format(
          "toy,net,{0},adam,1e-3,{1},0.5,1\ntoy,net,{0},adam,1e-3,{1},0.6,{2}\n"
          "toy,net,{0},adam,1e-3,{1},0.7,{3}\n",
          b, r, 2 + r, 5 + r);
  traces::zeus::ImportOptions o;
  const auto res = traces::zeus::import_text(power, train, o);
  ASSERT_EQ(res.workloads.size(), 1u);
  const auto& w = res.workloads[0];
  EXPECT_DOUBLE_EQ(w.proxy.target, 0.7);
  EXPECT_DOUBLE_EQ(w.proxy_looser.target, 0.6);
  EXPECT_EQ(w.proxy_looser.name, traces::zeus::looser_name(w.proxy.name));
  ASSERT_EQ(w.proxy_looser.runs.size(), w.proxy.runs.size());  // the same runs: the first half
  EXPECT_EQ(w.proxy_looser.runs[1].seed, w.proxy.runs[1].seed);
  EXPECT_EQ(w.proxy_looser.runs[1].samples, 4 * w.proxy_looser.samples_per_epoch);  // run 2: epoch 4
}

// The pacer policy's acceptance figure: mean regret <= 0.5 % over the shared V100 and A40 traces.
TEST(PacerPolicy, ZeusRegretUnderGoal) {
  const std::filesystem::path dir = std::filesystem::path(PACER_SOURCE_DIR) / "data" / "zeus";
  ASSERT_TRUE(std::filesystem::exists(dir / "summary_train.csv")) << "no Zeus traces under " << dir;
  std::vector<traces::SweepRow> rows;
  for (const char* gpu : {"v100", "a40"}) {
    traces::zeus::ImportOptions o;
    o.data_dir = dir;
    o.gpu = gpu;
    for (const auto& w : traces::zeus::import_traces(o).workloads) {
      const Space space = Space::from_profile(w.profile);
      const Index index(space);
      const Relation proxy = Relation::from_set(w.proxy, space, &w.proxy_looser);
      const Relation target = Relation::from_set(w.target, space);
      SweepWorkload sw;
      sw.workload = std::string(gpu) + "/" + w.name;
      sw.index = &index;
      sw.proxy = &proxy;
      sw.target = &target;
      sw.target_set = &w.target;
      sw.caps_w = traces::zeus::protocol_caps_w(w.profile);
      SweepOptions so;
      so.policies = {Policy::Ours, Policy::Pacer, Policy::Oracle};
      const auto r = sweep(sw, so);
      rows.insert(rows.end(), r.begin(), r.end());
    }
  }
  const auto summary = summarize(rows);
  double ours = NAN, pacer = NAN;
  for (const auto& p : summary.policies) {
    if (p.policy == "ours") ours = p.mean_regret;
    if (p.policy == "pacer") {
      pacer = p.mean_regret;
      EXPECT_EQ(p.feasible, p.rows);
      EXPECT_EQ(p.rows, 120);
    }
  }
  EXPECT_LE(pacer, 0.005);
  EXPECT_LT(pacer, ours / 10);
}

}  // namespace
}  // namespace pacer::explore
