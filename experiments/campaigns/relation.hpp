#pragma once
// `pacer relation` as one library call: a relation campaign (fine-tune for every batch size and
// seed until the target) or the pre-training that makes its checkpoint. The request's member
// initialisers are the command's defaults; the CLI reads them from here.
#include <cmath>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "dnn/data/datasets.hpp"
#include "dnn/train.hpp"
#include "experiments/campaigns/adaptive_relation.hpp"
#include "experiments/campaigns/campaign.hpp"
#include "experiments/cluster/shard.hpp"

namespace pacer::experiments {

struct RelationRequest {
  std::string workload = "cnn";          // network[@shape]; without a shape, the data's shape is used
  std::string dataset = "fmnist-proxy";  // pre-training: "" is the pre-training split of the task
  std::string checkpoint;                // "" : default_checkpoint(workload); "none": from scratch
  std::vector<int> batch_sizes = {4, 8, 16, 32, 64};
  std::vector<int> seeds = {0, 1, 2};
  double target = NAN;             // held-out metric to reach; NaN: the dataset's default
  std::string optimizer = "auto";  // "adam" | "adamw" | "auto" (adam for images, adamw for text)
  // Learning rate, evaluation cadence and held-out samples (eval_max_samples), screening, budget,
  // threads and device; batch_size, seed, base_batch and checkpoints are set per run.
  dnn::TrainOptions train = relation_training();
  dnn::data::DatasetOptions data;  // split seed and max_train (max_eval: train.eval_max_samples)
  std::string name;                // record under /relations; "" : record_name(dataset)
  std::filesystem::path store = "pacer-out/relations.h5";
  int pretrain_batch = 64;
  int pretrain_seed = 0;
  std::string init;  // pre-training starts from these weights ("": fresh)
  // Run only this shard of the (b, seed) jobs, into the shard's own store beside `store`
  // (shard_store); runs already in `store` are not run again.
  std::optional<Shard> shard;
  // An adaptive campaign in rounds (adaptive_relation.hpp) instead of every (b, seed) to the target.
  bool adaptive = false;
  AdaptiveSettings adaptive_settings;
  // Adaptive: only this round ("round-K"; "" : the whole campaign), and with `decide`, only the
  // decision after it (no training). `run_round`: trains a round elsewhere (local shard processes)
  // and merges it into `store` (unset: here).
  std::string stage;
  bool decide = false;
  std::function<void(int round)> run_round;

  // A campaign's training settings: campaign_training(), with a 250-sample screen when evaluations
  // stop by screening (eval_stop "screened"; the default, "hardest-first", is exact and needs none).
  static dnn::TrainOptions relation_training() {
    dnn::TrainOptions t = campaign_training();
    t.screen_samples = 250;
    return t;
  }
};

struct RelationOutcome {
  CampaignReport report;
  std::string name;             // the record written
  std::filesystem::path store;  // where: the request's store, or its shard's
  double wall_time_s = 0;
  std::optional<traces::AdaptiveLog> decisions;  // an adaptive campaign's log (absent otherwise)
  // A whole adaptive campaign: the relation its engine decided on (AdaptiveReport::decided).
  std::optional<traces::RelationSet> decided;
  double compute_used = 0;  // adaptive: samples every run trained
  double compute_most = 0;  // adaptive: the full campaign's most (batch sizes x seeds x budget)
};

struct PretrainOutcome {
  dnn::TrainResult result;
  std::string workload;  // resolved, with the data's shape
  std::string dataset;
  std::string metric;
  std::string checkpoint;
  int batch_size = 0;
  double target = NAN;
  int64_t budget_samples = 0;
};

// Loads the dataset, resolves the workload's shape and the checkpoint, and runs the campaign
// (resuming what the store already holds). Throws UsageError for a request that cannot work (a
// text network on images, an unknown optimizer, no batch sizes) and Error for a missing checkpoint.
RelationOutcome run_relation(const RelationRequest& request, const dnn::TrainHooks& hooks = {});

// The campaign's independent (b, seed) jobs, in the order shards are dealt (docs/cluster.md).
JobList relation_jobs(const RelationRequest& request);
// Its stages: the one list of relation_jobs, or an adaptive campaign's rounds (adaptive_job_lists).
std::vector<JobList> relation_job_lists(const RelationRequest& request);

// Trains request.workload from scratch (or request.init) on the pre-training split and writes
// the checkpoint.
PretrainOutcome run_pretrain(const RelationRequest& request, const dnn::TrainHooks& hooks = {});

// The pre-training dataset of a task ("image": fmnist-pretrain, "text": austen-pretrain).
std::string pretrain_dataset_for(const std::string& task);

}  // namespace pacer::experiments
