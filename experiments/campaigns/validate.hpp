#pragma once
// `pacer validate`: proves the predictions on a device. For each cap, the configuration chosen by
// each policy (Ours, Baseline 1, Baseline 2) and by the oracle is pinned and the workload is
// trained for real (libtorch) on the target data to the target accuracy while power is sampled.
// The oracle is found as the paper defines it: the target is trained at every batch size to get
// its true relation vector, then the fastest feasible (f, b) is picked.
//
// On the emulated device the device time is the emulator's virtual time, advanced by every real
// mini-batch; one real training run at (b, seed) drives one emulated board per frequency chosen at
// that b (the training trajectory does not depend on f), so every configuration is still trained
// for real. On a real device every (configuration, seed) is its own run and the device time is the
// wall time of the training steps (evaluations excluded, as in the profile).
//
// A validation is a campaign of two stages (docs/cluster.md): "oracle", the target trained at
// every (b, seed), and "runs", which at every (b, seed) trains the configurations chosen at b with
// that seed. The jobs of a stage are independent, so a stage can run in shards; the runs need the
// oracle's relation, so they start once it is complete in the store. Every job's results are
// written when it ends, and a validation run again (whole, as a stage or as a shard) runs only the
// jobs whose results are not in its store or in the campaign's store.
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "dnn/data/datasets.hpp"
#include "dnn/train.hpp"
#include "experiments/campaigns/campaign.hpp"
#include "experiments/cluster/shard.hpp"
#include "explore/decide.hpp"
#include "explore/policy.hpp"
#include "hw/open_device.hpp"
#include "traces/records.hpp"

namespace pacer::experiments {

// The guard band: every policy (the oracle too) chooses under cap x (1 - guard), so that sensor
// noise and model error do not carry the measured peak over the cap. Its constants and check have
// one home, the choice rule (explore/decide.hpp); the names here are kept for the campaigns.
using explore::check_guard;
using explore::kAutoGuardMax;
using explore::kDefaultGuard;
using explore::kGuardLimit;
// Measured mini-batches of a probe (ValidateOptions::probe_batches).
inline constexpr int kDefaultProbeBatches = 10;

struct ValidateOptions {
  std::filesystem::path store;  // holds the profile and the proxy relation; results are added to it
  std::string profile;          // profile record; "" : the only one in the store
  std::string proxy;            // proxy relation record; "" : the only one not made by validate
  bool allow_workload_mismatch = false;  // a proxy of another workload than the profile's (explore::ProblemSpec)
  std::string target_dataset = "fmnist-target-a";
  hw::DeviceRequest device;     // spec "emulated:jetson-nano", "jetson", "nvml"
  std::vector<double> caps_w;
  std::vector<int> seeds = {0, 1, 2};
  // Policy ids (explore/policy.hpp), checked before any training.
  std::vector<std::string> policies =
      explore::policy_ids({explore::Policy::Baseline1, explore::Policy::Baseline2, explore::Policy::Ours,
                           explore::Policy::Pacer, explore::Policy::Oracle});
  // workload, target, budget, lr, checkpoint ("default": default_checkpoint), threads, eval cadence
  dnn::TrainOptions train = campaign_training();
  dnn::data::DatasetOptions data;
  double sensor_rate_hz = 10;   // power sampling rate in device time
  // Guard band (explore::choice_rule): nullopt, the automatic one (the model's held-out peak error
  // where a point is predicted, kDefaultGuard where every point is measured); the trace is checked
  // against the cap itself.
  std::optional<double> guard;
  // Replace an existing validation record of the same name even when it has more rows.
  bool replace = false;
  // Power watchdog (hw::PowerWatchdog): a run whose mean total power over the last `duration` is
  // above cap + margin is stopped, the device restored, and the row records why (status
  // "stopped: ..."). The cap of a configuration chosen at several caps is the lowest of them.
  // duration 0: off.
  double watchdog_margin_w = 0.5;
  double watchdog_duration_s = 2.0;
  // Probe before commit (experiments/campaigns/validate_probe.hpp): a chosen configuration that the
  // store's measured profile lacks is profiled on the device with this many measured mini-batches
  // (and the profiler's count of power samples) before it is trained; one whose measured peak is
  // above cap x (1 - guard) gives way to the policy's next choice. 0: choose from the profile alone.
  int probe_batches = kDefaultProbeBatches;
  std::string name;             // record name under /validations; "" : validate-<dataset>
  // The stage to run: "" the whole validation; "oracle" only the target's relation; "runs" only the
  // runs of the chosen configurations (the oracle's relation must be complete in `store`).
  std::string stage;
  // With a stage: only this shard of the stage's jobs, written to the shard's own store beside
  // `store` (shard_store); `store` is only read.
  std::optional<Shard> shard;
  // For a campaign that deals the jobs itself (the experiment): with a stage, the indices of the
  // stage's jobs (validate_jobs) to run, written to `out` ("" : `store`).
  std::optional<std::vector<size_t>> only_jobs;
  std::filesystem::path out;
};

// The validation's jobs: its stages "oracle" and "runs" (validate_job_lists), read from the
// store's profile (its batch sizes) and the options.
std::vector<JobList> validate_jobs(const ValidateOptions& options);

struct ValidationSummaryRow {
  double cap_w = 0;
  std::string policy;
  std::string config;           // "b=32, 614.4 MHz"
  // Over the runs that reached the target; NaN when none did (every run censored by the budget).
  double measured_mean_s = traces::kNaN, measured_std_s = traces::kNaN;
  double predicted_s = 0;
  double error_pct = traces::kNaN;   // measured vs predicted
  double regret_pct = traces::kNaN;  // measured vs the oracle's measured time
  double energy_j = traces::kNaN;
  double peak_w = 0;
  bool cap_exceeded = false;
  int runs = 0, reached = 0, stopped = 0;  // stopped: by the power watchdog
};

struct ValidateReport {
  traces::ValidationResult result;
  traces::RelationSet target_relation;
  std::vector<ValidationSummaryRow> summary;
  int64_t budget_samples = 0;   // the training budget: a run that misses the target by then is censored
  int training_runs = 0;        // real training runs in this call
  int watchdog_stops = 0;       // runs the power watchdog stopped
  int probes = 0;               // chosen configurations profiled on the device before training (probe before commit)
  std::vector<std::string> replaced;  // "cap 7.8 W, ours: b=32, 854.25 MHz: measured peak ...; now ..."
  int jobs = 0, resumed_jobs = 0;  // (b, seed) jobs of this call, and those whose results were stored before
  double wall_time_s = 0;
  std::filesystem::path out;  // the store written (the options' store, or a shard's)
  std::string text;           // the printed summary (of a whole validation), or what a stage or shard did
};

ValidateReport run_validate(const ValidateOptions& options);

// The table of a validation: per cap and policy the configuration, measured time (mean ± std over
// the runs that reached the target, or how many did), prediction error, regret, energy, peak and
// cap; notes on censored and stopped runs. report.text holds it.
std::string format_validation_table(const ValidateReport& report);

// The verdict lines of a validation: per cap, speed-up of Ours over Baseline 1 and 2, regret of
// Ours versus the oracle, prediction error. Empty when the report has no summary (a stage or a
// shard of a validation).
std::string format_verdict(const ValidateReport& report);

}  // namespace pacer::experiments
