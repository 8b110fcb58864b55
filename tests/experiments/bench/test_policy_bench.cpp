// `pacer bench policy --resplits N`: the policies scored on random proxy halves. A fixture in the
// Zeus format where the outcome of each draw is known: b = 8 and b = 16 run equally fast, b = 8's
// four runs all need 6 epochs, b = 16's need 4, 4, 12 and 12 (mean 8, so the oracle takes b = 8).
// Algorithm 1 goes wrong (b = 16, regret 8/6 - 1 = 33 % at every cap) exactly on the splits whose
// proxy drew both 4-epoch runs of b = 16, and is right on all others.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "experiments/bench/policy_bench.hpp"
#include "experiments/bench/transfer_bench.hpp"
#include "traces/import/zeus.hpp"
#include "traces/store/store.hpp"
#include "tests/support/sample_records.hpp"

namespace pacer::experiments {
namespace {

namespace fs = std::filesystem;

const char* kPower =
    "dataset,network,batch_size,optimizer,power_limit,time_per_epoch,average_power\n"
    "toy,net,8,adam,100,10,90\ntoy,net,8,adam,150,8,120\n"
    "toy,net,16,adam,100,10,90\ntoy,net,16,adam,150,8,120\n";

std::string train_csv() {
  std::string t = "dataset,network,batch_size,optimizer,learning_rate,run,target_metric,target_epoch\n";
  const int epochs16[] = {4, 12, 4, 12};
  for (int run = 1; run <= 4; ++run) {
    t += "toy,net,8,adam,1e-3," + std::to_string(run) + ",0.6,6\n";
    t += "toy,net,16,adam,1e-3," + std::to_string(run) + ",0.6," + std::to_string(epochs16[run - 1]) + "\n";
  }
  return t;
}

TEST(PolicyBench, ResplitsCountTheSplitsWhereTheProxyDrawMisleads) {
  const fs::path dir = fs::temp_directory_path() / ("pacer-policy-bench-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "summary_power_toy.csv") << kPower;
  std::ofstream(dir / "summary_train.csv") << train_csv();

  PolicyBenchOptions o;
  o.zeus_dir = dir;
  o.own_weights = {0.25};
  o.shrinks = {0.5};
  o.resplits = 40;
  const auto result = run_policy_bench(o);

  // The draws, independently: a split misleads when b = 16's proxy holds runs 1 and 3 only.
  int misleading = 0;
  for (int split = 1; split <= o.resplits; ++split) {
    traces::zeus::ImportOptions zo;
    zo.data_dir = dir;
    zo.gpu = "toy";
    zo.split_seed = static_cast<uint64_t>(split);
    const auto w = traces::zeus::import_traces(zo).workloads.at(0);
    std::vector<int> seeds16;
    for (const auto& r : w.proxy.runs)
      if (r.batch_size == 16) seeds16.push_back(r.seed);
    misleading += seeds16 == std::vector<int>{1, 3};
  }
  ASSERT_GT(misleading, 0) << "no split drew both fast runs: choose another fixture";
  ASSERT_LT(misleading, o.resplits);
  const double share = static_cast<double>(misleading) / o.resplits;

  const ResplitRow* ours = nullptr;
  for (const auto& r : result.resplits)
    if (r.gpu == "toy" && r.workload.empty() && r.policy == "ours") ours = &r;
  ASSERT_NE(ours, nullptr);
  EXPECT_EQ(ours->splits, o.resplits);
  EXPECT_NEAR(ours->share_over_max, share, 1e-12);
  EXPECT_NEAR(ours->share_goal_met, 1 - share, 1e-12);
  EXPECT_NEAR(ours->mean_regret, share * (8.0 / 6.0 - 1), 1e-9);
  EXPECT_NEAR(ours->p90_max, share > 0.1 ? 8.0 / 6.0 - 1 : 0.0, 1e-9);
  // One workload: its row is the GPU's.
  int workload_rows = 0;
  for (const auto& r : result.resplits)
    if (r.policy == "ours" && !r.workload.empty()) {
      ++workload_rows;
      EXPECT_EQ(r.workload, "toy.net.adam");
      EXPECT_DOUBLE_EQ(r.share_over_max, ours->share_over_max);
    }
  EXPECT_EQ(workload_rows, 1);
  EXPECT_NE(result.markdown().find("Random proxy halves (40 splits per GPU"), std::string::npos);
  EXPECT_NE(result.resplits_csv().find("toy,,ours,40,"), std::string::npos);
  // pacer's 90 % interval of the target's time at its choice against the held-back runs' mean: on a
  // misleading split both b look exact (identical proxy runs), pacer takes b = 16 at 4 epochs and the
  // held-back runs need 12, outside its interval (one epoch of quantisation wide); on every other
  // split it takes b = 8, whose held-back runs need the proxy's 6 epochs, inside.
  ASSERT_GT(result.coverage.choices, 0);
  EXPECT_EQ(result.coverage.choices % o.resplits, 0);
  EXPECT_NEAR(result.coverage.coverage, 1 - share, 1e-12);
  EXPECT_NE(result.markdown().find("coverage of pacer's 90 % interval"), std::string::npos);
  fs::remove_all(dir);
}

// `pacer bench policy --stores`: one store, a proxy and two targets that learn exp(-0.3) and exp(+0.1)
// times the proxy's samples at every b and seed. Each pair's sd comes from the other pair only (leave
// one pair out), and every cap is checked over the proxy's seed draws (three of two seeds, one of
// three) against the target's draws of the same size (3 x 3 + 1 x 1 = 10 checks).
TEST(TransferBench, LeavesEachPairOutAndCountsTheSeedDraws) {
  const fs::path dir = fs::temp_directory_path() / ("pacer-transfer-bench-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  {
    auto store = traces::Store::open_or_create(dir / "s.h5");
    const traces::ProfileTable prof = pacer::testing::small_cnn_profile();
    store.write(prof, "cnn");
    auto relation = [&](const std::string& name, const std::string& dataset, double factor) {
      traces::RelationSet r;
      r.name = name;
      r.workload = "cnn";
      r.dataset = dataset;
      r.metric = "accuracy";
      r.target = 0.8;
      for (int b : {8, 32})
        for (int seed = 0; seed < 3; ++seed) {
          traces::RelationRun run;
          run.batch_size = b;
          run.seed = seed;
          run.reached = true;
          run.samples = std::llround(factor * (b == 8 ? 1000 : 1500) * (1 + 0.1 * seed));
          r.runs.push_back(run);
        }
      store.write(r);
    };
    relation("p", "p-data", 1);
    relation("ta-true", "a-data", std::exp(-0.3));
    relation("tb-true", "b-data", std::exp(0.1));
  }
  TransferBenchOptions o;
  o.stores = {dir / "s.h5"};
  o.caps_per_workload = 4;
  const TransferBenchResult r = run_transfer_bench(o);
  ASSERT_EQ(r.pairs.size(), 2u);
  EXPECT_NEAR(r.pairs[0].mean_log_ratio, -0.3, 1e-3);
  EXPECT_NEAR(r.pairs[1].mean_log_ratio, 0.1, 1e-3);
  EXPECT_NEAR(r.pairs[0].shape_var, 0, 1e-6);  // the same ratio at both b
  ASSERT_EQ(r.held_out_sd.size(), 2u);
  EXPECT_NEAR(r.held_out_sd[0].level, std::sqrt(r.pairs[1].level_var), 1e-12);
  EXPECT_NEAR(r.held_out_sd[1].level, std::sqrt(r.pairs[0].level_var), 1e-12);
  EXPECT_NEAR(r.pooled.level, std::sqrt((r.pairs[0].level_var + r.pairs[1].level_var) / 2), 1e-12);
  ASSERT_FALSE(r.coverage.empty());
  for (const auto& row : r.coverage) EXPECT_EQ(row.checks, 10) << row.cap_w;
  // Target A's gap (0.3) lies outside what target B's (0.1) predicts for it at every cap.
  for (const auto& row : r.coverage)
    if (row.pair.find("a-data") != std::string::npos) EXPECT_LT(row.covered, row.checks) << row.cap_w;
  EXPECT_NE(r.markdown().find("| all |"), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace pacer::experiments
