#pragma once
// A relation campaign as a library call: fine-tune for every (batch size, seed) until the target,
// storing the RelationSet after every run so an interrupted campaign resumes where it stopped.
// Used by `pacer relation`, `pacer validate` (the oracle's true relation) and `pacer demo`.
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/cpu_threads.hpp"
#include "base/error.hpp"
#include "base/progress.hpp"
#include "dnn/data/samples.hpp"
#include "dnn/train.hpp"
#include "experiments/cluster/shard.hpp"
#include "traces/records.hpp"

namespace pacer::experiments {

// The training settings of a fine-tuning campaign and their defaults in `pacer relation` and
// `pacer validate`: evaluation every 2,048 samples on 2,000 held-out samples, censored after
// 100,000 samples, on one intra-op thread whatever the load (base::kTrainingThreads).
inline dnn::TrainOptions campaign_training() {
  dnn::TrainOptions t;
  t.eval_every_samples = 2048;
  t.eval_max_samples = 2000;
  t.budget_samples = 100000;
  t.threads = base::kTrainingThreads;
  return t;
}

struct RelationCampaign {
  std::string name;         // record name under /relations
  std::string dataset;      // recorded with the results
  std::string metric;       // "accuracy" | "char_accuracy"
  dnn::TrainOptions train;  // workload, target, budget, lr rule, checkpoint; batch_size and seed are set per run
  std::vector<int> batch_sizes;
  std::vector<int> seeds;
  std::filesystem::path store;  // empty: nothing written (and nothing resumed)
  // Another store whose runs of this relation count as done (not run, not copied): the campaign's
  // store when `store` is one of its shards' (docs/cluster.md). Empty: none.
  std::filesystem::path resume_from;
};

struct CampaignReport {
  traces::RelationSet set;
  traces::LearningCurve curve;  // every evaluation of every run, stored as curves/<relation name>
  int resumed_runs = 0;
  int new_runs = 0;
  double train_time_s = 0;  // wall time of the new runs
  double eval_time_s = 0;   // part of it spent evaluating
};

// Throws Error when the store already holds a relation of that name made with other settings.
// `progress`: the [k/N] count each run's line carries (base/progress.hpp), shared with the caller's
// jobs (nullptr: this campaign's runs). Every run starts from a fresh memory of the held-out margins
// (dnn::HeldOutMargins), so what it records depends on its own inputs only, not on the runs the
// process trained before it (one process, --jobs shards, a resumed campaign: the same records).
CampaignReport run_relation_campaign(const RelationCampaign& campaign, const dnn::data::DataSplit& data,
                                     const dnn::TrainHooks& hooks = {},
                                     const std::function<void(const traces::RelationRun&)>& on_run = {},
                                     base::Progress* progress = nullptr);

// The relation a campaign writes, without runs: name, workload, data, target, lr rule, optimizer.
traces::RelationSet relation_header(const RelationCampaign& campaign);
// The same with the training settings its runs record (traces::RelationSet, "How the runs were
// trained"): evaluation cadence and stop, the checkpoint by content, and with `data` the split's
// training and held-out samples and seed (nullptr: those not known, not recorded nor checked).
traces::RelationSet relation_header(const RelationCampaign& campaign, const dnn::data::DataSplit* data);
// What identifies the weights a run starts from: "crc32=<hex> bytes=<n>" of the file, "none" for "".
std::string checkpoint_identity(const std::string& path);
// The one check of a resumed or reused relation (every campaign, shard, adaptive round and
// validation's oracle calls it): the relation named as `header` in the store at `path`, checked to
// have been trained as `header` asks: workload, data, target, lr rule, optimizer, and each training
// setting both record (a setting either side has not recorded is not checked); with `budget` > 0,
// every stored run must be the result a run under that budget gives: reached within it (under a
// larger budget too), or censored at exactly it. One SettingError names each stored and asked value
// (the first mismatch's setting as its option). nullopt: the store has none.
std::optional<traces::RelationSet> stored_relation(const std::filesystem::path& path, const traces::RelationSet& header,
                                                   int64_t budget = 0);
// A resume of a relation whose runs were trained under settings it did not record (a store
// written before they were) keeps them unrecorded in `header`, the record it writes.
void keep_unrecorded(traces::RelationSet& header, const traces::RelationSet& stored);

// A dataset name as a record name: '/' (paths of idx:DIR, text:FILE ...) becomes '_'.
std::string record_name(std::string dataset);

// Where `pacer relation --pretrain` writes a workload's pre-trained weights by default:
// pacer-out/<base>-fmnist-pretrain.pt (images) or pacer-out/<base>-austen-pretrain.pt (text).
std::string default_checkpoint(const std::string& workload);

// A pre-trained checkpoint that a fine-tuning run starts from is not there. The message says what
// to do in domain words; a command adds how to make it with its own flags.
class MissingCheckpoint : public Error {
 public:
  MissingCheckpoint(std::string checkpoint_path, std::string workload_base, const std::string& message)
      : Error(message), path(std::move(checkpoint_path)), workload(std::move(workload_base)) {}
  std::string path;      // where it was looked for
  std::string workload;  // the network to pre-train (without its shape)
};

// Human-readable table of a relation: runs, reached, mean and std of samples, r(b), lr per b.
std::string format_relation(const traces::RelationSet& set);

// Runs the jobs `jobs` (indices into relation_jobs(c.batch_sizes, c.seeds)) of campaign `c` into
// c.store, each a campaign of one (b, seed) whose lr rule and base batch are the whole campaign's,
// so that every shard trains exactly as the serial campaign would. Jobs already in c.store or in
// c.resume_from are not run again.
CampaignReport run_relation_jobs(const RelationCampaign& c, const dnn::data::DataSplit& data,
                                 const std::vector<size_t>& jobs, const dnn::TrainHooks& hooks = {});

// Runs shard `s` of the campaign into campaign.store (the shard's store, see shard_store), resuming
// the jobs already there or in campaign.resume_from (the campaign's store), and writes the shard's
// outcome (also when a job throws; the exception is rethrown).
CampaignReport run_relation_shard(const RelationCampaign& campaign, const dnn::data::DataSplit& data, Shard s,
                                  const dnn::TrainHooks& hooks = {});

}  // namespace pacer::experiments
