#include "experiments/demo.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

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
#include "models/data/datasets.hpp"
#include "models/train.hpp"
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
  double pretrain_target = 0.90;
};

Settings settings_for(bool quick) {
  Settings s;
  if (quick) {
    s.batch_sizes = {16, 64, 128};
    s.seeds = {0, 1};
    s.caps = 2;
    s.max_train = 6000;
    s.pretrain_target = 0.85;
  } else {
    s.batch_sizes = {8, 16, 32, 64, 128};
    s.seeds = {0, 1, 2};
    s.caps = 3;
  }
  return s;
}

}  // namespace

int run_demo(const DemoOptions& opt) {
  const auto t0 = Clock::now();
  const Settings set = settings_for(opt.quick);
  fs::create_directories(opt.out_dir);
  const fs::path store_path = opt.out_dir / "demo.h5";
  const traces::DeviceSpec device = traces::find_device(opt.device);
  const auto info = models::data::dataset_info("fmnist-proxy");
  const std::string workload = opt.workload + "@1x28x28";
  const models::WorkloadInfo winfo = models::describe_workload(workload);
  models::set_threads(opt.threads);
  std::cout << fmt::format(
      "pacer demo{}: {} (EMULATED: virtual device time, CPU training), {} on Fashion-MNIST\n"
      "  pre-train: classes 0-4; proxy: classes 5-9, half A; target: classes 5-9, half B (disjoint images)\n"
      "  batch sizes {}; seeds {}; files in {}\n",
      opt.quick ? " --quick" : "", device.display_name, workload, fmt::join(set.batch_sizes, ","),
      fmt::join(set.seeds, ","), opt.out_dir.string());

  models::data::DatasetOptions dopt;
  dopt.max_train = set.max_train;
  dopt.max_eval = set.eval_samples;

  // 1. Pre-train once; later runs reuse the checkpoint.
  const fs::path ckpt = opt.out_dir / fmt::format("{}-fmnist-pretrain.pt", opt.workload);
  auto step = Clock::now();
  if (fs::exists(ckpt)) {
    models::check_checkpoint(ckpt.string(), workload);
    std::cout << fmt::format("[1/7] pre-trained checkpoint {} (reused)\n", ckpt.string());
  } else {
    const auto data = models::data::load_dataset("fmnist-pretrain", dopt);
    models::TrainOptions t;
    t.workload = workload;
    t.batch_size = 64;
    t.base_batch = 64;
    t.threads = opt.threads;
    t.target = set.pretrain_target;
    t.budget_samples = 120000;
    t.eval_every_samples = 4096;
    t.eval_max_samples = set.eval_samples;
    t.save_checkpoint = ckpt.string();
    const auto r = models::train_to_target(t, data);
    std::cout << fmt::format("[1/7] pre-trained {} on fmnist-pretrain: accuracy {:.3f} after {} samples ({:.0f} s)\n",
                             workload, r.final_metric, r.samples, since(step));
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
  popt.source = "pacer demo";
  const auto prof = hw::run_profile(*board.device, executor, popt);
  std::cout << fmt::format("[2/7] profiled {} points of the {}-point grid ({} resumed) in {:.1f} s of virtual device time\n",
                           prof.measured_points, prof.grid_points, prof.resumed_points, prof.cost_s);

  // 3. Calibrate the analytical model on 8 planner-chosen points; predict the whole grid.
  step = Clock::now();
  traces::Store store = traces::Store::open(store_path);
  models::CalibrationOptions copt;
  copt.model = "analytical";
  copt.points = 8;
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
      "[3/7] calibrated the analytical model on 8 of {} points; error on all measured points: time {:.1f}%, "
      "peak power {:.1f}%, mean power {:.1f}% (MAPE)\n",
      prof.table.points.size(), err.time_mape, err.power_peak_mape, err.power_mean_mape);

  // 4. Proxy relation: samples to the target per batch size on the proxy data.
  step = Clock::now();
  const auto proxy_data = models::data::load_dataset("fmnist-proxy", dopt);
  RelationCampaign c;
  c.name = "fmnist-proxy";
  c.dataset = "fmnist-proxy";
  c.metric = info.metric;
  c.train.workload = workload;
  c.train.threads = opt.threads;
  c.train.target = info.default_target;
  c.train.base_batch = set.batch_sizes.back();
  c.train.eval_every_samples = set.eval_every;
  c.train.eval_max_samples = set.eval_samples;
  c.train.budget_samples = 60000;
  c.train.init_checkpoint = ckpt.string();
  c.batch_sizes = set.batch_sizes;
  c.seeds = set.seeds;
  c.store = store_path;
  const auto proxy = run_relation_campaign(c, proxy_data);
  std::cout << fmt::format("[4/7] proxy relation ({} new runs, {:.0f} s):\n{}", proxy.new_runs, since(step),
                           format_relation(proxy.set));

  // 5. Validate: caps across the board's range; every policy's choice and the oracle trained for real.
  step = Clock::now();
  double lo = INFINITY, hi = 0;
  for (const auto& p : prof.table.points) {
    lo = std::min(lo, p.power_peak_w);
    hi = std::max(hi, p.power_peak_w);
  }
  std::vector<double> caps;
  for (int i = 0; i < set.caps; ++i) {
    const double frac = set.caps == 1 ? 0.5 : 0.3 + 0.45 * i / (set.caps - 1);
    caps.push_back(std::round((lo + frac * (hi - lo)) * 10) / 10);
  }
  ValidateOptions v;
  v.store = store_path;
  v.profile = predicted_name;
  v.proxy = "fmnist-proxy";
  v.target_dataset = "fmnist-target-a";
  v.device.spec = req.spec;
  v.caps_w = caps;
  v.seeds = set.seeds;
  v.train = c.train;
  v.data = dopt;
  v.name = "demo";
  const auto val = run_validate(v);
  std::cout << fmt::format("[5/7] validated {} caps with {} real training runs ({:.0f} s):\n{}", caps.size(),
                           val.training_runs, since(step), val.text);

  // 6. Sweep: every policy over a fine grid of caps, replayed against the target's seeds.
  step = Clock::now();
  const explore::Space space = explore::Space::from_profile(predicted);
  const explore::Index index(space);
  const explore::DeviceWideCap device_cap({&space});
  const auto proxy_rel = explore::Relation::from_set(proxy.set, space);
  const auto target_rel = explore::Relation::from_set(val.target_relation, space);
  explore::SweepWorkload sw;
  sw.workload = workload;
  sw.index = &index;
  sw.proxy = &proxy_rel;
  sw.target = &target_rel;
  sw.target_set = &val.target_relation;
  sw.device_cap = &device_cap;
  for (int i = 0; i <= 20; ++i) sw.caps_w.push_back(lo + (hi - lo) * i / 20.0);
  traces::SweepResult sweep;
  sweep.name = "demo";
  sweep.profile = predicted_name;
  sweep.relation = proxy.set.name;
  sweep.target = val.target_relation.name;
  sweep.feasibility = std::string(explore::to_string(space.basis()));
  sweep.knob = predicted.knob;
  sweep.rows = explore::sweep(sw, {});
  store.write_sweep(sweep);
  std::cout << fmt::format("[6/7] simulated sweep over {} caps, {} policies ({:.1f} s):\n{}", sw.caps_w.size(),
                           std::size(explore::kAllPolicies), since(step),
                           explore::format_summary(explore::summarize(sweep.rows)));

  // 7. Tables and figures from the trace store.
  step = Clock::now();
  ReportOptions ropt;
  ropt.stores = {store_path};
  ropt.out_dir = opt.out_dir / "report";
  const auto rep = make_report(ropt);
  std::cout << fmt::format("[7/7] report: {} files in {} ({:.1f} s)\n", rep.files.size(), ropt.out_dir.string(), since(step));
  if (!rep.tables_markdown.empty()) std::cout << "\n" << rep.tables_markdown.front();
  std::cout << fmt::format("\nVerdict (emulated {}, {}):\n{}", device.name, workload, format_verdict(val));
  std::cout << fmt::format("Files: trace store {}; tables and figures in {}; total {:.0f} s\n", store_path.string(),
                           ropt.out_dir.string(), since(t0));
  return 0;
}

}  // namespace pacer::experiments
