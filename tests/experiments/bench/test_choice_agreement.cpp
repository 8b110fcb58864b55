// experiments/bench/choice_agreement.hpp: the pacer policy's choices on one relation against those
// on a reference relation (the adaptive campaign's against the full one's, `pacer bench train
// --adaptive`), and the reference's own resolution: a near-tie that one seed decides is not kept
// when that seed is left out.
#include <gtest/gtest.h>

#include <cmath>

#include "experiments/bench/choice_agreement.hpp"
#include "explore/policy.hpp"
#include "tests/support/hand_space.hpp"

namespace pacer::experiments {
namespace {

const std::vector<int> kBatches = {8, 16, 32};

// One knob, 5 W everywhere; every batch size takes the same time per sample, so that the time to
// the target orders the batch sizes as their samples to the target do.
explore::Space space() {
  return pacer::testing::one_knob_space(kBatches, {1e-3, 1e-3, 1e-3});
}

traces::RelationSet relation(const std::vector<std::vector<int64_t>>& samples_by_batch) {
  traces::RelationSet s;
  s.name = "hand";
  s.metric = "accuracy";
  s.higher_is_better = true;
  s.target = 0.9;
  for (size_t i = 0; i < kBatches.size(); ++i)
    for (size_t seed = 0; seed < samples_by_batch[i].size(); ++seed) {
      traces::RelationRun r;
      r.batch_size = kBatches[i];
      r.seed = static_cast<int>(seed);
      r.reached = true;
      r.samples = samples_by_batch[i][seed];
      r.budget_samples = 100'000;
      s.runs.push_back(r);
    }
  return s;
}

TEST(ChoiceAgreement, TheSameRelationAgreesEverywhereAndAnotherChoiceCostsItsRegret) {
  const explore::Space sp = space();
  const std::vector<double> caps = {6, 8, 10};
  // b=16 is clearly the fastest to the target.
  const traces::RelationSet full = relation({{3000, 3100, 2900}, {1000, 1050, 950}, {4000, 4100, 3900}});
  const ChoiceAgreement self = compare_choices(sp, {}, caps, full, full);
  EXPECT_EQ(self.caps, 3);
  EXPECT_EQ(self.same, 3);
  EXPECT_DOUBLE_EQ(self.max_regret, 0);
  // A relation that ranks b=8 first: every cap differs, and the regret is b=8's time under the full
  // relation over b=16's.
  const traces::RelationSet wrong = relation({{500}, {1000}, {4000}});
  const ChoiceAgreement other = compare_choices(sp, {}, caps, full, wrong);
  EXPECT_EQ(other.caps, 3);
  EXPECT_EQ(other.same, 0);
  EXPECT_EQ(other.reference_choices, std::vector<int>({16, 16, 16}));
  EXPECT_EQ(other.other_choices, std::vector<int>({8, 8, 8}));
  const explore::Index index(sp);
  const explore::Relation rf = explore::Relation::from_set(full, sp);
  const double expected = rf.expected_samples_by_batch[0] / rf.expected_samples_by_batch[1] - 1;
  EXPECT_GT(expected, 1);
  EXPECT_NEAR(other.max_regret, expected, 1e-9);
  EXPECT_NEAR(other.mean_regret, expected, 1e-9);
  // Pooled: caps and same add up, the mean is weighted by caps.
  ChoiceAgreement both = self;
  both += other;
  EXPECT_EQ(both.caps, 6);
  EXPECT_EQ(both.same, 3);
  EXPECT_NEAR(both.mean_regret, expected / 2, 1e-9);
  EXPECT_DOUBLE_EQ(both.share(), 0.5);
}

TEST(ChoiceAgreement, ANearTieThatOneSeedDecidesIsLostWhenThatSeedIsLeftOut) {
  const explore::Space sp = space();
  const std::vector<double> caps = {10};
  // Clear: b=16 wins with or without any one seed.
  const traces::RelationSet clear = relation({{3000, 3100, 2900}, {1000, 1050, 950}, {4000, 4100, 3900}});
  const ChoiceAgreement c = leave_one_seed_out(sp, {}, caps, clear);
  EXPECT_EQ(c.caps, 3);  // one cap x three seeds
  EXPECT_EQ(c.same, 3);
  // A near-tie between b=8 and b=16 that seed 2 of b=8 decides: without it, b=8 wins.
  const traces::RelationSet tie = relation({{900, 900, 1400}, {1000, 1000, 1000}, {4000, 4100, 3900}});
  const explore::Index index(sp);
  const explore::Relation rt = explore::Relation::from_set(tie, sp);
  ASSERT_LT(rt.expected_samples_by_batch[1], rt.expected_samples_by_batch[0]);  // the full campaign picks b=16
  const ChoiceAgreement t = leave_one_seed_out(sp, {}, caps, tie);
  EXPECT_EQ(t.caps, 3);
  EXPECT_LT(t.same, 3);
  EXPECT_GT(t.max_regret, 0);
  // One seed: nothing to leave out.
  EXPECT_EQ(leave_one_seed_out(sp, {}, caps, relation({{900}, {1000}, {4000}})).caps, 0);
}

TEST(ChoiceAgreement, EachSeedAloneKeepsThePooledChoiceOnlyWhereItOrdersTheNearTieAsThePoolDoes) {
  const explore::Space sp = space();
  const std::vector<double> caps = {10};
  // Clear: every seed alone picks b=16, as the pool does.
  const traces::RelationSet clear = relation({{3000, 3100, 2900}, {1000, 1050, 950}, {4000, 4100, 3900}});
  const ChoiceAgreement c = each_seed_alone(sp, {}, caps, clear);
  EXPECT_EQ(c.caps, 3);  // one cap x three seeds
  EXPECT_EQ(c.same, 3);
  EXPECT_DOUBLE_EQ(c.max_regret, 0);
  // A near-tie between b=8 and b=16: the pool picks b=16 (b=8's seed 2 is slow), seeds 0 and 1
  // alone pick b=8 and only seed 2 alone agrees; leaving one seed out keeps more (two of three).
  const traces::RelationSet tie = relation({{900, 900, 1400}, {1000, 1000, 1000}, {4000, 4100, 3900}});
  const explore::Relation rt = explore::Relation::from_set(tie, sp);
  ASSERT_LT(rt.expected_samples_by_batch[1], rt.expected_samples_by_batch[0]);
  const ChoiceAgreement t = each_seed_alone(sp, {}, caps, tie);
  EXPECT_EQ(t.caps, 3);
  EXPECT_EQ(t.same, 1);
  EXPECT_EQ(t.other_choices, std::vector<int>({8, 8, 16}));
  EXPECT_GT(t.max_regret, 0);
  EXPECT_GT(leave_one_seed_out(sp, {}, caps, tie).same, t.same);
  EXPECT_EQ(each_seed_alone(sp, {}, caps, relation({{900}, {1000}, {4000}})).caps, 0);
}

}  // namespace
}  // namespace pacer::experiments
