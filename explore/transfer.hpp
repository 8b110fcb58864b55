#pragma once
// Proxy -> target transfer of samples-to-target (docs/explore.md, "Intervals" and "Thin relations").
// The method transfers the relation's *shape* across batch sizes from the proxy data set to the
// target's, not its absolute level: a target data set may learn faster or slower than the proxy at
// every b (the level), and a little differently from one b to the next (the shape). Neither shows in
// the proxy's seeds. From a pair of relations of one workload, a proxy P and a target T measured at
// the same batch sizes, per b: r_b = mean log N_T(b) - mean log N_P(b), and the seed noise of that
// difference, s_P^2/n_P(b) + s_T^2/n_T(b) (pooled within-b variances; 0 where a set has no b with two
// runs). The pair's transfer variances:
//   level+shape  V = max(0, mean_b r_b^2 - mean_b noise_b)   (the interval's term: what the seed
//                noise does not explain, since the interval counts the seeds already)
//   shape        S = sum_b (r_b - mean r)^2 / (B - 1)       (the departure's term: the error with
//                which the proxy's per-b means predict the target's, up to the level, seeds included;
//                the departure test counts only the proxy means' uncertainty besides it)
// The constants below pool V and S over the distinct pairs the shipped stores hold; how they were
// chosen and checked leave-one-pair-out is in docs/explore.md.
#include <string>
#include <vector>

#include "traces/records.hpp"

namespace pacer::explore {

// sqrt(mean V) over the four distinct proxy/target pairs of the shipped specs (Fashion-MNIST proxy ->
// half B, proxy -> shifted test file; Austen's Northanger Abbey -> Emma, -> Persuasion; `pacer bench
// policy --stores`): the log-sd by which a target data set's mean samples-to-target at a batch size
// departs from the proxy's, beyond the seeds (the pairs' levels run from -0.38 to +0.24).
inline constexpr double kTransferLogSd = 0.26;
// sqrt(mean S) over the same pairs: the log-sd of the per-b departures around the pair's level.
inline constexpr double kTransferShapeSd = 0.063;

struct TransferPair {
  std::string proxy, target;             // relation names
  int batches = 0;                       // batch sizes with a reached run in both
  double mean_log_ratio = traces::kNaN;  // mean r_b (the level)
  double rms_log_ratio = traces::kNaN;   // sqrt(mean r_b^2)
  double noise_var = 0;                  // mean seed noise of r_b
  double level_var = traces::kNaN;       // V
  double shape_var = traces::kNaN;       // S (NaN with one batch size)
};

// The pair's statistics (batches 0 and NaN variances when no batch size has a reached run in both).
TransferPair transfer_pair(const traces::RelationSet& proxy, const traces::RelationSet& target);

// Whether `target` is runs of the proxy's own data set (a draw of the same runs, as the Zeus import's
// proxy halves): then there is no transfer. Data set names compare up to a parenthesised annotation
// ("cifar100 (zeus train trace, runs 1-2 of each b)" is "cifar100").
bool same_data_set(const traces::RelationSet& proxy, const traces::RelationSet& target);

// The transfer log-sds to apply for this proxy and target (nullptr: unknown, taken as another data
// set, the paper's premise): {kTransferLogSd, kTransferShapeSd}, or {0, 0} for the same data set.
struct TransferSd {
  double level = 0, shape = 0;
};
TransferSd transfer_sd(const traces::RelationSet& proxy, const traces::RelationSet* target);

// sqrt(mean V) and sqrt(mean S) over `pairs` except index `skip` (-1: none); pairs without a value skip.
TransferSd pooled_transfer_sd(const std::vector<TransferPair>& pairs, int skip = -1);

}  // namespace pacer::explore
