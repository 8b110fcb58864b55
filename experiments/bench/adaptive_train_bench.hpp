#pragma once
// `pacer bench train --adaptive`: the adaptive relation campaign (experiments/campaigns/
// adaptive_relation.hpp) against the full one, both trained for real on this machine at equal seeds,
// per task (Fashion-MNIST with a CNN, Jane Austen with the character transformer): the compute each
// used (samples trained) and the share of caps at which the pacer policy's choice on the adaptive
// campaign's relation is the full campaign's, with the regret of the other choices under the full
// relation. The device is an emulated board profiled in virtual time (its caps are the campaign's).
// The replay of the same campaigns on the Zeus traces is `pacer bench adaptive`.
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "experiments/bench/choice_agreement.hpp"
#include "experiments/campaigns/adaptive_relation.hpp"
#include "experiments/campaigns/relation.hpp"

namespace pacer::experiments {

struct AdaptiveTrainBenchOptions {
  // Workloads; each trains on its task's proxy split (images: fmnist-proxy, text: austen-proxy).
  std::vector<std::string> workloads = {"cnn", "chartransformer-tiny"};
  std::vector<int> batch_sizes = {8, 16, 32, 64};
  std::vector<int> seeds = {0, 1, 2};
  int threads = 1;
  std::string device = "jetson-nano";  // catalog device, emulated
  // Small settings that finish in minutes: training samples, held-out samples, evaluation cadence,
  // run budget and the target per task (from scratch).
  int64_t max_train = 4000;
  int64_t eval_samples = 0;  // 0: the whole held-out split
  int64_t eval_every = 256;
  int64_t budget = 24000;
  double image_target = 0.85;
  double text_target = 0.40;
  // Its profile_store and profile are the bench's own; its budget_share is unused; power_law: the
  // extrapolation of unfinished runs.
  AdaptiveSettings adaptive;
  // The adaptive campaign's compute budget as a share of the full campaign's compute measured in the
  // same run (samples trained; the goal's denominator); NaN: none.
  double budget_of_full = NAN;
  std::filesystem::path out = "pacer-out/bench-adaptive";  // one store per workload, kept: a rerun resumes
};

// Prints one row per workload, the full campaign's own resolution (its choices kept when one of its
// seeds is left out, and by each seed alone) and the goal lines (PASS / FAIL). The adaptive campaign
// is stored under a name per extrapolation and budget ("adaptive", "adaptive-power-law-budget-10pct"),
// beside the one full campaign, so that runs of the bench with other settings share the full
// campaign. Throws Error when a campaign fails.
void run_adaptive_train_bench(const AdaptiveTrainBenchOptions& options, std::ostream& out);

// The adaptive campaign's choices against the full one's at the caps: on the relation its engine
// decided on (RelationOutcome::decided: unfinished runs at their estimates), as the campaign itself
// chooses, not on its stored runs (unfinished ones censored). Error for an outcome without one.
ChoiceAgreement compare_adaptive(const explore::Space& space, const explore::ChoiceRule& rule,
                                 const std::vector<double>& caps_w, const traces::RelationSet& full,
                                 const RelationOutcome& adaptive);

}  // namespace pacer::experiments
