// experiments/bench/adaptive_train_bench.hpp: the adaptive campaign is compared with the full one on
// the relation its engine decided on (its unfinished runs at their estimates), not on its stored
// runs, whose unfinished runs are censored: a batch size stopped early would otherwise count its few
// samples as a lower bound and look best.
#include <gtest/gtest.h>

#include "base/error.hpp"
#include "experiments/bench/adaptive_train_bench.hpp"
#include "tests/support/hand_space.hpp"

namespace pacer::experiments {
namespace {

const std::vector<int> kBatches = {8, 16, 32};

// One knob, 5 W everywhere; b=8 takes a quarter of the time per sample of the others.
explore::Space space() {
  return pacer::testing::one_knob_space(kBatches, {0.25e-3, 1e-3, 1e-3});
}

// Runs (b, seed 0, samples, reached).
traces::RelationSet relation(const std::vector<std::tuple<int, int64_t, bool>>& runs) {
  traces::RelationSet s;
  s.name = "hand";
  s.metric = "accuracy";
  s.higher_is_better = true;
  s.target = 0.9;
  for (const auto& [b, samples, reached] : runs) {
    traces::RelationRun r;
    r.batch_size = b;
    r.reached = reached;
    r.samples = samples;
    r.budget_samples = reached ? 100'000 : samples;
    s.runs.push_back(r);
  }
  return s;
}

TEST(AdaptiveTrainBench, ComparesTheAdaptiveCampaignOnTheRelationItsEngineDecidedOn) {
  const explore::Space sp = space();
  const std::vector<double> caps = {6, 8, 10};
  // b=8 wins: its 3,000 samples at a quarter of the time per sample are 0.75 of b=16's time.
  const traces::RelationSet full = relation({{8, 3000, true}, {16, 1000, true}, {32, 4000, true}});
  // The adaptive campaign ended on its budget with b=8's run unfinished at 1,500 samples and b=32
  // stopped at 400; its engine estimated them at 3,000 and 4,000 and chose b=8, as the full one does.
  RelationOutcome adaptive;
  adaptive.name = "adaptive";
  adaptive.report.set = relation({{8, 1500, false}, {16, 1000, true}, {32, 400, false}});
  adaptive.decided = relation({{8, 3000, true}, {16, 1000, true}, {32, 4000, true}});
  const ChoiceAgreement a = compare_adaptive(sp, {}, caps, full, adaptive);
  EXPECT_EQ(a.caps, 3);
  EXPECT_EQ(a.same, 3);
  EXPECT_EQ(a.other_choices, std::vector<int>({8, 8, 8}));
  // The stored runs alone (b=8 only censored) would choose b=16: not what the campaign chose.
  const ChoiceAgreement stored = compare_choices(sp, {}, caps, full, adaptive.report.set);
  EXPECT_EQ(stored.same, 0);
  EXPECT_EQ(stored.other_choices, std::vector<int>({16, 16, 16}));
  // Not a whole adaptive campaign: nothing decided to compare.
  adaptive.decided.reset();
  EXPECT_THROW(compare_adaptive(sp, {}, caps, full, adaptive), Error);
}

}  // namespace
}  // namespace pacer::experiments
