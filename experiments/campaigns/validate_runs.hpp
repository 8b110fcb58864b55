#pragma once
// The training runs of `pacer validate` (experiments/campaigns/validate.hpp), one job at a time: a job is a
// (batch size, seed), and runs every configuration chosen at that batch size with that seed. On the
// emulated device one real training run drives one emulated board per configuration; on a real
// device each configuration is its own run. Internal to experiments/.
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "dnn/data/samples.hpp"
#include "dnn/train.hpp"
#include "explore/space.hpp"
#include "hw/open_device.hpp"
#include "hw/sampler.hpp"
#include "traces/records.hpp"

namespace pacer::experiments {

struct ValidateOptions;

namespace validate_detail {

struct Config {
  std::vector<double> knob;
  int batch_size = 0;
  bool operator<(const Config& o) const { return std::tie(batch_size, knob) < std::tie(o.batch_size, o.knob); }
};

// What one (configuration, seed) run measured, and where.
struct RunResult {
  bool reached = false;
  int64_t samples = 0;
  double device_time_s = traces::kNaN;
  double wall_time_s = traces::kNaN;
  double final_metric = traces::kNaN;
  traces::PowerSeries series;  // the power samples, device time since the start of training
  std::string status;          // "stopped: ..." when the watchdog stopped the run
  std::string node;            // the host (Slurm node) that ran it
  std::string board_model;     // the board it ran on
  int threads = 0;             // CPU intra-op threads of the training
};

using Runs = std::map<std::pair<Config, int>, RunResult>;

// The power watchdog of a run (hw::PowerWatchdog) and the cap it guards; once it tripped, the
// message says when and how high.
struct Watchdog {
  double cap_w = 0, margin_w = 0;
  hw::PowerWatchdog w;
  std::string message;
  bool tripped() const { return !message.empty(); }
  void record(const hw::WatchdogTrip& trip);
};

// What the runs share: the configurations to run, the cap each one's watchdog guards (the lowest
// it was chosen for), the data, the training options and the space for messages.
struct RunPlan {
  const ValidateOptions* opt = nullptr;
  const explore::Space* space = nullptr;
  std::set<Config> configs;
  std::map<Config, double> config_cap;
  const dnn::data::DataSplit* data = nullptr;
  dnn::TrainOptions train;
  hw::DeviceRequest request;
  Watchdog watchdog_for(const Config& c) const;
  std::vector<Config> configs_at(int batch_size) const;
};

std::string config_text(const explore::Space& space, const Config& c);

// Job (b, seed) on the emulated device: one real training run at (b, seed) drives one emulated
// board per configuration chosen at b. Returns the training runs it made (0 or 1); counts watchdog
// stops in `stops`.
int run_emulated_job(const RunPlan& plan, int batch_size, int seed, Runs& runs, int& stops);

// Job (b, seed) on a real device: every configuration chosen at b, one training run each.
int run_real_job(const RunPlan& plan, hw::Device& device, int batch_size, int seed, Runs& runs, int& stops);

}  // namespace validate_detail
}  // namespace pacer::experiments
