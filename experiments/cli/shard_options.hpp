#pragma once
// The options every campaign command shares for running on several machines (docs/cluster.md):
// --list-jobs, --shard I/N and --jobs N. Each campaign command adds them with one call and asks
// run_shard_front whether there is anything left for it to do.
#include <optional>

#include "experiments/cli/cli.hpp"
#include "experiments/shard.hpp"

namespace pacer::cli {

void add_shard_options(po::options_description& d);

// The shard this process runs (--shard), if any.
std::optional<experiments::Shard> shard_option(const po::variables_map& vm);

// The store this process writes: the campaign's, or its shard's under --shard.
std::filesystem::path store_for(const po::variables_map& vm, const std::filesystem::path& store);

// --list-jobs: prints the job list. --jobs N without --shard: runs this command as N local shard
// processes and merges their stores into the campaign's store. Returns the exit code when that
// was the whole command, nothing when the command should run (whole, or as its shard).
std::optional<int> run_shard_front(const po::variables_map& vm, const experiments::JobList& jobs);

}  // namespace pacer::cli
