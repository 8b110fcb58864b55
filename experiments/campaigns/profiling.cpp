#include "experiments/campaigns/profiling.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <memory>

#include "base/error.hpp"
#include "dnn/train.hpp"
#include "hw/executor.hpp"
#include "traces/catalog/power_modes.hpp"
#include "traces/emulated_label.hpp"
#include "traces/store/outputs.hpp"

namespace pacer::experiments {
namespace {

// Real training steps for a real board: dnn::StepRunner (forward, backward, optimizer, sync)
// rebuilt for each batch size.
std::unique_ptr<hw::BatchExecutor> make_training_executor(const std::string& workload, const std::string& train_device,
                                                          int threads) {
  auto runner = std::make_shared<std::unique_ptr<dnn::StepRunner>>();
  hw::FunctionExecutor::Hooks h;
  h.kind = fmt::format("training steps on {}", train_device);
  h.prepare = [=](int b) {
    dnn::StepRunnerOptions o;
    o.workload = workload;
    o.batch_size = b;
    o.device = train_device;
    o.threads = threads;
    runner->reset();
    *runner = std::make_unique<dnn::StepRunner>(o);
  };
  h.step = [=] { (*runner)->step(); };
  h.finish = [=] { runner->reset(); };
  return std::make_unique<hw::FunctionExecutor>(h);
}

}  // namespace

ProfileRun run_profile(const ProfileRequest& request, const std::function<void(const std::string&)>& on_point) {
  // Before the device is touched or a point measured: where the points go, and that every batch
  // fits the device's memory.
  const hw::ProfileOptions& po = request.profile;
  traces::check_store_output(po.store, "store");
  traces::check_record_name_option("profiles", po.profile_name.empty() ? po.workload : po.profile_name, "profile-name");
  if (request.device.workload)
    hw::check_batches_fit(request.device, *request.device.workload, po.batch_sizes, "batch-sizes");
  auto opened = hw::open_device(request.device);
  hw::Device& device = *opened.device;
  hw::ProfileOptions o = request.profile;
  // The catalog entry is the campaign's /device only for an emulated board; a real one is whatever
  // the tree holds, which the catalog may not describe.
  if (opened.emulated || opened.modes)
    o.device_spec = opened.spec;
  else
    o.device_spec.name.clear();
  for (int id : request.mode_ids) {
    const auto* mode = traces::find_mode_id(opened.spec, id);
    if (!mode)
      throw OptionError("modes", fmt::format("{} has no nvpmodel mode {} (pacer devices show {})", opened.spec.name, id,
                                             opened.spec.name));
    o.settings.push_back(traces::mode_knob(*mode, opened.spec));
  }
  std::unique_ptr<hw::BatchExecutor> executor;
  if (opened.emulated) {
    executor = std::make_unique<hw::VirtualExecutor>(*opened.emulated);
  } else if (opened.sysfs && device.emulated()) {
    executor = std::make_unique<hw::SleepingExecutor>(opened.sysfs->root() / "pacer-emulator", o.workload);
  } else {
    std::string train_device = request.train_device;
    if (train_device == "auto") train_device = dnn::cuda_available() ? "cuda" : "cpu";
    executor = make_training_executor(o.workload, train_device, request.threads);
  }
  ProfileRun run;
  run.device_name = device.name();
  run.emulated = device.emulated();
  run.executor_kind = executor->kind();
  run.rails = device.power_rails();
  // Which rails the power figures come from is part of the result (summed rails differ from a total rail).
  o.source = fmt::format("pacer profile, power rails [{}]", fmt::join(run.rails, ", "));
  hw::check_profile_options(device, o);  // a refusal before the info line
  spdlog::info("profiling {} on {}{} ({}), power from [{}]", o.workload, run.device_name,
               traces::emulated_mark(run.emulated, traces::EmulatedMark::Banner), run.executor_kind,
               fmt::join(run.rails, ", "));
  const traces::KnobSpace knob = device.knob();
  hw::ProgressFn progress;
  if (on_point)
    progress = [&](const traces::ProfilePoint& p, int done, int planned) {
      on_point(fmt::format("[{}/{}] {}", done, planned, format_profile_point(knob, p)));
    };
  run.report = hw::run_profile(device, *executor, o, progress);
  run.time_basis = run.report.table.virtual_time   ? "virtual time"
                   : executor->time_scale() != 1.0 ? "device time, scaled"
                                                   : "wall time";
  return run;
}

std::string format_profile_point(const traces::KnobSpace& knob, const traces::ProfilePoint& p) {
  const std::string label = knob.dims.size() == 1 ? hw::knob_label(knob) : std::string(to_string(knob.kind));
  return fmt::format("{}={} b={} t={:.4g} s/batch p_peak={:.3g} W p_mean={:.3g} W {}", label, knob.format(p.knob),
                     p.batch_size, p.time_per_batch_mean_s, p.power_peak_w, p.power_mean_w,
                     p.status == "ok" ? "" : p.status);
}

std::string format_profile_points(const traces::ProfileTable& t) {
  std::string knob_heading = t.knob.dims.size() == 1 ? hw::knob_label(t.knob) : std::string(to_string(t.knob.kind));
  // The knob column as wide as its widest entry: a power mode's caps ("4 CPU@1.114 GHz, GPU 408 MHz,
  // EMC 2.133 GHz (3 TPC)") are wider than a frequency, and every row's columns stay under the heading.
  size_t width = std::max<size_t>(14, knob_heading.size());
  for (const auto& p : t.points) width = std::max(width, t.knob.format(p.knob).size());
  std::string out = fmt::format("{:>{}} {:>6} {:>14} {:>12} {:>10} {:>10}  {}\n", knob_heading, width, "b",
                                "t/batch [s]", "std [s]", "P_peak [W]", "P_mean [W]", "status");
  for (const auto& p : t.points)
    out += fmt::format("{:>{}} {:>6} {:>14.6g} {:>12.3g} {:>10.4g} {:>10.4g}  {}\n", t.knob.format(p.knob), width,
                       p.batch_size, p.time_per_batch_mean_s, p.time_per_batch_std_s, p.power_peak_w, p.power_mean_w,
                       p.status);
  return out;
}

}  // namespace pacer::experiments
