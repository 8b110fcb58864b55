// `pacer experiment` in stages (docs/cluster.md): prepare, proxy, oracle and runs, each as two
// local shard processes merged into the store (--jobs 2), then the whole pipeline, which finds
// every job done and only sweeps and reports. A tiny experiment (cnn on 2,000 Fashion-MNIST images,
// b in {16, 64}, one seed, one cap) run so equals the same experiment run in one process, record by
// record, up to the wall time of each training run.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "base/error.hpp"
#include "experiments/campaigns/demo.hpp"
#include "experiments/cluster/shard.hpp"
#include "tests/support/run_pacer.hpp"
#include "traces/store/store.hpp"

namespace fs = std::filesystem;
using namespace pacer;

namespace {

const char* kTiny =
    "experiment --name e --batch-sizes 16,64 --seeds 0 --caps 1 --max-train 2000 --eval-samples 300 "
    "--eval-every 512 --budget 6000 --pretrain-budget 6000 --pretrain-target 0.6 --target 0.8 --threads 1 "
    "--calibration-points 4 --out ";

traces::RelationSet without_wall_times(traces::RelationSet s) {
  for (auto& r : s.runs) r.wall_time_s = 0;
  return s;
}

TEST(ExperimentShards, StagesInLocalShardsEqualTheExperimentInOneProcess) {
  const fs::path dir = fs::temp_directory_path() / ("pacer-test-experiment-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto r = pacer::testing::run_pacer(kTiny + (dir / "whole").string(), dir);
  ASSERT_EQ(r.code, 0) << r.err;
  r = pacer::testing::run_pacer(kTiny + (dir / "jobs").string() + " --list-jobs", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("stage: prepare\nrecord: e\nstore: " + (dir / "jobs" / "e.h5").string() +
                       "\njobs: 1\njob 0: pre-train, profile, calibrate\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("stage: oracle\nrecord: e\nstore: " + (dir / "jobs" / "e.h5").string() +
                       "\njobs: 2\njob 0: fmnist-target-a b=16 seed=0\n"),
            std::string::npos)
      << r.out;
  r = pacer::testing::run_pacer(kTiny + (dir / "jobs").string() + " --jobs 2", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  // The prepare stage has one job: one process, not two (--jobs is capped by the jobs, issue 22 item 10).
  EXPECT_NE(r.out.find("stage prepare: 1 shards"), std::string::npos) << r.out;
  for (const std::string stage : {"proxy", "oracle", "runs"})
    EXPECT_NE(r.out.find("stage " + stage + ": 2 shards"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[7/7] report"), std::string::npos) << r.out;
  // The pipeline completes from the merged store: its steps say that their counts come after the
  // shards (they read "0 new runs" as if nothing had been trained), and the total counts the shards.
  EXPECT_NE(r.out.find("proxy relation (0 new runs after the local shards, "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("with 0 real training runs after the local shards ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" s of it in local shard processes)\n"), std::string::npos) << r.out;

  const auto a = traces::Store::open(dir / "jobs" / "e.h5"), b = traces::Store::open(dir / "whole" / "e.h5");
  for (const char* group : traces::kStoreGroups) EXPECT_EQ(a.list(group), b.list(group)) << group;
  EXPECT_EQ(a.read<traces::ProfileTable>("cnn@1x28x28"), b.read<traces::ProfileTable>("cnn@1x28x28"));
  EXPECT_EQ(a.read<traces::ProfileTable>("cnn@1x28x28-predicted"),
            b.read<traces::ProfileTable>("cnn@1x28x28-predicted"));
  for (const auto& name : b.list<traces::ModelRecord>())
    EXPECT_EQ(a.read<traces::ModelRecord>(name), b.read<traces::ModelRecord>(name)) << name;
  for (const auto& name : b.list<traces::RelationSet>())
    EXPECT_EQ(without_wall_times(a.read<traces::RelationSet>(name)),
              without_wall_times(b.read<traces::RelationSet>(name)))
        << name;
  for (const auto& name : b.list<traces::PowerSeries>())
    EXPECT_EQ(a.read<traces::PowerSeries>(name), b.read<traces::PowerSeries>(name)) << name;
  for (const auto& name : b.list<traces::SweepResult>())
    EXPECT_EQ(a.read<traces::SweepResult>(name), b.read<traces::SweepResult>(name)) << name;
  auto va = a.read<traces::ValidationResult>("e-fmnist-target-a"),
       vb = b.read<traces::ValidationResult>("e-fmnist-target-a");
  ASSERT_EQ(va.rows.size(), 5u);  // five policies, one seed, one cap
  for (auto* v : {&va, &vb})
    for (auto& row : v->rows) row.wall_time_s = 0;
  EXPECT_EQ(va, vb);
  fs::remove_all(dir);
}

// The stages a campaign lists its jobs in are the ones its --stage takes.
TEST(ExperimentShards, JobListsAreInTheCampaignsStages) {
  auto names = [](const std::vector<experiments::JobList>& lists) {
    std::vector<std::string> out;
    for (const auto& l : lists) out.push_back(l.stage);
    return out;
  };
  EXPECT_EQ(names(experiments::experiment_job_lists("e", "e.h5", {"t"}, {16}, {0})),
            (std::vector<std::string>{"prepare", "proxy", "oracle", "runs"}));
  EXPECT_EQ(names(experiments::experiment_job_lists("e", "e.h5", {"t"}, {16}, {0})), experiments::experiment_stages());
  EXPECT_EQ(names(experiments::validate_job_lists("v", "t-true", "v.h5", {16}, {0})), experiments::validate_stages());
}

// A shard of an experiment runs one of its stages: --shard without --stage is one usage error that
// names both options, before any output, in `pacer demo` and `pacer experiment` as in `pacer
// validate`; the library refuses the same options (a pipeline run whole would ignore the shard).
TEST(ExperimentShards, AShardWithoutAStageIsAUsageError) {
  const fs::path dir = fs::temp_directory_path() / ("pacer-test-experiment-stage-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const std::string command : {"demo", "experiment"}) {
    const auto r = pacer::testing::run_pacer(command + " --quick --shard 0/2 --out " + (dir / command).string(), dir);
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_NE(r.err.find("--shard needs --stage"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(fs::exists(dir / command)) << command;
  }

  experiments::DemoOptions o;
  o.out_dir = dir / "library";
  o.device = "no-such-board";  // the pipeline, were it started, would stop here with another error
  o.shard = experiments::Shard{0, 2};
  try {
    experiments::run_demo(o);
    ADD_FAILURE() << "a shard without a stage ran";
  } catch (const OptionError& e) {
    EXPECT_EQ(e.option, "stage");
    EXPECT_STREQ(e.what(),
                 "a shard of an experiment runs one of its stages (prepare, then proxy, then oracle, then runs)");
  }
  o.shard.reset();
  o.stage = "sweep";
  try {
    experiments::run_demo(o);
    ADD_FAILURE() << "an unknown stage ran";
  } catch (const OptionError& e) {
    EXPECT_EQ(e.option, "stage");
    EXPECT_STREQ(e.what(), "'sweep' is not a stage of an experiment (prepare, proxy, oracle, runs)");
  }
  EXPECT_FALSE(fs::exists(o.out_dir));
  fs::remove_all(dir);
}

}  // namespace
