// The report's Figure 1 marks the choices the sweep (and the validation) made: the one choice rule
// (explore/decide.hpp), over random stores with measured and predicted points, caps and guards.
#include <gtest/gtest.h>

#include <random>

#include "experiments/report/report.hpp"
#include "explore/problem.hpp"
#include "explore/sweep.hpp"
#include "tests/support/choice_store.hpp"
#include "tests/support/temp_store.hpp"
#include "traces/store/store.hpp"

namespace pacer::experiments {
namespace {

// `pacer sweep` of the store's predicted table into sweep record "sw" (replacing it).
void write_sweep(const std::filesystem::path& path, const std::vector<double>& caps,
                 const std::vector<explore::Policy>& policies, std::optional<double> guard) {
  auto store = traces::Store::open(path);
  explore::ProblemSpec spec;
  spec.profile = pacer::testing::kPredicted;
  const auto pb = explore::load_problem(store, spec);
  explore::SweepRequest request;
  request.name = "sw";
  request.caps_w = caps;
  request.options.policies = policies;
  request.guard = guard;
  store.write(explore::sweep_record({pb.get()}, request), traces::Replace::always);
}

TEST(ReportChoices, FigureOneMarksTheSweepsChoicesOverRandomStoresCapsAndGuards) {
  std::mt19937_64 rng(41);
  const pacer::testing::TempStore path("report-choices");
  const std::vector<explore::Policy> policies = {explore::Policy::Baseline1, explore::Policy::Baseline2,
                                                 explore::Policy::Ours, explore::Policy::Pacer,
                                                 explore::Policy::Oracle};
  int compared = 0;
  for (int s = 0; s < 6; ++s) {
    path.remove();
    const auto rs = pacer::testing::write_random_store(path, rng,
                                                       s % 3 == 0   ? 1.0
                                                       : s % 3 == 1 ? 0.5
                                                                    : 0.0,
                                                       0.03 + 0.03 * (s % 4));
    for (const std::optional<double> guard :
         {std::optional<double>(), std::optional<double>(0.0), std::optional<double>(0.06)}) {
      write_sweep(path, rs.caps, policies, guard);
      const auto sweep = traces::Store::open(path).read<traces::SweepResult>("sw");
      for (double cap : rs.caps) {
        const auto marked = figure1_choices(path.path(), "sw", pacer::testing::kPredicted, cap, policies);
        ASSERT_EQ(marked.size(), policies.size());
        for (size_t i = 0; i < policies.size(); ++i)
          for (const auto& row : sweep.rows)
            if (row.cap_w == cap && explore::is_policy(row.policy, policies[i])) {
              const std::string what =
                  "store " + std::to_string(s) + ", cap " + std::to_string(cap) + ", " + row.policy;
              EXPECT_EQ(marked[i].feasible, row.feasible) << what;
              if (row.feasible && marked[i].feasible) {
                EXPECT_EQ(marked[i].knob, row.knob) << what;
                EXPECT_EQ(marked[i].batch_size, row.batch_size) << what;
              }
              ++compared;
            }
      }
    }
  }
  EXPECT_EQ(compared, 6 * 3 * 4 * 5);
}

// A sweep of two workloads whose automatic guards differ (a model's 15%, sensor noise's 3%): Figure 1
// of each workload's profile marks that workload's rows, chosen under its own guard (read back per
// workload, explore::recorded_rule(sweep, workload)), never under the record's largest.
TEST(ReportChoices, FigureOneOfEachWorkloadOfASweepMarksItsRowsUnderItsOwnGuard) {
  std::mt19937_64 rng(11);
  const pacer::testing::TempStore path("report-choices-two-guards");
  pacer::testing::write_two_guard_store(path, rng);
  const std::vector<explore::Policy> policies = {explore::Policy::Baseline2, explore::Policy::Ours,
                                                 explore::Policy::Pacer, explore::Policy::Oracle};
  {
    auto store = traces::Store::open(path);
    const auto problems = explore::load_problems(store, explore::ProblemSpec{});
    std::vector<const explore::Problem*> views;
    for (const auto& p : problems) views.push_back(p.get());
    explore::SweepRequest request;
    request.name = "sw";
    request.caps_per_workload = 12;
    request.options.policies = policies;
    store.write(explore::sweep_record(views, request), traces::Replace::always);
  }
  const auto sweep = traces::Store::open(path).read<traces::SweepResult>("sw");
  ASSERT_EQ(sweep.rows.size(), 2u * 12u * policies.size());
  int feasible = 0;
  for (const auto& row : sweep.rows) {
    const std::string profile = row.workload == "v" ? "v" : pacer::testing::kPredicted;
    const std::string what = row.workload + " at " + std::to_string(row.cap_w) + " W, " + row.policy;
    const auto marked =
        figure1_choices(path.path(), "sw", profile, row.cap_w, {*explore::policy_from_string(row.policy)});
    ASSERT_EQ(marked.size(), 1u);
    EXPECT_EQ(marked[0].feasible, row.feasible) << what;
    if (row.feasible && marked[0].feasible) {
      EXPECT_EQ(marked[0].knob, row.knob) << what;
      EXPECT_EQ(marked[0].batch_size, row.batch_size) << what;
    }
    feasible += row.feasible;
  }
  EXPECT_GT(feasible, static_cast<int>(sweep.rows.size()) / 2);
}

// The report's path of ChoiceRule.EveryCommandSkipsAPredictedPointWhoseRunProjectionIsOverTheCap
// (tests/explore/test_choice_rule.cpp): Figure 1 skips the predicted point whose peak fits but
// whose run projection over the calibration's median power samples does not.
TEST(ChoiceRule, TheReportSkipsAPredictedPointWhoseRunProjectionIsOverTheCap) {
  const pacer::testing::TempStore path("report-predicted-projection");
  pacer::testing::write_predicted_projection_store(path);
  const std::vector<explore::Policy> policies = {explore::Policy::Baseline1, explore::Policy::Baseline2,
                                                 explore::Policy::Ours, explore::Policy::Pacer,
                                                 explore::Policy::Oracle};
  for (const std::optional<double> guard : {std::optional<double>(), std::optional<double>(0.0)}) {
    write_sweep(path, {pacer::testing::kProjectionCapW}, policies, guard);
    const auto marked =
        figure1_choices(path.path(), "sw", pacer::testing::kPredicted, pacer::testing::kProjectionCapW, policies);
    ASSERT_EQ(marked.size(), policies.size());
    for (size_t i = 0; i < policies.size(); ++i) {
      ASSERT_TRUE(marked[i].feasible) << explore::to_string(policies[i]);
      EXPECT_EQ(marked[i].knob, pacer::testing::kProjectionNeighbourKnob) << explore::to_string(policies[i]);
      EXPECT_EQ(marked[i].batch_size, 128) << explore::to_string(policies[i]);
    }
  }
}

}  // namespace
}  // namespace pacer::experiments
