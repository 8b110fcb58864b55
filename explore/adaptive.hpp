#pragma once
// Adaptive relation campaigns (docs/explore.md, "Adaptive relation campaigns"): the decision engine.
// A campaign in rounds, in the spirit of successive halving and racing. The engine is stateless:
// given the device's design space, the caps of interest and every run so far, it says which batch
// sizes can still be the pacer policy's choice at some cap, whether the campaign is done, and what
// the next round trains. A campaign (real training: the relation campaign's adaptive mode; replay of
// stored runs: replay_adaptive below) calls plan_round after every round, trains the
// orders, adds the runs and calls it again, until the verdict is not Continue.
//
// The rule, per round:
//  1. every unfinished run (below the target) gets an estimated samples-to-target from its learning
//     curve: its samples to the best level it reached times the ratio target/level of the runs that
//     did reach the target (a line in log b, clamped to their range), else over every run that
//     reached its level the log ratios (that run's own extrapolation / its samples to the level),
//     their median or (ratio_line) a line in log b through them, the
//     shared ratio at the run's own level (never at a looser level another run stopped at), else its
//     own curve (extrapolate_samples); the spread of those ratios widens its interval. A run that
//     trained past the point where it reached its level without reaching the next level any run's
//     curve shows is censored there: its estimate is at least the one from that next level at its
//     samples. With the extrapolation
//     `shared-curve` the learning curve is shared across batch sizes first: the step from each level where an
//     unfinished run stopped to the next such level (and the last to the target) is the ratio of
//     samples of the runs that went that far, b's own where it has any, else a line in log b through
//     every b's; the run's estimate chains the steps from its level to the target (a b with a short
//     run borrows the curve's shape from the b that went further). It is stored at the
//     estimate (moved up by estimate_z sd). A run with no estimate is censored at its samples
//     (explore/relation_model.hpp uses it as a lower bound). With `power-law`, the
//     estimate is the run's own on one power law fitted to every run's curve (explore/curve_fit.hpp)
//     where that fit is valid, else the ratio's.
//  2. the pacer policy's posterior (explore::proxy_relation on those counts with the problem's
//     transfer, as `pacer select` builds it; explore/relation_model.hpp)
//     gives each b's log samples-to-target as a normal; its variance is floored by a prior seed
//     variance over the b's runs (one seed per b says nothing about the seed spread) and widened
//     by the extrapolation's.
//  3. at every cap (x (1 - guard)), the choice b* is the pacer policy's on that posterior; b is a
//     contender when its time's z-interval overlaps b*'s; the expected regret of b* is the sum over
//     the other b of E[max(0, T(b*)/T(b) - 1)] under the two normals.
//  4. Decided when the expected regret is at most `tolerance` at every cap and some run has reached
//     the target (before that every count is an extrapolation); Budget when the compute
//     used reaches `compute_budget_samples` (or no order is left); else Continue with orders: at
//     every undecided cap, the contenders whose regret term exceeds tolerance / contenders (and b*
//     with them): unfinished runs train `growth` times further (to the run budget at most); a b
//     whose runs all reached the target gets one more seed (up to `max_seeds`), trained to `growth`
//     times its longest run. Batch sizes that are no contender anywhere stop:
//     their runs stay (censored where unfinished) and may resume when they become contenders again.
//  5. With a compute budget the campaign spends all of it: it never stops as decided while budget
//     is left, and the batch sizes that train are the contenders at every cap (decided or not).
//     Where the policy's looser level is known (AdaptiveProblem::looser_level; the replays), it
//     allocates first as the cheapest fixed cut that keeps the choices: (a) every batch size's
//     first run (initial_seeds of them) climbs to the looser level one curve level at a time, all
//     in step (orders with a stop_level: the next level a curve shows, else one spacing of the
//     levels past the tightest seen; a round that needs more than the budget leaves trains every
//     run the same share of its need), so a budget too small for the looser level ends as a fixed
//     cut "k levels looser x 1 seed"; (b) then the contenders gain seeds at the looser level, one a
//     round; (c) then step 4. In (a), while one seed per batch size climbs, the width rule may
//     widen the climb to every seed (a fixed cut of all seeds) where the seed variance it averages
//     out exceeds the extrapolation variance of the levels it gives up, both from the campaign's own
//     runs (plan_round's comment). The real relation campaign sets no looser level: (a) and (b)
//     never apply there.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "explore/decide.hpp"
#include "explore/proxy_budget.hpp"
#include "explore/space.hpp"
#include "explore/transfer.hpp"
#include "traces/records.hpp"

