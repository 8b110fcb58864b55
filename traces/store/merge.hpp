#pragma once
// Merging trace stores record by record: the shards of a campaign (`--shard i/n`, Slurm array
// tasks, `--jobs N`) each write a store of their own, and `pacer merge` joins them.
//
// Rules (docs/cluster.md):
//  - records are keyed by their entry's merge_key (traces/record_traits.hpp; one RecordMerge per
//    group, traces/store/record_merge.hpp): a relation run by (batch size, seed), a curve point by
//    (batch size, seed, samples; and the metric in a curve of levels), a profile point by (knob,
//    batch size), a validation row by (cap, policy, seed, knob, batch size); other records
//    (models, sweeps, power series) by name;
//  - the same key with the same value in several inputs is kept once; the same key with different
//    values is an Error naming both files and both values; nothing is silently overwritten;
//  - records of one name must agree on everything but their keyed entries (a relation's workload,
//    target, lr rule ...; a profile's board, workload, knob ...); the device descriptions must agree;
//    the entries of one profile or validation that record their board model must name the same one;
//  - merged relations keep only runs: their means, spreads and r(b) are computed from the runs
//    (RelationSet::mean_samples, std_samples, relation_vector), so they are those of the union;
//  - a profile's profiling cost is the sum over the inputs that brought new points;
//  - a merged record keeps the provenance of the runs that measured it, not the merge's: the
//    inputs whose rows it holds, combined (traces/provenance.hpp, combine_provenance); a record
//    taken whole (or without rows) keeps its input's, the device the first input's;
//  - the rows of a record that one input brought keep that input's order (a store merged into an
//    empty one or into itself is unchanged); those of several inputs are in key order (the order
//    of the campaign's whole record: a relation's runs by (b, seed), a profile's points by (b, knob));
//  - the output is written to a temporary sibling with the store's checksum, then renamed over
//    `out`, all under `out`'s writers' lock: a failed merge leaves `out` as it was, and a
//    concurrent merge or writer of `out` waits for it. `out` is replaced by the merge of `inputs`
//    (list it among the inputs, or call merge_into, to keep what it held). Merging the same inputs again gives the same
//    store (merging is idempotent), and so does merging the result with any of its inputs.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "base/error.hpp"

namespace pacer::traces {

struct MergeReport {
  std::map<std::string, int> records;  // group ("relations", ...) -> records written
  int entries = 0;                     // runs + points + rows written
  int duplicates = 0;                  // identical entries seen in more than one input, kept once
};

// What a merge does with an `out` that exists.
enum class ExistingOutput {
  replace,  // replaced by the merge of the inputs (what it held is kept only when it is one of them)
  refuse,   // OutputExistsError, before any input is read, unless `out` is one of the inputs
  keep,     // merged in as the first input (merge_into)
};

// An `out` that exists and is not among the inputs, with ExistingOutput::refuse.
class OutputExistsError : public Error {
 public:
  using Error::Error;
};

// The whole merge holds the writers' lock of `out` (file::WriteLock), so that merges and other
// writers of `out` take turns; it first removes the temporaries that killed merges and writers
// left beside `out` (file::remove_stale_temporaries).
MergeReport merge_stores(const std::filesystem::path& out, const std::vector<std::filesystem::path>& inputs,
                         ExistingOutput existing = ExistingOutput::replace);

// merge_stores keeping what `out` holds: `out`, when it exists, is merged in as the first input
// (a campaign's store holding an earlier stage, its profile, or runs of a serial run).
MergeReport merge_into(const std::filesystem::path& out, const std::vector<std::filesystem::path>& inputs);

std::string format_merge_report(const MergeReport& report, const std::filesystem::path& out);

}  // namespace pacer::traces
