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
  // Grid of the inflation of pacer's 90 % target interval (explore::kIntervalInflation), chosen
  // leave-one-workload-out and leave-one-GPU-out by its coverage on the random proxy halves.
  std::vector<double> inflations = {0.75, 1, 1.25, 1.5, 1.75, 2, 2.5, 3, 4};
  // Grid of the threshold at which pacer departs from Algorithm 1's batch size
  // (explore::kPacerDepartZ), chosen leave-one-workload-out by the mean regret on the proxy halves.
  std::vector<double> depart_zs = {-1, -0.5, 0, 0.25, 0.5, 1};
};

// The coverage of pacer's 90 % interval of the target's time to accuracy at its choice, over every
// (GPU, workload, split, cap): the share of choices whose held-back target runs' mean time lies in it.
struct CoverageFold {
  std::string held_out;  // a workload or a GPU
  double chosen = 0;     // inflation chosen on the others (coverage nearest 90 %)
  double coverage = 0;   // on the held-out one
  int choices = 0;
};
struct CoverageResult {
  double inflation = 0;  // the code's (explore::kIntervalInflation)
  double coverage = 0;   // at it, over everything
  int choices = 0;
  std::vector<std::pair<double, double>> by_inflation;  // (inflation, coverage over everything)
  std::vector<CoverageFold> by_workload, by_gpu;        // leave-one-out folds
  double held_out_workload = 0, held_out_gpu = 0;       // pooled coverage of the folds' held-out choices
};

// The departure threshold's leave-one-workload-out choice (on the random proxy halves).
struct DepartFold {
  std::string held_out;
  double chosen = 0;
  double pacer_mean = 0, pacer_max = 0, ours_mean = 0, ours_max = 0;  // on the held-out workload
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
  double max_regret = 0;      // the worst row of every split
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
  CoverageResult coverage;           // with resplits > 0
  std::vector<DepartFold> depart_folds;
  std::vector<PolicyBenchPoint> depart_grid;  // per threshold (in constants.depart_z): pacer on every draw
  double depart_held_out_pacer_mean = 0, depart_held_out_pacer_max = 0;
  double depart_held_out_ours_mean = 0, depart_held_out_ours_max = 0;
  std::string markdown() const;
  std::string csv() const;           // the grid on all the data and the folds
  std::string resplits_csv() const;  // the re-split rows
};

PolicyBenchResult run_policy_bench(const PolicyBenchOptions& options);

}  // namespace pacer::experiments
