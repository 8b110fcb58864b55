// `pacer relation`: measured relation vectors. Fine-tunes a pre-trained workload on a dataset for
// every (batch size, seed) until the held-out metric reaches the target and stores the samples
// needed as a RelationSet. Also produces the pre-trained checkpoint (--pretrain).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "experiments/campaign.hpp"
#include "experiments/cli/cli.hpp"
#include "experiments/cli/options.hpp"
#include "experiments/cli/shard_options.hpp"
#include "models/data/datasets.hpp"
#include "models/nets.hpp"
#include "models/train.hpp"
#include "traces/error.hpp"
#include "traces/store.hpp"

namespace pacer::cli {
namespace {

namespace fs = std::filesystem;

std::string pretrain_dataset_for(const std::string& task) { return task == "text" ? "austen-pretrain" : "fmnist-pretrain"; }

void ensure_parent(const fs::path& path) {
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
}

struct Setup {
  std::string workload;  // resolved, with the data's shape
  models::data::DatasetInfo info;
  models::data::DataSplit data;
  models::TrainOptions train;
};

Setup prepare(const po::variables_map& vm, const std::string& dataset) {
  Setup s;
  s.info = models::data::dataset_info(dataset);
  models::data::DatasetOptions dopt;
  dopt.split_seed = static_cast<uint64_t>(vm["split-seed"].as<int>());
  dopt.max_train = vm["max-train"].as<int64_t>();
  dopt.max_eval = vm["eval-samples"].as<int64_t>();
  const std::string workload = vm["workload"].as<std::string>();
  const models::NetSpec spec = models::parse_workload(workload);
  if (spec.task != s.info.task)
    throw UsageError(fmt::format("--workload {} is a {} network but --dataset {} is {} data", workload, spec.task,
                                 dataset, s.info.task));
  if (spec.task == "text") dopt.context = static_cast<int>(spec.input_shape.at(0));
  spdlog::info("loading {}", dataset);
  s.data = models::data::load_dataset(dataset, dopt);
  s.workload = workload.find('@') == std::string::npos
                   ? models::parse_workload(fmt::format("{}@{}", spec.base, fmt::join(s.data.train.sample_shape, "x"))).name
                   : spec.name;
  spdlog::info("{}: {} training and {} held-out samples ({})", dataset, s.data.train.size(), s.data.eval.size(),
               s.data.description);

  auto& t = s.train;
  t.workload = s.workload;
  t.threads = vm["threads"].as<int>();
  t.device = vm["device"].as<std::string>();
  t.optimizer = vm["optimizer"].as<std::string>();
  if (t.optimizer == "auto") t.optimizer = spec.task == "text" ? "adamw" : "adam";
  if (t.optimizer != "adam" && t.optimizer != "adamw")
    throw UsageError(fmt::format("--optimizer: '{}' is not one of auto, adam, adamw", t.optimizer));
  t.weight_decay = t.optimizer == "adamw" ? 0.01 : 0.0;
  t.base_lr = vm["lr"].as<double>();
  require_range(t.base_lr, 1e-7, 1.0, "--lr", "");
  t.eval_every_samples = vm["eval-every"].as<int64_t>();
  if (t.eval_every_samples < 1) throw UsageError("--eval-every must be at least 1 sample");
  t.screen_samples = vm["screen-samples"].as<int64_t>();
  t.screen_margin = vm["screen-margin"].as<double>();
  if (t.screen_samples < 0) throw UsageError("--screen-samples must be 0 (off) or more");
  require_range(t.screen_margin, 0.0, 1.0, "--screen-margin", "");
  t.eval_stop_z = vm["eval-stop-z"].as<double>();
  require_range(t.eval_stop_z, 0.0, 10.0, "--eval-stop-z", "");
  t.budget_samples = vm["budget"].as<int64_t>();
  if (t.budget_samples < 1) throw UsageError("--budget must be at least 1 sample");
  t.target = vm.count("target") ? parse_fraction(vm["target"].as<std::string>(), "--target") : s.info.default_target;
  if (t.threads < 0) throw UsageError("--threads must be 0 (libtorch default) or more");
  return s;
}

models::TrainHooks progress_hooks() {
  models::TrainHooks hooks;
  if (stderr_is_terminal())
    hooks.on_progress = [](const models::TrainProgress& p) {
      spdlog::info("  b={} seed={} samples={} {:.0f} samples/s metric={:.4f}", p.batch_size, p.seed, p.samples,
                   p.samples_per_s, p.metric);
    };
  return hooks;
}

std::string checkpoint_path(const po::variables_map& vm, const std::string& workload) {
  if (vm.count("checkpoint")) return vm["checkpoint"].as<std::string>();
  return experiments::default_checkpoint(workload);
}

int run_pretrain(const po::variables_map& vm) {
  const std::string workload = vm["workload"].as<std::string>();
  const models::NetSpec spec = models::parse_workload(workload);
  const std::string dataset = vm["dataset"].defaulted() ? pretrain_dataset_for(spec.task) : vm["dataset"].as<std::string>();
  Setup s = prepare(vm, dataset);
  const std::string ckpt = checkpoint_path(vm, spec.name);
  if (vm.count("init")) s.train.init_checkpoint = vm["init"].as<std::string>();
  s.train.batch_size = vm["pretrain-batch"].as<int>();
  s.train.base_batch = s.train.batch_size;
  s.train.seed = vm["pretrain-seed"].as<int>();
  s.train.save_checkpoint = ckpt;
  ensure_parent(ckpt);
  spdlog::info("pre-training {} on {} (b={}, target {:.3f}, budget {} samples)", s.workload, dataset,
               s.train.batch_size, s.train.target, s.train.budget_samples);
  const auto r = models::train_to_target(s.train, s.data, progress_hooks());
  std::cout << fmt::format("pre-trained {} on {}: {} samples, {} {:.4f} ({}), {:.1f} s; checkpoint {}\n", s.workload,
                           dataset, r.samples, s.info.metric, r.final_metric,
                           r.reached ? "target reached" : "budget exhausted", r.wall_time_s, ckpt);
  return 0;
}

int run_relation(const po::variables_map& vm) {
  if (vm["pretrain"].as<bool>()) return run_pretrain(vm);
  const std::string dataset = vm["dataset"].as<std::string>();
  auto batch_sizes = parse_int_list(vm["batch-sizes"].as<std::string>(), "--batch-sizes");
  const auto seeds = parse_seeds(vm["seeds"].as<std::string>(), "--seeds");
  for (const int b : batch_sizes)
    if (b < 1) throw UsageError(fmt::format("--batch-sizes: {} is not a positive batch size", b));
  std::sort(batch_sizes.begin(), batch_sizes.end());
  batch_sizes.erase(std::unique(batch_sizes.begin(), batch_sizes.end()), batch_sizes.end());
  const std::string name = vm.count("name") ? vm["name"].as<std::string>() : experiments::record_name(dataset);
  if (const auto done = run_shard_front(vm, experiments::relation_job_list(name, vm["out"].as<std::string>(),
                                                                           batch_sizes, seeds)))
    return *done;
  Setup s = prepare(vm, dataset);
  const models::NetSpec spec = models::parse_workload(s.workload);
  std::string ckpt = checkpoint_path(vm, spec.name);
  if (ckpt == "none") {
    ckpt.clear();
  } else {
    if (!fs::exists(ckpt))
      throw Error(fmt::format("checkpoint {} not found: create it with `pacer relation --pretrain --workload {} "
                              "--checkpoint {}` (or pass --checkpoint none to train from scratch)",
                              ckpt, spec.base, ckpt));
    models::check_checkpoint(ckpt, s.workload);
  }
  s.train.init_checkpoint = ckpt;
  s.train.base_batch = batch_sizes.back();

  experiments::RelationCampaign c;
  c.name = name;
  if (c.name.empty() || c.name.find('/') != std::string::npos)
    throw UsageError(fmt::format("--name: '{}' must be non-empty and contain no '/'", c.name));
  c.dataset = dataset;
  c.metric = s.info.metric;
  c.train = s.train;
  c.batch_sizes = batch_sizes;
  c.seeds = seeds;
  c.store = store_for(vm, vm["out"].as<std::string>());
  ensure_parent(c.store);

  const auto t0 = std::chrono::steady_clock::now();
  const auto shard = shard_option(vm);
  const auto report = shard ? experiments::run_relation_shard(c, s.data, *shard, progress_hooks())
                            : experiments::run_relation_campaign(c, s.data, progress_hooks());
  if (report.new_runs > 0)
    spdlog::info("{} runs in {:.1f} s; evaluation took {:.1f}% of training time", report.new_runs,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                 100 * report.eval_time_s / std::max(1e-9, report.train_time_s));
  else spdlog::info("nothing to do: every (b, seed) is already in {}", c.store.string());
  std::cout << experiments::format_relation(report.set);
  std::cout << fmt::format("stored as relations/{} in {}\n", c.name, c.store.string());
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
      "layout); see `pacer workloads --datasets`.";
  c.add_options = [](po::options_description& d) {
    d.add_options()
        ("workload", po::value<std::string>()->default_value("cnn"), "workload (`pacer workloads`); the data's shape is used when no @shape is given")
        ("dataset", po::value<std::string>()->default_value("fmnist-proxy"), "dataset to train on (see above)")
        ("checkpoint", po::value<std::string>(), "pre-trained weights (default pacer-out/WORKLOAD-{fmnist,austen}-pretrain.pt; 'none': from scratch)")
        ("batch-sizes", po::value<std::string>()->default_value("4,8,16,32,64"), "batch sizes: list 4,8,16 or doubling range 4:64")
        ("seeds", po::value<std::string>()->default_value("0,1,2"), "seeds: list 0,1,2 or range 0-4 (data order; initialisation when from scratch)")
        ("target", po::value<std::string>(), "target held-out metric, fraction or percent (default: the dataset's, see `pacer workloads --datasets`)")
        ("eval-every", po::value<int64_t>()->default_value(2048), "evaluate every N training samples [samples]")
        ("eval-samples", po::value<int64_t>()->default_value(2000), "held-out samples used per evaluation, 0: all [samples]")
        ("screen-samples", po::value<int64_t>()->default_value(250), "score this many held-out samples first; full evaluation only near the target, 0: always full [samples]")
        ("screen-margin", po::value<double>()->default_value(0.04, "0.04"), "screening runs the full evaluation when the score is within this of the target [fraction]")
        ("eval-stop-z", po::value<double>()->default_value(3.09, "3.09"), "after the screen, an evaluation stops once the score so far plus this many standard errors on the rest cannot reach the target; 0: off [1]")
        ("budget", po::value<int64_t>()->default_value(100000), "stop a run that has not reached the target after N samples (censored) [samples]")
        ("threads", po::value<int>()->default_value(2), "CPU intra-op threads (0: libtorch default)")
        ("device", po::value<std::string>()->default_value("cpu"), "training device: cpu | cuda | cuda:N")
        ("lr", po::value<double>()->default_value(1e-3), "learning rate at the largest batch size (sqrt rule below it) [1]")
        ("optimizer", po::value<std::string>()->default_value("auto"), "adam | adamw | auto (adam for images, adamw for text)")
        ("split-seed", po::value<int>()->default_value(0), "seed of the 80/20 train / held-out split")
        ("max-train", po::value<int64_t>()->default_value(0), "use at most N training samples, 0: all [samples]")
        ("out", po::value<std::string>()->default_value("pacer-out/relations.h5"), "trace store (HDF5) to write")
        ("name", po::value<std::string>(), "record name under /relations (default: the dataset)")
        ("pretrain", po::bool_switch()->default_value(false), "pre-train and write --checkpoint instead (dataset default: the pre-training split)")
        ("pretrain-batch", po::value<int>()->default_value(64), "batch size of --pretrain")
        ("pretrain-seed", po::value<int>()->default_value(0), "seed of --pretrain")
        ("init", po::value<std::string>(), "--pretrain: start from these weights instead of a fresh initialisation");
    add_shard_options(d);
  };
  c.run = run_relation;
  return c;
}

PACER_REGISTER_COMMAND(make);

}  // namespace
}  // namespace pacer::cli
