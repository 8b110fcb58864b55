// `pacer relation`: measured relation vectors. Fine-tunes a pre-trained workload on a dataset for
// every (batch size, seed) until the held-out metric reaches the target and stores the samples
// needed as a RelationSet. Also produces the pre-trained checkpoint (--pretrain).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <iostream>

#include "base/error.hpp"
#include "base/units.hpp"
#include "experiments/campaigns/relation.hpp"
#include "experiments/cli/cli.hpp"
#include "experiments/cli/explore_options.hpp"
#include "experiments/cli/options.hpp"
#include "experiments/cli/shard_options.hpp"
#include "traces/store/store.hpp"

namespace pacer::cli {
namespace {

experiments::RelationRequest request_from(const po::variables_map& vm) {
  experiments::RelationRequest r;
  r.workload = vm["workload"].as<std::string>();
  r.dataset = vm["dataset"].as<std::string>();
  if (vm["pretrain"].as<bool>() && vm["dataset"].defaulted()) r.dataset.clear();  // the task's pre-training split
  if (vm.count("checkpoint")) r.checkpoint = vm["checkpoint"].as<std::string>();
  r.batch_sizes = parse_int_list(vm["batch-sizes"].as<std::string>(), "--batch-sizes");
  r.seeds = parse_seeds(vm["seeds"].as<std::string>(), "--seeds");
  if (vm.count("target")) r.target = parse_fraction(vm["target"].as<std::string>(), "--target");
  r.optimizer = vm["optimizer"].as<std::string>();
  auto& t = r.train;
  t.threads = vm["threads"].as<int>();
  t.device = vm["device"].as<std::string>();
  t.base_lr = vm["lr"].as<double>();
  require_range(t.base_lr, 1e-7, 1.0, "--lr", "");
  t.eval_every_samples = vm["eval-every"].as<int64_t>();
  t.eval_max_samples = vm["eval-samples"].as<int64_t>();
  t.eval_stop = vm["eval-stop"].as<std::string>();
  if (t.eval_stop != t.kHardestFirst && t.eval_stop != t.kScreened && t.eval_stop != t.kFull)
    throw UsageError(
        fmt::format("--eval-stop: '{}' is not {}, {} or {}", t.eval_stop, t.kHardestFirst, t.kScreened, t.kFull));
  // A screen is set only for screened evaluations (--screen-samples 0, no screen, goes with any).
  const bool screen_set = (!vm["screen-samples"].defaulted() && vm["screen-samples"].as<int64_t>() > 0) ||
                          !vm["screen-margin"].defaulted() || !vm["eval-stop-z"].defaulted();
  if (screen_set && t.eval_stop != t.kScreened)
    throw UsageError(
        fmt::format("--screen-samples, --screen-margin and --eval-stop-z apply to --eval-stop {} only", t.kScreened));
  if (!vm["estimate-samples"].defaulted() && t.eval_stop != t.kHardestFirst)
    throw UsageError(fmt::format("--estimate-samples applies to --eval-stop {} only", t.kHardestFirst));
  t.estimate_samples = vm["estimate-samples"].as<int64_t>();
  t.screen_samples = vm["screen-samples"].as<int64_t>();
  t.screen_margin = vm["screen-margin"].as<double>();
  require_range(t.screen_margin, 0.0, 1.0, "--screen-margin", "");
  t.eval_stop_z = vm["eval-stop-z"].as<double>();
  require_range(t.eval_stop_z, 0.0, 10.0, "--eval-stop-z", "");
  t.budget_samples = vm["budget"].as<int64_t>();
  r.data.split_seed = static_cast<uint64_t>(vm["split-seed"].as<int>());
  r.data.max_train = vm["max-train"].as<int64_t>();
  if (vm.count("name")) r.name = vm["name"].as<std::string>();
  r.store = vm["out"].as<std::string>();
  r.pretrain_batch = vm["pretrain-batch"].as<int>();
  r.pretrain_seed = vm["pretrain-seed"].as<int>();
  if (vm.count("init")) r.init = vm["init"].as<std::string>();
  r.adaptive = vm["adaptive"].as<bool>();
  const bool adaptive_set = !vm["max-rounds"].defaulted() || vm.count("adaptive-budget") ||
                            !vm["tolerance"].defaulted() || !vm["first-round"].defaulted() ||
                            vm.count("profile-store") || vm.count("profile") || !vm["caps"].defaulted() ||
                            !vm["guard"].defaulted() || !vm["extrapolation"].defaulted() || vm["decide"].as<bool>();
  if (adaptive_set && !r.adaptive)
    throw UsageError(
        "--max-rounds, --adaptive-budget, --tolerance, --first-round, --extrapolation, --profile-store, --profile, "
        "--caps, --guard and --decide apply to --adaptive campaigns only");
  if (r.adaptive && vm["pretrain"].as<bool>()) throw UsageError("--adaptive and --pretrain do not go together");
  auto& a = r.adaptive_settings;
  a.max_rounds = vm["max-rounds"].as<int>();
  a.tolerance = parse_fraction(vm["tolerance"].as<std::string>(), "--tolerance");
  a.initial_fraction = parse_fraction(vm["first-round"].as<std::string>(), "--first-round");
  if (!vm["first-round"].defaulted()) a.budget_first_share = 0;  // round 1 as asked, budget or not
  if (vm.count("adaptive-budget")) {
    const std::string b = vm["adaptive-budget"].as<std::string>();
    if (b.find('%') != std::string::npos)
      a.budget_share = parse_fraction(b, "--adaptive-budget");
    else
      a.budget_samples = units::to_integer(b, 1).value_or(0);
    if (a.budget_samples == 0 && std::isnan(a.budget_share))
      throw UsageError(fmt::format("--adaptive-budget: '{}' is neither a count of samples nor a percentage", b));
  }
  if (vm.count("profile-store")) a.profile_store = vm["profile-store"].as<std::string>();
  if (vm.count("profile")) a.profile = vm["profile"].as<std::string>();
  a.caps = vm["caps"].as<int>();
  a.guard = parse_guard(vm);
  a.extrapolation = parse_extrapolation_option(vm);
  r.stage = stage_option(vm);
  r.decide = vm["decide"].as<bool>();
  if (r.decide && r.stage.empty()) throw UsageError("--decide needs --stage: the round whose decision to make");
  if (r.adaptive && !r.stage.empty()) experiments::stage_round(r.stage, a.max_rounds);
  return r;
}

dnn::TrainHooks progress_hooks() {
  dnn::TrainHooks hooks;
  if (stderr_is_terminal())
    hooks.on_progress = [](const dnn::TrainProgress& p) {
      spdlog::info("  b={} seed={} samples={} {:.0f} samples/s metric={:.4f}", p.batch_size, p.seed, p.samples,
                   p.samples_per_s, p.metric);
    };
  return hooks;
}

void print_decisions(const experiments::RelationOutcome& out) {
  if (!out.decisions) return;
  std::cout << experiments::format_adaptive_log(*out.decisions);
  if (out.compute_most > 0)
    std::cout << fmt::format("compute: {:.0f} samples trained, {:.1f}% of the full campaign's most ({:.0f})\n",
                             out.compute_used, 100 * out.compute_used / out.compute_most, out.compute_most);
}

int run_relation(const po::variables_map& vm) {
  experiments::RelationRequest r = request_from(vm);
  const int jobs_n = vm["jobs"].as<int>();
  if (r.adaptive && jobs_n > 1 && !vm.count("shard") && r.stage.empty() && !vm["list-jobs"].as<bool>()) {
    // --jobs N: each round in N local shard processes, merged, then decided here.
    if (jobs_n > 4096) throw UsageError("--jobs must be between 1 and 4096");
    const auto lists = experiments::relation_job_lists(r);
    r.run_round = [lists, jobs_n](int round) {
      run_stage_locally(lists.at(static_cast<size_t>(round - 1)), jobs_n, true);
    };
  } else if (!vm["pretrain"].as<bool>()) {
    const auto lists = experiments::relation_job_lists(r);
    const experiments::JobList& jobs = lists.front();
    if (r.decide) {
      // the decision needs no shard machinery
    } else if (const auto done = run_shard_front(vm, lists)) {
      if (r.adaptive) return *done;
      // --jobs N: the shards printed one line each; the merged relation is printed once, here.
      if (*done == 0 && vm["jobs"].as<int>() > 1 && !vm["list-jobs"].as<bool>() && !vm.count("shard")) {
        const auto store = traces::Store::open(jobs.store);
        std::cout << experiments::format_relation(store.read<traces::RelationSet>(jobs.record));
        std::cout << fmt::format("stored as relations/{} in {}\n", jobs.record, jobs.store.string());
      }
      return *done;
    }
    r.shard = shard_option(vm);
  }
  if (vm["pretrain"].as<bool>()) {
    const auto p = experiments::run_pretrain(r, progress_hooks());
    std::cout << fmt::format("pre-trained {} on {}: {} samples, {} {:.4f} ({}), {:.1f} s; checkpoint {}\n", p.workload,
                             p.dataset, p.result.samples, p.metric, p.result.final_metric,
                             p.result.reached ? "target reached" : "budget exhausted", p.result.wall_time_s,
                             p.checkpoint);
    return 0;
  }
  const auto out = [&] {
    try {
      return experiments::run_relation(r, progress_hooks());
    } catch (const experiments::MissingCheckpoint& e) {
      throw Error(
          fmt::format("checkpoint {} not found: create it with `pacer relation --pretrain --workload {} "
                      "--checkpoint {}` (or pass --checkpoint none to train from scratch)",
                      e.path, e.workload, e.path));
    }
  }();
  const auto& report = out.report;
  if (r.run_round || r.decide) {
    // the rounds' shard processes printed their runs; a decision trains nothing
  } else if (report.new_runs > 0)
    spdlog::info("{} runs in {:.1f} s; evaluation took {:.1f}% of training time", report.new_runs, out.wall_time_s,
                 100 * report.eval_time_s / std::max(1e-9, report.train_time_s));
  else
    spdlog::info("nothing to do: every (b, seed) is already in {}", out.store.string());
  if (r.adaptive && r.decide) {
    print_decisions(out);
    return 0;
  }
  if (r.shard) {  // a shard's part of the table is not the relation: the merge prints that
    std::cout << fmt::format("shard {}/{}: {} of the relation's runs stored as relations/{} in {}\n", r.shard->index,
                             r.shard->count, report.set.runs.size(), out.name, out.store.string());
    return 0;
  }
  std::cout << experiments::format_relation(report.set);
  print_decisions(out);
  std::cout << fmt::format("stored as relations/{} in {}{}\n", out.name, out.store.string(),
                           out.decisions ? fmt::format(" (decisions: decisions/{})", out.name) : "");
  return 0;
}

Command make() {
  Command c;
  c.name = "relation";
  c.summary = "measure samples-to-target per batch size and seed: the relation vector r(b)";
  c.order = 40;
  c.description =
      "Fine-tunes --workload from --checkpoint on --dataset for every batch size and seed until the held-out\n"
      "metric reaches --target (evaluated every --eval-every samples), with lr = lr * sqrt(b / b_max), and\n"
      "stores samples-to-target per (b, seed) as relations/NAME in --out after every run. Runs that miss\n"
      "the target within --budget are kept as censored. Rerunning resumes: finished (b, seed) are skipped.\n"
      "--pretrain instead trains from scratch (or --init) on the pre-training split and writes --checkpoint.\n"
      "Datasets: fmnist-pretrain | fmnist-proxy | fmnist-target-a | fmnist-target-b (classes 0-4 pre-train,\n"
      "5-9 proxy/targets, disjoint images), austen-pretrain | austen-proxy | austen-emma | austen-persuasion |\n"
      "austen-sense, text:FILE, idx:DIR, cifar10:DIR, cifar100:DIR, cinic:DIR (PNG folders by class, CINIC-10\n"
      "layout); see `pacer workloads --datasets`.\n"
      "--adaptive runs the campaign in rounds for the device of --profile-store/--profile: round 1 trains every\n"
      "batch size (one seed) for --first-round of --budget (with --adaptive-budget and no --first-round: " +
      fmt::format("{:g} % of the\n", 100 * explore::kAdaptiveBudgetFirstShare) +
      "compute budget over the batch sizes); after each round the batch sizes that cannot be the\n"
      "pacer policy's choice at any of --caps caps stop (their runs stay, censored), the contenders' runs go on\n"
      "from where they stopped or get another seed, until the choice at every cap is decided (expected regret\n"
      "within --tolerance), --adaptive-budget is spent or --max-rounds ran. Every decision is stored as\n"
      "decisions/NAME and printed. With --jobs N each round runs in N local processes; on Slurm each round is an\n"
      "array after the decision of the round before (stages round-1, round-2, ...; `--stage round-K --decide`\n"
      "makes a round's decision). See docs/explore.md.";
  c.add_options = [](po::options_description& d) {
    // The library request's defaults are the command's.
    const experiments::RelationRequest r;
    const dnn::TrainOptions& t = r.train;
    d.add_options()("workload", po::value<std::string>()->default_value(r.workload),
                    "workload (`pacer workloads`); the data's shape is used when no @shape is given")(
        "dataset", po::value<std::string>()->default_value(r.dataset), "dataset to train on (see above)")(
        "checkpoint", po::value<std::string>(),
        "pre-trained weights (default pacer-out/WORKLOAD-{fmnist,austen}-pretrain.pt; 'none': from scratch)")(
        "batch-sizes", po::value<std::string>()->default_value(fmt::format("{}", fmt::join(r.batch_sizes, ","))),
        "batch sizes: list 4,8,16 or doubling range 4:64")(
        "seeds", po::value<std::string>()->default_value(fmt::format("{}", fmt::join(r.seeds, ","))),
        "seeds: list 0,1,2 or range 0-4 (data order; initialisation when from scratch)")(
        "target", po::value<std::string>(),
        "target held-out metric, fraction or percent (default: the dataset's, see `pacer workloads --datasets`)");
    add_count_option(d, "eval-every", t.eval_every_samples, int64_t{1}, kMaxSamples,
                     "evaluate every N training samples [samples]");
    add_count_option(d, "eval-samples", t.eval_max_samples, int64_t{0}, kMaxSamples,
                     "held-out samples used per evaluation, 0: all [samples]");
    d.add_options()("eval-stop", po::value<std::string>()->default_value(t.eval_stop),
                    "how an evaluation that cannot reach the target stops early: hardest-first (exact: the samples "
                    "missed last time first, stop once even all the rest right would miss), screened (statistical: the "
                    "options below), full (never)");
    add_count_option(d, "estimate-samples", t.estimate_samples, int64_t{0}, kMaxSamples,
                     "--eval-stop hardest-first: after a stop, score this many of the unscored held-out samples to "
                     "estimate the evaluation's score for the learning curve, 0: record the bound it stopped on "
                     "[samples]");
    add_count_option(d, "screen-samples", t.screen_samples, int64_t{0}, kMaxSamples,
                     "--eval-stop screened: score this many held-out samples first; full evaluation only near the "
                     "target, 0: no screen [samples]");
    d.add_options()(
        "screen-margin", po::value<double>()->default_value(t.screen_margin, fmt::format("{:g}", t.screen_margin)),
        "--eval-stop screened: go on past the screen when the score is within this of the target [fraction]")(
        "eval-stop-z", po::value<double>()->default_value(t.eval_stop_z, fmt::format("{:g}", t.eval_stop_z)),
        "--eval-stop screened: after the screen, stop once the score so far plus this many standard errors on the rest "
        "cannot reach the target; 0: off [1]");
    add_count_option(d, "budget", t.budget_samples, int64_t{1}, kMaxSamples,
                     "stop a run that has not reached the target after N samples (censored) [samples]");
    add_threads_option(d, t.threads, "CPU intra-op threads; another count than the default changes the numerics (docs/reliability.md); run runs in parallel with --jobs", "libtorch's default");
    d.add_options()("device", po::value<std::string>()->default_value(t.device),
                    "training device: cpu | cuda | cuda:N")(
        "lr", po::value<double>()->default_value(t.base_lr, fmt::format("{:g}", t.base_lr)),
        "learning rate at the largest batch size (sqrt rule below it) [1]")(
        "optimizer", po::value<std::string>()->default_value(r.optimizer),
        "adam | adamw | auto (adam for images, adamw for text)")(
        "split-seed", po::value<int>()->default_value(static_cast<int>(r.data.split_seed)),
        "seed of the 80/20 train / held-out split");
    add_count_option(d, "max-train", r.data.max_train, int64_t{0}, kMaxSamples,
                     "use at most N training samples, 0: all [samples]");
    d.add_options()("out", po::value<std::string>()->default_value(r.store.string()), "trace store (HDF5) to write")(
        "name", po::value<std::string>(), "record name under /relations (default: the dataset)")(
        "pretrain", po::bool_switch()->default_value(false),
        "pre-train and write --checkpoint instead (dataset default: the pre-training split)");
    add_count_option(d, "pretrain-batch", r.pretrain_batch, 1, kMaxBatchSize, "batch size of --pretrain");
    d.add_options()("pretrain-seed", po::value<int>()->default_value(r.pretrain_seed), "seed of --pretrain")(
        "init", po::value<std::string>(), "--pretrain: start from these weights instead of a fresh initialisation");
    const experiments::AdaptiveSettings a;
    d.add_options()("adaptive", po::bool_switch()->default_value(false),
                    "an adaptive campaign in rounds: train only the batch sizes that can still win (see above)");
    add_count_option(d, "max-rounds", a.max_rounds, 1, 1000, "--adaptive: rounds at most");
    d.add_options()("adaptive-budget", po::value<std::string>(),
                    "--adaptive: compute budget, samples in all or a percentage of the full campaign's most "
                    "(batch sizes x seeds x --budget), e.g. 10% (default: none)")(
        "tolerance", po::value<std::string>()->default_value(fmt::format("{:g}%", 100 * a.tolerance)),
        "--adaptive: a cap's choice is decided when its expected regret is at most this [fraction or %]")(
        "first-round", po::value<std::string>()->default_value(fmt::format("{:g}%", 100 * a.initial_fraction)),
        fmt::format("--adaptive: round 1 trains every batch size for this share of --budget [fraction or %] (default "
                    "with --adaptive-budget: {:g} % of the compute budget over the batch sizes)",
                    100 * explore::kAdaptiveBudgetFirstShare)
            .c_str())(
        "profile-store", po::value<std::string>(),
        "--adaptive: the store holding the device's profile (default: --out)")(
        "profile", po::value<std::string>(), "--adaptive: the device's profile in it (default: its only one)");
    add_count_option(d, "caps", a.caps, 1, 1000, "--adaptive: caps over the profile's power range");
    add_guard_option(d);
    add_extrapolation_option(d);
    d.add_options()(
        "decide", po::bool_switch()->default_value(false),
        "--adaptive with --stage round-K: only make the decision after round K (what Slurm's decision job runs)");
    std::vector<std::string> rounds;
    for (int k = 1; k <= 3; ++k) rounds.push_back(experiments::round_stage(k));
    rounds.push_back("... (--adaptive)");
    add_shard_options(d, rounds);
  };
  c.output_files = {{"out", ""}, {"checkpoint", ""}};
  c.run = run_relation;
  return c;
}

PACER_REGISTER_COMMAND(make);

}  // namespace
}  // namespace pacer::cli
