#pragma once
// Importer for the public LoudVA measurements (iloudaros/LoudVA; data/jetson/loudva/PROVENANCE.md):
// Triton serving InceptionV3 on a Jetson, loaded by perf_analyzer with C concurrent requests, so C
// plays the role of the batch size b. Two kinds of files become ProfileTables:
//  - GPU-frequency sweeps, energy_calculated_freq_<Hz>.csv (Concurrency, Mean Power (W),
//    Avg Latency (s), Throughput (Inference/sec), Energy (J)) -> knob gpu_freq;
//  - power-mode runs, performance_measurements_mode_<N>.csv (perf_analyzer CSV) with
//    power_measurement_stats_mode_<N>.csv (one "Mean: <mW>" line per concurrency, same order) ->
//    knob power_mode, each mode's caps read from the board's nvpmodel.conf.
// Time per mini-batch = C / throughput; power = the authors' tegrastats mean of the module total
// (the device's total rail, or the sum of its rails where the board has none). The tables say so
// in `source`: inference, not training, and by whom.
#include <filesystem>
#include <string>
#include <vector>

#include "traces/records.hpp"

namespace pacer::traces::loudva {

struct ImportOptions {
  std::filesystem::path dir;  // holds the sweep files and/or the mode files
  DeviceSpec device;          // the board measured (catalog entry): frequency table, rails, modes
  // nvpmodel.conf for the mode files; empty: the one *nvpmodel*.conf in dir or dir/../nvpmodel whose
  // GPU clock is the device's devfreq node.
  std::filesystem::path nvpmodel_conf;
  std::string workload = "inceptionv3-triton";
};

struct Imported {
  std::string name;  // profile name in the store: the workload, "<workload>.modes" for the modes
  ProfileTable table;
  std::vector<std::string> files;  // the files it came from, in the order read
};

struct ImportResult {
  std::vector<Imported> profiles;    // the sweep first (if any), then the modes (if any)
  std::vector<PowerModeSpec> modes;  // the caps of the imported modes, as read from nvpmodel.conf
  // Inference serves a fixed number of requests whatever b: "<workload>.proxy" with the same
  // sample count at every measured b (r(b) = 1), so `pacer select` minimises time per request.
  RelationSet requests;
};

// The relation of serving `requests` inference requests at each batch size (one run per b, all
// reached): the objective of an inference server, not a training run.
RelationSet request_relation(const std::string& workload, const std::vector<int>& batch_sizes, int64_t requests);
// The LoudVA folder of a board when none is given: import::data_dir()/jetson/loudva/<device name
// without "jetson-"> (nano, agx-xavier). Throws SettingError "dir" when no data folder is found.
std::filesystem::path default_dir(const DeviceSpec& device);

// Reads every LoudVA file in options.dir. Throws Error naming the file and line of a malformed row,
// a frequency outside the device's table, a mode file without its partner or with another number of
// rows, a mode the nvpmodel.conf lacks, or a folder with no LoudVA file at all.
ImportResult import_dir(const ImportOptions& options);

// One sweep file's text into points (knob {freq_hz}); `origin` names it in errors.
std::vector<ProfilePoint> parse_sweep(const std::string& csv, double freq_hz, const std::string& origin);

// One mode's pair of texts into points (knob = the mode's caps as power_mode values).
std::vector<ProfilePoint> parse_mode(const std::string& perf_csv, const std::string& power_stats,
                                     const std::vector<double>& knob, const std::string& origin);

// What the power figures are: "POM_5V_IN (module total)" or "sum of GPU, CPU, ... rails".
std::string power_rail_description(const DeviceSpec& device);

}  // namespace pacer::traces::loudva
