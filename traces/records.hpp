#pragma once
// Typed records of the trace store. Plain structs; every numeric field carries its unit in its name.
// Each stored field is declared once, with its column name and unit, in traces/columns.hpp, and
// each record type's place in the store in its entry (traces/record_traits.hpp); the HDF5 layout
// that follows from them is documented in docs/trace-store.md.
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "traces/kinds.hpp"

namespace pacer::traces {

inline constexpr int kSchemaVersion = 1;
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---------------------------------------------------------------------------------------------
// Knobs: the system setting whose raising costs power. One dimension for a GPU frequency or a GPU
// power limit, several for a Jetson power mode (cpu_cores, cpu_freq, gpu_freq, mem_freq).
struct KnobDim {
  std::string name;  // "gpu_freq", "power_limit", "cpu_cores", "cpu_freq", "mem_freq"
  std::string unit;  // "Hz", "W", "1"
  bool operator==(const KnobDim&) const = default;
};

struct KnobSpace {
  KnobKind kind = KnobKind::gpu_freq;
  std::vector<KnobDim> dims;
  bool operator==(const KnobSpace&) const = default;

  static KnobSpace gpu_frequency() { return {KnobKind::gpu_freq, {{"gpu_freq", "Hz"}}}; }
  static KnobSpace power_limit() { return {KnobKind::power_limit, {{"power_limit", "W"}}}; }
  static KnobSpace power_mode() {
    return {KnobKind::power_mode, {{"cpu_cores", "1"}, {"cpu_freq", "Hz"}, {"gpu_freq", "Hz"}, {"mem_freq", "Hz"}}};
  }

  // The one formatter of knob values, by each dimension's own unit: "921.6 MHz", "250 W",
  // "4 CPU@1.479 GHz, GPU 921.6 MHz, EMC 1.6 GHz" for a power mode (" (3 TPC)" with gated TPCs),
  // "v(name) ..." for another multi-dimensional knob.
  std::string format(const std::vector<double>& values) const;
  // The column heading of one dimension with its display unit: "f [MHz]", "P_limit [W]".
  std::string heading(size_t dim) const;
};

// ---------------------------------------------------------------------------------------------
// Device description (also the schema of the device catalog and of user device files).
struct PowerModeSpec {
  int id = 0;
  std::string name;       // "MAXN", "5W"
  double gpu_max_hz = 0;  // 0 when unknown
  int cpu_cores = 0;      // 0 when unknown
  double cpu_max_hz = 0;  // 0 when unknown
  double mem_hz = 0;      // 0 when unknown
  double budget_w = 0;    // nominal mode budget, 0 when unknown
  int gpu_tpcs = 0;       // GPU TPCs the mode leaves powered (TPC_PG_MASK), 0 when not gated / unknown
  bool operator==(const PowerModeSpec&) const = default;
};

struct RailSpec {
  std::string chip;  // i2c device of the INA3221, e.g. "6-0040"
  int channel = 0;   // 0-based for iio (rail_name_N), 1-based for hwmon (inN_label)
  std::string name;  // "POM_5V_IN", "VDD_GPU_SOC", "NC"
  std::string role;  // "total" | "gpu" | "cpu" | "soc" | "mem" | "other" | "nc"
  bool operator==(const RailSpec&) const = default;
};

struct VoltagePoint {
  double freq_hz = 0;
  double volt_v = 0;
  bool operator==(const VoltagePoint&) const = default;
};

struct DeviceSpec {
  std::string name;                  // catalog key, "jetson-nano"
  std::string display_name;          // "NVIDIA Jetson Nano 4GB"
  std::string soc;                   // "T210"
  std::string gpu_arch;              // devfreq of_node name: "gpu", "gp10b", "gv11b", "ga10b"
  std::vector<double> gpu_freqs_hz;  // ascending, as in available_frequencies
  std::vector<PowerModeSpec> power_modes;
  double memory_bytes = 0;
  std::string devfreq_path;    // relative to the sysfs root, e.g. "sys/devices/gpu.0/devfreq/57000000.gpu"
  std::string devfreq_node;    // name under /sys/class/devfreq, e.g. "57000000.gpu"
  std::string gpu_device_dir;  // e.g. "sys/devices/gpu.0"
  std::string sensor_layout;   // "iio" | "hwmon"
  std::string sensor_driver;   // "ina3221x" (iio) | "ina3221" (hwmon)
  std::vector<RailSpec> rails;
  std::string total_rail;                   // empty: the module total is the sum of all non-NC rails
  std::string gpu_rail;                     // empty when the board has no GPU-only rail
  std::vector<VoltagePoint> voltage_table;  // empty when not public
  // Physical parameters for the emulated device (sources in docs/devices.md).
  int cuda_cores = 0;
  double mem_bandwidth_bytes_s = 0;
  double idle_power_w = 0;
  double max_power_w = 0;  // highest module power seen under load (catalog source), for sanity checks
  std::map<std::string, std::string> sources;  // field -> public source
  bool operator==(const DeviceSpec&) const = default;

