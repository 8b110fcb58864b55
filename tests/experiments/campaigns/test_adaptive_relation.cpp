// `pacer relation --adaptive` end to end on a small IDX dataset the test writes and a hand-made
// device profile in which batch size 8 is sixty times slower per sample than 16 and 32 at every
// setting, so that it can never be the choice: round 1 trains every batch size for a short
// budget, b=8 stops (its run stays in the relation, censored), the contenders go on; every
// decision is in the store; a campaign interrupted mid-round resumes without retraining what is
// stored; the rounds' job lists, a round's decision and a round run before its decision; a resume
// under other settings (extrapolation, round 1) is refused, under the same ones it goes on.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <tuple>
#include <utility>

#include "base/error.hpp"
#include "experiments/campaigns/relation.hpp"
#include "tests/support/run_pacer.hpp"
#include "traces/store/store.hpp"

namespace fs = std::filesystem;
using pacer::traces::AdaptiveLog;
using pacer::traces::ProfilePoint;
using pacer::traces::ProfileTable;
using pacer::traces::RelationRun;
using pacer::traces::RelationSet;
using pacer::traces::Store;

namespace {

class AdaptiveRelation : public ::testing::Test {
 protected:
  fs::path dir;
  void SetUp() override {
    dir = fs::temp_directory_path() / ("pacer-test-adaptive-" + std::to_string(::getpid()) + "-" +
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir / "idx");
    pacer::testing::write_quadrant_idx(dir / "idx", 480);
    write_profile(dir / "device.h5");
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  // Two GPU frequencies; at each, b=16 and b=32 take the same time per sample, b=8 sixty times more.
  static void write_profile(const fs::path& path) {
    ProfileTable t;
    t.workload = "cnn@1x12x12";
    t.device = "hand-made";
    t.source = "test";
    for (const int b : {8, 16, 32})
      for (const double f : {500e6, 1000e6}) {
        ProfilePoint p;
        p.knob = {f};
        p.batch_size = b;
        const double per_sample = (f > 600e6 ? 1e-3 : 2e-3) * (b == 8 ? 60 : 1);
        p.time_per_batch_mean_s = per_sample * b;
        p.time_per_batch_std_s = 0;
        p.power_peak_w = p.power_mean_w = f > 600e6 ? 10 : 5;
        p.samples = 100 * b;
        t.points.push_back(p);
      }
    Store::open_or_create(path).write(t);
  }
  pacer::testing::RunResult pacer(const std::string& args) const { return pacer::testing::run_pacer(args, dir); }
  std::string common() const {
    return "relation --adaptive --dataset idx:" + (dir / "idx").string() +
           " --checkpoint none --threads 1 --eval-every 32 --eval-stop full --lr 0.002 --batch-sizes 8,16,32 --seeds "
           "0,1 "
           "--target 0.95 --budget 4096 --first-round 2% --caps 4 --name q --profile-store " +
           (dir / "device.h5").string() + " --out " + (dir / "s.h5").string();
  }
  AdaptiveLog log() const { return Store::open(dir / "s.h5").read<AdaptiveLog>("q"); }
  RelationSet relation() const { return Store::open(dir / "s.h5").read<RelationSet>("q"); }
  // The campaign of common(), as the library takes it, into its own store (lib.h5).
  pacer::experiments::RelationCampaign library_campaign() const {
    pacer::experiments::RelationCampaign c;
    c.name = "q";
    c.dataset = "idx";
    c.metric = "accuracy";
    c.train.workload = "cnn";
    c.train.target = 0.95;
    c.train.budget_samples = 4096;
    c.batch_sizes = {8, 16, 32};
    c.seeds = {0, 1};
    c.store = dir / "lib.h5";
    return c;
  }
  pacer::experiments::AdaptiveSettings library_settings() const {
    pacer::experiments::AdaptiveSettings s;
    s.profile_store = dir / "device.h5";
    s.caps = 4;
    return s;
  }
};

const RelationRun* find(const RelationSet& set, int b, int seed) {
  for (const auto& r : set.runs)
    if (r.batch_size == b && r.seed == seed) return &r;
  return nullptr;
}

bool has(const AdaptiveLog& log, int round, const std::string& action, int b) {
  return std::any_of(log.decisions.begin(), log.decisions.end(),
                     [&](const auto& d) { return d.round == round && d.action == action && d.batch_size == b; });
}

}  // namespace

TEST_F(AdaptiveRelation, StopsTheBatchSizeThatCannotWinAndStoresEveryDecision) {
  const auto r = pacer(common());
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const AdaptiveLog l = log();
  // Round 1: every batch size, one seed, 2 % of the run budget (82 samples).
  for (const int b : {8, 16, 32}) EXPECT_TRUE(has(l, 1, "train", b)) << b;
  for (const auto& d : l.decisions)
    if (d.round == 1 && d.action == "train") {
      EXPECT_EQ(d.seed, 0);
      EXPECT_EQ(d.budget_samples, 82);
    }
  // b=8 stops after round 1 and never trains again; its run stays, censored at round 1's budget.
  EXPECT_TRUE(has(l, 1, "stop", 8)) << r.out;
  for (const auto& d : l.decisions)
    if (d.action == "train") {
      EXPECT_TRUE(d.batch_size != 8 || d.round == 1) << d.round;
    }
  const RelationSet set = relation();
  const RelationRun* b8 = find(set, 8, 0);
  ASSERT_NE(b8, nullptr);
  EXPECT_FALSE(b8->reached);
  EXPECT_EQ(b8->budget_samples, 82);
  EXPECT_EQ(b8->samples, 88);  // 11 batches of 8
  EXPECT_EQ(find(set, 8, 1), nullptr);
  // The campaign ended and says how; the log and the compute are printed.
  EXPECT_FALSE(l.outcome().empty());
  EXPECT_NE(r.out.find("decisions of the adaptive campaign 'q'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("round 1  stop     b=8"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ended: "), std::string::npos) << r.out;
  double used = 0;
  for (const auto& run : set.runs) used += static_cast<double>(run.samples);
  EXPECT_LT(used, 3 * 2 * 4096.0);
  // The curve holds every evaluation of every run, continued runs included.
  const auto curve = Store::open(dir / "s.h5").read<pacer::traces::LearningCurve>("q");
  for (const auto& run : set.runs) {
    int64_t last = -1;
    for (const auto& p : curve.points)
      if (p.batch_size == run.batch_size && p.seed == run.seed) last = std::max(last, p.samples);
    EXPECT_EQ(last, run.samples) << run.batch_size << " " << run.seed;
  }

  // Rerunning finds the campaign ended: nothing is trained again.
  const auto again = pacer(common());
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(again.err.find("reached after"), std::string::npos) << again.err;
  EXPECT_EQ(again.err.find("CENSORED after"), std::string::npos) << again.err;
  EXPECT_EQ(relation(), set);
  EXPECT_EQ(log(), l);
}

// The library's outcome carries the relation the engine decided on (the adaptive training bench
// compares choices on it): the stored runs, with b=8's unfinished run at its estimate.
TEST_F(AdaptiveRelation, ItsOutcomeHoldsTheRelationTheEngineDecidedOn) {
  ASSERT_EQ(pacer(common()).code, 0);
  pacer::experiments::RelationRequest q;
  q.workload = "cnn";
  q.dataset = "idx:" + (dir / "idx").string();
  q.checkpoint = "none";
  q.train.threads = 1;
  q.train.eval_every_samples = 32;
  q.train.eval_stop = q.train.kFull;
  q.train.base_lr = 0.002;
  q.train.budget_samples = 4096;
  q.batch_sizes = {8, 16, 32};
  q.seeds = {0, 1};
  q.target = 0.95;
  q.name = "q";
  q.store = dir / "s.h5";
  q.adaptive = true;
  q.adaptive_settings.initial_fraction = 0.02;
  q.adaptive_settings.caps = 4;
  q.adaptive_settings.profile_store = dir / "device.h5";
  const pacer::experiments::RelationOutcome out = pacer::experiments::run_relation(q);  // resumes: trains nothing
  EXPECT_EQ(out.report.new_runs, 0);
  ASSERT_TRUE(out.decided.has_value());
  const RelationSet stored = relation();
  ASSERT_EQ(out.decided->runs.size(), stored.runs.size());
  for (const auto& r : stored.runs) {
    const RelationRun* d = find(*out.decided, r.batch_size, r.seed);
    ASSERT_NE(d, nullptr);
    if (r.reached) EXPECT_EQ(d->samples, r.samples) << r.batch_size;
  }
  const RelationRun* b8 = find(*out.decided, 8, 0);
  EXPECT_FALSE(find(stored, 8, 0)->reached);
  EXPECT_TRUE(b8->reached);  // estimated from its curve and the runs that reached the target
  EXPECT_GT(b8->samples, find(stored, 8, 0)->samples);
}

TEST_F(AdaptiveRelation, ResumesAnInterruptedRoundWithoutRetrainingWhatIsStored) {
  // The whole campaign once, as the reference.
  auto r = pacer(common());
  ASSERT_EQ(r.code, 0) << r.err;
  const RelationSet whole = relation();
  const AdaptiveLog whole_log = log();
  fs::remove(dir / "s.h5");
  fs::remove_all(dir / "s.adaptive");

  // Round 1 alone, then as if killed during round 2's second run: round 2 is run and one of its
  // runs is taken out of the store again (with its state file, as a kill before the run was stored).
  r = pacer(common() + " --stage round-2");
  EXPECT_EQ(r.code, 1) << "round 2 before round 1's decision";
  EXPECT_NE(r.err.find("not planned yet"), std::string::npos) << r.err;
  r = pacer(common() + " --stage round-1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(Store::open(dir / "s.h5").has<AdaptiveLog>("q")) << "running a round decides nothing";
  const RelationSet after1 = relation();
  r = pacer(common() + " --stage round-1 --decide");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(log(), 1, "stop", 8)) << r.out;
  const AdaptiveLog decided = log();
  ASSERT_TRUE(decided.outcome().empty()) << "the test needs a second round";
  r = pacer(common() + " --stage round-2");
  ASSERT_EQ(r.code, 0) << r.err;
  const RelationSet after2 = relation();
  std::vector<RelationRun> round2;
  for (const auto& d : decided.decisions)
    if (d.round == 2 && d.action == "train") round2.push_back(*find(after2, d.batch_size, d.seed));
  ASSERT_GE(round2.size(), 1u);
  // The last run of round 2 as round 1 left it (or not at all when round 2 started it), and without
  // its state file: as after a kill before it was stored, with a state lost too.
  const RelationRun lost = round2.back();
  RelationSet cut = after2;
  std::erase_if(cut.runs, [&](const RelationRun& x) { return x.batch_size == lost.batch_size && x.seed == lost.seed; });
  if (const RelationRun* before = find(after1, lost.batch_size, lost.seed)) cut.runs.push_back(*before);
  Store::open(dir / "s.h5").write(cut, "", pacer::traces::Replace::always);
  fs::remove(dir / "s.adaptive" / "q" /
             ("b" + std::to_string(lost.batch_size) + "-seed" + std::to_string(lost.seed) + ".pt"));

  // The same command again: round 2's stored runs are not trained again, the lost one is.
  r = pacer(common());
  ASSERT_EQ(r.code, 0) << r.err;
  const RelationSet resumed = relation();
  EXPECT_NE(r.err.find("b=" + std::to_string(lost.batch_size)), std::string::npos) << r.err;
  for (const auto& kept : after2.runs) {  // round 2's other runs: as they were (wall time included)
    if (kept.batch_size == lost.batch_size && kept.seed == lost.seed) continue;
    const RelationRun* now = find(resumed, kept.batch_size, kept.seed);
    ASSERT_NE(now, nullptr);
    if (kept.reached || kept.batch_size == 8) {
      EXPECT_EQ(*now, kept) << kept.batch_size << " " << kept.seed;
    }
  }
  // The result is the uninterrupted campaign's: the same decisions and the same runs (wall times aside).
  const AdaptiveLog l = log();
  ASSERT_EQ(l.decisions.size(), whole_log.decisions.size());
  for (size_t i = 0; i < l.decisions.size(); ++i) {
    EXPECT_EQ(l.decisions[i].action, whole_log.decisions[i].action) << i;
    EXPECT_EQ(l.decisions[i].batch_size, whole_log.decisions[i].batch_size) << i;
    EXPECT_EQ(l.decisions[i].budget_samples, whole_log.decisions[i].budget_samples) << i;
  }
  ASSERT_EQ(resumed.runs.size(), whole.runs.size());
  for (const auto& w : whole.runs) {
    const RelationRun* now = find(resumed, w.batch_size, w.seed);
    ASSERT_NE(now, nullptr);
    EXPECT_EQ(now->samples, w.samples) << w.batch_size << " " << w.seed;
    EXPECT_EQ(now->reached, w.reached);
    EXPECT_DOUBLE_EQ(now->final_metric, w.final_metric);
  }
}

TEST_F(AdaptiveRelation, RefusesToResumeUnderAnotherExtrapolationOrFirstRound) {
  // Through the library: round 1 decided (its runs planned) with the ratio, the default.
  const pacer::experiments::RelationCampaign c = library_campaign();
  const pacer::experiments::AdaptiveSettings ratio = library_settings();
  const AdaptiveLog planned = pacer::experiments::decide_adaptive_round(c, ratio, 0);
  EXPECT_EQ(planned.extrapolation, "ratio");
  EXPECT_EQ(planned.caps, 4);
  const auto stored = [&] { return Store::open(c.store).read<AdaptiveLog>("q"); };
  ASSERT_EQ(stored(), planned);

  // The option and the line of the refusal to decide after `round` under `settings` ({} when it goes on).
  const auto refusal = [&](const pacer::experiments::AdaptiveSettings& settings, int round) {
    try {
      pacer::experiments::decide_adaptive_round(c, settings, round);
    } catch (const pacer::SettingError& e) {
      return std::pair<std::string, std::string>{e.option, e.what()};
    }
    return std::pair<std::string, std::string>{};
  };
  auto power = ratio;
  power.extrapolation = pacer::explore::AdaptiveExtrapolation::power_law;
  auto [option, what] = refusal(power, 1);
  EXPECT_EQ(option, "extrapolation");
  EXPECT_NE(what.find("extrapolation ratio (asked: power-law)"), std::string::npos) << what;
  EXPECT_NE(what.find("resume it with the stored setting, or train it into a fresh store"), std::string::npos) << what;
  // A shard's round refuses it as well, before it trains anything.
  EXPECT_THROW(pacer::experiments::run_adaptive_round(c, {}, power, 1, std::nullopt), pacer::SettingError);
  auto first = ratio;
  first.initial_fraction = 0.05;
  first.budget_first_share = 0;
  std::tie(option, what) = refusal(first, 0);
  EXPECT_EQ(option, "first-round");
  EXPECT_NE(what.find("decided with round 1 of the run budget 2 % (asked: 5 %): resume"), std::string::npos) << what;
  // The guard: recorded as "auto" (the profile's own), refused as a fraction.
  EXPECT_EQ(planned.guard, "auto");
  auto guarded = ratio;
  guarded.guard = 0.05;
  std::tie(option, what) = refusal(guarded, 0);
  EXPECT_EQ(option, "guard");
  EXPECT_NE(what.find("decided with guard auto (asked: 0.05): resume"), std::string::npos) << what;
  // Without a compute budget round 1's share of one decides nothing: not compared.
  auto no_share = ratio;
  no_share.budget_first_share = 0;
  EXPECT_EQ(refusal(no_share, 0).first, "");
  EXPECT_EQ(stored(), planned) << "a refused resume writes nothing";
  EXPECT_EQ(pacer::experiments::decide_adaptive_round(c, ratio, 0), planned) << "the same settings resume";

  // A store written before the extrapolation was recorded: it reads as the ratio.
  AdaptiveLog old = planned;
  old.extrapolation.clear();
  old.first_round = pacer::traces::kNaN;
  old.budget_first_share = pacer::traces::kNaN;
  old.caps = 0;
  old.guard.clear();
  Store::open(c.store).write(old, "", pacer::traces::Replace::always);
  what = refusal(power, 0).second;
  EXPECT_NE(what.find("extrapolation ratio (not recorded in this store: the default) (asked: power-law)"),
            std::string::npos)
      << what;
  auto unrecorded = ratio;
  unrecorded.caps = 5;      // not recorded there: not checked
  unrecorded.guard = 0.05;  // nor the guard
  EXPECT_NO_THROW(pacer::experiments::decide_adaptive_round(c, unrecorded, 0));

  // Through `pacer relation --adaptive`: the whole campaign, then the same command under the power
  // law: one line naming both, exit 1, the store as it was; the same command again goes on.
  auto r = pacer(common());
  ASSERT_EQ(r.code, 0) << r.err;
  const AdaptiveLog whole = log();
  const RelationSet runs = relation();
  EXPECT_EQ(whole.extrapolation, "ratio");
  r = pacer(common() + " --extrapolation power-law");
  EXPECT_EQ(r.code, 1) << r.err;
  const std::string line = "pacer relation: error: --extrapolation: " + (dir / "s.h5").string() +
                           " holds the adaptive campaign 'q' decided with extrapolation ratio (asked: power-law): "
                           "resume it with the stored setting, or train it into a fresh store (or under another "
                           "relation name)\n";
  EXPECT_NE(r.err.find(line), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("error"), r.err.rfind("error")) << "one error line (after the data's info lines)\n" << r.err;
  EXPECT_EQ(log(), whole);
  EXPECT_EQ(relation(), runs);
  r = pacer(common() + " --extrapolation ratio");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(log(), whole) << "the ended campaign resumes as it was";
  EXPECT_EQ(relation(), runs);
}

TEST_F(AdaptiveRelation, NeverTrainsARoundPastItsComputeBudget) {
  // The campaign without a budget, as the reference: round 1's compute and round 2's runs.
  auto r = pacer(common());
  ASSERT_EQ(r.code, 0) << r.err;
  const AdaptiveLog whole = log();
  int64_t after1 = -1;
  int round2 = 0;
  for (const auto& d : whole.decisions) {
    if (d.round == 1 && d.action != "train") after1 = d.compute_samples;
    round2 += d.round == 2 && d.action == "train";
  }
  ASSERT_GT(after1, 0);
  ASSERT_GE(round2, 1) << "the test needs a second round";
  fs::remove(dir / "s.h5");
  fs::remove_all(dir / "s.adaptive");

  // A budget that leaves round 2 less than its runs ask for (each at least doubles a run of >= 88
  // samples) but more than one batch: round 2 trains only what fits, most-needed first, and the
  // campaign ends on its budget, not past it (a run's cost counted in whole batches).
  const int64_t budget = after1 + 40;
  r = pacer(common() + " --adaptive-budget " + std::to_string(budget));
  ASSERT_EQ(r.code, 0) << r.err;
  const AdaptiveLog l = log();
  EXPECT_EQ(l.outcome(), "budget") << r.out;
  EXPECT_EQ(l.compute_budget, budget);
  EXPECT_TRUE(std::any_of(l.decisions.begin(), l.decisions.end(), [](const auto& d) {
    return d.action == "budget-cut";
  })) << r.out;
  double used = 0;
  for (const auto& run : relation().runs) used += static_cast<double>(run.samples);
  EXPECT_LE(used, static_cast<double>(budget)) << r.out;
  EXPECT_GT(used, static_cast<double>(after1)) << "round 2 trained what the budget left";
}

TEST_F(AdaptiveRelation, ListsItsRoundsAsStagesWithDecisionsAndRefusesBadInput) {
  auto r = pacer(common() + " --max-rounds 3 --list-jobs");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("stage: round-1\ndecide: yes\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("stage: round-3\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("stage: round-4\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("job 5: b=32 seed=1"), std::string::npos) << r.out;

  r = pacer(common() + " --stage round-9 --max-rounds 3");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("round-9"), std::string::npos) << r.err;
  // A profile without one of the campaign's batch sizes: one line, nothing trained, no store.
  r = pacer("relation --adaptive --dataset idx:" + (dir / "idx").string() +
            " --checkpoint none --threads 1 --batch-sizes 8,64 --profile-store " + (dir / "device.h5").string() +
            " --out " + (dir / "t.h5").string());
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("batch size 64"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "t.h5"));
  r = pacer("relation --max-rounds 2 --dataset idx:" + (dir / "idx").string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--adaptive"), std::string::npos) << r.err;
}

// The compute budget is recorded as asked (samples, or a share of the full campaign's most) with the
// run budget (--budget), and a resume under another of either is refused like the other settings:
// before, only the samples the compute budget came to were compared, so the same samples asked as a
// share, or another --budget beside an absolute --adaptive-budget (which the engine's orders and
// round 1 follow), resumed the campaign under other settings. A store without them is not checked.
TEST_F(AdaptiveRelation, RefusesToResumeUnderAnotherComputeOrRunBudget) {
  // Round 1 and its decision under 12288 samples (50 % of 3 batch sizes x 2 seeds x 4096).
  const std::string budget = " --adaptive-budget 12288";
  auto r = pacer(common() + budget + " --stage round-1");
  ASSERT_EQ(r.code, 0) << r.err;
  r = pacer(common() + budget + " --stage round-1 --decide");
  ASSERT_EQ(r.code, 0) << r.err;
  const AdaptiveLog decided = log();
  const RelationSet runs = relation();
  ASSERT_TRUE(decided.outcome().empty()) << "the test needs a second round";
  EXPECT_EQ(decided.compute_budget, 12288);
  EXPECT_EQ(decided.compute_budget_asked, "12288 samples");
  EXPECT_EQ(decided.run_budget, 4096);

  // Each: exit 1, one line naming the stored and the asked budget, the store as it was.
  const auto refused = [&](const std::string& args, const std::string& option, const std::string& what) {
    const auto x = pacer(args);
    EXPECT_EQ(x.code, 1) << args << "\n" << x.err;
    EXPECT_NE(x.err.find("pacer relation: error: --" + option + ": " + (dir / "s.h5").string() +
                         " holds the adaptive campaign 'q' decided with " + what +
                         ": resume it with the stored setting, or train it into a fresh store (or under another "
                         "relation name)\n"),
              std::string::npos)
        << args << "\n"
        << x.err;
    EXPECT_EQ(x.err.find("error"), x.err.rfind("error")) << "one error line\n" << x.err;
    EXPECT_EQ(log(), decided) << args;
    EXPECT_EQ(relation(), runs) << args;
  };
  refused(common() + " --adaptive-budget 20000", "adaptive-budget",
          "compute budget 12288 samples (asked: 20000 samples)");
  refused(common() + " --adaptive-budget 50%", "adaptive-budget",
          "compute budget 12288 samples (asked: 50 % of the full campaign's most (12288 samples))");
  std::string other_run_budget = common();
  const std::string run_budget = "--budget 4096";
  ASSERT_NE(other_run_budget.find(run_budget), std::string::npos);
  other_run_budget.replace(other_run_budget.find(run_budget), run_budget.size(), "--budget 8192");
  refused(other_run_budget + budget, "budget", "run budget 4096 samples (asked: 8192 samples)");

  // The same budget goes on: round 2 trains and is decided.
  r = pacer(common() + budget);
  ASSERT_EQ(r.code, 0) << r.err;
  const AdaptiveLog went_on = log();
  EXPECT_GT(went_on.decisions.size(), decided.decisions.size());
  EXPECT_TRUE(std::any_of(went_on.decisions.begin(), went_on.decisions.end(), [](const auto& d) {
    return d.round == 2 && d.action != "train";
  })) << r.out;

  // A store written before the budget was recorded as asked: neither the form nor the run budget is
  // checked (the samples still are).
  const pacer::experiments::RelationCampaign c = library_campaign();
  pacer::experiments::AdaptiveSettings s = library_settings();
  s.budget_share = 0.5;
  AdaptiveLog old = pacer::experiments::decide_adaptive_round(c, s, 0);
  EXPECT_EQ(old.compute_budget_asked, "50 % of the full campaign's most");
  old.compute_budget_asked.clear();
  old.run_budget = 0;
  Store::open(c.store).write(old, "", pacer::traces::Replace::always);
  auto samples = s;
  samples.budget_share = pacer::traces::kNaN;
  samples.budget_samples = 12288;
  EXPECT_NO_THROW(pacer::experiments::decide_adaptive_round(c, samples, 0));
  auto more = c;
  more.train.budget_samples = 8192;
  samples.budget_samples = 24576;  // the same share of the larger most: samples differ, refused
  EXPECT_THROW(pacer::experiments::decide_adaptive_round(more, samples, 0), pacer::SettingError);
  samples.budget_samples = 12288;
  EXPECT_NO_THROW(pacer::experiments::decide_adaptive_round(more, samples, 0)) << "the run budget is not recorded";
}
