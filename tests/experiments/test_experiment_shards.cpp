// `pacer experiment` in stages (docs/cluster.md): prepare, proxy, oracle and runs, each as two
// local shard processes merged into the store (--jobs 2), then the whole pipeline, which finds
// every job done and only sweeps and reports. A tiny experiment (cnn on 2,000 Fashion-MNIST images,
// b in {16, 64}, one seed, one cap) run so equals the same experiment run in one process, record by
// record, up to the wall time of each training run.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/support/run_pacer.hpp"
#include "traces/store.hpp"

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
  for (const std::string stage : {"prepare", "proxy", "oracle", "runs"})
    EXPECT_NE(r.out.find("stage " + stage + ": 2 shards"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[7/7] report"), std::string::npos) << r.out;

  const auto a = traces::Store::open(dir / "jobs" / "e.h5"), b = traces::Store::open(dir / "whole" / "e.h5");
  for (const std::string group : {"profiles", "relations", "models", "sweeps", "runs", "validations"})
    EXPECT_EQ(a.list(group), b.list(group)) << group;
  EXPECT_EQ(a.read_profile("cnn@1x28x28"), b.read_profile("cnn@1x28x28"));
  EXPECT_EQ(a.read_profile("cnn@1x28x28-predicted"), b.read_profile("cnn@1x28x28-predicted"));
  for (const auto& name : b.list("models")) EXPECT_EQ(a.read_model(name), b.read_model(name)) << name;
  for (const auto& name : b.list("relations"))
    EXPECT_EQ(without_wall_times(a.read_relation(name)), without_wall_times(b.read_relation(name))) << name;
  for (const auto& name : b.list("runs")) EXPECT_EQ(a.read_series(name), b.read_series(name)) << name;
  for (const auto& name : b.list("sweeps")) EXPECT_EQ(a.read_sweep(name), b.read_sweep(name)) << name;
  auto va = a.read_validation("e-fmnist-target-a"), vb = b.read_validation("e-fmnist-target-a");
  ASSERT_EQ(va.rows.size(), 5u);  // five policies, one seed, one cap
  for (auto* v : {&va, &vb})
    for (auto& row : v->rows) row.wall_time_s = 0;
  EXPECT_EQ(va, vb);
  fs::remove_all(dir);
}

}  // namespace
