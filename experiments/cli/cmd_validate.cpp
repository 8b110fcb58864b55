// `pacer validate`: run the chosen configurations for real and compare with the predictions.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>

#include "base/error.hpp"
#include "experiments/campaigns/validate.hpp"
#include "experiments/cli/cli.hpp"
#include "experiments/cli/explore_options.hpp"
#include "experiments/cli/options.hpp"
#include "experiments/cli/shard_options.hpp"
#include "explore/policy.hpp"
#include "hw/device_backends.hpp"
#include "traces/json_rows.hpp"

namespace pacer::cli {
namespace {

int run_validate_cmd(const po::variables_map& vm) {
  experiments::ValidateOptions o;
  o.store = vm["store"].as<std::string>();
  if (vm.count("profile")) o.profile = vm["profile"].as<std::string>();
  if (vm.count("proxy")) o.proxy = vm["proxy"].as<std::string>();
  o.allow_workload_mismatch = vm["allow-workload-mismatch"].as<bool>();
  o.target_dataset = vm["target-dataset"].as<std::string>();
  o.device.spec = vm["device"].as<std::string>();
  o.device.sysfs_root = vm["sysfs-root"].as<std::string>();
  o.caps_w = vm["power-limits"].as<units::PowerList>().w;
  o.seeds = parse_seeds(vm["seeds"].as<std::string>(), "--seeds");
  o.policies = split_list(vm["policies"].as<std::string>());
  if (vm.count("workload")) o.train.workload = vm["workload"].as<std::string>();
  else o.train.workload.clear();
  o.train.init_checkpoint = vm.count("checkpoint") ? vm["checkpoint"].as<std::string>() : "default";
  if (o.train.init_checkpoint == "none") o.train.init_checkpoint.clear();
  o.guard = parse_guard(vm);
  o.train.target = vm.count("target") ? parse_fraction(vm["target"].as<std::string>(), "--target") : NAN;
  o.train.budget_samples = vm["budget"].as<int64_t>();
  o.train.eval_every_samples = vm["eval-every"].as<int64_t>();
  o.train.eval_max_samples = vm["eval-samples"].as<int64_t>();
  o.train.threads = vm["threads"].as<int>();
  o.train.base_lr = vm["lr"].as<double>();
  o.train.optimizer = vm["optimizer"].as<std::string>();
  o.data.split_seed = static_cast<uint64_t>(vm["split-seed"].as<int>());
  o.data.max_train = vm["max-train"].as<int64_t>();
  o.sensor_rate_hz = sensor_rate_hz(vm);
  o.watchdog_margin_w = vm["watchdog-margin"].as<units::Power>().w;
  o.watchdog_duration_s = vm["watchdog-time"].as<units::Duration>().s;
  o.probe_batches = vm["probe-batches"].as<int>();
  if (o.train.budget_samples < 1) throw UsageError("--budget must be at least 1 sample");
  if (o.train.eval_every_samples < 1) throw UsageError("--eval-every must be at least 1 sample");
  if (vm.count("name")) o.name = vm["name"].as<std::string>();
  o.replace = vm.count("replace") > 0;
  try {
    if (const auto done = run_shard_front(vm, experiments::validate_jobs(o))) return *done;
    o.stage = stage_option(vm);
    o.shard = shard_option(vm);
    const auto report = experiments::run_validate(o);
    // With --json stdout holds the rows alone; the table and the verdict go to stderr.
    const bool json = vm.count("json") > 0;
    if (json) std::cout << traces::rows_json(traces::kValidationRowColumns, report.result.rows, &report.result.knob);
    std::ostream& text = json ? std::cerr : std::cout;
    text << report.text;
    if (!report.summary.empty()) text << "\nVerdict:\n" << experiments::format_verdict(report);
    text << fmt::format(
        "{} real training runs, {:.0f} s wall; {} in {}\n", report.training_runs, report.wall_time_s,
        o.stage == experiments::kStageOracle ? "the oracle's relation" : "stored as validations/" + report.result.name,
        report.out.string());
  } catch (const experiments::MissingCheckpoint& e) {
    throw Error(
        fmt::format("checkpoint {} not found: create it with `pacer relation --pretrain --workload {}` (or "
                    "pass --checkpoint FILE, or --checkpoint none to train from scratch)",
                    e.path, e.workload));
  }
  return 0;
}

Command make() {
  Command c;
  c.name = "validate";
  c.summary = "train the chosen configurations for real on a device and compare with the predictions";
  c.order = 70;
  c.usage_tail = "STORE";
  c.positional = {"store"};
  c.description = fmt::format(
      "For each cap, pins the configuration chosen by each policy and by the oracle (the target trained\n"
      "at every batch size, then the fastest feasible (f, b)) and trains --workload on --target-dataset to\n"
      "the target accuracy while sampling power. Reports measured time to accuracy (mean ± std over seeds),\n"
      "the prediction error, the regret versus the oracle, energy, peak power and whether the cap was\n"
      "exceeded. On the emulated device the device time is virtual (the emulator's), the wall time is\n"
      "the CPU's; both are stored. Needs a store with a profile and a proxy relation (pacer profile,\n"
      "pacer relation); writes relations/<dataset>-true, validations/NAME and runs/*. Every (b, seed) job's\n"
      "results are stored when it ends: running the command again runs only the missing jobs. Two stages\n"
      "(--stage {}) shard over machines or Slurm (--list-jobs, --shard, --jobs; docs/cluster.md).",
      fmt::join(experiments::validate_stages(), ", then "));
  c.add_options = [](po::options_description& d) {
    // The library's defaults are the command's.
    const experiments::ValidateOptions v;
    const dnn::TrainOptions& t = v.train;
    d.add_options()
        ("store", po::value<std::string>()->required(), "campaign trace store (HDF5) with the profile and the proxy relation")
        ("power-limits", po::value<units::PowerList>()->required(), "caps: list 4W,6W or range 3W:8W:1W [W]")
        ("device", po::value<std::string>()->default_value("emulated:jetson-nano"), hw::device_spec_syntax().c_str())
        ("sysfs-root", po::value<std::string>()->default_value(v.device.sysfs_root.string()), "sysfs root of --device jetson (a live emulated tree for hardware in the loop)")
        ("profile", po::value<std::string>(), "profile record (default: the only one)")
        ("proxy", po::value<std::string>(), "proxy relation record (default: the only one)")
        ("allow-workload-mismatch", po::bool_switch(), "pair a proxy relation with a profile of another workload (refused without it; warned with it)")
        ("target-dataset", po::value<std::string>()->default_value(v.target_dataset), "target data (pacer workloads --datasets)")
        ("policies", po::value<std::string>()->default_value(fmt::format("{}", fmt::join(v.policies, ","))), "policies to validate")
        ("seeds", po::value<std::string>()->default_value(fmt::format("{}", fmt::join(v.seeds, ","))), "seeds of the target runs")
        ("workload", po::value<std::string>(), "workload (default: the profile's)")
        ("checkpoint", po::value<std::string>(), "pre-trained weights to fine-tune from (default: where `pacer relation --pretrain` writes them; 'none': from scratch)")
        ("target", po::value<std::string>(), "target held-out metric, fraction or percent (default: the dataset's)");
    add_guard_option(d);
    add_count_option(d, "budget", t.budget_samples, int64_t{1}, kMaxSamples, "censor a run after N samples [samples]");
    add_count_option(d, "eval-every", t.eval_every_samples, int64_t{1}, kMaxSamples, "evaluate every N samples [samples]");
    add_count_option(d, "eval-samples", t.eval_max_samples, int64_t{0}, kMaxSamples, "held-out samples per evaluation, 0: all [samples]");
    add_threads_option(d, t.threads, "CPU intra-op threads of the training; another count than the default changes the numerics (docs/reliability.md)", "libtorch's default");
    d.add_options()
        ("lr", number_opt(t.base_lr), "learning rate at the largest batch size (sqrt rule) [1]")
        ("optimizer", po::value<std::string>()->default_value(t.optimizer), "adam | adamw")
        ("split-seed", po::value<int>()->default_value(static_cast<int>(v.data.split_seed)), "seed of the 80/20 split");
    add_count_option(d, "max-train", v.data.max_train, int64_t{0}, kMaxSamples, "use at most N training samples, 0: all [samples]");
    add_sensor_rate_option(d, v.sensor_rate_hz, "power sampling rate in device time");
    d.add_options()
        ("watchdog-margin", power_opt(v.watchdog_margin_w), "power watchdog: total power above the cap plus this [W] ...")
        ("watchdog-time", duration_opt(v.watchdog_duration_s), "... for longer than this [s] (device time) stops the run and restores the clock; 0: off")
        ("name", po::value<std::string>(), "record name under /validations (default validate-<dataset>)")
        ("replace", "replace a validation record of this name even when it has more rows")
        ("json", "print the validation's rows as JSON Lines on stdout, one object per (cap, policy, seed) with units in the keys as in the CSV (cap_w, device_time_s, power_peak_w, ...); the table and the verdict go to stderr");
    add_count_option(d, "probe-batches", v.probe_batches, 0, kMaxBatchesPerPoint,
                     "probe before commit: a chosen configuration the store's measured profile lacks is profiled "
                     "with N mini-batches before it is trained, and one above cap x (1 - guard) gives way to the "
                     "policy's next choice; 0: no probe");
    add_shard_options(d, experiments::validate_stages());
  };
  c.input_files = {"checkpoint"};
  c.output_files = {{"store", ""}};
  c.run = run_validate_cmd;
  return c;
}

PACER_REGISTER_COMMAND(make);

}  // namespace
}  // namespace pacer::cli
