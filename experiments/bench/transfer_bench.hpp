#pragma once
// `pacer bench policy --stores`: the proxy -> target transfer on experiment stores (docs/explore.md,
// "Intervals" and "Thin relations"). From every store given (a profile, a proxy relation and one or
// more targets' true relations, as `pacer experiment` writes them):
//  1. the distinct proxy/target pairs (explore::transfer_pair; a pair held by several stores, as
//     vision-nano's and vision-tx2nx's, counts once) and their transfer variances; each pair's
//     log-sds pooled over the *other* pairs (leave one pair out), and over all of them (the code's
//     explore::kTransferLogSd / kTransferShapeSd come from that line);
//  2. the coverage of pacer's 90 % interval of the target's mean time at its choice, over the proxy's
//     seed draws (every subset of the proxy's seeds with one seed left out, and all of them) against
//     the target's mean over every subset of its seeds of the same size, at each cap, with the
//     transfer log-sd estimated without the pair (so the pair's own gap is never used);
//  3. the departure margin explore::kPacerDepartTransferZ: for each pair held out, the value of the
//     grid with the least mean regret (then max) of pacer on the other pairs' stores, scored on it;
//     Algorithm 1 beside it.
#include <filesystem>
#include <string>
#include <vector>

#include "explore/transfer.hpp"

namespace pacer::experiments {

struct TransferBenchOptions {
  std::vector<std::filesystem::path> stores;
  int caps_per_workload = 10;  // evenly spaced over each space's power range
  std::vector<double> depart_transfer_zs = {0, 0.25, 0.5, 1, 2};
};

struct TransferCoverageRow {
  std::string store, pair;
  double cap_w = 0;
  int checks = 0, covered = 0;  // (proxy draw, target draw) combinations, and those inside
  int batch_size = 0;           // pacer's choice on the whole proxy (for the table)
};

struct TransferDepartRow {
  std::string pair;  // held out
  double chosen = 0;
  double pacer_mean = 0, pacer_max = 0, ours_mean = 0, ours_max = 0;
  int caps = 0;
};

struct TransferBenchResult {
  std::vector<explore::TransferPair> pairs;
  std::vector<explore::TransferSd> held_out_sd;  // per pair: pooled over the others
  explore::TransferSd pooled;                    // over every pair
  std::vector<TransferCoverageRow> coverage;
  std::vector<TransferDepartRow> depart;  // per held-out pair
  // every grid value on every pair: (z, pacer mean, pacer max, ours mean, ours max)
  std::vector<std::vector<double>> depart_grid;
  std::string markdown() const;
};

TransferBenchResult run_transfer_bench(const TransferBenchOptions& options);

}  // namespace pacer::experiments
