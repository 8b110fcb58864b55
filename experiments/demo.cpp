#include "experiments/demo.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>

#include "experiments/campaign.hpp"
#include "experiments/report.hpp"
#include "experiments/validate.hpp"
#include "explore/policy.hpp"
#include "explore/space.hpp"
#include "explore/sweep.hpp"
#include "hw/executor.hpp"
#include "hw/open_device.hpp"
#include "hw/profiler.hpp"
#include "models/calibrate.hpp"
#include "dnn/data/datasets.hpp"
#include "dnn/nets.hpp"
#include "dnn/train.hpp"
#include "traces/catalog.hpp"
#include "traces/error.hpp"
#include "traces/store.hpp"

namespace pacer::experiments {
namespace fs = std::filesystem;
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

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

}  // namespace

int run_demo(const DemoOptions& opt) {
  const auto t0 = Clock::now();
  const Settings set = settings_for(opt);
  if (opt.targets.empty()) throw OptionError("targets", "name at least one target dataset");
  if (opt.name.empty() || opt.name.find('/') != std::string::npos)
    throw OptionError("name", fmt::format("'{}' must be non-empty and contain no '/'", opt.name));
  const traces::DeviceSpec device = traces::find_device(opt.device);
  const models::NetSpec spec = models::parse_workload(opt.workload);
  const std::string workload = spec.name;
  const auto pre_info = models::data::dataset_info(opt.pretrain_dataset);
  const auto proxy_info = models::data::dataset_info(opt.proxy_dataset);
  for (const auto& d : std::vector<std::string>{opt.pretrain_dataset, opt.proxy_dataset})
    if (models::data::dataset_info(d).task != spec.task)
      throw UsageError(fmt::format("dataset {} is {} data but {} is a {} network", d,
                                   models::data::dataset_info(d).task, workload, spec.task));
  for (const auto& d : opt.targets)
    if (models::data::dataset_info(d).task != spec.task)
      throw UsageError(fmt::format("target {} is {} data but {} is a {} network", d, models::data::dataset_info(d).task,
                                   workload, spec.task));
  const models::WorkloadInfo winfo = models::describe_workload(workload);
  models::set_threads(opt.threads);
  fs::create_directories(opt.out_dir);
  const fs::path store_path = opt.out_dir / (opt.name + ".h5");
  const std::string title = opt.name == "demo" ? fmt::format("pacer demo{}", opt.quick ? " (quick)" : "")
                                               : fmt::format("pacer experiment {}", opt.name);
  std::cout << fmt::format(
      "{}: {} (EMULATED: virtual device time, CPU training), {}\n"
      "  pre-train: {}; proxy: {}; target{}: {}\n"
      "  batch sizes {}; seeds {}; files in {}\n",
      title, device.display_name, workload, opt.pretrain_dataset, opt.proxy_dataset, opt.targets.size() > 1 ? "s" : "",
      fmt::join(opt.targets, ", "), fmt::join(set.batch_sizes, ","), fmt::join(set.seeds, ","), opt.out_dir.string());

  models::data::DatasetOptions dopt;
  dopt.max_train = set.max_train;
  dopt.max_eval = set.eval_samples;
  if (spec.task == "text") dopt.context = static_cast<int>(spec.input_shape.at(0));

  // 1. Pre-train once; later runs reuse the checkpoint.
  const fs::path ckpt = opt.out_dir / fmt::format("{}-{}.pt", spec.base, opt.pretrain_dataset);
  auto step = Clock::now();
  if (fs::exists(ckpt)) {
    models::check_checkpoint(ckpt.string(), workload);
    std::cout << fmt::format("[1/7] pre-trained checkpoint {} (reused)\n", ckpt.string());
  } else {
    const auto data = models::data::load_dataset(opt.pretrain_dataset, dopt);
    models::TrainOptions t;
    t.workload = workload;
    t.batch_size = 64;
    t.base_batch = 64;
    t.threads = opt.threads;
    t.optimizer = spec.task == "text" ? "adamw" : "adam";
    t.weight_decay = spec.task == "text" ? 0.01 : 0.0;
    t.target = set.pretrain_target;
    t.budget_samples = set.pretrain_budget;
    t.eval_every_samples = 4096;
    t.eval_max_samples = set.eval_samples;
    t.save_checkpoint = ckpt.string();
    const auto r = models::train_to_target(t, data);
    std::cout << fmt::format("[1/7] pre-trained {} on {}: {} {:.3f} after {} samples ({:.0f} s)\n", workload,
                             opt.pretrain_dataset, pre_info.metric, r.final_metric, r.samples, since(step));
  }

  // 2. Profile the full grid on the emulated board (virtual time: seconds).
  step = Clock::now();
  hw::DeviceRequest req;
  req.spec = "emulated:" + opt.device;
  req.workload = winfo;
  hw::OpenedDevice board = hw::open_device(req);
  hw::VirtualExecutor executor(*board.emulated);
  hw::ProfileOptions popt;
  popt.workload = workload;
  popt.batch_sizes = set.batch_sizes;
  popt.store = store_path;
  popt.device_spec = board.spec;
  popt.source = title;
  const auto prof = hw::run_profile(*board.device, executor, popt);
  std::cout << fmt::format("[2/7] profiled {} points of the {}-point grid ({} resumed) in {:.1f} s of virtual device time\n",
                           prof.measured_points, prof.grid_points, prof.resumed_points, prof.cost_s);

  // 3. Calibrate the analytical model on planner-chosen points; predict the whole grid.
  step = Clock::now();
  traces::Store store = traces::Store::open(store_path);
  models::CalibrationOptions copt;
  copt.model = "analytical";
  copt.points = opt.calibration_points;
  copt.analytical.voltage_table = device.voltage_table;
  const auto cal = models::calibrate(prof.table, &device, copt);
  store.write_model(cal.record);
  std::vector<std::vector<double>> grid;
  for (double f : device.gpu_freqs_hz) grid.push_back({f});
  traces::ProfileTable predicted = models::predict_table(*cal.model, prof.table, grid, set.batch_sizes);
  const std::string predicted_name = workload + "-predicted";
  store.write_profile(predicted, predicted_name);
  const auto err = models::mape(*cal.model, prof.table.points);
  std::cout << fmt::format(
      "[3/7] calibrated the analytical model on {} of {} points; error on all measured points: time {:.1f}%, "
      "peak power {:.1f}%, mean power {:.1f}% (MAPE)\n",
      opt.calibration_points, prof.table.points.size(), err.time_mape, err.power_peak_mape, err.power_mean_mape);
  double guard = opt.guard;
  if (std::isnan(guard)) {
    const auto it = cal.record.metrics.find("power_peak_mape_cv");
    const double cv = it == cal.record.metrics.end() ? traces::kNaN : it->second;
    guard = std::clamp(std::isfinite(cv) ? cv / 100 : 0.03, 0.03, 0.25);
    std::cout << fmt::format("      guard band {:.1f}%: the policies choose under cap x {:.3f} (the model's "
                             "cross-validated peak-power error on its {} points, at least 3%)\n",
                             100 * guard, 1 - guard, opt.calibration_points);
  }

  // 4. Proxy relation: samples to the target per batch size on the proxy data.
  step = Clock::now();
  const auto proxy_data = models::data::load_dataset(opt.proxy_dataset, dopt);
  RelationCampaign c;
  c.name = opt.proxy_dataset;
  c.dataset = opt.proxy_dataset;
  c.metric = proxy_info.metric;
  c.train.workload = workload;
  c.train.threads = opt.threads;
  c.train.optimizer = spec.task == "text" ? "adamw" : "adam";
  c.train.weight_decay = spec.task == "text" ? 0.01 : 0.0;
  c.train.target = std::isfinite(opt.target) ? opt.target : proxy_info.default_target;
  c.train.base_batch = set.batch_sizes.back();
  c.train.eval_every_samples = set.eval_every;
  c.train.eval_max_samples = set.eval_samples;
  c.train.budget_samples = set.budget;
  c.train.init_checkpoint = ckpt.string();
  c.batch_sizes = set.batch_sizes;
  c.seeds = set.seeds;
  c.store = store_path;
  const auto proxy = run_relation_campaign(c, proxy_data);
  std::cout << fmt::format("[4/7] proxy relation ({} new runs, {:.0f} s):\n{}", proxy.new_runs, since(step),
                           format_relation(proxy.set));
  if (proxy.set.relation_vector().empty())
    throw Error(fmt::format("no proxy run reached {} {:g} within {} samples: lower the target or raise the budget",
                            proxy_info.metric, c.train.target, set.budget));

  // 5. Validate on every target: each policy's choice and the oracle trained for real at each cap.
  step = Clock::now();
  double lo = INFINITY, hi = 0;
  for (const auto& p : prof.table.points) {
    lo = std::min(lo, p.power_peak_w);
    hi = std::max(hi, p.power_peak_w);
  }
  std::vector<double> caps = opt.caps_w;
  if (caps.empty())
    for (int i = 0; i < set.caps; ++i) {
      const double frac = set.caps == 1 ? 0.5 : 0.3 + 0.45 * i / (set.caps - 1);
      caps.push_back(std::round((lo + frac * (hi - lo)) * 10) / 10);
    }
  std::vector<ValidateReport> validations;
  int runs = 0;
  for (const auto& target : opt.targets) {
    ValidateOptions v;
    v.store = store_path;
    v.profile = predicted_name;
    v.proxy = opt.proxy_dataset;
    v.target_dataset = target;
    v.device.spec = req.spec;
    v.caps_w = caps;
    v.seeds = set.seeds;
    v.train = c.train;
    v.train.target = std::isfinite(opt.target) ? opt.target : NAN;  // NaN: the target dataset's own
    v.data = dopt;
    v.guard = guard;
    v.name = opt.name + "-" + target;
    validations.push_back(run_validate(v));
    runs += validations.back().training_runs;
    std::cout << validations.back().text;
  }
  std::cout << fmt::format("[5/7] validated {} cap(s) on {} target(s) with {} real training runs ({:.0f} s)\n",
                           caps.size(), opt.targets.size(), runs, since(step));

  // 6. Sweep per target: every policy over a fine grid of caps, replayed against the target's seeds.
  step = Clock::now();
  const explore::Space space = explore::Space::from_profile(predicted);
  const explore::Index index(space);
  const explore::DeviceWideCap device_cap({&space});
  const auto proxy_rel = explore::Relation::from_set(proxy.set, space);
  std::vector<double> sweep_caps;
  for (int i = 0; i <= 20; ++i) sweep_caps.push_back(std::round((lo + (hi - lo) * i / 20.0) * 100) / 100);
  sweep_caps.insert(sweep_caps.end(), caps.begin(), caps.end());  // the validated caps, for the figures
  std::sort(sweep_caps.begin(), sweep_caps.end());
  sweep_caps.erase(std::unique(sweep_caps.begin(), sweep_caps.end()), sweep_caps.end());
  std::string summaries;
  for (const auto& val : validations) {
    const auto target_rel = explore::Relation::from_set(val.target_relation, space);
    explore::SweepWorkload sw;
    sw.workload = workload;
    sw.index = &index;
    sw.proxy = &proxy_rel;
    sw.target = &target_rel;
    sw.target_set = &val.target_relation;
    sw.device_cap = &device_cap;
    sw.caps_w = sweep_caps;
    traces::SweepResult sweep;
    sweep.name = val.result.name;
    sweep.profile = predicted_name;
    sweep.relation = proxy.set.name;
    sweep.target = val.target_relation.name;
    sweep.feasibility = std::string(explore::to_string(space.basis()));
    sweep.knob = predicted.knob;
    sweep.rows = explore::sweep(sw, {});
    store.write_sweep(sweep);
    summaries += fmt::format("  {}:\n{}", val.result.dataset, explore::format_summary(explore::summarize(sweep.rows)));
  }
  std::cout << fmt::format("[6/7] simulated sweep over {} caps, {} policies, {} target(s) ({:.1f} s):\n{}",
                           sweep_caps.size(), std::size(explore::kAllPolicies), validations.size(), since(step),
                           summaries);

  // 7. Tables and figures from the trace store.
  step = Clock::now();
  ReportOptions ropt;
  ropt.stores = {store_path};
  ropt.out_dir = opt.out_dir / "report";
  const auto rep = make_report(ropt);
  std::cout << fmt::format("[7/7] report: {} files in {} ({:.1f} s)\n", rep.files.size(), ropt.out_dir.string(),
                           since(step));
  if (!rep.tables_markdown.empty()) std::cout << "\n" << rep.tables_markdown.front();
  for (const auto& val : validations)
    std::cout << fmt::format("\nVerdict (emulated {}, {}, target {}):\n{}", device.name, workload, val.result.dataset,
                             format_verdict(val));
  std::cout << "\nFigures:\n";
  for (const auto& f : rep.figures) std::cout << "  " << f << "\n";
  std::cout << fmt::format("Files: trace store {}; tables and figures in {}; total {:.0f} s\n", store_path.string(),
                           ropt.out_dir.string(), since(t0));
  return 0;
}

}  // namespace pacer::experiments
