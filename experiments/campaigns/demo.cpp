#include "experiments/campaigns/demo.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>

#include "base/cpu_threads.hpp"
#include "base/error.hpp"
#include "base/units.hpp"
#include "dnn/data/datasets.hpp"
#include "dnn/nets.hpp"
#include "dnn/train.hpp"
#include "experiments/campaigns/adaptive_relation.hpp"
#include "experiments/campaigns/campaign.hpp"
#include "experiments/campaigns/validate.hpp"
#include "experiments/cluster/shard.hpp"
#include "experiments/report/report.hpp"
#include "explore/policy.hpp"
#include "explore/problem.hpp"
#include "explore/space.hpp"
#include "explore/sweep.hpp"
#include "hw/executor.hpp"
#include "hw/open_device.hpp"
#include "hw/profiler.hpp"
#include "models/calibrate.hpp"
#include "traces/catalog/catalog.hpp"
#include "traces/store/outputs.hpp"
#include "traces/store/store.hpp"

namespace pacer::experiments {
namespace fs = std::filesystem;
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// After the stages ran as local shard processes the pipeline completes from the merged store: a
// step's count of runs is then what it trained after them (the shards' runs are found, not new).
std::string after_local_shards(const DemoOptions& opt) {
  return opt.local_shards_s > 0 ? " after the local shards" : "";
}

struct Settings {
  std::vector<int> batch_sizes;
  std::vector<int> seeds;
  int caps = 3;
  int64_t eval_every = 2048;
  int64_t eval_samples = 1000;
  int64_t max_train = 0;
  int64_t budget = 60000;
  int64_t pretrain_budget = 120000;
  double pretrain_target = 0.90;
};

// The demo's settings, then whatever the options set explicitly.
Settings settings_for(const DemoOptions& o) {
  Settings s;
  if (o.quick) {
    // All the data: a small training file makes runs need more samples (repeated epochs), not fewer.
    s.batch_sizes = {16, 32, 128};
    s.seeds = {0, 1};
    s.caps = 2;
    s.pretrain_target = 0.85;
  } else {
    s.batch_sizes = {8, 16, 32, 64, 128};
    s.seeds = {0, 1, 2};
    s.caps = 3;
  }
  if (!o.batch_sizes.empty()) s.batch_sizes = o.batch_sizes;
  if (!o.seeds.empty()) s.seeds = o.seeds;
  if (o.caps > 0) s.caps = o.caps;
  if (o.eval_every > 0) s.eval_every = o.eval_every;
  if (o.eval_samples > 0) s.eval_samples = o.eval_samples;
  if (o.max_train >= 0) s.max_train = o.max_train;
  if (o.budget > 0) s.budget = o.budget;
  if (o.pretrain_budget > 0) s.pretrain_budget = o.pretrain_budget;
  if (std::isfinite(o.pretrain_target)) s.pretrain_target = o.pretrain_target;
  std::sort(s.batch_sizes.begin(), s.batch_sizes.end());
  s.batch_sizes.erase(std::unique(s.batch_sizes.begin(), s.batch_sizes.end()), s.batch_sizes.end());
  return s;
}

// What every step of one demo run shares.
struct Demo {
  const DemoOptions* opt;
  Settings set;
  traces::DeviceSpec device;
  models::NetSpec spec;
  std::string workload;
  fs::path store_path;
  std::string title;
  dnn::data::DatasetOptions dopt;
  fs::path ckpt;
};

Demo prepare(const DemoOptions& opt) {
  Demo d{&opt, settings_for(opt), {}, {}, {}, {}, {}, {}, {}};
  if (opt.targets.empty()) throw OptionError("targets", "name at least one target dataset");
  if (opt.guard) check_guard(*opt.guard);
  traces::check_record_name_option("experiment", opt.name, "name");
  // Every output before any work: the folder, the store in it; and every batch size must fit the
  // emulated board and this computer, which trains.
  traces::check_output_folder(opt.out_dir, "out");
  traces::check_store_output(opt.out_dir / (opt.name + ".h5"), "out", traces::StoreCreation::file_and_folder);
  d.device = traces::find_device(opt.device);
  d.spec = models::parse_workload(opt.workload);
  d.workload = d.spec.name;
  const auto cost = models::describe_workload(d.workload);
  traces::check_batches_fit(cost, d.set.batch_sizes, d.device.memory_bytes, d.device.name, "batch-sizes");
  traces::check_batches_fit(cost, d.set.batch_sizes, traces::host_memory_bytes(), "this computer", "batch-sizes");
  for (const auto& ds : std::vector<std::string>{opt.pretrain_dataset, opt.proxy_dataset})
    if (dnn::data::dataset_info(ds).task != d.spec.task)
      throw UsageError(fmt::format("dataset {} is {} data but {} is a {} network", ds, dnn::data::dataset_info(ds).task,
                                   d.workload, d.spec.task));
  for (const auto& ds : opt.targets)
    if (dnn::data::dataset_info(ds).task != d.spec.task)
      throw UsageError(fmt::format("target {} is {} data but {} is a {} network", ds, dnn::data::dataset_info(ds).task,
                                   d.workload, d.spec.task));
  dnn::set_threads(opt.threads);
  fs::create_directories(opt.out_dir);
  d.store_path = opt.out_dir / (opt.name + ".h5");
  d.title = opt.name == "demo" ? fmt::format("pacer demo{}", opt.quick ? " (quick)" : "")
                               : fmt::format("pacer experiment {}", opt.name);
  std::cout << fmt::format(
      "{}: {} (EMULATED: virtual device time, CPU training), {}\n"
      "  pre-train: {}; proxy: {}; target{}: {}\n"
      "  batch sizes {}; seeds {}; training on {}, CPU kernels {}; files in {}\n",
      d.title, d.device.display_name, d.workload, opt.pretrain_dataset, opt.proxy_dataset,
      opt.targets.size() > 1 ? "s" : "", fmt::join(opt.targets, ", "), fmt::join(d.set.batch_sizes, ","),
      fmt::join(d.set.seeds, ","),
      opt.threads > 0 ? fmt::format("{} thread{}", opt.threads, opt.threads == 1 ? "" : "s") : "libtorch's threads",
      base::cpu_kernels(), opt.out_dir.string());
  d.dopt.max_train = d.set.max_train;
  d.dopt.max_eval = d.set.eval_samples;
  if (d.spec.task == "text") d.dopt.context = static_cast<int>(d.spec.input_shape.at(0));
  d.ckpt = opt.out_dir / fmt::format("{}-{}.pt", d.spec.base, opt.pretrain_dataset);
  return d;
}

// 1. Pre-train once; later runs reuse the checkpoint.
void pretrain(const Demo& d) {
  const DemoOptions& opt = *d.opt;
  const auto step = Clock::now();
  if (fs::exists(d.ckpt)) {
    dnn::check_checkpoint(d.ckpt.string(), d.workload);
    std::cout << fmt::format("[1/7] pre-trained checkpoint {} (reused)\n", d.ckpt.string());
    return;
  }
  const auto data = dnn::data::load_dataset(opt.pretrain_dataset, d.dopt);
  dnn::TrainOptions t;
  t.workload = d.workload;
  t.batch_size = 64;
  t.base_batch = 64;
  t.threads = opt.threads;
  t.optimizer = d.spec.task == "text" ? "adamw" : "adam";
  t.weight_decay = d.spec.task == "text" ? 0.01 : 0.0;
  t.target = d.set.pretrain_target;
  t.budget_samples = d.set.pretrain_budget;
  t.eval_every_samples = 4096;
  t.eval_max_samples = d.set.eval_samples;
  t.save_checkpoint = d.ckpt.string();
  const auto r = dnn::train_to_target(t, data);
  std::cout << fmt::format("[1/7] pre-trained {} on {}: {} {:.3f} after {} samples ({:.0f} s)\n", d.workload,
                           opt.pretrain_dataset, dnn::data::dataset_info(opt.pretrain_dataset).metric, r.final_metric,
                           r.samples, since(step));
}

// What the profile and the calibrated model give the later steps.
struct Profiled {
  traces::ProfileTable measured;
  std::string predicted_name;
  double lo_w = INFINITY, hi_w = 0;  // the measured peak power range
};

// The power range the later steps take from the measured profile.
Profiled profiled_from(const Demo& d, const traces::ProfileTable& measured) {
  Profiled out;
  out.measured = measured;
  out.predicted_name = models::predicted_profile_name(d.workload);
  for (const auto& p : measured.points) {
    out.lo_w = std::min(out.lo_w, p.power_peak_w);
    out.hi_w = std::max(out.hi_w, p.power_peak_w);
  }
  return out;
}

// What steps 2 and 3 left in the experiment's store, for a later stage of a sharded experiment.
Profiled read_profiled(const Demo& d) {
  const traces::Store store = traces::Store::open(d.store_path);
  if (!store.has<traces::ProfileTable>(d.workload) ||
      !store.has<traces::ProfileTable>(models::predicted_profile_name(d.workload)))
    throw Error(
        fmt::format("{} holds no profile and calibration of {}: run the experiment's prepare stage first (and "
                    "merge it into the store)",
                    d.store_path.string(), d.workload));
  const auto measured = store.read<traces::ProfileTable>(d.workload);
  return profiled_from(d, measured);
}

// 2. Profile the full grid on the emulated board (virtual time: seconds); 3. calibrate the
// analytical model on planner-chosen points and predict the whole grid. Into `store_path`.
Profiled profile_and_calibrate(const Demo& d, const fs::path& store_path) {
  const DemoOptions& opt = *d.opt;
  hw::DeviceRequest req;
  req.spec = "emulated:" + opt.device;
  req.workload = models::describe_workload(d.workload);
  hw::OpenedDevice board = hw::open_device(req);
  hw::VirtualExecutor executor(*board.emulated);
  hw::ProfileOptions popt;
  popt.workload = d.workload;
  popt.batch_sizes = d.set.batch_sizes;
  popt.store = store_path;
  popt.device_spec = board.spec;
  popt.source = d.title;
  const auto prof = hw::run_profile(*board.device, executor, popt);
  std::cout << fmt::format(
      "[2/7] profiled {} points of the {}-point grid ({} resumed) in {:.1f} s of virtual device time\n",
      prof.measured_points, prof.grid_points, prof.resumed_points, prof.cost_s);

  traces::Store store = traces::Store::open(store_path);
  models::CalibrationOptions copt;
  copt.model = traces::ModelKind::analytical;
  copt.points = opt.calibration_points;
  copt.analytical.voltage_table = d.device.voltage_table;
  const auto cal = [&] {
    try {
      return models::calibrate(prof.table, &d.device, copt);
    } catch (const SettingError& e) {
      if (e.option != "points") throw;
      throw SettingError("calibration-points", e.what());  // the setting's name in a campaign
    }
  }();
  store.write(cal.record);
  std::vector<std::vector<double>> grid;
  for (double f : d.device.gpu_freqs_hz) grid.push_back({f});
  const Profiled out = profiled_from(d, prof.table);
  store.write(models::predict_table(*cal.model, prof.table, grid, d.set.batch_sizes), out.predicted_name);
  const auto err = models::mape(*cal.model, prof.table.points);
  std::cout << fmt::format(
      "[3/7] calibrated the analytical model on {} of {} points; error on all measured points: time {:.1f}%, "
      "peak power {:.1f}%, mean power {:.1f}% (MAPE)\n",
      opt.calibration_points, prof.table.points.size(), err.time_mape, err.power_peak_mape, err.power_mean_mape);
  if (!opt.guard && std::isfinite(models::peak_error_quantile(cal.record)))
    std::cout << fmt::format(
        "      the model's held-out peak-power error, {:g}th percentile: {:.1f}% (the guard band where a point's "
        "power is predicted; measured points keep their measurement: docs/explore.md)\n",
        100 * models::kPeakErrorQuantile, 100 * models::peak_error_quantile(cal.record));
  return out;
}

// The proxy relation's campaign: samples to the target per batch size on the proxy data.
RelationCampaign proxy_campaign(const Demo& d) {
  const DemoOptions& opt = *d.opt;
  const auto proxy_info = dnn::data::dataset_info(opt.proxy_dataset);
  RelationCampaign c;
  c.name = opt.proxy_dataset;
  c.dataset = opt.proxy_dataset;
  c.metric = proxy_info.metric;
  c.train.workload = d.workload;
  c.train.threads = opt.threads;
  c.train.optimizer = d.spec.task == "text" ? "adamw" : "adam";
  c.train.weight_decay = d.spec.task == "text" ? 0.01 : 0.0;
  c.train.target = std::isfinite(opt.target) ? opt.target : proxy_info.default_target;
  c.train.base_batch = d.set.batch_sizes.back();
  c.train.eval_every_samples = d.set.eval_every;
  c.train.eval_max_samples = d.set.eval_samples;
  c.train.budget_samples = d.set.budget;
  c.train.init_checkpoint = d.ckpt.string();
  c.batch_sizes = d.set.batch_sizes;
  c.seeds = d.set.seeds;
  c.store = d.store_path;
  return c;
}

// The adaptive campaign's settings in an experiment: the measured profile of its board, its caps
// and guard.
AdaptiveSettings adaptive_settings(const Demo& d, const Profiled& pr) {
  AdaptiveSettings a;
  a.profile_store = d.store_path;
  a.profile = pr.measured.workload;
  if (d.set.caps > 0) a.caps = d.set.caps;
  a.guard = d.opt->guard;
  return a;
}

// 4. Proxy relation.
CampaignReport proxy_relation(const Demo& d, const Profiled& pr, const RelationCampaign& c) {
  const DemoOptions& opt = *d.opt;
  const auto step = Clock::now();
  const auto proxy_info = dnn::data::dataset_info(opt.proxy_dataset);
  const auto proxy_data = dnn::data::load_dataset(opt.proxy_dataset, d.dopt);
  CampaignReport proxy;
  std::string decisions;
  if (opt.adaptive) {
    const AdaptiveReport a = run_adaptive_campaign(c, proxy_data, adaptive_settings(d, pr));
    proxy = a.campaign;
    decisions =
        format_adaptive_log(a.log) + fmt::format("compute: {:.0f} samples, {:.1f}% of the full campaign's most\n",
                                                 a.compute_used, 100 * a.compute_used / std::max(1.0, a.compute_most));
  } else {
    proxy = run_relation_campaign(c, proxy_data);
  }
  std::cout << fmt::format("[4/7] proxy relation{} ({} new runs{}, {:.0f} s):\n{}{}", opt.adaptive ? ", adaptive" : "",
                           proxy.new_runs, after_local_shards(opt), since(step), format_relation(proxy.set), decisions);
  if (proxy.set.relation_vector().empty())
    throw Error(fmt::format("no proxy run reached {} {:g} within {} samples: lower the target or raise the budget",
                            proxy_info.metric, c.train.target, d.set.budget));
  return proxy;
}

// The validation of one target.
ValidateOptions validate_options(const Demo& d, const Profiled& pr, const RelationCampaign& c,
                                 const std::vector<double>& caps, const std::string& target) {
  const DemoOptions& opt = *d.opt;
  ValidateOptions v;
  v.store = d.store_path;
  v.profile = pr.predicted_name;
  v.proxy = opt.proxy_dataset;
  v.target_dataset = target;
  v.device.spec = "emulated:" + opt.device;
  for (double cap : caps)  // an uncapped column ("none") is swept, not validated: a validation needs a cap
    if (!units::is_no_cap(cap)) v.caps_w.push_back(cap);
  v.seeds = d.set.seeds;
  v.train = c.train;
  v.train.target = std::isfinite(opt.target) ? opt.target : NAN;  // NaN: the target dataset's own
  v.data = d.dopt;
  v.guard = opt.guard;
  v.replace = true;  // the demo owns its store: a --quick rerun may validate fewer caps
  v.name = opt.name + "-" + target;
  return v;
}

// The validated caps: the explicit ones, or spread over 30-75% of the profiled power range.
std::vector<double> caps_for(const Demo& d, const Profiled& pr) {
  std::vector<double> caps = d.opt->caps_w;
  if (caps.empty())
    for (int i = 0; i < d.set.caps; ++i) {
      const double frac = d.set.caps == 1 ? 0.5 : 0.3 + 0.45 * i / (d.set.caps - 1);
      caps.push_back(std::round((pr.lo_w + frac * (pr.hi_w - pr.lo_w)) * 10) / 10);
    }
  return caps;
}

// 5. Validate on every target: each policy's choice and the oracle trained for real at each cap.
std::vector<ValidateReport> validate_targets(const Demo& d, const Profiled& pr, const RelationCampaign& c,
                                             const std::vector<double>& caps) {
  const DemoOptions& opt = *d.opt;
  const auto step = Clock::now();
  std::vector<ValidateReport> validations;
  int runs = 0;
  for (const auto& target : opt.targets) {
    validations.push_back(run_validate(validate_options(d, pr, c, caps, target)));
    runs += validations.back().training_runs;
    std::cout << validations.back().text;
  }
  std::cout << fmt::format("[5/7] validated {} cap(s) on {} target(s) with {} real training runs{} ({:.0f} s)\n",
                           std::count_if(caps.begin(), caps.end(), [](double w) { return !units::is_no_cap(w); }),
                           opt.targets.size(), runs, after_local_shards(opt), since(step));
  return validations;
}

// 6. Sweep per target: every policy over a fine grid of caps, replayed against the target's seeds,
// with the validation's guard band so that a figure and the validation table mark the same choices.
void sweep_targets(const Demo& d, const Profiled& pr, const std::string& proxy_name,
                   const std::vector<ValidateReport>& validations, const std::vector<double>& caps) {
  const auto step = Clock::now();
  std::vector<double> sweep_caps = explore::cap_grid_w(pr.lo_w, pr.hi_w, 21, 0.01);
  sweep_caps.insert(sweep_caps.end(), caps.begin(), caps.end());  // the validated caps, for the figures
  std::sort(sweep_caps.begin(), sweep_caps.end());
  sweep_caps.erase(std::unique(sweep_caps.begin(), sweep_caps.end()), sweep_caps.end());
  traces::Store store = traces::Store::open(d.store_path);
  std::string summaries;
  for (const auto& val : validations) {
    explore::ProblemSpec ps;
    ps.profile = pr.predicted_name;
    ps.relation = proxy_name;
    ps.target = val.target_relation.name;
    const auto problem = explore::load_problem(store, ps);
    explore::SweepRequest request;
    request.name = val.result.name;
    request.caps_w = sweep_caps;
    request.guard = d.opt->guard;
    const auto sweep = explore::sweep_record({problem.get()}, request);
    store.write(sweep, traces::Replace::always);  // the demo owns its store: a --quick rerun may sweep fewer caps
    summaries += fmt::format("  {}:\n{}", val.result.dataset, explore::format_summary(explore::summarize(sweep.rows)));
  }
  std::cout << fmt::format("[6/7] simulated sweep over {} caps, {} policies, {} target(s) ({:.1f} s):\n{}",
                           sweep_caps.size(), explore::policy_table().size(), validations.size(), since(step),
                           summaries);
}

// Whether steps 1 to 3 are in the experiment's store and the checkpoint on disk: a prepare stage
// run again does not profile again.
bool prepared(const Demo& d) {
  if (!fs::exists(d.ckpt) || !fs::exists(d.store_path)) return false;
  const traces::Store store = traces::Store::open(d.store_path);
  return store.has<traces::ProfileTable>(d.workload) &&
         store.has<traces::ProfileTable>(models::predicted_profile_name(d.workload));
}

// The indices among `jobs` in [from, from + count), counted from `from`.
std::vector<size_t> jobs_in(const std::vector<size_t>& jobs, size_t from, size_t count) {
  std::vector<size_t> out;
  for (const size_t j : jobs)
    if (j >= from && j < from + count) out.push_back(j - from);
  return out;
}

// The jobs `jobs` of the options' stage, written to `out` (the experiment's store, or a shard's).
void run_stage(const Demo& d, const fs::path& out, const std::vector<size_t>& jobs) {
  const DemoOptions& opt = *d.opt;
  traces::Store::open_or_create(out);  // a shard whose jobs were all done before still leaves a store
  if (opt.stage == kStagePrepare) {
    if (jobs.empty()) return;
    if (prepared(d)) {
      std::cout << fmt::format("prepare: the checkpoint, profile and calibration are in {} already\n",
                               d.store_path.string());
      return;
    }
    pretrain(d);
    profile_and_calibrate(d, out);
    return;
  }
  RelationCampaign c = proxy_campaign(d);
  if (opt.stage == kStageProxy && opt.adaptive) {
    if (opt.shard)
      throw UsageError(
          "an adaptive proxy relation runs its rounds whole within an experiment: run its proxy stage without "
          "shards");
    proxy_relation(d, read_profiled(d), c);
    return;
  }
  if (opt.stage == kStageProxy) {
    c.store = out;
    if (out != d.store_path) c.resume_from = d.store_path;
    const auto r = run_relation_jobs(c, dnn::data::load_dataset(opt.proxy_dataset, d.dopt), jobs);
    std::cout << fmt::format("proxy relation {}: {} jobs, {} trained now; in {}\n", c.name, jobs.size(), r.new_runs,
                             out.string());
    return;
  }
  // oracle, runs: each target's validation stage, for the jobs of that target.
  const Profiled pr = read_profiled(d);
  const std::vector<double> caps = caps_for(d, pr);
  const size_t per_target = d.set.batch_sizes.size() * d.set.seeds.size();
  for (size_t t = 0; t < opt.targets.size(); ++t) {
    const auto mine = jobs_in(jobs, t * per_target, per_target);
    if (mine.empty()) continue;
    ValidateOptions v = validate_options(d, pr, c, caps, opt.targets[t]);
    v.stage = opt.stage;
    v.only_jobs = mine;
    v.out = out;
    if (find_stage(validate_jobs(v), opt.stage).jobs.size() != per_target)
      throw Error(
          fmt::format("the validation of {} lists other jobs than the experiment ({} per target): the profile "
                      "in {} is not this experiment's",
                      opt.targets[t], per_target, d.store_path.string()));
    std::cout << run_validate(v).text;
  }
}

int run_demo_stage(const DemoOptions& opt) {
  const auto t0 = Clock::now();
  const Demo d = prepare(opt);
  const std::vector<JobList> stages = experiment_jobs(opt);
  const JobList& list = find_stage(stages, opt.stage);
  std::vector<size_t> jobs;
  if (opt.shard) {
    jobs = shard_jobs(list.jobs.size(), *opt.shard);
  } else {
    for (size_t j = 0; j < list.jobs.size(); ++j) jobs.push_back(j);
  }
  const fs::path out = opt.shard ? shard_store(d.store_path, *opt.shard, opt.stage) : d.store_path;
  if (opt.shard)
    record_shard_outcome(out, [&] { run_stage(d, out, jobs); });
  else
    run_stage(d, out, jobs);
  std::cout << fmt::format("{}, stage {}{}: {} of its {} jobs in {:.0f} s; results in {}\n", d.title, opt.stage,
                           opt.shard ? fmt::format(" shard {}/{}", opt.shard->index, opt.shard->count) : "",
                           jobs.size(), list.jobs.size(), since(t0), out.string());
  return 0;
}

}  // namespace