  double peak_flops(double freq_hz) const { return 2.0 * cuda_cores * freq_hz; }
  double max_freq_hz() const { return gpu_freqs_hz.empty() ? 0 : gpu_freqs_hz.back(); }
};

// ---------------------------------------------------------------------------------------------
// ProfileTable: per (knob setting, batch size) time per mini-batch and power.
struct ProfilePoint {
  std::vector<double> knob;  // one value per KnobSpace dim, SI units
  int batch_size = 0;
  double time_per_batch_mean_s = kNaN;
  double time_per_batch_std_s = kNaN;
  double power_peak_w = kNaN;  // NaN when the source has only a mean (Zeus)
  double power_mean_w = kNaN;
  double energy_j = kNaN;     // energy over the measured mini-batches
  int64_t samples = 0;        // samples processed in the measured mini-batches
  int64_t power_samples = 0;  // sensor readings behind the power figures
  double sensor_rate_hz = kNaN;
  double temperature_c = kNaN;
  std::string status = "ok";  // "ok" | "skipped: <why>" | "stopped: <why>"
  // Where it was measured: the host (the Slurm node when Slurm ran it) and the board's own
  // identification (device-tree model of a Jetson, NVML name, catalog name of an emulated board).
  // "" in stores written before they were recorded, and for imported profiles.
  std::string node;
  std::string board_model;
  bool operator==(const ProfilePoint& o) const;
};

struct ProfileTable {
  std::string workload;       // "resnet8-w0.25@1x28x28" or "cifar100/shufflenetv2"
  std::string device;         // device name
  bool emulated = false;      // emulated results are labelled as such everywhere
  bool virtual_time = false;  // time is the emulated device's, not the wall clock
  std::string source;         // "pacer profile", "zeus import", ...
  KnobSpace knob = KnobSpace::gpu_frequency();
  int64_t samples_per_epoch = 0;  // when the source reports time per epoch (Zeus), else 0
  int warmup_batches = 0;
  int measured_batches = 0;
  double profiling_cost_s = 0;  // time spent profiling (wall or virtual, see virtual_time)
  // Clocks that were not pinned while measuring ("cpu, emc" when only the GPU clock was locked;
  // "" when none floated or unknown): their spread is noise to a model of the knob (models/uncertainty.hpp).
  std::string floating_clocks;
  std::vector<ProfilePoint> points;
  bool operator==(const ProfileTable&) const;

