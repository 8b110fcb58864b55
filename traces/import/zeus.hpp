#pragma once
// Importer for the public Zeus traces (ml-energy/zeus, NSDI'23): summary_power_<gpu>.csv and
// summary_train.csv become, per (dataset, network, optimizer), a ProfileTable with the GPU power
// limit as knob and two RelationSets, following the replay protocol of
// data/zeus (its publishers' protocol, stated in docs/explore.md with the reading of its ambiguous parts):
//  - feasibility uses average_power (the traces have no peak power);
//  - the target metric is the strictest one that every batch size reaches in >= 3 runs (batch
//    sizes with fewer than 3 runs in the train trace cannot satisfy that and are dropped);
//  - the proxy relation uses the first half of the runs of each batch size (by run index, >= 1),
//    the target relation (oracle, scoring) all runs;
//  - P_max takes 10 evenly spaced values from the lowest to the highest average power.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "traces/records.hpp"

namespace pacer::traces::zeus {

struct ImportOptions {
  std::filesystem::path data_dir;  // holds summary_power_<gpu>.csv and summary_train.csv
  std::string gpu = "v100";        // any GPU with a summary_power_<gpu>.csv in data_dir
  int min_runs = 3;                // runs that must reach the target at every batch size
  // 0: the protocol's proxy, the first half of each batch size's runs by run index. Otherwise a
  // re-split, outside the protocol, to measure how much a policy's regret owes to which runs the
  // proxy drew: the same number of runs, drawn at random (reproducibly from the seed, the workload
  // and the batch size); the target keeps all runs.
  uint64_t split_seed = 0;
};

struct Workload {
  std::string name;  // "<dataset>.<network>.<optimizer>": the profile name; relations add .proxy/.target
  ProfileTable profile;
  RelationSet proxy;   // first half of the runs
  RelationSet target;  // all runs
  // The proxy's runs at the next looser metric level than the target (a learning-curve point for
  // the pacer policy); no runs when the trace has no looser level.
  RelationSet proxy_looser;
  // The proxy's learning curve: per run, the samples (epoch x samples per epoch) at which it first
  // reached each metric level of the train trace; stored under the proxy's name.
  LearningCurve proxy_curve;
  std::vector<int> dropped_batch_sizes;  // in one trace only, or with too few runs
};

struct ImportResult {
  std::string gpu;
  std::vector<Workload> workloads;
  std::vector<std::string> skipped;  // "<workload>: <why>"
};

// Where the Zeus CSV files are when no folder is given: import::data_dir()/zeus (throws SettingError
// "data-dir" when no data folder is found).
std::filesystem::path default_data_dir();

// The two files of a Zeus trace folder: summary_power_<gpu>.csv and summary_train.csv.
std::filesystem::path power_trace(const std::filesystem::path& dir, const std::string& gpu);
std::filesystem::path train_trace(const std::filesystem::path& dir);
// The GPUs with a power trace in `dir`, sorted (none when it is not a readable folder).
std::vector<std::string> available_gpus(const std::filesystem::path& dir);

// Reads the two CSV files from options.data_dir. Throws Error naming a missing file or a bad row.
ImportResult import_traces(const ImportOptions& options);
// Same, from the CSV texts (tests write fixtures in the Zeus format).
ImportResult import_text(const std::string& power_csv, const std::string& train_csv, const ImportOptions& options);

// The protocol's caps: `count` evenly spaced values from the lowest to the highest mean power.
std::vector<double> protocol_caps_w(const ProfileTable& profile, int count = 10);

// Names under which the importer stores the relations of a workload.
inline std::string proxy_name(const std::string& workload) {
  return workload + ".proxy";
}
inline std::string target_name(const std::string& workload) {
  return workload + ".target";
}
// Name of the relation holding the runs of `relation` at a looser metric level (the store's
// convention, read by explore::load_problem).
inline std::string looser_name(const std::string& relation) {
  return relation + ".looser";
}

// Nominal training-set size used to express epochs as samples. It cancels exactly in every
// time-to-accuracy (time per epoch x epochs), so it only sets the scale of the sample counts.
int64_t nominal_samples_per_epoch(const std::string& dataset);

}  // namespace pacer::traces::zeus
