#pragma once
// `pacer bench models`: the accuracy of the device models versus the number k of profiled points
// the planner picks. For each table and k, a model is fitted on the planner's k points and scored on
// every point left out (k = all: cross-validation). Three sections:
//  (a) emulated Jetson (hw/emulator/emulated.hpp: physics the analytical form does not contain), analytical
//      vs a learned model transferred from another workload;
//  (b) the real Zeus GPU traces (knob = power limit), interpolating vs learned, read through the
//      validating importer (traces/import/zeus.hpp);
//  (c) real Jetson boards (LoudVA sweeps, traces/import/loudva.hpp): analytical (V(f) chosen by
//      cross-validation), learned (transferred from the other board) and interpolating.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "models/calibrate.hpp"

namespace pacer::experiments {

inline constexpr int kAllPoints = -1;  // "k = all": every point, errors by cross-validation

// The accuracy goal the tables are judged against: power within 3 % and time within 5 % (MAPE)
// from at most k = 8 profiled points, the demo's calibration budget (DemoOptions).
struct ModelGoal {
  double power_mape = 3;  // %
  double time_mape = 5;   // %
  int max_k = 8;
};

// The goals against the model's own every-point error (cross-validated) on a real board: with k
// points, power within power_pp and time within time_pp of it; and the k at which each gets within
// close_pp of it (the k-curve).
struct CloseGoal {
  int k = 8;
  double power_pp = 1.0;
  double time_pp = 1.5;
  double close_pp = 0.5;
};

// What the real-board section measured per board, for the summary table, the goal lines and the
// figures: held-out MAPE along the k-curve, every point (cross-validated), the planner's points at
// CloseGoal::k.
struct BoardCurve {
  std::string device;
  std::vector<int> k;
  std::vector<double> time_mape, power_mape;  // %, per k
  double all_time = traces::kNaN, all_power = traces::kNaN;
  std::vector<std::pair<double, int>> planned;  // (GPU clock [Hz], b) of the planner's CloseGoal::k points
  std::vector<std::pair<double, int>> grid;     // every (clock, b) of the board
  std::string goals;                            // the PASS / FAIL lines of the issue-25 goals
};

struct RealBoard {
  std::string folder;  // under loudva_dir
  std::string device;  // catalog name
};

struct ModelBenchOptions {
  std::vector<int> ks = {4, 6, 8, 12, 20, 50, kAllPoints};
  bool emulated = true;  // section (a)
  bool zeus = true;      // section (b)
  bool real = false;     // section (c)
  // (a)
  std::string device = "jetson-nano";
  std::vector<std::string> workloads = {"resnet18@3x32x32", "mobilenetv2@3x32x32", "chartransformer"};
  std::vector<int> batch_sizes = {4, 8, 16, 32, 64, 128};
  double sensor_noise_rel = 0.02;
  bool thermal_drift = true;
  // (b)
  std::filesystem::path zeus_dir;  // empty: traces::zeus::default_data_dir()
  std::vector<std::string> zeus_gpus = {"v100", "a40"};
  // (c)
  std::filesystem::path loudva_dir;  // empty: jetson/loudva of traces::import::data_dir()
  std::vector<RealBoard> boards = {{"nano", "jetson-nano"}, {"agx-xavier", "jetson-agx-xavier"}};
  // (c) the analytical model's k-curve, the k points of the coverage check, transfer between boards
  std::vector<int> curve_ks = {4, 5, 6, 7, 8, 9, 10, 11, 12, 14, 16, 18, 20, 25, 30, 35, 40, 45, 50};
  std::vector<int> transfer_ks = {4, 8, 12};
  std::vector<int> coverage_ks = {4, 6, 8, 10, 12, 20};
  double transfer_weight = models::kDefaultTransferWeight;
  bool learned_real = true;  // (c) also the learned (libtorch) and interpolating models
  // (c) where to draw the k-curve and the planner's points (gnuplot, experiments/report/plot.hpp);
  // empty: no figures.
  std::filesystem::path figure_dir;
  uint64_t seed = 1;
  ModelGoal goal;
  CloseGoal close;
};

struct ModelBenchRow {
  std::string section;  // "emulated" | "zeus" | "real"
  std::string device;
  std::string workload;
  // analytical, learned or interpolating
  traces::ModelKind model = traces::ModelKind::analytical;
  int k = 0;  // kAllPoints: every point, cross-validated
  int fit_points = 0;
  int heldout_points = 0;
  models::ErrorSummary error;
  std::string note;  // e.g. the V(f) chosen
};

struct ModelBenchResult {
  std::vector<ModelBenchRow> rows;
  std::string markdown;  // the tables, with the goal verdict computed from `rows`
  std::vector<BoardCurve> curves;             // (c), per board
  std::vector<std::filesystem::path> figures;  // files written under figure_dir
  std::string csv() const;
};

// Runs the chosen sections. A section whose data folder is absent is reported as skipped in the
// Markdown, not an error. Throws Error for an unknown device or workload, or a malformed trace.
ModelBenchResult run_model_bench(const ModelBenchOptions& options);

// The smallest k <= goal.max_k at which the mean errors of `model` meet the goal in `rows` of one
// (section, device), or 0 when none does.
int goal_met_from(const std::vector<ModelBenchRow>& rows, const std::string& section, const std::string& device,
                  traces::ModelKind model, const ModelGoal& goal);

}  // namespace pacer::experiments
