#pragma once
// Campaigns on a Slurm cluster (docs/cluster.md). A campaign is described by one INI spec: its
// command's section ([relation], ...) and a [slurm] section. Submitting writes two sbatch scripts
// beside the campaign's store, in STORE_DIR/slurm/:
//   STEM-array.sbatch  one array task per shard: `pacer CAMPAIGN --config SPEC --shard $TASK/N`
//   STEM-merge.sbatch  `pacer merge STORE SHARD_STORES...`, submitted with --dependency=afterok
// and submits both with `sbatch --parsable`. Each shard writes its own store and an outcome line
// (experiments/cluster/shard.hpp), from which `status` tells done / failed (with the message) / missing
// shards; submitting again submits only the shards that are not done (and the merge).
//
// A campaign of several stages (validate: oracle, runs; experiment: prepare, proxy, oracle, runs;
// an adaptive relation: its rounds) gets one array script and one merge script per stage
// (STEM-STAGE-array.sbatch, ...), each array depending on the previous stage's merge (a round of an
// adaptive campaign: on its decision job, STEM-STAGE-decide.sbatch, which runs after the merge), and a last job (STEM-finish.sbatch) that runs the whole
// command once every stage is merged: it finds every job done and only completes and reports.
#include <filesystem>
#include <string>
#include <vector>

#include "experiments/cluster/shard.hpp"

namespace pacer::experiments {

struct SlurmOptions {
  std::filesystem::path spec;         // the campaign's INI file (the campaign reads its own section)
  std::string campaign =
      "relation";  // the campaign command run by every task (relation, profile, validate, experiment)
  int shards = 0;                     // array tasks; 0: one per job (never more than the jobs)
  std::string partition;              // "" : the cluster's default partition
  int array_limit = 0;                // at most this many tasks at once (--array=...%M); 0: no limit
  std::string time_limit;             // sbatch --time of one task ("" : the partition's)
  int cpus_per_task = 1;
  std::string gres;             // sbatch --gres of one task, e.g. "gpu:1" ("" : none)
  std::filesystem::path pacer;  // the binary the tasks run ("" : this one)
  bool dry_run = false;         // write the scripts, submit nothing
};

// The campaign's jobs, stage by stage, as `pacer CAMPAIGN --config SPEC --list-jobs` prints them.
std::vector<JobList> read_job_lists(const SlurmOptions& options);
// Shards of a stage: options.shards (or one per job), at most one per job, at least one.
int shard_count(const SlurmOptions& options, const JobList& jobs);

struct ShardState {
  int index = 0;
  size_t jobs = 0;
  std::string state;   // "done" | "failed" | "incomplete" (store without outcome: running or killed) | "missing"
  std::string detail;  // the outcome line ("done on node3", "failed on node3: message")
};

struct StageStatus {
  JobList jobs;  // jobs.stage: "" in a campaign of one stage
  int shards = 0;
  std::vector<ShardState> states;
  std::vector<int> not_done() const;  // indices of the shards that are not done
};

struct SlurmStatus {
  std::vector<StageStatus> stages;
  bool merged = false;  // the campaign's store exists
  std::string text;     // printable summary
  bool done() const;    // every shard of every stage
};
SlurmStatus slurm_status(const SlurmOptions& options);

struct StageScripts {
  std::string stage;
  std::filesystem::path array, merge;
  std::filesystem::path decide;  // a round of an adaptive campaign: its decision ("" : none)
  std::vector<int> tasks;  // shard indices in the array
};
struct SlurmScripts {
  std::vector<StageScripts> stages;
  std::filesystem::path finish;  // the whole command after the last merge; "" in a campaign of one stage
};
// Writes the scripts of every stage, its array holding the shards in `tasks[k]` (all shards when
// empty), and the finish script of a campaign of several stages.
SlurmScripts write_slurm_scripts(const SlurmOptions& options, const SlurmStatus& status,
                                 const std::vector<std::vector<int>>& tasks);
// "0-5", "1,3-4": Slurm's --array syntax for ascending indices.
std::string array_ranges(const std::vector<int>& tasks);

struct SubmitReport {
  SlurmScripts scripts;
  std::vector<std::string> array_jobs;  // Slurm job ids per stage ("" : none submitted for that stage)
  std::vector<std::string> merge_jobs;
  std::vector<std::string> decide_jobs;  // one per stage with a decision (adaptive rounds), in order
  std::string finish_job;
  std::string text;  // what was done, the job ids and where the result will be
};
// Submits the shards that are not done and the merge job (dry run: writes the scripts only).
SubmitReport slurm_submit(const SlurmOptions& options);

}  // namespace pacer::experiments
