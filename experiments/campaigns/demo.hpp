#pragma once
// `pacer demo` and `pacer experiment`: the whole pipeline from nothing on an emulated Jetson:
// pre-train -> profile -> calibrate -> proxy relation -> validate on each target (real training; the
// oracle from the target's own relation) -> sweep -> tables and plots. The demo is the experiment
// with its defaults (a small CNN on Fashion-MNIST, emulated Nano); experiment specs in
// experiments/specs/*.ini set the rest (device, task, datasets, batch sizes, seeds, caps).
// On several machines the experiment runs in stages (experiment_job_lists, docs/cluster.md):
// prepare, proxy, oracle and runs, each in shards merged into its store before the next; run whole
// afterwards, it finds every job done and only sweeps and reports.
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "base/cpu_threads.hpp"
#include "experiments/cluster/shard.hpp"
#include "experiments/report/tables.hpp"

namespace pacer::experiments {

struct DemoOptions {
  bool quick = false;         // fewer batch sizes, seeds and caps: under 2 minutes
  std::string name = "demo";  // store file NAME.h5 and record names
  std::filesystem::path out_dir = "pacer-out/demo";
  std::string device = "jetson-nano";      // catalog device, emulated
  std::string workload = "cnn";            // registry name; its default input shape unless @shape is given
  int threads = base::kTrainingThreads;  // CPU intra-op threads of the training
  std::string pretrain_dataset = "fmnist-pretrain";
  std::string proxy_dataset = "fmnist-proxy";
  std::vector<std::string> targets = {"fmnist-target-a"};
  // Empty / zero / NaN: the demo's settings for --quick or the full run.
  std::vector<int> batch_sizes;
  std::vector<int> seeds;
  int caps = 0;                // caps spread over 30-75% of the board's power range
  std::vector<double> caps_w;  // explicit caps (override `caps`); units::kNoCap: swept uncapped, not validated
  Labels labels;               // readable data set names in the report's tables and figures (a spec's `label`)
  int64_t eval_every = 0;      // samples between evaluations
  int64_t eval_samples = 0;    // held-out samples per evaluation
  int64_t max_train = -1;      // training samples per dataset (0: all)
  int64_t budget = 0;          // samples before a fine-tuning run is censored
  int64_t pretrain_budget = 0;
  double pretrain_target = NAN;
  double target = NAN;         // held-out metric to reach (NaN: each dataset's default)
  int calibration_points = 8;  // planner-chosen points the analytical model is fitted on
  // Policies choose under cap x (1 - guard). nullopt (auto): explore::choice_rule's, the same in the
  // validation and the sweep (explore/decide.hpp).
  std::optional<double> guard;
  // The proxy relation as an adaptive campaign (adaptive_relation.hpp) for the profiled board and
  // the experiment's caps: only the batch sizes that can still win are trained to the target. Its
  // proxy stage then runs whole (its rounds are not sharded within an experiment).
  bool adaptive = false;
  // The stage to run ("" : the whole pipeline) and, with a stage, the shard of its jobs (written to
  // the shard's own store beside NAME.h5, which is only read).
  std::string stage;
  std::optional<Shard> shard;
  // Seconds this command spent before run_demo running its stages as local shard processes
  // (`--jobs N`); > 0: the whole pipeline then completes from the merged store, so its step lines
  // count the runs trained after the shards, and its total includes these seconds.
  double local_shards_s = 0;
};

// The experiment's jobs in its stages prepare, proxy, oracle and runs (experiment_job_lists).
std::vector<JobList> experiment_jobs(const DemoOptions& options);

// Prints progress on stderr and the verdict on stdout; returns the process exit code. With a
// stage, runs that stage (or its shard) and prints what it did.
int run_demo(const DemoOptions& options);

}  // namespace pacer::experiments