namespace pacer::explore {

// The constants, chosen by leave-one-workload-out on the Zeus traces (docs/explore.md, "Adaptive
// relation campaigns"; `pacer bench adaptive`).
// Expected regret (fraction of the best time) at or below which a cap's choice is decided.
inline constexpr double kAdaptiveTolerance = 0.01;
// Round 1 trains every batch size for this fraction of the run budget.
inline constexpr double kAdaptiveInitialFraction = 0.02;
// With a compute budget, round 1 spends this share of it, spread evenly over the batch sizes (and
// initial seeds), instead of kAdaptiveInitialFraction of each run's budget. Leave-one-workload-out
// over {0, 5, ..., 40, 50 %} at the fixed cuts' compute chose 15 % in five of six folds.
inline constexpr double kAdaptiveBudgetFirstShare = 0.15;
// Whether round 1 spends a share of the compute budget (a budget and a share of it) rather than
// AdaptiveOptions::initial_fraction of the run budget: the one rule plan_round and a resume's check use.
inline bool round_one_spends_budget(double compute_budget_samples, double budget_first_share) {
  return compute_budget_samples > 0 && budget_first_share > 0;
}
// z of the contender intervals (two-sided 90 %).
inline constexpr double kAdaptiveZ = 1.6448536269514722;
// Each round a continued run trains this many times its samples so far.
inline constexpr double kAdaptiveGrowth = 2.0;
// Prior variance of one run's log samples-to-target (the seed spread before the runs show theirs).
inline constexpr double kAdaptiveSeedVar = 0.01;
// The count an unfinished run is stored with (in the relation the policies choose on): its
// estimate moved up by this many of its standard deviations (exp(m + z sd)), so that a batch size
// stopped on a loose extrapolation looks no better than it may be. Leave-one-workload-out chose 0
// in five of six folds (z 1 and 2 lower the max regret of budget-cut campaigns, but raise the
// unbounded campaign's mean regret from 0.31 to 0.55 %; docs/explore.md).
inline constexpr double kAdaptiveEstimateZ = 0.0;
// How step 1 extrapolates an unfinished run's samples-to-target. Each falls back to the one before
// it where it has no estimate: "ratio" (the ratio target/level of the runs that reached the
// target), "shared-curve" (the learning curve shared across batch sizes, then the ratio),
// "power-law" (one power law with an exponent shared by every run, explore/curve_fit.hpp, then the
// ratio).
enum class AdaptiveExtrapolation { ratio, shared_curve, power_law };
std::string_view to_string(AdaptiveExtrapolation e);  // "ratio", "shared-curve", "power-law"
// The extrapolation named `text`; OptionError(option_key) naming the three otherwise.
AdaptiveExtrapolation parse_adaptive_extrapolation(const std::string& text, const std::string& option_key);
// The default: the ratio. Leave-one-workload-out on the Zeus traces (`pacer bench adaptive
// --shared-curves 0,1`) chose the ratio over the shared curve in all six folds; on real training
// from a fresh store the two make the same choices (docs/explore.md); the power law was not
// cross-validated.
inline constexpr AdaptiveExtrapolation kAdaptiveExtrapolation = AdaptiveExtrapolation::ratio;
// Whether the ratio's shared factor at a level (where no run reached the target past it) is a line
// in log b through the runs' log ratios (clamped to their range) rather than their median.
// Leave-one-workload-out on the Zeus traces (`pacer bench adaptive --ratio-lines 0,1`): docs/explore.md.
inline constexpr bool kAdaptiveRatioLine = true;

struct AdaptiveOptions {
  int64_t run_budget_samples = 0;     // the most one run may train (required, > 0)
  double compute_budget_samples = 0;  // the campaign's total; 0: no budget
  double tolerance = kAdaptiveTolerance;
  double initial_fraction = kAdaptiveInitialFraction;
  double z = kAdaptiveZ;
  double growth = kAdaptiveGrowth;
  double seed_var = kAdaptiveSeedVar;
  int initial_seeds = 1;              // seeds per batch size in round 1
  int max_seeds = 3;                  // seeds per batch size at most (a replay: the pool's most)
  std::map<int, int> seeds_by_batch;  // per b, fewer seeds where it has fewer (a replay's pool); absent: max_seeds
  // Unfinished runs are stored this many standard deviations above their estimate (>= 0).
  double estimate_z = kAdaptiveEstimateZ;
  AdaptiveExtrapolation extrapolation = kAdaptiveExtrapolation;  // step 1 above
  bool ratio_line = kAdaptiveRatioLine;                           // the shared ratio as a line in log b
  // With a compute budget: round 1's share of it ([0, 1]; 0: initial_fraction of the run budget).
  double budget_first_share = kAdaptiveBudgetFirstShare;
};

// One run so far: a (b, seed) trained up to `samples`.
struct AdaptiveRun {
  int batch_size = 0;
  int seed = 0;
  int64_t samples = 0;     // samples trained (its samples-to-target when reached)
  bool reached = false;    // reached the relation's target
  bool exhausted = false;  // will train no further (its run budget spent, or it failed): censored for good
  int last_round = 0;      // the round it last trained in (0: unknown, taken as the round just trained)
  std::vector<std::pair<int64_t, double>> curve;  // (samples, metric) evaluations so far
};

struct AdaptiveProblem {
  const Index* index = nullptr;  // the device profile's design space (its batch sizes are the candidates)
  std::vector<double> caps_w;    // caps of interest (explore::cap_grid_w over the profile's power range)
  ChoiceRule rule{};             // the one choice rule (explore/decide.hpp): choices under cap x (1 - guard)
  // The relation's header (name, workload, metric, higher_is_better, target, samples_per_epoch);
  // its runs are ignored.
  traces::RelationSet relation;
  // The learning-curve level of the pacer policy's looser-level blend (Problem::proxy_looser_set's
  // target); NaN: none.
  double looser_level = traces::kNaN;
  // The proxy -> target transfer terms the posterior carries (explore/transfer.hpp transfer_sd, as
  // explore::proxy_relation gives them to `pacer select`): the choice at each cap is then select's
  // on the same runs. {0, 0}: the target is the proxy's own data set (or no transfer is known).
  TransferSd transfer{};
};

enum class AdaptiveVerdict { Continue, Decided, Budget };
std::string_view to_string(AdaptiveVerdict v);  // "continue", "decided", "budget"

// What the next round trains: run (b, seed) up to `train_to_samples` (it stops earlier at the
// target). A new seed starts from scratch; an existing run continues from where it stopped.
struct AdaptiveOrder {
  int batch_size = 0;
  int seed = 0;
  int64_t train_to_samples = 0;
  bool new_seed = false;
  // The run also stops when it reaches this metric level (as it stops at the target); NaN: only at
  // the target. Set only while every batch size's first run climbs to the policy's looser level
  // under a compute budget, which needs AdaptiveProblem::looser_level (the replays set it; the real
  // relation campaign does not, so its orders never carry one).
  double stop_level = traces::kNaN;
};

// One line of the decision log: what the engine did with batch size b after round `round`.
struct AdaptiveDecision {
  int batch_size = 0;
  int round = 0;
  std::string action;  // "start", "continue", "add-seed", "stop", "done"
  std::string why;     // "contender at 150 W: its interval overlaps b=256's", ...
};

// The state at one cap.
struct AdaptiveCap {
  double cap_w = 0;
  int choice = 0;               // b*: the pacer policy's choice on the current posterior (0: none feasible)
  std::vector<int> contenders;  // b whose interval overlaps b*'s (b* included), ascending
  double expected_regret = 0;   // of b*, a fraction of the best time
};

struct AdaptivePlan {
  int round = 0;  // the round these runs complete (0: nothing trained yet)
  AdaptiveVerdict verdict = AdaptiveVerdict::Continue;
  std::string reason;  // "decided: expected regret <= 0.5 % at all 10 caps", ...
  std::vector<AdaptiveCap> caps;
  std::vector<AdaptiveOrder> orders;  // empty unless Continue; most-needed first
  std::vector<AdaptiveDecision> decisions;
  double compute_used = 0;  // samples trained by all runs so far
  // The runs as the policies use them: reached runs as they are, unfinished runs with their
  // estimated count (stored as reached, as explore/proxy_budget.hpp's cuts do) or censored.
  traces::RelationSet relation;
  std::optional<traces::RelationSet> looser;  // the runs at looser_level (the policy's blend)
  std::vector<double> log_mean, log_var;      // per batch size of the space: the engine's posterior
};

// The engine: one call per round. `round` is the number of rounds trained (0 before any run).
// Throws Error on a problem without a space or caps, or options out of range.
AdaptivePlan plan_round(const AdaptiveProblem& problem, const std::vector<AdaptiveRun>& runs, int round,
                        const AdaptiveOptions& options);

// ---------------------------------------------------------------------------------------------
// Replay: an adaptive campaign run on a finished relation campaign's runs (the pool) instead of
// training. Seed k of batch size b is the k-th run of b's pool in a random order (order_seed; 0:
// ascending seed); training it to n samples reveals its learning curve up to n and reaches the target
// when its count is at most n; a run stops at its own end (the target, or its budget). The compute
// of a run is the samples it was trained to (a continued run pays only its new samples).
struct ReplayPool {
  traces::RelationSet runs;     // every run of the campaign (to the target or its budget)
  traces::LearningCurve curve;  // their learning curves (same batch sizes and seeds)
};

struct ReplayOptions {
  AdaptiveOptions engine;   // run_budget_samples 0: the pool's longest run; seeds_by_batch: the pool's
  double budget_share = 0;  // of the pool's compute: the replay trains no further (0: no budget)
  uint64_t order_seed = 0;  // 0: the pool's own seed order
  int max_rounds = 1000;
};

struct ReplayResult {
  AdaptivePlan final;                 // the engine's state on everything bought (its relation is what the policies use)
  std::vector<AdaptiveDecision> log;  // every round's decisions
  int rounds = 0;
  double compute_used = 0;  // samples bought
  double compute_full = 0;  // samples of every pool run (as explore::CutRelation::compute_full)
  double share() const { return compute_full > 0 ? compute_used / compute_full : traces::kNaN; }
};

// Per batch size, the pool's seeds in the order a replay draws them (order_seed 0: ascending; else
// a shuffle per workload name, batch size and order_seed).
std::map<int, std::vector<int>> replay_seed_order(const traces::RelationSet& runs, uint64_t order_seed);
// The pool with every run's seed renamed to its rank in that order, so that a fixed cut of one seed
// (explore/proxy_budget.hpp keeps the lowest seeds) keeps the seed the replay draws first: fixed
// cuts and replays compared over the same draws of seeds.
ReplayPool reorder_pool(const ReplayPool& pool, uint64_t order_seed);
// A fixed cut (explore/proxy_budget.hpp) over the same draws of seeds as the replays: a cut of all
// seeds once (the draw does not change it); a cut of fewer seeds once per order k = 1..orders on
// reorder_pool(pool, k), keeping the seeds the replay of order k draws first; with orders 0, once on
// the pool's own order (the lowest seeds). The one rule of `pacer budget --adaptive` and `pacer
// bench adaptive`.
std::vector<CutRelation> cut_over_orders(const ReplayPool& pool, const ProxyCut& cut, int orders,
                                         Extrapolation extrapolation = kDefaultExtrapolation);

// `problem.relation` may be the pool's runs (its header is used).
ReplayResult replay_adaptive(const AdaptiveProblem& problem, const ReplayPool& pool, const ReplayOptions& options);

// The cut label of an adaptive replay in budget records: "adaptive" (until decided) or "adaptive at
// the compute of <a fixed cut's label>"; and whether a label is one (the report draws them as a
// curve beside the fixed cuts).
std::string adaptive_cut_label(const std::string& budget_of = "");
bool is_adaptive_cut(std::string_view label);

// Readable decision log, one line per decision: "round 2  b=64    stop      not a contender ...".
std::string format_decisions(const std::vector<AdaptiveDecision>& decisions);

}  // namespace pacer::explore
