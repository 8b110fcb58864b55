#pragma once
// The options every campaign command shares for running on several machines (docs/cluster.md):
// --list-jobs, --shard I/N and --jobs N, and --stage for a campaign that runs in stages. Each
// campaign command adds them with one call and asks run_shard_front whether there is anything left
// for it to do.
#include <optional>
#include <string>
#include <vector>

#include "experiments/cli/cli.hpp"
#include "experiments/cluster/shard.hpp"

namespace pacer::cli {

// `stages`: the names of the campaign's stages, in order (none: a campaign of one stage).
void add_shard_options(po::options_description& d, const std::vector<std::string>& stages = {});

// The shard this process runs (--shard), if any.
std::optional<experiments::Shard> shard_option(const po::variables_map& vm);
// The stage this process runs (--stage); "" : every stage (or a campaign of one stage).
std::string stage_option(const po::variables_map& vm);

// The store this process writes: the campaign's, or its shard's under --shard.
std::filesystem::path store_for(const po::variables_map& vm, const std::filesystem::path& store);

// --list-jobs: prints the job list (of every stage, or of --stage). --shard without a job for this
// shard: leaves an empty shard store. --jobs N without --shard: runs each stage (or --stage) as N
// local shard processes and merges their stores into the campaign's store after each stage; a
// campaign of one stage (or a single --stage) is then done, a campaign of several stages runs
// whole afterwards (everything is in its store: it only completes and reports). Returns the exit
// code when that was the whole command, nothing when the command should run (whole, as --stage,
// or as its shard).
// Runs one stage as `jobs` local shard processes (this command again with --shard i/n, and --stage
// when `add_stage`; each on the threads this command was given) and merges them into the
// campaign's store.
// Returns the stage's wall time (its shards and their merge), seconds.
double run_stage_locally(const experiments::JobList& list, int jobs, bool add_stage);

// `shards_wall_time_s` (optional): where the command goes on after its stages ran as local shards,
// the seconds they took, for the command's total.
std::optional<int> run_shard_front(const po::variables_map& vm, const std::vector<experiments::JobList>& stages,
                                   double* shards_wall_time_s = nullptr);

}  // namespace pacer::cli
