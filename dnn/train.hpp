#pragma once
// Torch-free API of the training code (implementation: dnn/train_torch.cpp).
//  - StepRunner: one full training step (forward, backward, optimizer) of a workload at batch size
//    b on synthetic inputs, for the profiler.
//  - train_to_target: fine-tunes (or pre-trains) on a DataSplit until the held-out metric reaches a
//    target, with hooks for an emulated device's clock and for progress.
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dnn/data/samples.hpp"
#include "models/workloads/workload.hpp"

namespace pacer::dnn {

// True when libtorch was built with CUDA and a GPU is visible.
bool cuda_available();
// A training device name: cpu, cuda or cuda:N (OptionError(option) otherwise, option the key of
// the setting that names it); whether a GPU is there is checked where the device opens.
void check_training_device(const std::string& name, const std::string& option);
// Sets libtorch's intra-op thread count (0 leaves it unchanged) and returns the count in force. The
// first call also sets the inter-op pool to one thread (the training loop does not use it).
int set_threads(int threads);

// The paper's rule: lr(b) = base_lr * sqrt(b / base_batch), base_batch the largest batch size.
double scaled_learning_rate(double base_lr, int base_batch, int batch_size);
std::string learning_rate_rule(double base_lr, int base_batch);

struct StepRunnerOptions {
  std::string workload = "cnn";  // registry name, optionally with @shape
  int batch_size = 32;
  std::string device = "cpu";  // "cpu" | "cuda" | "cuda:N"
  int threads = 0;             // CPU intra-op threads, 0: libtorch's default
  int seed = 0;
  std::string optimizer = "adam";  // "adam" | "adamw"
  double learning_rate = 1e-3;
};

class StepRunner {
 public:
  explicit StepRunner(const StepRunnerOptions& options);
  ~StepRunner();
  StepRunner(const StepRunner&) = delete;
  StepRunner& operator=(const StepRunner&) = delete;

  // One forward + backward + optimizer step; returns when the device has finished it.
  void step();
  const traces::WorkloadInfo& workload() const;
  const std::string& device() const;