std::vector<JobList> experiment_jobs(const DemoOptions& opt) {
  const Settings set = settings_for(opt);
  return experiment_job_lists(opt.name, opt.out_dir / (opt.name + ".h5"), opt.targets, set.batch_sizes, set.seeds);
}

int run_demo(const DemoOptions& opt) {
  check_stage("an experiment", experiment_stages(), opt.stage, opt.shard.has_value());
  if (!opt.stage.empty()) return run_demo_stage(opt);
  const auto t0 = Clock::now();
  const Demo d = prepare(opt);
  pretrain(d);
  const Profiled pr = profile_and_calibrate(d, d.store_path);
  const RelationCampaign c = proxy_campaign(d);
  const auto proxy = proxy_relation(d, pr, c);
  const std::vector<double> caps = caps_for(d, pr);
  const auto validations = validate_targets(d, pr, c, caps);
  sweep_targets(d, pr, proxy.set.name, validations, caps);

  // 7. Tables and figures from the trace store.
  const auto step = Clock::now();
  ReportOptions ropt;
  ropt.stores = {d.store_path};
  ropt.out_dir = opt.out_dir / "report";
  ropt.labels = opt.labels;
  const auto rep = make_report(ropt);
  std::cout << fmt::format("[7/7] report: {} files in {} ({:.1f} s)\n", rep.files.size(), ropt.out_dir.string(),
                           since(step));
  if (!rep.tables_markdown.empty()) std::cout << "\n" << rep.tables_markdown.front();
  for (const auto& val : validations)
    std::cout << fmt::format("\nVerdict (emulated {}, {}, target {}):\n{}", d.device.name, d.workload,
                             val.result.dataset, format_verdict(val));
  std::cout << "\nFigures:\n";
  for (const auto& f : rep.figures) std::cout << "  " << f << "\n";
  std::cout << fmt::format(
      "Files: trace store {}; tables and figures in {}; total {:.0f} s{}\n", d.store_path.string(),
      ropt.out_dir.string(), opt.local_shards_s + since(t0),
      opt.local_shards_s > 0 ? fmt::format(" ({:.0f} s of it in local shard processes)", opt.local_shards_s) : "");
  return 0;
}

}  // namespace pacer::experiments
