#pragma once
// A campaign's independent jobs and their deterministic assignment to shards (docs/cluster.md).
//
// Every campaign lists its jobs in a fixed order (a relation: (b, seed) with b ascending, then the
// seeds in the order given). Shard i of n runs the jobs whose index j satisfies j mod n == i
// (round robin: each shard gets a mix of small and large batch sizes, so shards take similar
// times). The assignment depends only on the job list and n, so any machine, any time, computes
// the same shards. Shard i writes a store of its own next to the campaign's store
// (relations.h5 -> relations.shard-2-of-6.h5) and, when it ends, a one-line outcome beside it
// ("done on NODE" or "failed on NODE: message"); `pacer merge` joins the shard stores.
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "experiments/campaign.hpp"

namespace pacer::experiments {

struct Shard {
  int index = 0;
  int count = 1;
};

// "i/n" with 0 <= i < n; throws UsageError quoting the text.
Shard parse_shard(const std::string& text);
// Indices of the jobs of shard `s` among `job_count` jobs (j mod n == i), ascending.
std::vector<size_t> shard_jobs(size_t job_count, Shard s);
// The store shard `s` writes: STEM.shard-I-of-N.EXT beside `store`.
std::filesystem::path shard_store(const std::filesystem::path& store, Shard s);
std::vector<std::filesystem::path> shard_stores(const std::filesystem::path& store, int count);

// What a campaign command prints for its job list, and what the Slurm driver reads back.
struct JobList {
  std::string campaign;           // "relation"
  std::string record;             // record name the campaign writes ("fmnist-proxy")
  std::filesystem::path store;    // the campaign's store (the merge target)
  std::vector<std::string> jobs;  // one label per job, in job order ("b=4 seed=0")
};
std::string format_job_list(const JobList& list);
JobList parse_job_list(const std::string& text);  // throws Error when the text is not a job list

// The jobs of a relation campaign: (batch size, seed) in campaign order.
std::vector<std::pair<int, int>> relation_jobs(const std::vector<int>& batch_sizes, const std::vector<int>& seeds);
JobList relation_job_list(const std::string& record, const std::filesystem::path& store,
                          const std::vector<int>& batch_sizes, const std::vector<int>& seeds);

// The jobs of a profile campaign: one per batch size (the sweep over the knob at that b), in the
// order given; shard_items picks a shard's batch sizes.
JobList profile_job_list(const std::string& record, const std::filesystem::path& store,
                         const std::vector<int>& batch_sizes);
std::vector<int> shard_items(const std::vector<int>& items, Shard s);

// Runs shard `s` of the campaign into campaign.store (the shard's store, see shard_store), resuming
// the jobs already there, and writes the shard's outcome (also when a job throws; the exception
// is rethrown).
CampaignReport run_relation_shard(const RelationCampaign& campaign, const models::data::DataSplit& data, Shard s,
                                  const models::TrainHooks& hooks = {});

// Shard outcomes: "done on NODE" or "failed on NODE: message", in STORE.outcome. NODE is the
// Slurm node ($SLURMD_NODENAME) or the host name.
std::filesystem::path outcome_path(const std::filesystem::path& shard_store);
void write_shard_outcome(const std::filesystem::path& shard_store, bool ok, const std::string& message = "");
std::optional<std::string> read_shard_outcome(const std::filesystem::path& shard_store);
// Runs `body` and records its outcome for the shard store (rethrowing a failure).
void record_shard_outcome(const std::filesystem::path& shard_store, const std::function<void()>& body);

// The local fallback of a cluster: runs `exe args... --shard i/n` for i in 0..n-1 as n concurrent
// processes, waits for all, then merges the shard stores into `store`. Throws Error naming the
// shards that failed (their stores stay; running the same command again completes them).
struct LocalShardsReport {
  std::string merge_text;  // traces::format_merge_report
  double wall_time_s = 0;  // shards and merge
  double merge_time_s = 0;
};
LocalShardsReport run_local_shards(const std::filesystem::path& exe, const std::vector<std::string>& args, int n,
                                   const std::filesystem::path& store);

// The executable of this process (for re-running it on shards).
std::filesystem::path self_executable();

}  // namespace pacer::experiments
