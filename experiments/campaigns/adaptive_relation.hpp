#pragma once
// An adaptive relation campaign (`pacer relation --adaptive`, docs/explore.md "Adaptive relation
// campaigns"): the relation campaign in rounds, deciding after each round with the engine of
// explore/adaptive.hpp which batch sizes can still be the pacer policy's choice at some cap of the
// device's range. Round 1 trains every batch size for a short budget; the engine then stops the
// batch sizes that cannot win (their runs stay in the relation, censored where they did not reach
// the target), continues the contenders' runs from where they stopped (their state files, see
// dnn::TrainOptions::run_state) or adds seeds, until the choice at every cap is decided, the compute
// budget is spent or the last round ran. Every decision is stored (traces::AdaptiveLog, under
// /decisions/<relation>) and the next round's runs are its "train" rows, so that an interrupted
// campaign resumes, a round runs in shards (one process or machine each) and rounds run as Slurm
// arrays, each after the decision of the round before (docs/cluster.md).
#include <cmath>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "dnn/data/samples.hpp"
#include "dnn/train.hpp"
#include "experiments/campaigns/campaign.hpp"
#include "experiments/campaigns/validate.hpp"
#include "experiments/cluster/shard.hpp"
#include "explore/adaptive.hpp"
#include "traces/records.hpp"

namespace pacer::experiments {

struct AdaptiveSettings {
  // The device whose caps the choice is decided for: a profile in this store ("" : the campaign's
  // store), named (""  : the store's one profile). Its batch sizes must hold the campaign's.
  std::filesystem::path profile_store;
  std::string profile;
  int caps = 10;              // caps spread over the profile's power range
  // Choices under cap x (1 - guard) by the one choice rule (explore/decide.hpp); nullopt: its
  // automatic guard for the profile.
  std::optional<double> guard;
  double tolerance = explore::kAdaptiveTolerance;  // expected regret at which a cap's choice is decided
  double initial_fraction = explore::kAdaptiveInitialFraction;  // round 1: this fraction of the run budget
  // With a compute budget, round 1 spends this share of it over the batch sizes instead (0: the
  // initial fraction of the run budget; explore::AdaptiveOptions::budget_first_share).
  double budget_first_share = explore::kAdaptiveBudgetFirstShare;
  // The compute budget: samples in all (> 0), or else this share of the full campaign's most
  // (batch sizes x seeds x run budget); neither: none.
  int64_t budget_samples = 0;
  double budget_share = NAN;
  int max_rounds = 8;
  // How unfinished runs are extrapolated (explore::AdaptiveExtrapolation).
  explore::AdaptiveExtrapolation extrapolation = explore::kAdaptiveExtrapolation;
};

// The campaign's stages for shards and Slurm: "round-1" ... "round-N", each listing every
// (b, seed) a round may train (a round's shard runs its share of the round's "train" rows), and
// each followed by the round's decision (JobList::decide).
std::vector<JobList> adaptive_job_lists(const std::string& record, const std::filesystem::path& store,
                                        const std::vector<int>& batch_sizes, const std::vector<int>& seeds,
                                        int max_rounds);
std::string round_stage(int round);  // "round-3"
// The round of a stage name; UsageError naming the stages otherwise.
int stage_round(const std::string& stage, int max_rounds);

struct AdaptiveReport {
  CampaignReport campaign;  // the relation (every run, censored included), its curve, the runs trained now
  traces::AdaptiveLog log;
  double compute_used = 0;  // samples every run of the campaign trained
  double compute_most = 0;  // the full campaign's most: batch sizes x seeds x run budget
  // The relation the engine decided on at the campaign's end (explore::AdaptivePlan::relation): the
  // reached runs as stored, the unfinished ones at their estimated samples-to-target (censored where
  // none). The campaign's choices are those on it, not on campaign.set (whose unfinished runs are
  // censored, lower bounds).
  traces::RelationSet decided;
};

// Throws what the campaign's first decision would throw on the device's profile (the profile store
// missing, no or several profiles, a batch size it has not profiled, no cap), so that a campaign
// refuses before it loads any data. `home` is the campaign's store (the profile store's default).
void check_adaptive_device(const std::filesystem::path& home, const std::vector<int>& batch_sizes,
                           const AdaptiveSettings& settings);

// Runs the whole campaign into c.store (resuming what it holds). `run_round`: when set, trains the
// round's runs elsewhere (local shard processes of `run_adaptive_round`) and merges them into
// c.store before it returns; unset: here.
AdaptiveReport run_adaptive_campaign(const RelationCampaign& c, const dnn::data::DataSplit& data,
                                     const AdaptiveSettings& settings, const dnn::TrainHooks& hooks = {},
                                     const std::function<void(int round)>& run_round = {});

// Trains round `round`'s runs (the log's "train" rows, of shard `shard` when given) into c.store,
// reading the log and the runs done from c.resume_from (the campaign's store) when set. Throws
// Error when the round before is not decided yet.
CampaignReport run_adaptive_round(const RelationCampaign& c, const dnn::data::DataSplit& data,
                                  const AdaptiveSettings& settings, int round, std::optional<Shard> shard,
                                  const dnn::TrainHooks& hooks = {});

// The decision after round `round` (and any before it not yet made), from the runs in c.store,
// written into its log. Trains nothing; needs no data.
traces::AdaptiveLog decide_adaptive_round(const RelationCampaign& c, const AdaptiveSettings& settings, int round);

// The decision log as a short table, one line per decision, and the campaign's end.
std::string format_adaptive_log(const traces::AdaptiveLog& log);

}  // namespace pacer::experiments
