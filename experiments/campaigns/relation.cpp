#include "experiments/campaigns/relation.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "base/error.hpp"
#include "dnn/nets.hpp"
#include "traces/store/outputs.hpp"
#include "traces/workload.hpp"

namespace pacer::experiments {
namespace {

namespace fs = std::filesystem;

struct Prepared {
  std::string workload;  // resolved, with the data's shape
  dnn::data::DatasetInfo info;
  dnn::data::DataSplit data;
  dnn::TrainOptions train;
};

Prepared prepare(const RelationRequest& r, const std::string& dataset) {
  Prepared s;
  s.info = dnn::data::dataset_info(dataset);
  const models::NetSpec spec = models::parse_workload(r.workload);
  if (spec.task != s.info.task)
    throw UsageError(fmt::format("workload {} is a {} network but dataset {} holds {} data", r.workload, spec.task,
                                 dataset, s.info.task));
  dnn::data::DatasetOptions dopt = r.data;
  dopt.max_eval = r.train.eval_max_samples;
  if (spec.task == "text") dopt.context = static_cast<int>(spec.input_shape.at(0));
  spdlog::info("loading {}", dataset);
  s.data = dnn::data::load_dataset(dataset, dopt);
  s.workload =
      r.workload.find('@') == std::string::npos
          ? models::parse_workload(fmt::format("{}@{}", spec.base, fmt::join(s.data.train.sample_shape, "x"))).name
          : spec.name;
  spdlog::info("{}: {} training and {} held-out samples ({})", dataset, s.data.train.size(), s.data.eval.size(),
               s.data.description);

  auto& t = s.train;
  t = r.train;
  t.workload = s.workload;
  t.eval_max_samples = 0;  // the held-out split is already cut to eval_max_samples
  t.optimizer = r.optimizer == "auto" ? (spec.task == "text" ? "adamw" : "adam") : r.optimizer;
  if (t.optimizer != "adam" && t.optimizer != "adamw")
    throw UsageError(fmt::format("optimizer '{}' is not one of auto, adam, adamw", r.optimizer));
  t.weight_decay = t.optimizer == "adamw" ? 0.01 : 0.0;
  t.target = std::isnan(r.target) ? s.info.default_target : r.target;
  return s;
}

MissingCheckpoint missing_checkpoint(const std::string& path, const std::string& base) {
  return MissingCheckpoint(path, base,
                           fmt::format("checkpoint {} not found: pre-train {} to create it there, or train from "
                                       "scratch (checkpoint 'none')",
                                       path, base));
}

std::string checkpoint_of(const RelationRequest& r, const std::string& workload) {
  return r.checkpoint.empty() ? default_checkpoint(workload) : r.checkpoint;
}

void ensure_parent(const fs::path& path) {
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
}

// Training runs on this computer's CPU: every batch size must fit its memory (a GPU's is not known
// here; libtorch's own error, turned into one line, tells).
void check_memory(const Prepared& s, const std::vector<int>& batch_sizes, const std::string& option) {
  if (s.train.device != "cpu") return;
  traces::check_batches_fit(models::describe_workload(s.workload), batch_sizes, traces::host_memory_bytes(),
                            "this computer", option);
}

}  // namespace

std::string pretrain_dataset_for(const std::string& task) {
  return task == "text" ? "austen-pretrain" : "fmnist-pretrain";
}

PretrainOutcome run_pretrain(const RelationRequest& r, const dnn::TrainHooks& hooks) {
  const models::NetSpec spec = models::parse_workload(r.workload);
  PretrainOutcome out;
  out.dataset = r.dataset.empty() ? pretrain_dataset_for(spec.task) : r.dataset;
  out.checkpoint = checkpoint_of(r, spec.name);
  traces::check_output_folder(
      fs::path(out.checkpoint).parent_path().empty() ? fs::path(".") : fs::path(out.checkpoint).parent_path(),
      "checkpoint");
  if (fs::is_directory(out.checkpoint)) throw SettingError("checkpoint", out.checkpoint + " is a folder: name a file");
  Prepared s = prepare(r, out.dataset);
  check_memory(s, {r.pretrain_batch}, "pretrain-batch");
  s.train.init_checkpoint = r.init;
  s.train.batch_size = r.pretrain_batch;
  s.train.base_batch = r.pretrain_batch;
  s.train.seed = r.pretrain_seed;
  s.train.save_checkpoint = out.checkpoint;
  ensure_parent(out.checkpoint);
  out.workload = s.workload;
  out.metric = s.info.metric;
  out.batch_size = s.train.batch_size;
  out.target = s.train.target;
  out.budget_samples = s.train.budget_samples;
  spdlog::info("pre-training {} on {} (b={}, target {:.3f}, budget {} samples)", s.workload, out.dataset,
               s.train.batch_size, s.train.target, s.train.budget_samples);
  out.result = dnn::train_to_target(s.train, s.data, hooks);
  return out;
}

namespace {

std::vector<int> campaign_batch_sizes(const RelationRequest& r) {
  std::vector<int> batch_sizes = r.batch_sizes;
  if (batch_sizes.empty()) throw UsageError("give at least one batch size");
  for (const int b : batch_sizes)
    if (b < 1) throw UsageError(fmt::format("{} is not a positive batch size", b));
  std::sort(batch_sizes.begin(), batch_sizes.end());
  batch_sizes.erase(std::unique(batch_sizes.begin(), batch_sizes.end()), batch_sizes.end());
  return batch_sizes;
}

}  // namespace

JobList relation_jobs(const RelationRequest& r) {
  return relation_job_list(r.name.empty() ? record_name(r.dataset) : r.name, r.store, campaign_batch_sizes(r), r.seeds);
}

std::vector<JobList> relation_job_lists(const RelationRequest& r) {
  if (!r.adaptive) return {relation_jobs(r)};
  return adaptive_job_lists(r.name.empty() ? record_name(r.dataset) : r.name, r.store, campaign_batch_sizes(r), r.seeds,
                            r.adaptive_settings.max_rounds);
}

RelationOutcome run_relation(const RelationRequest& r, const dnn::TrainHooks& hooks) {
  const std::vector<int> batch_sizes = campaign_batch_sizes(r);
  RelationOutcome out;
  out.name = r.name.empty() ? record_name(r.dataset) : r.name;
  // Every output before the data is loaded or a run trained: the record's name and its store.
  traces::check_record_name_option("relations", out.name, "name");
  traces::check_store_output(r.store, "out", traces::StoreCreation::file_and_folder);
  dnn::check_training_device(r.train.device, "device");  // `--device tpu` loaded the data first
  // A whole adaptive campaign's device profile and a named checkpoint, before the data is loaded.
  if (r.adaptive && r.stage.empty()) check_adaptive_device(r.store, batch_sizes, r.adaptive_settings);
  if (!r.checkpoint.empty() && r.checkpoint != "none") {
    const std::string base = models::parse_workload(r.workload).base;
    if (!fs::exists(r.checkpoint)) throw missing_checkpoint(r.checkpoint, base);
    dnn::check_checkpoint(r.checkpoint, base);  // corrupt, or another network's; its input shape is checked below
  }

  Prepared s = prepare(r, r.dataset);
  check_memory(s, batch_sizes, "batch-sizes");
  const models::NetSpec spec = models::parse_workload(s.workload);
  std::string ckpt = checkpoint_of(r, spec.name);
  if (ckpt == "none") {
    ckpt.clear();
  } else {
    if (!fs::exists(ckpt)) throw missing_checkpoint(ckpt, spec.base);
    dnn::check_checkpoint(ckpt, s.workload);
  }
  s.train.init_checkpoint = ckpt;
  s.train.base_batch = batch_sizes.back();

  RelationCampaign c;
  c.name = out.name;
  c.dataset = r.dataset;
  c.metric = s.info.metric;
  c.train = s.train;
  c.batch_sizes = batch_sizes;
  c.seeds = r.seeds;
  c.store = r.shard ? shard_store(r.store, *r.shard) : r.store;
  if (r.shard) c.resume_from = r.store;
  out.store = c.store;
  ensure_parent(c.store);
  const auto t0 = std::chrono::steady_clock::now();
  if (r.adaptive) {
    if (r.shard) c.store = shard_store(r.store, *r.shard, r.stage);
    out.store = c.store;
    const AdaptiveSettings& a = r.adaptive_settings;
    if (r.stage.empty()) {
      const AdaptiveReport rep = run_adaptive_campaign(c, s.data, a, hooks, r.run_round);
      out.report = rep.campaign;
      out.decisions = rep.log;
      out.decided = rep.decided;
      out.compute_used = rep.compute_used;
      out.compute_most = rep.compute_most;
    } else if (const int round = stage_round(r.stage, a.max_rounds); r.decide) {
      out.decisions = decide_adaptive_round(c, a, round);
    } else if (r.shard) {
      record_shard_outcome(c.store, [&] { out.report = run_adaptive_round(c, s.data, a, round, r.shard, hooks); });
    } else {
      out.report = run_adaptive_round(c, s.data, a, round, std::nullopt, hooks);
    }
    out.wall_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return out;
  }
  out.report = r.shard ? run_relation_shard(c, s.data, *r.shard, hooks) : run_relation_campaign(c, s.data, hooks);
  out.wall_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace pacer::experiments
