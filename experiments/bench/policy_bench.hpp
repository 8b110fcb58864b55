#pragma once
// `pacer bench policy`: how the pacer policy's two constants (explore/relation_model.hpp) are
// chosen, reproducibly. On every GPU of the Zeus traces in a folder, each workload is swept with the
// pacer policy for every (own weight, shrink) of a grid, under the replay protocol of
// docs/explore.md (10 caps per workload). Leave-one-workload-out: for each workload (all
// its GPUs held out together) the constants with the least mean regret on the other workloads
// (then the least max regret) are chosen and scored on the held-out one. The table gives each
// fold's choice and held-out regret, and every grid point's regret on all the data.
// With resplits > 0 it also measures how much of each policy's regret comes from which runs the
// proxy drew (outside the protocol): the proxy is re-drawn as a random half of each batch size's
// runs (traces::zeus::ImportOptions::split_seed 1..N), the target keeps all runs, and pacer (the
// code's constants), Algorithm 1 and Ours-robust are scored on every split.
#include <filesystem>
#include <string>
#include <vector>

#include "explore/relation_model.hpp"

namespace pacer::experiments {

struct PolicyBenchOptions {
  std::filesystem::path zeus_dir;  // empty: traces::zeus::default_data_dir()
  std::vector<std::string> gpus;   // empty: every summary_power_<gpu>.csv in zeus_dir
  std::vector<double> own_weights = {0.25, 0.5, 0.75};
  std::vector<double> shrinks = {0.5, 1, 2, 4};
  int caps_per_workload = 10;
  int resplits = 0;  // random proxy halves to score the policies on (0: none)
};

// The acceptance goal of the pacer policy on the Zeus traces: mean and max regret.
inline constexpr double kRegretGoalMean = 0.005;
inline constexpr double kRegretGoalMax = 0.03;

// One policy on one GPU over the re-splits: `workload` empty for the GPU's workloads together.
struct ResplitRow {
  std::string gpu, workload, policy;
  int splits = 0;
  double mean_regret = 0;     // over every (workload, cap) row of every split
  double median_max = 0;      // of the splits' max regret
  double p90_max = 0;         // 90th percentile of the splits' max regret
  double share_over_max = 0;  // splits whose max regret exceeds kRegretGoalMax
  double share_goal_met = 0;  // splits with mean <= kRegretGoalMean and max <= kRegretGoalMax
};

struct PolicyBenchFold {
  std::string held_out;  // workload
  explore::RelationModelOptions chosen;
  double mean_regret = 0, max_regret = 0;  // on the held-out workload
};

struct PolicyBenchPoint {
  explore::RelationModelOptions constants;
  double mean_regret = 0, max_regret = 0;  // over every GPU and workload
};

struct PolicyBenchResult {
  std::vector<std::string> gpus;
  std::vector<PolicyBenchFold> folds;
  double held_out_mean = 0, held_out_max = 0;  // over every fold's held-out rows
  std::vector<PolicyBenchPoint> grid;
  std::vector<ResplitRow> resplits;  // per GPU and policy, then per GPU, workload and policy
  std::string markdown() const;
  std::string csv() const;          // the grid on all the data and the folds
  std::string resplits_csv() const;  // the re-split rows
};

PolicyBenchResult run_policy_bench(const PolicyBenchOptions& options);

}  // namespace pacer::experiments
