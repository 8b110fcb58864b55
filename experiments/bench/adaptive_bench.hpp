#pragma once
// `pacer bench adaptive`: the adaptive relation campaign (explore/adaptive.hpp) replayed on the Zeus
// traces against the full campaign and the fixed cuts (explore/proxy_budget.hpp). Per GPU and
// workload, the pool is the proxy's runs (the protocol's half of each batch size's runs) with their
// per-level learning curve; an adaptive replay buys runs up to sample counts from it in rounds, in
// `orders` random orders of the pool; the pacer policy then chooses on what was bought and is scored
// against the target (all runs) exactly as `pacer sweep` does (10 caps per workload). The engine's
// constants are chosen by leave-one-workload-out over a grid (all GPUs of a workload held out
// together): the fold's choice is the cheapest grid point whose mean regret on the other workloads
// is at most the full campaign's there (goal (a)'s bar); none: the least mean regret. Round 1's
// share of a compute budget has its own grid and folds, on the campaigns cut at the fixed cuts'
// compute (the most cuts below the fixed cut's max regret, then the least mean max). Prints the
// folds, the table (full, every fixed cut, the adaptive campaign unbounded and at each fixed cut's
// compute) and the two goal lines.
#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include "explore/adaptive.hpp"

namespace pacer::experiments {

// The goal: the full campaign's mean regret at <= 25 % of its compute.
inline constexpr double kAdaptiveGoalShare = 0.25;

struct AdaptiveBenchOptions {
  std::filesystem::path zeus_dir;  // empty: traces::zeus::default_data_dir()
  std::vector<std::string> gpus;   // empty: every summary_power_<gpu>.csv in zeus_dir
  int caps_per_workload = 10;
  int orders = 20;  // random orders of the pool per workload (seeds 1..orders)
  // The grid of the leave-one-workload-out choice; one value each: no choice, those constants.
  std::vector<double> tolerances = {0.005, 0.01, 0.02};
  std::vector<double> initial_fractions = {0.02, 0.05, 0.1};
  std::vector<double> zs = {1.0, 1.645, 2.5};
  std::vector<double> estimate_zs = {0.0, 1.0, 2.0};
  // How unfinished runs are extrapolated (explore::AdaptiveExtrapolation): every one in the grid.
  std::vector<explore::AdaptiveExtrapolation> extrapolations = {explore::AdaptiveExtrapolation::ratio,
                                                                explore::AdaptiveExtrapolation::shared_curve,
                                                                explore::AdaptiveExtrapolation::power_law};
  // The shared ratio as a line in log b (AdaptiveOptions::ratio_line) or the median: in both grids.
  std::vector<bool> ratio_lines = {false, true};
  // The grid of round 1's share of a compute budget (0: the initial fraction of the run budget),
  // chosen leave-one-workload-out on the campaigns cut at the fixed cuts' compute.
  std::vector<double> budget_first_shares = {0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5};
};

struct AdaptiveConstants {
  double tolerance = explore::kAdaptiveTolerance;
  double initial_fraction = explore::kAdaptiveInitialFraction;
  double z = explore::kAdaptiveZ;
  double estimate_z = explore::kAdaptiveEstimateZ;
  explore::AdaptiveExtrapolation extrapolation = explore::kAdaptiveExtrapolation;
  bool ratio_line = explore::kAdaptiveRatioLine;
  double budget_first_share = explore::kAdaptiveBudgetFirstShare;  // with a compute budget only
  // "tolerance 0.5 %, round 1 at 5 %, z 1.64, estimates at +1 sd, shared curve, ratio median"
  std::string label() const;
};

// One fold of the choice of round 1's share of a compute budget: the share with the least mean
// over the fixed cuts of the adaptive campaign's max regret at their compute on the other
// workloads, and what it gives on the held-out one.
struct AdaptiveBudgetFold {
  std::string held_out;
  double chosen = 0;
  bool chosen_line = explore::kAdaptiveRatioLine;  // the shared ratio's form chosen with it
  double max_regret = 0;         // held out: mean over the fixed cuts of the adaptive max regret
  int lower_max = 0, cuts = 0;   // held out: cuts where it is below the fixed cut's max regret
};

struct AdaptiveBenchFold {
  std::string held_out;
  AdaptiveConstants chosen;
  double share = 0, mean_regret = 0, max_regret = 0;  // on the held-out workload (over its orders)
};

// One line of the table, on one GPU (or "all").
struct AdaptiveBenchRow {
  std::string gpu;
  std::string campaign;     // "full", a fixed cut's label, "adaptive", "adaptive at <cut>'s compute"
  double share = 0;         // mean over workloads (and orders) of the compute share
  double mean_regret = 0;   // pacer, over every row (of every order)
  double max_regret = 0;    // fixed: the max over the rows; adaptive: the mean over orders of each order's max
  double worst_regret = 0;  // the max over every row of every order
  double same_choice = 0;   // share of (workload, cap, order) whose choice equals the full campaign's
  double decided = 0;       // adaptive: share of (workload, order) replays that stopped decided
};

struct AdaptiveBenchPoint {
  AdaptiveConstants constants;
  double share = 0, mean_regret = 0, max_regret = 0;  // over every workload and order
};

struct AdaptiveBenchResult {
  std::vector<std::string> gpus;
  int orders = 0;
  AdaptiveConstants used;  // the code's constants (the table is measured with them)
  std::vector<AdaptiveBenchFold> folds;
  double held_out_share = 0, held_out_mean = 0, held_out_max = 0;
  std::vector<AdaptiveBenchPoint> grid;
  std::vector<AdaptiveBudgetFold> budget_folds;
  // (share, ratio line) -> mean over cuts of the max regret, all workloads
  std::vector<std::tuple<double, bool, double>> budget_grid;
  std::vector<AdaptiveBenchRow> rows;
  // The goal lines: (a) adaptive mean regret <= full's at <= 25 % of the compute; (b) lower max regret
  // than every fixed cut below the full campaign at the same compute.
  bool goal_a = false;
  // What goal (a) asks against what any campaign must buy to choose as the full one does: the
  // compute of the full campaign's chosen batch sizes alone (every cap's choice, all their runs to
  // the target), a share of its compute, mean over the workloads.
  double choices_share = 0;
  int goal_b_met = 0, goal_b_cuts = 0;
  std::string markdown() const;
  std::string csv() const;
};

AdaptiveBenchResult run_adaptive_bench(const AdaptiveBenchOptions& options);

}  // namespace pacer::experiments