  std::vector<int> batch_sizes() const;  // distinct, ascending
  const ProfilePoint* find(const std::vector<double>& knob, int batch_size) const;
};

// ---------------------------------------------------------------------------------------------
// Power time series of one run.
struct PowerSeries {
  std::string name;
  bool emulated = false;
  double cap_w = kNaN;              // the cap in force, NaN for none
  std::vector<double> time_s;       // since the start of the run
  std::vector<double> power_w;      // module total
  std::vector<double> gpu_power_w;  // empty when the board has no GPU rail
  std::vector<double> freq_hz;      // GPU frequency at each sample, may be empty
  int64_t failed_reads = 0;
  bool operator==(const PowerSeries&) const = default;
};

// ---------------------------------------------------------------------------------------------
// RelationSet: samples to the target per (batch size, seed).
struct RelationRun {
  int batch_size = 0;
  int seed = 0;
  bool reached = false;  // false: censored at budget_samples
  int64_t samples = 0;   // samples seen when the target was reached (or the budget if not)
  int64_t budget_samples = 0;
  double wall_time_s = kNaN;
  double final_metric = kNaN;  // metric at the stopping evaluation
  double learning_rate = kNaN;
  int threads = 0;  // CPU intra-op threads the run trained on (its numerics depend on them); 0: not recorded
  bool operator==(const RelationRun& o) const;
};

struct RelationSet {
  std::string name;  // "fmnist-target-a"
  std::string workload;
  std::string dataset;
  std::string metric;  // "accuracy", "char_accuracy", "wer"
  bool higher_is_better = true;
  double target = kNaN;
  std::string lr_rule;  // "lr = base_lr * sqrt(b / base_batch)"
  double base_lr = kNaN;
  int base_batch = 0;
  std::string optimizer;          // "adam", "adamw"
  int64_t samples_per_epoch = 0;  // when counts come in epochs (Zeus), else 0
  // How the runs were trained, beyond the above: the settings that change a run's recorded result
  // (its budget is each run's own, RelationRun::budget_samples). A campaign resumed or reused under
  // other ones is refused (experiments::stored_relation). The defaults mean "not recorded": stores
  // written before these were, and relations imported from elsewhere; they are not checked.
  int64_t train_samples = 0;  // training samples of the data split (after max-train); 0: not recorded
  int64_t eval_samples = 0;   // held-out samples an evaluation scores; 0: not recorded
  int64_t split_seed = -1;    // the seed that split the data into train and held-out; -1: not recorded
  int64_t eval_every = 0;     // training samples between evaluations; 0: not recorded
  std::string eval_stop;      // how evaluations stop early ("hardest-first", "screened ...", "full"); "": unrecorded
  std::string checkpoint;     // the weights the runs start from ("crc32=<hex> bytes=<n>", "none"); "": unrecorded
  std::vector<RelationRun> runs;
  bool operator==(const RelationSet&) const;

