#pragma once
// The emulated Jetson: a catalog device (frequency table, V(f), idle and peak power, CUDA cores,
// memory bandwidth) driven by a cost model, with the non-idealities a real board shows and the
// analytical model lacks: a voltage floor, a memory-bound share that varies with b, sensor noise
// and sampling period, optional thermal drift and a circuit-level power cap that throttles the
// GPU clock like the real governor. Every parameter and its source: docs/hardware.md.
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "hw/device.hpp"
#include "models/device_model.hpp"
#include "traces/catalog/power_modes.hpp"
#include "traces/emulated_label.hpp"
#include "traces/records.hpp"
#include "traces/workload.hpp"

namespace pacer::hw {

// Physics of one workload on one device. Defaults are documented in docs/hardware.md.
struct PhysicsParams {
  double launch_overhead_s = 4e-3;   // per mini-batch: kernel launches, optimizer step, host code (assumed)
  double compute_efficiency = 0.30;  // share of peak FLOP/s a training kernel mix sustains at full occupancy (assumed)
  double occupancy_half_batch = 8;   // b at which occupancy reaches half its maximum (assumed)
  double memory_efficiency = 0.60;   // share of the data-sheet DRAM bandwidth reached (assumed)
  double overlap = 0.5;              // share of the shorter of compute/memory time hidden under the longer (assumed)
  // V(f) when the catalog has no voltage table: max(v_floor, v0 + slope * f) (assumed, shaped like GM20B).
  double v_floor_v = 0.80;
  double v0_v = 0.45;
  double v_slope_v_per_ghz = 0.60;
  // Split of the catalog's (max_power_w - idle_power_w) headroom at full activity (assumed).
  double gpu_dynamic_share = 0.55;
  double leakage_share = 0.10;
  double memory_share = 0.15;
  double host_cpu_share = 0.20;
};

// V(f) from the catalog table (interpolated, floored at its first entry) or from the assumed curve.
double gpu_voltage_v(const traces::DeviceSpec& device, const PhysicsParams& params, double freq_hz);

// What one mini-batch does, with the parts the power and rail models need.
struct BatchPhysics {
  double time_s = 0;
  double compute_time_s = 0;
  double memory_time_s = 0;
  double occupancy = 0;         // 0..1
  double power_mean_w = 0;      // module total averaged over the batch
  double power_peak_w = 0;      // module total during the compute phase
  double gpu_power_mean_w = 0;  // GPU rail share of power_mean_w
  double cpu_power_w = 0;       // host CPU share
  double memory_power_w = 0;    // DRAM share
};

// The default physics: time from FLOPs and bytes per sample against the device's peak at f and its
// bandwidth; P = P_idle + k_leak V + C_eff u f V^2 + memory + host. A models::DeviceModel, so it is
// interchangeable with a calibrated model of a real board.
class WorkloadPhysics final : public models::DeviceModel {
 public:
  WorkloadPhysics(traces::DeviceSpec device, traces::WorkloadInfo workload, PhysicsParams params = {});
  traces::ModelKind kind() const override { return traces::ModelKind::emulated_physics; }
  const traces::KnobSpace& knob() const override { return knob_; }
  models::Prediction predict(const std::vector<double>& knob, int batch_size) const override;
  traces::ModelRecord to_record() const override;

  // At the GPU clock `freq_hz` with every other cap at the board's maximum.
  BatchPhysics batch(double freq_hz, int batch_size) const;
  // Under a power mode's caps: the GPU at caps.gpu_freq_hz with caps.gpu_tpcs of its TPCs powered,
  // the memory at caps.mem_freq_hz, caps.cpu_cores CPUs at caps.cpu_freq_hz (docs/hardware.md,
  // "Power modes"). A cap of 0 is the board's maximum.
  BatchPhysics batch(const traces::ModeCaps& caps, int batch_size) const;
  const traces::ModeCaps& maxima() const { return maxima_; }
  const traces::DeviceSpec& device() const { return device_; }
  const traces::WorkloadInfo& workload() const { return workload_; }
  const PhysicsParams& params() const { return params_; }

