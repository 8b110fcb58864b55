// Cheaper relation vectors (explore/proxy_budget.hpp): the learning-curve extrapolation, the cut of
// a proxy's runs and the compute it used, the cut grammar, and the budget sweep on hand-made
// problems and on the real Zeus traces when they are present.
#include "explore/proxy_budget.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>

#include "base/error.hpp"
#include "explore/adaptive.hpp"
#include "explore/pacer_policy.hpp"
#include "explore/problem.hpp"
#include "explore/sweep.hpp"
#include "explore/transfer.hpp"
#include "tests/support/temp_store.hpp"
#include "traces/import/zeus.hpp"

namespace pacer::explore {
namespace {

namespace fs = std::filesystem;

TEST(ProxyBudget, ExtrapolatesTheMetricLinearInLogSamples) {
  // metric = 0.1 ln(n) - 0.5: 0.6 is reached at n = e^11.
  std::vector<std::pair<int64_t, double>> pts;
  for (int64_t n : {1000, 4000, 9000, 20000}) pts.emplace_back(n, 0.1 * std::log(static_cast<double>(n)) - 0.5);
  EXPECT_NEAR(extrapolate_samples(pts, 0.6, true), std::exp(11.0), 1e-6 * std::exp(11.0));
  // Only the last three points count: a first point off the line changes nothing.
  pts[0].second = 0.0;
  EXPECT_NEAR(extrapolate_samples(pts, 0.6, true), std::exp(11.0), 1e-6 * std::exp(11.0));
  // Lower is better (an error rate falling with log n): the same line mirrored.
  std::vector<std::pair<int64_t, double>> err;
  for (const auto& [n, m] : pts) err.emplace_back(n, 1 - m);
  EXPECT_NEAR(extrapolate_samples(err, 0.4, false), std::exp(11.0), 1e-6 * std::exp(11.0));
  // A curve that does not move toward the target, or has one distinct sample count, gives NaN.
  EXPECT_TRUE(std::isnan(extrapolate_samples({{1000, 0.5}, {2000, 0.5}}, 0.6, true)));
  EXPECT_TRUE(std::isnan(extrapolate_samples({{1000, 0.5}, {1000, 0.55}}, 0.6, true)));
  EXPECT_TRUE(std::isnan(extrapolate_samples({{1000, 0.5}, {2000, 0.4}}, 0.6, true)));
  // Levels first reached at the same sample count: the best of them is that count's point.
  EXPECT_NEAR(extrapolate_samples({{1000, 0.3}, {1000, 0.4}, {2000, 0.5}}, 0.6, true), 4000, 1e-6);
  // Never below the last point: a target already passed is the last point's count.
  EXPECT_NEAR(extrapolate_samples({{1000, 0.3}, {2000, 0.5}}, 0.4, true), 2000, 1e-9);
}

// Two batch sizes x two seeds; accuracy = 0.1 ln(n) - c_b per run, target 0.6, levels every 0.05.
struct Fixture {
  traces::RelationSet proxy;
  traces::LearningCurve curve;
  Fixture() {
    proxy.name = curve.name = "p";
    proxy.target = 0.6;
    curve.source = "levels";
    for (int b : {8, 64})
      for (int seed : {1, 2}) {
        const double c = (b == 8 ? 0.5 : 0.45) + 0.01 * seed;
        traces::RelationRun r;
        r.batch_size = b;
        r.seed = seed;
        r.reached = true;
        r.samples = std::llround(std::exp((0.6 + c) / 0.1));
        r.budget_samples = r.samples;
        proxy.runs.push_back(r);
        for (double level = 0.3; level < 0.6 + 1e-9; level += 0.05)
          curve.points.push_back({b, seed, std::llround(std::exp((level + c) / 0.1)), std::round(level * 100) / 100});
      }
  }
};

TEST(ProxyBudget, ALevelCutStopsEachRunThereAndExtrapolatesTheRest) {
  const Fixture f;
  ProxyCut cut;
  cut.stop = ProxyCut::Stop::level;
  cut.level = 0.5;
  const CutRelation c = cut_relation(f.proxy, f.curve, cut);
  ASSERT_EQ(c.set.runs.size(), 4u);
  EXPECT_EQ(c.extrapolated, 4);
  EXPECT_EQ(c.censored, 0);
  double used = 0, full = 0;
  for (size_t i = 0; i < 4; ++i) {
    const auto& r = f.proxy.runs[i];
    used += static_cast<double>(f.curve.first_reaching(r.batch_size, r.seed, 0.5));
    full += static_cast<double>(r.samples);
    // The curve is exactly linear in log samples: the extrapolation recovers the count (up to the
    // rounding of the levels' sample counts).
    EXPECT_TRUE(c.set.runs[i].reached);
    EXPECT_NEAR(c.set.runs[i].samples, r.samples, 1e-3 * static_cast<double>(r.samples));
    EXPECT_EQ(c.set.runs[i].budget_samples, f.curve.first_reaching(r.batch_size, r.seed, 0.5));
  }
  EXPECT_DOUBLE_EQ(c.compute_used, used);
  EXPECT_DOUBLE_EQ(c.compute_full, full);
  EXPECT_NEAR(c.share(), std::exp(-1.0), 1e-3);  // 0.1 short of the target in metric = e^-1 of the samples
}

TEST(ProxyBudget, SeedAndSampleCutsAndRunsThatReachWithinTheCut) {
  const Fixture f;
  ProxyCut one = parse_cut("full@1", "cuts");
  const CutRelation c1 = cut_relation(f.proxy, f.curve, one);
  ASSERT_EQ(c1.set.runs.size(), 2u);  // the lowest seed of each b
  EXPECT_EQ(c1.set.runs[0].seed, 1);
  EXPECT_EQ(c1.set.runs[1].seed, 1);
  EXPECT_EQ(c1.extrapolated, 0);
  EXPECT_DOUBLE_EQ(c1.compute_used,
                   static_cast<double>(f.proxy.runs[0].samples + f.proxy.runs[2].samples));  // whole runs, 2 of 4
  // A sample budget above b = 64's counts but below b = 8's: b = 64 reaches within it, b = 8 is cut.
  ProxyCut budget;
  budget.stop = ProxyCut::Stop::samples;
  budget.samples = (f.proxy.runs[1].samples + f.proxy.runs[2].samples) / 2;
  ASSERT_GT(f.proxy.runs[1].samples, f.proxy.runs[3].samples);
  const CutRelation c2 = cut_relation(f.proxy, f.curve, budget);
  EXPECT_EQ(c2.set.runs[2], f.proxy.runs[2]);  // reached within the cut: as measured
  EXPECT_EQ(c2.set.runs[3], f.proxy.runs[3]);
  EXPECT_EQ(c2.extrapolated, 2);
  EXPECT_EQ(c2.set.runs[0].budget_samples, budget.samples);
  // A cut before the curve has two points: nothing to extrapolate from, censored at the cut.
  budget.samples = f.curve.points[0].samples + 1;
  const CutRelation c3 = cut_relation(f.proxy, f.curve, budget);
  EXPECT_FALSE(c3.set.runs[0].reached);
  EXPECT_EQ(c3.set.runs[0].samples, budget.samples);
  EXPECT_GE(c3.censored, 1);
}

// explore::run_compute_samples, the one count of a run's compute: a censored run whose last
// evaluation interval took it past its budget cost every sample it trained, not its budget; a run
// that reached its target cost its samples to it. The budget's cuts count it so.
TEST(ProxyBudget, ACensoredRunPastItsBudgetCountsEverySampleItTrained) {
  Fixture f;
  traces::RelationRun& censored = f.proxy.runs[1];  // b = 8, seed 2: the longest run
  censored.reached = false;
  censored.budget_samples = censored.samples - 5000;  // trained 5000 samples past its budget
  EXPECT_EQ(run_compute_samples(censored), censored.samples);
  traces::RelationRun short_run = censored;
  short_run.samples = censored.budget_samples - 100;  // a censored run stores its budget at least
  EXPECT_EQ(run_compute_samples(short_run), censored.budget_samples);
  EXPECT_EQ(run_compute_samples(f.proxy.runs[0]), f.proxy.runs[0].samples);
  double full = 0;
  for (const auto& r : f.proxy.runs) full += static_cast<double>(r.samples);
  const CutRelation whole = cut_relation(f.proxy, f.curve, parse_cut("full", "cuts"));
  EXPECT_DOUBLE_EQ(whole.compute_full, full);
  EXPECT_DOUBLE_EQ(whole.compute_used, full);
  // A fraction of the longest run: of the censored run's samples trained, not of its budget.
  const CutRelation half = cut_relation(f.proxy, f.curve, parse_cut("fraction:0.5", "cuts"));
  EXPECT_DOUBLE_EQ(half.compute_full, full);
  EXPECT_EQ(half.set.runs[1].budget_samples, std::llround(0.5 * static_cast<double>(censored.samples)));
}

// Curves of one shape up to a scale of samples (accuracy = 1 - 0.5 sqrt(s / n), s = 4000 at b = 8
// and 1000 at b = 64), which is not linear in log samples. A cut of samples that b = 64 finishes
// within: the shared ratio (target over the highest level b = 8 reached, measured on b = 64)
// recovers b = 8's count exactly; its own curve's log-linear extrapolation misses it by far.
TEST(ProxyBudget, TheSharedRatioRecoversACountTheRunsOwnCurveMisses) {
  traces::RelationSet proxy;
  traces::LearningCurve curve;
  proxy.name = curve.name = "p";
  proxy.target = 0.9;  // reached at n = 25 s
  curve.source = "evaluations";
  for (auto [b, scale] : {std::pair<int, int64_t>{8, 4000}, {64, 1000}}) {
    traces::RelationRun r;
    r.batch_size = b;
    r.seed = 0;
    r.reached = true;
    r.samples = r.budget_samples = 25 * scale;
    proxy.runs.push_back(r);
    for (double x : {1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 9.0, 12.0, 16.0, 20.0, 25.0})
      curve.points.push_back({b, 0, std::llround(x * static_cast<double>(scale)), 1 - 0.5 / std::sqrt(x)});
  }
  ProxyCut cut;
  cut.stop = ProxyCut::Stop::samples;
  cut.samples = 25000;  // b = 64 finishes; b = 8 has seen up to 6 of its scale
  const CutRelation ratio = cut_relation(proxy, curve, cut, Extrapolation::ratio);
  ASSERT_EQ(ratio.set.runs.size(), 2u);
  EXPECT_EQ(ratio.set.runs[1], proxy.runs[1]);  // finished within the cut: as measured
  EXPECT_TRUE(ratio.set.runs[0].reached);
  EXPECT_EQ(ratio.set.runs[0].samples, 100000);  // 24000 (level 1 - 0.5/sqrt 6) x 25000 / 6000
  EXPECT_EQ(ratio.set.runs[0].budget_samples, 25000);
  EXPECT_EQ(ratio.extrapolated, 1);
  const CutRelation own = cut_relation(proxy, curve, cut, Extrapolation::curve);
  ASSERT_TRUE(own.set.runs[0].reached);
  EXPECT_LT(own.set.runs[0].samples, 70000);  // about 56k: the log-linear line overshoots the flattening
  EXPECT_EQ(own.compute_used, ratio.compute_used);
  EXPECT_EQ(parse_extrapolation("curve", "extrapolation"), Extrapolation::curve);
  EXPECT_THROW(parse_extrapolation("linear", "extrapolation"), OptionError);
}

TEST(ProxyBudget, CutGrammar) {
  EXPECT_EQ(parse_cut("full", "cuts").label(), "full");
  const ProxyCut l = parse_cut("level:0.55@2", "cuts");
  EXPECT_EQ(l.stop, ProxyCut::Stop::level);
  EXPECT_DOUBLE_EQ(l.level, 0.55);
  EXPECT_EQ(l.seeds, 2);
  EXPECT_EQ(l.label(), "level 0.55 x 2 seeds");
  const ProxyCut s = parse_cut("samples:36000", "cuts");
  EXPECT_EQ(s.samples, 36000);
  EXPECT_EQ(s.label(), "36k samples");
  EXPECT_EQ(parse_cut("looser:2@1", "cuts").label(), "2 levels looser x 1 seed");
  EXPECT_EQ(parse_cut("fraction:0.05", "cuts").label(), "5% of the longest run");
  for (const char* bad : {"level", "level:x", "samples:0", "samples:1e3", "full@0", "full@x", "budget:3", "full:1",
                          "looser:0", "fraction:0", "fraction:1.5"})
    EXPECT_THROW(parse_cut(bad, "cuts"), OptionError) << bad;
  try {
    parse_cut("level:", "cuts");
  } catch (const OptionError& e) {
    EXPECT_EQ(e.option, "cuts");
    EXPECT_NE(std::string(e.what()).find("looser:1@1"), std::string::npos) << e.what();
  }
}

TEST(ProxyBudget, DefaultCutsFollowTheCurvesSource) {
  const Fixture f;
  const auto levels = default_cuts(f.curve, 3);
  ASSERT_EQ(levels.size(), 8u);  // full + 1 to 3 levels looser, each with all seeds and one
  EXPECT_EQ(levels[1].label(), "1 level looser");
  EXPECT_EQ(levels[3].label(), "3 levels looser");
  EXPECT_EQ(levels[4].label(), "full x 1 seed");
  // "2 levels looser" is this relation's 0.5: the same cut as the level itself.
  EXPECT_EQ(cut_relation(f.proxy, f.curve, levels[2]).set,
            cut_relation(f.proxy, f.curve, parse_cut("level:0.5", "c")).set);
  traces::LearningCurve evals = f.curve;
  evals.source = "evaluations";
  const auto budgets = default_cuts(evals);
  ASSERT_EQ(budgets.size(), 14u);
  EXPECT_EQ(budgets[1].label(), "2% of the longest run");
  // 2 % of the longest run (b = 8, seed 2) in samples: the same cut as that count.
  ProxyCut two;
  two.stop = ProxyCut::Stop::samples;
  two.samples = std::llround(0.02 * static_cast<double>(f.proxy.runs[1].samples));
  EXPECT_EQ(cut_relation(f.proxy, f.curve, budgets[1]).set, cut_relation(f.proxy, f.curve, two).set);
}

// The adaptive engine decides on the relation `pacer select` chooses on: with the proxy -> target
// transfer (AdaptiveProblem::transfer, explore::proxy_relation), its choice at every cap is select's
// on the same runs, the transfer's departure margin included. Random near-tie relations (five batch
// sizes, three seeds each) against a target of another data set; some of them are choices the
// margin changes (pacer's b a little faster than Algorithm 1's by the proxy's means), where an engine
// without the transfer would decide otherwise.
TEST(ProxyBudget, TheAdaptiveEngineChoosesAsSelectWithTheTransferMargin) {
  const std::vector<int> batches = {8, 16, 32, 64, 128};
  std::mt19937_64 rng(17);
  std::uniform_real_distribution<double> u(0, 1);
  int compared = 0, margin_changes = 0;
  for (int trial = 0; trial < 60; ++trial) {
    Space::Arrays a;
    a.knob = traces::KnobSpace::gpu_frequency();
    a.knob_settings = {{300e6}, {600e6}};
    a.batch_sizes = batches;
    for (int b : batches)
      for (double f : {300e6, 600e6}) {
        // Time to the target within a few % across b: near ties between the batch sizes.
        const double per_sample = (1 + 0.04 * u(rng)) / (1000 * std::sqrt(b / 8.0)) * (600e6 / f);
        a.time_per_batch_s.push_back(per_sample * b);
        a.power_w.push_back(3 + 4 * f / 600e6 + 0.01 * b / 128);
      }
    const Space space = Space::from_arrays(a);
    const Index index(space);
    traces::RelationSet proxy, target;
    proxy.name = "w.proxy";
    proxy.dataset = "fmnist";
    proxy.metric = "accuracy";
    proxy.higher_is_better = true;
    proxy.target = 0.9;
    target = proxy;
    target.name = "w.target";
    target.dataset = "fmnist-shifted";
    std::vector<AdaptiveRun> runs;
    for (int b : batches)
      for (int seed = 0; seed < 3; ++seed) {
        AdaptiveRun r;
        r.batch_size = b;
        r.seed = seed;
        r.reached = true;
        r.samples = std::llround(1000 * std::sqrt(b / 8.0) * (0.95 + 0.1 * u(rng)));
        for (const auto& [share, metric] : {std::pair{0.25, 0.5}, {0.5, 0.7}, {1.0, 0.9}})
          r.curve.emplace_back(std::llround(share * static_cast<double>(r.samples)), metric);
        runs.push_back(r);
        traces::RelationRun rr;
        rr.batch_size = b;
        rr.seed = seed;
        rr.reached = true;
        rr.samples = rr.budget_samples = r.samples;
        proxy.runs.push_back(rr);
      }
    AdaptiveProblem problem;
    problem.index = &index;
    problem.caps_w = {7.2, 7.5, 8};
    problem.relation = proxy;
    problem.transfer = transfer_sd(proxy, &target);
    ASSERT_GT(problem.transfer.shape, 0.0);
    AdaptiveOptions options;
    options.run_budget_samples = 100'000;
    const AdaptivePlan plan = plan_round(problem, runs, 2, options);
    // `pacer select`'s relation: the stored runs with the transfer to this target (load_problem).
    const Relation selects = proxy_relation(proxy, space, nullptr, &target);
    const Relation bare = Relation::from_set(proxy, space);
    ASSERT_EQ(plan.caps.size(), problem.caps_w.size());
    for (size_t i = 0; i < problem.caps_w.size(); ++i) {
      PolicyContext ctx;
      ctx.index = &index;
      ctx.proxy = &selects;
      const Selection s = decide(Policy::Pacer, ctx, problem.caps_w[i], problem.rule);
      EXPECT_EQ(plan.caps[i].choice, s.feasible ? s.batch_size : 0)
          << "trial " << trial << ", cap " << problem.caps_w[i];
      ctx.proxy = &bare;
      const Selection without = decide(Policy::Pacer, ctx, problem.caps_w[i], problem.rule);
      margin_changes += without.batch_size != s.batch_size;
      ++compared;
    }
  }
  EXPECT_GT(margin_changes, 0) << "of " << compared << " choices, none that the transfer margin changes";
  std::printf("%d of %d choices changed by the transfer margin\n", margin_changes, compared);
}

// The V100 Zeus import in a store at `path`, as `pacer import zeus` writes it.
void write_zeus_store(const fs::path& path) {
  const fs::path dir = fs::path(PACER_SOURCE_DIR) / "data" / "zeus";
  ASSERT_TRUE(fs::exists(dir / "summary_train.csv")) << "no Zeus traces under " << dir;
  traces::zeus::ImportOptions o;
  o.data_dir = dir;
  o.gpu = "v100";
  auto store = traces::Store::open_or_create(path);
  for (const auto& w : traces::zeus::import_traces(o).workloads) {
    store.write(w.profile, w.name);
    store.write(w.proxy);
    store.write(w.target);
    store.write(w.proxy_looser);
    store.write(w.proxy_curve);
  }
}

// The V100 Zeus import in a temporary store, opened, its problems loaded (views: what budget_sweep
// takes). `store` stays empty where the traces are missing (write_zeus_store's failure).
struct ZeusStore {
  explicit ZeusStore(const std::string& tag) : path(tag) {
    write_zeus_store(path);
    if (::testing::Test::HasFatalFailure()) return;
    store.emplace(traces::Store::open(path));
    problems = load_problems(*store, ProblemSpec{});
    for (const auto& p : problems) views.push_back(p.get());
  }
  testing::TempStore path;
  std::optional<traces::Store> store;
  std::vector<std::unique_ptr<Problem>> problems;
  std::vector<const Problem*> views;
};

// The budget request of the replay tests: the full cut and `cut`, the pacer policy and the oracle,
// `orders` adaptive replays.
BudgetRequest full_and_cut(const std::string& cut, int orders) {
  BudgetRequest req;
  req.cuts = {parse_cut("full", "cuts"), parse_cut(cut, "cuts")};
  req.sweep.options.policies = {Policy::Pacer, Policy::Oracle};
  req.adaptive_orders = orders;
  return req;
}

// On the real Zeus traces: the full cut is exactly `pacer sweep`'s pacer and ours; cutting at looser
// levels uses less of the proxy's compute.
TEST(ProxyBudget, ZeusFullCutIsTheSweepAndLooserLevelsCostLess) {
  const ZeusStore zeus("budget");
  ASSERT_TRUE(zeus.store) << "the Zeus traces could not be imported";
  const auto& store = *zeus.store;
  const auto& views = zeus.views;
  BudgetRequest req;
  req.cuts = {parse_cut("full", "cuts"), parse_cut("looser:1", "cuts")};
  req.sweep.options.policies = {Policy::Pacer, Policy::Ours, Policy::Oracle};
  const auto result = budget_sweep(views, read_curves(store, views), req);
  ASSERT_EQ(result.sweeps.size(), 2u);
  SweepRequest plain;
  plain.options.policies = req.sweep.options.policies;
  const auto reference = sweep_record(views, plain);
  EXPECT_EQ(result.sweeps[0].rows, reference.rows);
  EXPECT_DOUBLE_EQ(result.sweeps[0].proxy_share, 1.0);
  EXPECT_LT(result.sweeps[1].proxy_share, 1.0);
  for (const auto& p : result.points)
    if (p.cut == "full") {
      EXPECT_DOUBLE_EQ(p.same_choice, 1.0);
    }
}

// `--adaptive`: the adaptive campaign's replays are budget records beside the cuts, one until decided
// and one at each cut's compute (never above it), each pooling its orders' rows; the same orders
// give the same records.
TEST(ProxyBudget, AdaptiveReplaysAreRecordsBesideTheCuts) {
  const ZeusStore zeus("budget-adaptive");
  ASSERT_TRUE(zeus.store) << "the Zeus traces could not be imported";
  const auto& store = *zeus.store;
  const auto& views = zeus.views;
  auto req = full_and_cut("looser:1", 2);
  const auto curves = read_curves(store, views);
  const auto result = budget_sweep(views, curves, req);
  ASSERT_EQ(result.sweeps.size(), 4u);
  EXPECT_EQ(result.sweeps[2].proxy_cut, adaptive_cut_label());
  EXPECT_EQ(result.sweeps[3].proxy_cut, adaptive_cut_label(parse_cut("looser:1", "cuts").label()));
  for (size_t i = 2; i < 4; ++i) {
    EXPECT_TRUE(is_adaptive_cut(result.sweeps[i].proxy_cut));
    EXPECT_EQ(result.sweeps[i].budget, "budget");
    EXPECT_EQ(result.sweeps[i].name, fmt::format("budget@{}", i));
    EXPECT_EQ(result.sweeps[i].rows.size(), 2 * result.sweeps[0].rows.size());  // two orders
    EXPECT_GT(result.sweeps[i].proxy_share, 0.0);
    EXPECT_LT(result.sweeps[i].proxy_share, 1.0);
  }
  EXPECT_FALSE(is_adaptive_cut(result.sweeps[1].proxy_cut));
  EXPECT_LE(result.sweeps[3].proxy_share, result.sweeps[1].proxy_share + 1e-9);
  const auto again = budget_sweep(views, curves, req);
  EXPECT_EQ(again.sweeps[3].rows, result.sweeps[3].rows);
  EXPECT_DOUBLE_EQ(again.sweeps[3].proxy_share, result.sweeps[3].proxy_share);
}

// `pacer budget --guard G --adaptive N`: the adaptive replays choose under the same rule as the cuts'
// sweeps and `pacer select` (choice_rule(problem, G)): the replay until decided, done by hand under
// that rule and swept under G, gives the record's rows. Before, the replays chose under a default
// rule (guard 0) whatever the sweeps used.
TEST(ProxyBudget, AdaptiveReplaysChooseUnderTheSweepsGuard) {
  const ZeusStore zeus("budget-adaptive-guard");
  ASSERT_TRUE(zeus.store) << "the Zeus traces could not be imported";
  const auto& views = zeus.views;
  const auto curves = read_curves(*zeus.store, views);
  auto req = full_and_cut("full", 1);
  req.cuts = {parse_cut("full", "cuts")};
  req.sweep.caps_per_workload = 6;
  req.sweep.guard = 0.1;
  const auto result = budget_sweep(views, curves, req);
  ASSERT_EQ(result.sweeps.size(), 2u);
  ASSERT_EQ(result.sweeps[1].proxy_cut, adaptive_cut_label());
  std::vector<Relation> relations;
  relations.reserve(views.size());
  SweepRequest by_hand = req.sweep;
  for (size_t j = 0; j < views.size(); ++j) {
    const Problem& p = *views[j];
    AdaptiveProblem ap;
    ap.index = p.index.get();
    ap.caps_w = cap_grid_w(p.space->min_power_w(), p.space->max_power_w(), req.sweep.caps_per_workload);
    ap.rule = choice_rule(p, 0.1);
    ap.relation = p.proxy_set;
    ap.looser_level = p.proxy_looser_set ? p.proxy_looser_set->target : traces::kNaN;
    ap.transfer = transfer_sd(p.proxy_set, p.target_set ? &*p.target_set : nullptr);
    ReplayOptions ro;
    ro.order_seed = 1;
    const ReplayResult r = replay_adaptive(ap, {p.proxy_set, curves[j]}, ro);
    relations.push_back(proxy_relation(r.final.relation, *p.space, r.final.looser ? &*r.final.looser : nullptr,
                                       p.target_set ? &*p.target_set : nullptr));
    by_hand.proxies.push_back(&relations.back());
  }
  const auto reference = sweep_record(views, by_hand);
  EXPECT_EQ(result.sweeps[1].rows, reference.rows);
  for (const auto& row : result.sweeps[1].rows) EXPECT_DOUBLE_EQ(row.guard, 0.1);
}

// With --adaptive N, a fixed cut of one seed is taken over the same N draws of seeds as the replays
// (cut_over_orders), as in `pacer bench adaptive`: its record pools N draws' rows, its share is
// their mean, and the adaptive replay of order k gets the draw k's compute. Keeping the lowest seed
// (the cut before) gives one draw's rows.
TEST(ProxyBudget, AOneSeedCutIsTakenOverTheAdaptiveReplaysDraws) {
  const ZeusStore zeus("budget-one-seed");
  ASSERT_TRUE(zeus.store) << "the Zeus traces could not be imported";
  const auto& store = *zeus.store;
  const auto& views = zeus.views;
  auto req = full_and_cut("looser:1@1", 2);
  const auto curves = read_curves(store, views);
  const auto result = budget_sweep(views, curves, req);
  ASSERT_EQ(result.sweeps.size(), 4u);
  EXPECT_EQ(result.sweeps[1].proxy_cut, "1 level looser x 1 seed");
  EXPECT_EQ(result.sweeps[1].rows.size(), 2 * result.sweeps[0].rows.size());
  double share = 0;
  for (size_t j = 0; j < views.size(); ++j)
    for (const auto& c : cut_over_orders({views[j]->proxy_set, curves[j]}, req.cuts[1], 2)) share += c.share();
  EXPECT_NEAR(result.sweeps[1].proxy_share, share / static_cast<double>(2 * views.size()), 1e-12);
  double lowest = 0;
  for (size_t j = 0; j < views.size(); ++j) lowest += cut_relation(views[j]->proxy_set, curves[j], req.cuts[1]).share();
  EXPECT_GT(std::abs(result.sweeps[1].proxy_share - lowest / static_cast<double>(views.size())), 1e-9);
  EXPECT_LE(result.sweeps[3].proxy_share, result.sweeps[1].proxy_share + 1e-9);
  // Without replays the cut keeps the lowest seed, once.
  req.adaptive_orders = 0;
  const auto plain = budget_sweep(views, curves, req);
  EXPECT_EQ(plain.sweeps[1].rows.size(), plain.sweeps[0].rows.size());
  EXPECT_NEAR(plain.sweeps[1].proxy_share, lowest / static_cast<double>(views.size()), 1e-12);
}

}  // namespace
}  // namespace pacer::explore