  std::vector<int> batch_sizes() const;  // distinct, ascending
  // Mean samples-to-target over the runs of b that reached the target; NaN if none did.
  double mean_samples(int batch_size) const;
  double std_samples(int batch_size) const;
  // r(b) = N_acc(b) / N_acc(b_ref), b_ref the largest batch size with a reached run.
  std::map<int, double> relation_vector() const;
};

// The record name of a target's true relation, the one `pacer validate` trains for its oracle (the
// target at every batch size): "<dataset record>-true". select, sweep and simulate take the store's
// one true relation as the target, and the one relation of no such role as the proxy.
std::string true_relation_name(const std::string& dataset_record);
bool is_true_relation(const std::string& relation_name);

// ---------------------------------------------------------------------------------------------
// A learning curve of the runs of a relation: per run (batch size, seed), the metric at increasing
// sample counts. From a relation campaign, every evaluation (source "evaluations"); from the Zeus
// train trace, the samples at which each metric level was first reached (source "levels"). Stored
// under the relation's name (/curves/<relation>); explore/proxy_budget.hpp cuts runs with it.
struct CurvePoint {
  int batch_size = 0;
  int seed = 0;
  int64_t samples = 0;  // samples trained when the metric was measured (reached)
  double metric = kNaN;
  bool operator==(const CurvePoint& o) const;
};

struct LearningCurve {
  std::string name;  // the relation's name
  std::string metric;
  bool higher_is_better = true;
  std::string source;              // "evaluations" | "levels"
  std::vector<CurvePoint> points;  // by (batch size, seed), then ascending samples
  bool operator==(const LearningCurve& o) const;
  // The first sample count at which the run (b, seed) reached `level` (or better); 0 when never.
  int64_t first_reaching(int batch_size, int seed, double level) const;
};

// ---------------------------------------------------------------------------------------------
// The decisions of an adaptive relation campaign (docs/explore.md, "Adaptive relation campaigns"),
// stored under the relation's name (/decisions/<relation>). One row per decision, round by round:
// which run a round trains and to how many samples ("train"), what the engine did with each batch
// size after a round ("start", "continue", "add-seed", "stop": its runs stay in the relation,
// censored where they did not reach the target; "done"), and how the campaign ends ("decided": the
// choice at every cap is within the tolerance; "budget": the compute budget is spent; "rounds": the
// last round ran). The "train" rows of round k are what the round's jobs (and its shards,
// docs/cluster.md) run.
struct AdaptiveLogRow {
  int round = 0;                  // 1, 2, ...
  std::string action;             // "train" | start/continue/add-seed/stop/done | decided/budget/rounds
  int batch_size = 0;             // 0 for the campaign's end
  int seed = -1;                  // "train": the run's seed; -1 otherwise
  int64_t budget_samples = 0;     // "train": the samples the run trains up to (or to the target)
  int64_t compute_samples = 0;    // samples every run of the campaign had trained when it was decided
  double expected_regret = kNaN;  // the engine's expected regret of the choice (the campaign's end: the worst cap)
  std::string reason;             // in words
  bool operator==(const AdaptiveLogRow& o) const;
};

struct AdaptiveLog {
  std::string name;            // the relation's name
  double tolerance = kNaN;     // the expected regret below which a cap's choice is decided
  int64_t compute_budget = 0;  // samples the campaign may train in all (0: none)
  std::string profile;         // the device profile (or model) whose caps it decided for
  // The other settings a resume must share (experiments::AdaptiveSettings). Stores written before
  // they were recorded hold none: extrapolation "" reads as "ratio" (the default), the others
  // (NaN, 0, "") as not recorded (not checked).
  std::string extrapolation;         // how unfinished runs are extrapolated (explore::AdaptiveExtrapolation)
  double first_round = kNaN;         // round 1: this fraction of the run budget
  double budget_first_share = kNaN;  // with a compute budget, round 1's share of it (0: first_round)
  int caps = 0;                      // caps over the profile's power range
  std::string guard;                 // choices under cap x (1 - guard): "auto" or the fraction
  // The compute budget as asked: "none", "<n> samples" or "<p> % of the full campaign's most"
  // (compute_budget is what it came to); the run budget: samples each run may train at most.
  std::string compute_budget_asked;
  int64_t run_budget = 0;
  std::vector<AdaptiveLogRow> decisions;
  bool operator==(const AdaptiveLog& o) const;
  // The campaign's end ("decided" | "budget" | "rounds"); "" while it runs.
  std::string outcome() const;
  int rounds() const;  // the last round with a decision, 0: none
};

// ---------------------------------------------------------------------------------------------
// A calibrated model: named parameters with standard errors and fit metrics; learned models keep
// their weights as an opaque blob.
struct ModelRecord {
  std::string name;  // "<workload>@<device>:analytical" (no "/" in record names)
  // The name of a ModelKind (traces/kinds.hpp). Kept as text: a store may hold a kind this build
  // cannot rebuild, and export, merge and listing still carry it.
  std::string kind;
  std::string workload;
  std::string device;
  std::vector<std::string> param_names;
  std::vector<double> param_values;
  std::vector<double> param_stderr;
  std::map<std::string, double> metrics;        // "power_mape_cv" -> 2.1 (%), ...
  std::map<std::string, std::string> settings;  // free-form fit settings
  std::vector<uint8_t> blob;                    // serialised weights (learned)
  // Transfer from another board (models::choose_transfer): whether the leave-one-out gate chose,
  // and what it (or the forced prior) fitted: "alone" | "prior" | "prior-scaled-b" when the time and
  // the power model took the same candidate, else "time <candidate>, power <candidate>"; "" without
  // a prior.
  bool transfer_gate = false;
  std::string transfer_choice;
  bool operator==(const ModelRecord&) const;
};

// ---------------------------------------------------------------------------------------------
// Sweep results: per cap and policy, the chosen configuration and its costs.
struct SweepRow {
  double cap_w = kNaN;
  std::string workload;
  std::string policy;
  bool feasible = false;
  std::vector<double> knob;
  int batch_size = 0;
  double predicted_time_s = kNaN;
  double predicted_energy_j = kNaN;
  double replayed_time_mean_s = kNaN;
  double replayed_time_std_s = kNaN;
  double replayed_energy_j = kNaN;
  double regret = kNaN;  // replayed time / oracle replayed time - 1
  // The guard this row's workload chose under (cap x (1 - guard)): each workload of a sweep its own.
  // NaN: a record written before rows kept it (the record's one guard held for every workload).
  double guard = kNaN;
  bool operator==(const SweepRow& o) const;
};

struct SweepResult {
  std::string name;
  std::string profile;      // which profile / model it used
  std::string relation;     // proxy relation
  std::string target;       // target relation (oracle)
  std::string feasibility;  // "peak" | "mean"
  double guard = 0;         // the largest of the rows' guards (each row keeps its workload's own)
  // A sweep of a proxy-budget campaign (explore/proxy_budget.hpp): its name, the cut of the proxy's
  // runs and the share of the proxy's compute the cut used. "", "", NaN for an ordinary sweep.
  std::string budget;
  std::string proxy_cut;
  double proxy_share = kNaN;
  KnobSpace knob = KnobSpace::gpu_frequency();
  std::vector<SweepRow> rows;
  bool operator==(const SweepResult& o) const;
};

// ---------------------------------------------------------------------------------------------
// Validation on a device: each policy's choice (and the oracle's) trained to the target for real.
struct ValidationRow {
  double cap_w = kNaN;
  std::string policy;  // "ours" | "baseline1" | "baseline2" | "oracle" | ...
  std::vector<double> knob;
  int batch_size = 0;
  int seed = 0;
  bool reached = false;         // target reached within the budget
  int64_t samples = 0;          // samples trained
  double device_time_s = kNaN;  // time to accuracy on the device (virtual on an emulated device)
  double wall_time_s = kNaN;    // wall clock of the training process
  double energy_j = kNaN;
  double power_peak_w = kNaN;
  double power_mean_w = kNaN;
  bool cap_exceeded = false;  // any power sample above the cap
  double time_over_cap_s = 0;
  double predicted_time_s = kNaN;
  double predicted_energy_j = kNaN;
  double final_metric = kNaN;
  std::string series;       // name of the PowerSeries under /runs ("" if not kept)
  std::string status;       // "" : ran to the end; "stopped: ..." : the power watchdog stopped it
  std::string node;         // host that ran it (as ProfilePoint::node); "" : no run or not recorded
  std::string board_model;  // the board it ran on (as ProfilePoint::board_model)
  int threads = 0;          // CPU intra-op threads of the training (as RelationRun::threads); 0: not recorded
  // Probe before commit: the choices of this (cap, policy) that the measurement of a chosen point
  // replaced, and why ("b=32, 854.25 MHz: measured peak power 8.020 W above cap x (1 - 0.03) = ...;
  // now b=32, 768 MHz"); "" : the first choice stood.
  std::string probe;
  bool operator==(const ValidationRow& o) const;
};

struct ValidationResult {
  std::string name;
  std::string workload;
  std::string device;
  std::string dataset;  // target data
  std::string metric;
  double target = kNaN;
  bool emulated = false;    // device time is virtual (the emulator's), wall time is the CPU's
  std::string feasibility;  // "peak" | "mean"
  double guard = 0;         // policies chose under cap x (1 - guard)
  KnobSpace knob = KnobSpace::gpu_frequency();
  std::vector<ValidationRow> rows;
  bool operator==(const ValidationResult& o) const;
};

// A validation row's key, (cap, policy, seed, knob, batch size), and the order a validation's
// rows are stored in: a validation written whole and one merged from shards list them alike.
using ValidationRowKey = std::tuple<double, std::string, int, std::vector<double>, int>;
ValidationRowKey row_key(const ValidationRow& row);
void sort_rows(ValidationResult& validation);

// NaN-aware equality used by the record comparisons (NaN == NaN).
bool same(double a, double b);
bool same(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace pacer::traces