 private:
  traces::DeviceSpec device_;
  traces::WorkloadInfo workload_;
  PhysicsParams params_;
  traces::KnobSpace knob_ = traces::KnobSpace::gpu_frequency();
  double c_eff_f_ = 0;     // switched capacitance at full activity [F]
  double k_leak_w_v_ = 0;  // leakage power per volt [W/V]
  double mem_w_per_bps_ = 0;
  double host_w_ = 0;
  traces::ModeCaps maxima_;  // the board's caps (catalog modes); 0 where unknown
};

// Non-idealities of the board and its sensor (documented in docs/hardware.md).
struct EmulatorOptions {
  double sensor_noise_rel = 0.02;           // Gaussian sigma of a power reading, relative (assumed)
  double sensor_period_s = 0.0;             // the INA3221 updates every period; 0 = continuous (assumed)
  double time_jitter_rel = 0.01;            // Gaussian sigma of a mini-batch time, relative (assumed)
  double power_cap_w = 0;                   // circuit-level cap: 0 = none; above it the clock steps down
  bool thermal_drift = false;               // leakage rises with die temperature (first-order RC)
  double ambient_c = 25;                    // (assumed)
  double thermal_resistance_c_per_w = 4.0;  // junction-to-ambient with heatsink (assumed)
  double thermal_time_constant_s = 60;      // (assumed)
  double leakage_per_c = 0.01;              // relative leakage increase per degree (assumed)
  double compute_phase_share = 0.5;  // share of a batch at peak power, the rest so the mean holds; 1: flat at the mean
  uint64_t seed = 1;
  // The knob: gpu_freq (pin a GPU clock) or power_mode (set one of the device's nvpmodel modes;
  // clocks then run at most at the mode's caps, the GPU at its cap while loaded).
  traces::KnobKind knob = traces::KnobKind::gpu_freq;
};

// One emulated board in virtual time: run_batch() advances the clock by the model's time.
class EmulatedJetson final : public Device {
 public:
  // `model` predicts (f, b); null: WorkloadPhysics of `workload` (required then).
  EmulatedJetson(traces::DeviceSpec device, std::shared_ptr<const models::DeviceModel> model,
                 EmulatorOptions options = {});
  static std::unique_ptr<EmulatedJetson> with_workload(const traces::DeviceSpec& device,
                                                       const traces::WorkloadInfo& workload,
                                                       EmulatorOptions options = {}, PhysicsParams params = {});

  std::string name() const override { return device_.name + std::string(traces::emulated_mark(true)); }
  std::string board_model() const override { return device_.display_name; }
  bool emulated() const override { return true; }
  const traces::KnobSpace& knob() const override { return knob_; }
  std::vector<std::vector<double>> settings() const override;
  void pin(const std::vector<double>& setting) override;
  std::vector<double> current() const override;
  PowerReading read_power() override { return power_at(point_s_); }
  std::vector<std::string> power_rails() const override;
  void restore() override;
  double temperature_c() const override { return temperature_c_; }

  // The governor's clock for a running batch of size b: the pinned clock, stepped down while the
  // predicted power exceeds the circuit cap.
  double effective_freq_hz(int batch_size) const;
  // Runs one mini-batch in virtual time; returns its duration.
  double run_batch(int batch_size);
  void idle(double duration_s);
  // Virtual time since the board was made.
  double now_s() const { return origin_s_ + point_s_; }
  // A profile point starts at `setting` and batch size b: its noise becomes the stream of (seed,
  // setting, b) and its clock (point_s) restarts at 0, so what the point measures does not depend
  // on the points measured before it (a resumed profile measures what an uninterrupted one did).
  // Only the die temperature carries over (thermal drift, when on, is a history by design).
  void start_point(const std::vector<double>& setting, int batch_size);
  // Virtual time since the current point started (since the board was made before any point):
  // the clock power_at reads.
  double point_s() const { return point_s_; }
  // A sensor reading at point time t (inside the last batches or the idle tail).
  PowerReading power_at(double t_s);
  // Noise-free expectation at (f, b) (for tests and the HIL tree).
  models::Prediction expected(double freq_hz, int batch_size) const;
  // GPU-rail share of the expected module power at (f, b).
  double expected_gpu_w(double freq_hz, int batch_size) const;
  // The caps in force besides the GPU clock (CPU cores and clock, EMC clock, GPU TPCs): a mode's
  // after pin() of a power mode; the live tree sets them from the files nvpmodel writes.
  void set_caps(const traces::ModeCaps& caps);
  const traces::ModeCaps& caps() const { return caps_; }
  // Splits a module power into the board's rails (name -> W), for the fake sysfs tree.
  std::vector<std::pair<std::string, double>> rail_powers(double total_w, double gpu_w) const;

  const traces::DeviceSpec& device() const { return device_; }
  const models::DeviceModel& model() const { return *model_; }
  const EmulatorOptions& options() const { return options_; }
  double pinned_freq_hz() const { return pinned_hz_; }

 private:
  struct Segment {
    double start_s, end_s;
    double peak_w, low_w, gpu_w;
  };
  double drift_factor() const;

  traces::DeviceSpec device_;
  std::shared_ptr<const models::DeviceModel> model_;
  EmulatorOptions options_;
  traces::KnobSpace knob_ = traces::KnobSpace::gpu_frequency();
  double pinned_hz_ = 0;
  double default_hz_ = 0;
  traces::ModeCaps caps_;  // in force; starts at the board's maxima
  traces::ModeCaps default_caps_;
  std::vector<double> mode_knob_;  // power_mode knob: the mode in force
  std::vector<double> default_mode_;
  int load_batch_ = 0;
  double origin_s_ = 0;  // virtual time at which the current point started
  double point_s_ = 0;   // virtual time since then
  double temperature_c_ = 25;
  std::vector<Segment> segments_;  // recent batches, for sensor reads inside them
  std::mt19937_64 rng_;
  double sensor_value_time_s_ = -1;
  PowerReading sensor_value_;
};

}  // namespace pacer::hw