 private:
  void init(const StepRunnerOptions& options);
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int batch_size_ = 0;
};

struct Evaluation {
  int64_t samples = 0;  // training samples seen before this evaluation
  // Accuracy or character accuracy, fraction in [0, 1]. An evaluation that stopped early (fewer
  // eval_samples than the split) reports an estimate below the target: the score of the samples it
  // scored (screened), or the hardest samples' score plus the rest's estimated from an even sample
  // of it (hardest-first, TrainOptions::estimate_samples). Learning curves store it.
  double metric = NAN;
  double loss = NAN;         // mean cross-entropy on the held-out split (estimated as the metric is)
  double wall_time_s = 0;    // since the start of the run (evaluations included)
  int64_t eval_samples = 0;  // held-out samples scored (fewer when the evaluation stopped early)
};

struct TrainProgress {
  int batch_size = 0;
  int seed = 0;
  int64_t samples = 0;
  double samples_per_s = 0;  // training throughput so far (evaluations excluded)
  double metric = NAN;       // latest evaluation
  double wall_time_s = 0;
};

struct TrainHooks {
  // Called after every mini-batch; returning false stops the run (result.stopped_by_hook).
  std::function<bool(int64_t samples_seen, int batch_size)> on_batch;
  // Called after every evaluation.
  std::function<void(const TrainProgress&)> on_progress;
};

struct TrainOptions {
  std::string workload = "cnn";
  int batch_size = 32;
  int seed = 0;
  int threads = 0;  // 0: libtorch's default
  std::string device = "cpu";
  std::string optimizer = "adam";  // "adam" | "adamw"
  double base_lr = 1e-3;           // learning rate at base_batch
  int base_batch = 64;             // the largest batch size of the campaign
  double weight_decay = 0.0;       // AdamW decoupled decay (0.01 is AdamW's usual default)
  int64_t eval_every_samples = 4096;
  int64_t eval_max_samples = 0;  // evaluate on the first N held-out samples, 0: all
  // How an evaluation that cannot reach the target stops before scoring every held-out sample
  // (higher-is-better metrics; reaching the target is only ever decided on the full split):
  //  kHardestFirst: scores the samples in increasing order of the margin each had when it was last
  //    scored in this run or campaign (the misclassified first) and stops once the target is out of reach even
  //    if every unscored sample were right. Exact: the run stops after the samples that "full" gives.
  //  kScreened: in the split's order, stops by the screen and the bound below (statistical).
  //  kFull: every evaluation scores every held-out sample (the reference).
  static constexpr const char* kHardestFirst = "hardest-first";
  static constexpr const char* kScreened = "screened";
  static constexpr const char* kFull = "full";
  std::string eval_stop = kHardestFirst;
  // kHardestFirst: after a stop, this many of the unscored samples, spread evenly over their order,
  // are scored to estimate the evaluation's score for the learning curve (0: report the bound).
  int64_t estimate_samples = 250;
  // kScreened: each evaluation first scores `screen_samples` held-out samples and goes on to the
  // full evaluation only when that score is within `screen_margin` of the target (0: no screen);
  // after that it stops as soon as the score so far plus `eval_stop_z` binomial standard errors on
  // the unscored rest cannot reach the target (a wrong stop needs a 1-in-1000 deviation at 3.09; 0: off).
  int64_t screen_samples = 0;
  double screen_margin = 0.04;
  double eval_stop_z = 3.09;
  bool higher_is_better = true;
  double target = NAN;              // stop at the first evaluation reaching it; NaN: run the budget
  int64_t budget_samples = 200000;  // censored when the target is not reached within it
  std::string init_checkpoint;      // start from these weights ("" : fresh initialisation)
  std::string save_checkpoint;      // write the final weights here ("" : do not)
  // A run that can be continued (an adaptive campaign's, docs/explore.md): when this file exists
  // the run continues from it (weights, optimizer state, samples trained; init_checkpoint is not
  // read) up to the new budget or target, and it is written (atomically) when the run ends. The data
  // order follows from (seed, epoch) and the networks draw no random numbers while training, so a
  // run continued from its state trains exactly as one run to the larger budget. "" : none.
  std::string run_state;
};

struct TrainResult {
  bool reached = false;
  bool stopped_by_hook = false;
  int64_t samples = 0;  // samples seen at the stopping evaluation (the budget if censored)
  double wall_time_s = 0;
  double eval_time_s = 0;  // part of wall_time_s spent evaluating
  double final_metric = NAN;
  double learning_rate = NAN;
  int threads = 0;                  // libtorch's intra-op threads the run trained on (its numerics depend on them)
  int64_t resumed_samples = 0;      // samples the run had trained before (TrainOptions::run_state); 0: a fresh run
  std::vector<Evaluation> history;  // this process's evaluations (a continued run: those after resumed_samples)
};

// Trains `options.workload` on data.train, evaluating on data.eval every eval_every_samples (and
// once at the start). Throws Error when the workload does not fit the data (task, shape, classes).
// The early stop of an evaluation (TrainOptions::eval_stop_z): `correct` of `labels` scored labels
// after `done` of `n` held-out samples (a text sample holds many labels). True when even the score
// so far plus z standard errors (counted over samples) on the unscored rest misses `target`.
bool evaluation_cannot_reach(double correct, double labels, int64_t done, int64_t n, double target, double z);

// What hardest-first evaluations remember of the held-out samples: each one's margin (true-class
// logit minus the best other one; the mean over positions for text) when it was last scored. A
// campaign keeps one across its runs on one held-out split, so that a run's first evaluations
// already score first the samples that earlier runs found hard. It changes the cost and the
// estimate of a stopped evaluation, never whether or when a run reaches the target.
struct HeldOutMargins {
  std::vector<float> margin;  // per held-out sample, 0 before its first scoring
};

// `margins`: the campaign's memory (nullptr: the run's own); reset when the split's size differs.
TrainResult train_to_target(const TrainOptions& options, const data::DataSplit& data, const TrainHooks& hooks = {},
                            HeldOutMargins* margins = nullptr);

// Checkpoints hold the workload name and its weights and buffers. Written atomically.
void check_checkpoint(const std::string& path, const std::string& workload);

}  // namespace pacer::dnn
