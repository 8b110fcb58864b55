#pragma once
// Cheaper relation vectors (docs/explore.md, "Cheaper relation vectors"): how much of the proxy
// campaign's compute the policies need. A cut stops every proxy run early, at a looser metric level
// or after a number of samples, and may keep fewer seeds; a run that did not reach the target
// within the cut gets its samples-to-target extrapolated from its learning curve (the metric linear
// in log samples through its last points). The policies then choose on the cut relation and are
// scored against the target exactly as in a sweep; the result is one sweep record per cut, tagged
// with the cut and the share of the proxy's compute it used, from which `pacer report` draws the
// compute-versus-regret figure.
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "explore/problem.hpp"
#include "explore/sweep.hpp"
#include "traces/records.hpp"
#include "traces/store/store.hpp"

namespace pacer::explore {

struct ProxyCut {
  // Where each run stops: at a metric level (given, or the k-th level looser than the target among
  // the levels of the relation's own curve, so that one cut fits workloads of different metrics),
  // or after a number of samples (given, or a fraction of the relation's longest run).
  enum class Stop { none, level, looser, samples, fraction };
  Stop stop = Stop::none;
  double level = traces::kNaN;  // Stop::level: the metric level
  int looser = 0;               // Stop::looser: k >= 1 levels looser than the target
  int64_t samples = 0;          // Stop::samples: the samples
  double fraction = 0;          // Stop::fraction: of the longest run's samples, in (0, 1]
  int seeds = 0;                // runs kept per batch size (the lowest seeds); 0: all of them
  // "full", "level 0.55", "2 levels looser", "36k samples", "5% of the longest run", each with
  // " x 1 seed" when seeds are cut.
  std::string label() const;
};

// Parses one cut: "full", "level:<metric>", "looser:<k>", "samples:<count>" or "fraction:<f>",
// each optionally followed by "@<seeds>" (runs kept per batch size): "looser:1@1". Throws
// OptionError(option_key, ...).
ProxyCut parse_cut(const std::string& text, const std::string& option_key);

// The samples a run cost, its compute: a run that reached its target, its samples to the target; a
// censored run, every sample it trained (its budget, or its samples where its last evaluation
// interval took it past the budget). The one count of a run's compute for the budget's cuts, the
// adaptive replays and the benchmarks.
inline int64_t run_compute_samples(const traces::RelationRun& run) {
  return run.reached ? run.samples : std::max(run.samples, run.budget_samples);
}

// Points of the learning curve a run uses for the extrapolation (its last distinct sample counts).
inline constexpr int kExtrapolationPoints = 3;

// The samples at which a run reaches `target`, extrapolated from its (samples, metric) points with
// the metric linear in log samples through the last `last_points` points of distinct sample counts.
// NaN when fewer than two such points or when the fitted line does not move toward the target; at
// least the last point's samples.
// The best metric of a learning curve (its running best at its last point); NaN: none.
double best_metric(const std::vector<std::pair<int64_t, double>>& curve, bool higher_is_better);
double extrapolate_samples(std::vector<std::pair<int64_t, double>> points, double target, bool higher_is_better,
                           int last_points = kExtrapolationPoints);

// How a cut run's samples-to-target is estimated.
//  curve: from its own learning curve (extrapolate_samples), run by run.
//  ratio: the learning curves of the batch sizes share their shape up to a scale of samples, so
//    every run's samples-to-target is its samples to a common level L times one ratio R shared by
//    all runs. L: the cut's level (level cuts), or the highest level every unfinished run reached
//    within a cut of samples. R: the median of target/L over the runs that reached the target
//    within the cut (exact), else of the runs' own extrapolations. A shared R scales every
//    configuration alike, so the ranking comes from measured counts to L, not from extrapolations.
enum class Extrapolation { curve, ratio };
inline constexpr Extrapolation kDefaultExtrapolation = Extrapolation::ratio;
std::string_view to_string(Extrapolation e);
// "curve" or "ratio"; OptionError(option_key) otherwise.
Extrapolation parse_extrapolation(const std::string& text, const std::string& option_key);

struct CutRelation {
  traces::RelationSet set;  // the kept runs; an extrapolated count is stored as reached
  double compute_used = 0;  // samples the kept runs trained up to the cut
  double compute_full = 0;  // samples every run of the proxy trained (to the target or its budget)
  int extrapolated = 0;     // runs whose count was extrapolated
  int censored = 0;         // runs without a count: censored at the cut
  double share() const { return compute_full > 0 ? compute_used / compute_full : traces::kNaN; }
};

// Applies `cut` to the proxy's runs with their learning curve (same batch sizes and seeds).
CutRelation cut_relation(const traces::RelationSet& proxy, const traces::LearningCurve& curve, const ProxyCut& cut,
                         Extrapolation extrapolation = kDefaultExtrapolation);

// The cuts swept by default: for a curve of metric levels (Zeus), the full proxy and 1 to `levels`
// levels looser; for a curve of evaluations, 2, 5, 10, 20, 35 and 50 % of the longest run; each
// with all seeds and with one seed.
std::vector<ProxyCut> default_cuts(const traces::LearningCurve& curve, int levels = 6);

struct BudgetRequest {
  std::string name = "budget";  // sweep records "<name>@<i>" for the i-th cut
  std::vector<ProxyCut> cuts;   // empty: default_cuts of the first problem's curve's source
  Extrapolation extrapolation = kDefaultExtrapolation;
  // Caps, policies (default: pacer, ours and the oracle) and the guard (nullopt: each workload's
  // automatic one): every cut's sweep and every adaptive replay choose under choice_rule(problem, guard).
  SweepRequest sweep;
  // Adaptive relation campaigns (explore/adaptive.hpp) replayed on the proxy's runs, beside the
  // cuts: one sweep record until decided and one at each cut's compute (per workload, that cut's
  // share), each over this many random orders of the pool (their rows together); 0: none.
  int adaptive_orders = 0;
};

// One cut x policy over every problem.
struct BudgetPoint {
  std::string cut;
  double share = traces::kNaN;  // mean over the problems of the compute share of the cut
  std::string policy;
  int rows = 0, feasible = 0;
  double mean_regret = traces::kNaN, max_regret = traces::kNaN;
  double same_choice = traces::kNaN;  // share of (workload, cap) choices equal to the full proxy's
};

struct BudgetResult {
  std::vector<traces::SweepResult> sweeps;  // one per cut, tagged with the cut and its share
  std::vector<BudgetPoint> points;
};

// Every problem needs a learning curve named as its proxy relation (`curves` in the same order).
BudgetResult budget_sweep(const std::vector<const Problem*>& problems, const std::vector<traces::LearningCurve>& curves,
                          const BudgetRequest& request);

// Reads each problem's curve (named as its proxy relation) from the store; an error saying which
// campaign records it when one is missing.
std::vector<traces::LearningCurve> read_curves(const traces::Store& store, const std::vector<const Problem*>& problems);

// The points of sweeps written by budget_sweep (those with a proxy share), grouped as above.
std::vector<BudgetPoint> budget_points(const std::vector<traces::SweepResult>& sweeps);

std::string format_budget(const std::vector<BudgetPoint>& points);
std::string budget_csv(const std::vector<BudgetPoint>& points);

}  // namespace pacer::explore
