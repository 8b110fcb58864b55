#pragma once
// A statistical model of samples-to-target across batch sizes, fitted to the proxy's runs, for the
// `pacer` policy (docs/explore.md, "The pacer policy"). The per-b mean of a few seeds is noisy and
// sometimes censored; the model treats it as one noisy observation of a smooth curve in log b:
//  1. each run's samples-to-target in log space; where the run's samples to the next looser metric
//     level are known (the learning curve), its count is blended with the count that level predicts:
//     log N_looser + d(b), d(b) the last step of the curve as a line in log b fitted to every run
//     (weight kPacerOwnWeight on the run's own count); a censored run counts at least its budget
//     plus one evaluation interval (one epoch for epoch-granular traces), or its predicted count;
//  2. a prior for each b from its neighbours alone (linear interpolation in log b, linear
//     extrapolation at the ends), i.e. leave-one-out;
//  3. empirical-Bayes shrinkage of the per-b mean toward that prior: the between-b variance tau^2 is
//     the mean squared leave-one-out residual minus the seed noise, the seed noise s^2 is the pooled
//     within-b variance; the posterior of log samples at b is normal with precision
//     1/tau^2 + n_b/(shrink * s^2).
// The policy then minimises the expected time, E[samples] = exp(m + v/2).
// Its interval is of another quantity: the *target's* mean samples-to-target at b (what a run of
// the target at this configuration measures over as many seeds as the proxy has at b). It adds to
// the uncertainty of the proxy's mean at b (the posterior of step 3 with the prior's own
// uncertainty counted, shrink 1: `proxy_log_var`) the seed spread of the target's mean (s^2/n_b,
// floored by counting whole evaluation intervals), and widens the result by kIntervalInflation for
// what the seeds do not show, calibrated on held-back Zeus runs (docs/explore.md "Intervals"). Where
// the target is another data set than the proxy's, the proxy -> target transfer's log-sd
// (RelationModelOptions::transfer_log_sd, explore/transfer.hpp) is added in quadrature: the seeds
// cannot show that a target data set learns faster or slower than the proxy.
#include <vector>

#include "traces/records.hpp"

namespace pacer::explore {

// The two constants, chosen together by leave-one-workload-out cross-validation on the Zeus traces
// (grid: own weight {0.25, 0.5, 0.75} x shrink {0.5, 1, 2, 4}; five of six folds chose these;
// docs/explore.md, "Constants and how they were chosen").
// Weight of the seed noise in the shrinkage (1: plain empirical Bayes; 0.5 trusts each b's runs more).
inline constexpr double kPacerShrink = 0.5;
// Weight of a run's own samples-to-target against the count its looser level predicts (step 1).
inline constexpr double kPacerOwnWeight = 0.25;
// z of the two-sided 90 % interval of a normal distribution.
inline constexpr double kInterval90Z = 1.6448536269514722;
// Factor on the log-sd of the target interval (BatchPosterior::lower/upper_samples): chosen by
// leave-one-workload-out on the Zeus random proxy draws, the factor whose coverage of the target's
// mean on the other workloads is nearest 90 % (`pacer bench policy --resplits`; docs/explore.md).
inline constexpr double kIntervalInflation = 1.75;
// The pacer policy departs from Algorithm 1's choice only when the relation separates the two:
// its expected time is shorter by at least this many standard deviations of the difference of the
// two log times (the proxy means' uncertainty, `proxy_log_var`). Chosen by leave-one-workload-out on
// the Zeus traces (`pacer bench policy`, docs/explore.md "Thin relations").
inline constexpr double kPacerDepartZ = 0.0;
// Where the target is another data set than the proxy's, pacer also departs only when its gain
// exceeds this many sd of the difference of two per-b transfer errors (sqrt(2) x
// RelationModelOptions::transfer_shape_sd; 0 on the Zeus halves, so it does not act there): the
// smallest margin at which pacer ties Algorithm 1 over the shipped specs' stores; leaving one pair out
// does not pin it down (docs/explore.md "Thin relations").
inline constexpr double kPacerDepartTransferZ = 0.25;

struct RelationModelOptions {
  double shrink = kPacerShrink;
  double own_weight = kPacerOwnWeight;
  bool use_learning_curve = true;  // use the looser level's runs when given
  double interval_inflation = kIntervalInflation;
  double depart_z = kPacerDepartZ;  // carried to Relation::depart_z (explore/pacer_policy.hpp)
  // Proxy -> target transfer (explore/transfer.hpp transfer_sd): the log-sd of the target's level
  // added to the target interval, and of its per-b shape, carried to Relation::transfer_shape_sd for
  // the departure test. 0: the target is runs of the proxy's own data set (the Zeus halves).
  double transfer_log_sd = 0;
  double transfer_shape_sd = 0;
  double depart_transfer_z = kPacerDepartTransferZ;  // carried to Relation::depart_transfer_z
};

struct BatchPosterior {
  int batch_size = 0;
  int runs = 0;                             // proxy runs at this b (reached or censored)
  double observed_log_mean = traces::kNaN;  // mean log samples of the runs (after step 1)
  double prior_log = traces::kNaN;          // from the neighbours (NaN with fewer than 3 batch sizes)
  double log_mean = traces::kNaN;           // posterior mean of log samples
  double log_var = traces::kNaN;            // posterior variance of log samples
  // The proxy's mean log samples at b with nothing left out (estimate and variance): the posterior
  // of step 3 with shrink 1 and the prior's own variance (tau^2 plus the neighbours' s^2/n through
  // the interpolation weights), the seed noise floored by counting in whole evaluation intervals;
  // the b's mean and s^2/n_b with fewer than 3 batch sizes; variance NaN when the seed noise cannot
  // be estimated (no batch size with two runs). The pacer policy's test of a thin relation.
  double proxy_log_mean = traces::kNaN;
  double proxy_log_var = traces::kNaN;
  double target_log_mean = traces::kNaN;  // centre of the target interval: log of a mean over seeds
  double target_log_sd = traces::kNaN;    // its log-sd (inflated, with the transfer's); 0 for identical seeds
  double expected_samples() const;        // exp(m + v/2)
  // 90 % interval of the target's mean samples-to-target at b (exp(target_log_mean -+ 1.645 sd)).
  double lower_samples() const;
  double upper_samples() const;
};

struct RelationModel {
  std::vector<BatchPosterior> by_batch;  // ascending b; batch sizes without any run are absent
  double seed_var = 0;                   // s^2, pooled within-b variance of log samples
  double between_var = 0;                // tau^2
  int seed_df = 0;                       // degrees of freedom of s^2 (0: it is unknown)
  double eval_interval = 0;              // samples between evaluations (Zeus: one epoch); 0: unknown
  const BatchPosterior* find(int batch_size) const;
};

// Fits the model to `runs` (the proxy relation). `looser`, when given, holds the same runs (same
// batch size and seed) evaluated at a looser metric level: the learning curve of step 1.
RelationModel fit_relation_model(const traces::RelationSet& runs, const traces::RelationSet* looser = nullptr,
                                 const RelationModelOptions& options = {});

}  // namespace pacer::explore
