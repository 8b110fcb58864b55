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
//
// A campaign whose later jobs need the results of earlier ones (a validation needs the oracle's
// relation before it can run the oracle's choice) lists its jobs in *stages*: the jobs of one stage
// are independent, and a stage starts once the previous one is merged into the campaign's store.
// Shard i of n of stage S writes STEM.S-shard-i-of-n.h5.
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace pacer::experiments {

struct Shard {
  int index = 0;
  int count = 1;
};

// "i/n" with 0 <= i < n; throws UsageError quoting the text.
Shard parse_shard(const std::string& text);
// Indices of the jobs of shard `s` among `job_count` jobs (j mod n == i), ascending.
std::vector<size_t> shard_jobs(size_t job_count, Shard s);
// The store shard `s` (of `stage`, "" in a campaign of one stage) writes beside `store`:
// STEM.shard-I-of-N.EXT, or STEM.STAGE-shard-I-of-N.EXT.
std::filesystem::path shard_store(const std::filesystem::path& store, Shard s, const std::string& stage = "");
std::vector<std::filesystem::path> shard_stores(const std::filesystem::path& store, int count,
                                                const std::string& stage = "");

// What a campaign command prints for its job list, and what the Slurm driver reads back.
struct JobList {
  std::string campaign;           // "relation"
  std::string record;             // record name the campaign (stage) writes ("fmnist-proxy")
  std::filesystem::path store;    // the campaign's store (the merge target)
  std::vector<std::string> jobs;  // one label per job, in job order ("b=4 seed=0")
  std::string stage;              // "" : the campaign has one stage; else this stage's name
  // The stage is a round of an adaptive campaign: once merged, the campaign decides what the next
  // round trains (`CAMPAIGN --stage STAGE --decide`), and the next stage waits for that decision.
  bool decide = false;
};
std::string format_job_list(const JobList& list);
JobList parse_job_list(const std::string& text);  // throws Error when the text is not a job list
// A campaign's stages, in order: the lists separated by an empty line.
std::string format_job_lists(const std::vector<JobList>& stages);
std::vector<JobList> parse_job_lists(const std::string& text);
// The stage named `stage` ("" : the only one); throws UsageError naming the stages otherwise.
const JobList& find_stage(const std::vector<JobList>& stages, const std::string& stage);

// The stages of the campaigns that run in stages, each name written once: the job lists, the
// options' help and the checks of a stage take them from here.
inline constexpr const char* kStagePrepare = "prepare";  // experiment: pre-train, profile, calibrate
inline constexpr const char* kStageProxy = "proxy";      // experiment: the proxy relation
inline constexpr const char* kStageOracle = "oracle";    // validation: the target's relation, for the oracle
inline constexpr const char* kStageRuns = "runs";        // validation: the runs of the chosen configurations
// A validation's stages in order (oracle, runs); an experiment's: prepare, proxy, then a validation's.
const std::vector<std::string>& validate_stages();
const std::vector<std::string>& experiment_stages();
// The check of a campaign's stage before any work: throws OptionError for the option "stage" when
// `stage` is neither "" (every stage) nor one of `stages`, or when `part` (a shard, or a part of the
// jobs) is asked for without a stage. `campaign` names the campaign in the message ("a validation").
void check_stage(const std::string& campaign, const std::vector<std::string>& stages, const std::string& stage,
                 bool part);

// The jobs of a relation campaign: (batch size, seed) in campaign order.
std::vector<std::pair<int, int>> relation_jobs(const std::vector<int>& batch_sizes, const std::vector<int>& seeds);
JobList relation_job_list(const std::string& record, const std::filesystem::path& store,
                          const std::vector<int>& batch_sizes, const std::vector<int>& seeds);

// The jobs of a profile campaign: one per batch size (the sweep over the knob at that b), in the
// order given; shard_items picks a shard's batch sizes.
JobList profile_job_list(const std::string& record, const std::filesystem::path& store,
                         const std::vector<int>& batch_sizes);
std::vector<int> shard_items(const std::vector<int>& items, Shard s);

// The jobs of a validation, in two stages: "oracle", the target trained at every (b, seed) for the
// oracle's true relation (record `oracle_record`), and "runs", at every (b, seed) the
// configurations that the policies and the oracle chose at b (at any cap) trained with that seed.
std::vector<JobList> validate_job_lists(const std::string& record, const std::string& oracle_record,
                                        const std::filesystem::path& store, const std::vector<int>& batch_sizes,
                                        const std::vector<int>& seeds);

// The jobs of an experiment (the demo's pipeline), in four stages: "prepare" (one job: pre-train,
// profile and calibrate), "proxy" (the proxy relation's (b, seed) jobs), "oracle" (each target's
// oracle (b, seed) jobs, target after target) and "runs" (each target's validation (b, seed) jobs):
// the last two are the validation's stages (validate_job_lists) of every target.
std::vector<JobList> experiment_job_lists(const std::string& name, const std::filesystem::path& store,
                                          const std::vector<std::string>& targets, const std::vector<int>& batch_sizes,
                                          const std::vector<int>& seeds);

// Shard outcomes: "done on NODE" or "failed on NODE: message", in STORE.outcome. NODE is the
// Slurm node ($SLURMD_NODENAME) or the host name (hw::node_name).
std::filesystem::path outcome_path(const std::filesystem::path& shard_store);
void write_shard_outcome(const std::filesystem::path& shard_store, bool ok, const std::string& message = "");
std::optional<std::string> read_shard_outcome(const std::filesystem::path& shard_store);
// Runs `body` and records its outcome for the shard store (rethrowing a failure).
void record_shard_outcome(const std::filesystem::path& shard_store, const std::function<void()>& body);

// The local fallback of a cluster: runs `exe shard_args[i]...` (the command line of shard i of
// n = shard_args.size()) as n concurrent processes, waits for all, then merges the shard stores
// of `stage` ("" in a campaign of one stage) into `store`, keeping what `store` held
// (traces::merge_into). Throws Error naming the shards that failed (their stores stay; running the
// same command again completes them).
struct LocalShardsReport {
  std::string merge_text;  // traces::format_merge_report
  double wall_time_s = 0;  // shards and merge
  double merge_time_s = 0;
};
LocalShardsReport run_local_shards(const std::filesystem::path& exe,
                                   const std::vector<std::vector<std::string>>& shard_args,
                                   const std::filesystem::path& store, const std::string& stage = "");

// How many local shard processes `--jobs requested` starts for a stage of `job_count` jobs: never
// more than its jobs (a shard without a job would only make an empty store), at least 1.
int local_shard_count(int requested, size_t job_count);

// The executable of this process (for re-running it on shards).
std::filesystem::path self_executable();

}  // namespace pacer::experiments
