#include "hw/emulator/emulated.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/error.hpp"
#include "base/hash.hpp"
#include "base/units.hpp"

namespace pacer::hw {

double gpu_voltage_v(const traces::DeviceSpec& device, const PhysicsParams& params, double freq_hz) {
  const auto& table = device.voltage_table;
  if (table.empty()) return std::max(params.v_floor_v, params.v0_v + params.v_slope_v_per_ghz * freq_hz / 1e9);
  if (freq_hz <= table.front().freq_hz) return table.front().volt_v;
  if (freq_hz >= table.back().freq_hz) return table.back().volt_v;
  for (size_t i = 1; i < table.size(); ++i)
    if (freq_hz <= table[i].freq_hz) {
      const double w = (freq_hz - table[i - 1].freq_hz) / (table[i].freq_hz - table[i - 1].freq_hz);
      return table[i - 1].volt_v + w * (table[i].volt_v - table[i - 1].volt_v);
    }
  return table.back().volt_v;
}

WorkloadPhysics::WorkloadPhysics(traces::DeviceSpec device, traces::WorkloadInfo workload, PhysicsParams params)
    : device_(std::move(device)), workload_(std::move(workload)), params_(params) {
  if (device_.gpu_freqs_hz.empty() || device_.cuda_cores <= 0 || device_.mem_bandwidth_bytes_s <= 0)
    throw Error(
        fmt::format("device '{}' lacks a frequency table, cuda_cores or mem_bandwidth_gbs: the emulator "
                    "needs them (add them to its device file)",
                    device_.name));
  if (!(workload_.flops_per_sample > 0))
    throw Error(fmt::format("workload '{}' has no FLOP count per sample: the emulator cannot time it", workload_.name));
  const double f_max = device_.max_freq_hz();
  const double v_max = gpu_voltage_v(device_, params_, f_max);
  double headroom_w = device_.max_power_w - device_.idle_power_w;
  // Without a catalog peak, assume the board's load power is four times its idle (assumed).
  if (!(headroom_w > 0)) headroom_w = 3.0 * std::max(device_.idle_power_w, 1.0);
  c_eff_f_ = params_.gpu_dynamic_share * headroom_w / (f_max * v_max * v_max);
  k_leak_w_v_ = params_.leakage_share * headroom_w / v_max;
  mem_w_per_bps_ = params_.memory_share * headroom_w / (params_.memory_efficiency * device_.mem_bandwidth_bytes_s);
  host_w_ = params_.host_cpu_share * headroom_w;
  maxima_ = traces::mode_maxima(device_);
}

namespace {

// A cap as a share of the board's maximum; 1 where either is unknown.
double share(double cap, double max) {
  return cap > 0 && max > 0 ? cap / max : 1.0;
}

}  // namespace

BatchPhysics WorkloadPhysics::batch(double freq_hz, int batch_size) const {
  traces::ModeCaps caps = maxima_;
  caps.gpu_freq_hz = freq_hz;
  return batch(caps, batch_size);
}

BatchPhysics WorkloadPhysics::batch(const traces::ModeCaps& caps, int batch_size) const {
  if (batch_size <= 0) throw Error(fmt::format("batch size must be positive, got {}", batch_size));
  const double freq_hz = caps.gpu_freq_hz > 0 ? caps.gpu_freq_hz : device_.max_freq_hz();
  // Power-gated TPCs neither compute nor switch nor leak; a lower EMC clock lowers the bandwidth in
  // proportion; host code per step runs on one CPU at its clock; host power follows the online
  // cores and the square of their clock (voltage rises with it). All assumed (docs/hardware.md).
  const double tpc = share(caps.gpu_tpcs, maxima_.gpu_tpcs);
  const double mem = share(caps.mem_freq_hz, maxima_.mem_freq_hz);
  const double cpu = share(caps.cpu_freq_hz, maxima_.cpu_freq_hz);
  const double cores = share(caps.cpu_cores, maxima_.cpu_cores);
  const double b = batch_size;
  BatchPhysics r;
  r.occupancy = b / (b + params_.occupancy_half_batch);
  const double sustained_flops = device_.peak_flops(freq_hz) * params_.compute_efficiency * r.occupancy * tpc;
  r.compute_time_s = b * workload_.flops_per_sample / sustained_flops;
  const double bytes = b * workload_.bytes_per_sample + workload_.weight_bytes;
  r.memory_time_s = bytes / (params_.memory_efficiency * device_.mem_bandwidth_bytes_s * mem);
  const double longer = std::max(r.compute_time_s, r.memory_time_s);
  const double shorter = std::min(r.compute_time_s, r.memory_time_s);
  r.time_s = params_.launch_overhead_s / cpu + longer + (1.0 - params_.overlap) * shorter;

  const double v = gpu_voltage_v(device_, params_, freq_hz);
  const double dyn_full_w = c_eff_f_ * r.occupancy * freq_hz * v * v * tpc;
  const double busy = std::min(1.0, r.compute_time_s / r.time_s);
  const double leak_w = k_leak_w_v_ * v * tpc;
  r.memory_power_w = mem_w_per_bps_ * bytes / r.time_s;
  r.cpu_power_w = host_w_ * cores * cpu * cpu;
  r.power_mean_w = device_.idle_power_w + leak_w + dyn_full_w * busy + r.memory_power_w + r.cpu_power_w;
  r.power_peak_w = device_.idle_power_w + leak_w + dyn_full_w + r.memory_power_w + r.cpu_power_w;
  // The GPU rail carries the GPU's own idle share (15% of module idle, assumed).
  r.gpu_power_mean_w = 0.15 * device_.idle_power_w + leak_w + dyn_full_w * busy;
  return r;
}

models::Prediction WorkloadPhysics::predict(const std::vector<double>& knob, int batch_size) const {
  if (knob.size() != 1) throw Error("the emulated Jetson's knob is one GPU frequency");
  const auto p = batch(knob[0], batch_size);
  return {p.time_s, p.power_peak_w, p.power_mean_w};
}

traces::ModelRecord WorkloadPhysics::to_record() const {
  traces::ModelRecord r;
  r.name = workload_.name + "@" + device_.name + "/" + std::string(to_string(kind()));
  r.kind = to_string(kind());
  r.workload = workload_.name;
  r.device = device_.name;
  const std::vector<std::pair<std::string, double>> params = {{"launch_overhead_s", params_.launch_overhead_s},
                                                              {"compute_efficiency", params_.compute_efficiency},
                                                              {"occupancy_half_batch", params_.occupancy_half_batch},
                                                              {"memory_efficiency", params_.memory_efficiency},
                                                              {"overlap", params_.overlap},
                                                              {"c_eff_f", c_eff_f_},
                                                              {"k_leak_w_per_v", k_leak_w_v_},
                                                              {"memory_w_per_byte_s", mem_w_per_bps_},
                                                              {"host_cpu_w", host_w_},
                                                              {"idle_power_w", device_.idle_power_w},
                                                              {"flops_per_sample", workload_.flops_per_sample},
                                                              {"bytes_per_sample", workload_.bytes_per_sample},
                                                              {"weight_bytes", workload_.weight_bytes}};
  for (const auto& [k, v] : params) {
    r.param_names.push_back(k);
    r.param_values.push_back(v);
    r.param_stderr.push_back(0);
  }
  r.settings["source"] = "hw/emulator/emulated.cpp default physics (docs/hardware.md)";
  return r;
}

// ---------------------------------------------------------------------------------------------

EmulatedJetson::EmulatedJetson(traces::DeviceSpec device, std::shared_ptr<const models::DeviceModel> model,
                               EmulatorOptions options)
    : device_(std::move(device)), model_(std::move(model)), options_(options), rng_(options.seed) {
  if (!model_) throw Error("the emulated Jetson needs a cost model (a workload or a calibrated DeviceModel)");
  if (device_.gpu_freqs_hz.empty())
    throw Error(fmt::format("device '{}' has no GPU frequency table to emulate", device_.name));
  default_hz_ = pinned_hz_ = device_.max_freq_hz();
  default_caps_ = caps_ = traces::mode_maxima(device_);
  temperature_c_ = options_.ambient_c;
  const bool mode_model = model_->knob().kind == traces::KnobKind::power_mode;
  if (options_.knob == traces::KnobKind::power_mode) {
    knob_ = traces::power_mode_knob(device_);
    const auto modes = traces::mode_settings(device_);  // throws for a device without complete modes
    if (mode_model && !(model_->knob() == knob_))
      throw Error(fmt::format("model '{}' has a power-mode knob of {} dimensions; {}'s modes have {}", model_->kind(),
                              model_->knob().dims.size(), device_.name, knob_.dims.size()));
    default_mode_ = modes.front();
    pin(default_mode_);
    default_caps_ = caps_;
    default_hz_ = pinned_hz_;
  } else if (options_.knob != traces::KnobKind::gpu_freq) {
    throw OptionError("knob", fmt::format("'{}' is not gpu_freq or power_mode", options_.knob));
  } else if (mode_model || model_->knob().dims.size() != 1) {
    throw Error(
        fmt::format("the emulated Jetson's GPU-frequency knob needs a one-dimensional frequency model, '{}' "
                    "has a {} knob: emulate its power modes instead",
                    model_->kind(), model_->knob().kind));
  }
}

std::unique_ptr<EmulatedJetson> EmulatedJetson::with_workload(const traces::DeviceSpec& device,
                                                              const traces::WorkloadInfo& workload,
                                                              EmulatorOptions options, PhysicsParams params) {
  return std::make_unique<EmulatedJetson>(device, std::make_shared<WorkloadPhysics>(device, workload, params), options);
}

std::vector<std::vector<double>> EmulatedJetson::settings() const {
  if (knob_.kind == traces::KnobKind::power_mode) return traces::mode_settings(device_);
  std::vector<std::vector<double>> out;
  for (double f : device_.gpu_freqs_hz) out.push_back({f});
  return out;
}

void EmulatedJetson::pin(const std::vector<double>& setting) {
  const auto& fs = device_.gpu_freqs_hz;
  if (knob_.kind == traces::KnobKind::power_mode) {
    if (!traces::find_mode(device_, setting))
      throw Error(fmt::format("{} is not a power mode of {} (pacer devices show {} lists them)", knob_.format(setting),
                              device_.name, device_.name));
    mode_knob_ = setting;
    set_caps(traces::knob_caps(knob_, setting));
    // Under load the GPU governor runs at the top of the range the mode allows.
    pinned_hz_ = fs.front();
    for (double f : fs)
      if (f <= caps_.gpu_freq_hz * (1 + 1e-9)) pinned_hz_ = f;
    segments_.clear();
    return;
  }
  if (setting.size() != 1)
    throw Error(fmt::format("a Jetson GPU setting is one frequency, got {} values", setting.size()));
  const auto it = std::find_if(fs.begin(), fs.end(), [&](double f) { return std::abs(f - setting[0]) < 0.5; });
  if (it == fs.end())
    throw Error(
        fmt::format("{} is not in the frequency table of {} ({} .. {}); pick one of them (pacer devices show {})",
                    units::format(setting[0], units::Dimension::Frequency), device_.name,
                    units::format(fs.front(), units::Dimension::Frequency),
                    units::format(fs.back(), units::Dimension::Frequency), device_.name));
  pinned_hz_ = *it;
  segments_.clear();
}

std::vector<double> EmulatedJetson::current() const {
  if (knob_.kind == traces::KnobKind::power_mode) return mode_knob_;
  return {effective_freq_hz(load_batch_ > 0 ? load_batch_ : 1)};
}

void EmulatedJetson::set_caps(const traces::ModeCaps& caps) {
  caps_ = caps;
  segments_.clear();
}

void EmulatedJetson::restore() {
  if (knob_.kind == traces::KnobKind::power_mode) mode_knob_ = default_mode_;
  pinned_hz_ = default_hz_;
  caps_ = default_caps_;
  segments_.clear();
}

std::vector<std::string> EmulatedJetson::power_rails() const {
  std::vector<std::string> out;
  if (!device_.total_rail.empty())
    out.push_back(device_.total_rail);
  else
    for (const auto& r : device_.rails)
      if (r.role != "nc") out.push_back(r.name);
  if (!device_.gpu_rail.empty()) out.push_back("gpu:" + device_.gpu_rail);
  return out;
}

double EmulatedJetson::drift_factor() const {
  if (!options_.thermal_drift) return 1.0;
  // Only leakage grows with temperature; leakage is roughly a tenth of the load power (docs/hardware.md).
  return 1.0 + 0.1 * options_.leakage_per_c * (temperature_c_ - options_.ambient_c);
}

models::Prediction EmulatedJetson::expected(double freq_hz, int batch_size) const {
  traces::ModeCaps caps = caps_;
  caps.gpu_freq_hz = freq_hz;
  if (model_->knob().kind == traces::KnobKind::power_mode)
    return model_->predict(traces::caps_knob(caps, model_->knob()), batch_size);
  if (const auto* phys = dynamic_cast<const WorkloadPhysics*>(model_.get())) {
    const auto p = phys->batch(caps, batch_size);
    return {p.time_s, p.power_peak_w, p.power_mean_w};
  }
  return model_->predict({freq_hz}, batch_size);
}

double EmulatedJetson::expected_gpu_w(double freq_hz, int batch_size) const {
  if (const auto* phys = dynamic_cast<const WorkloadPhysics*>(model_.get())) {
    traces::ModeCaps caps = caps_;
    caps.gpu_freq_hz = freq_hz;
    return phys->batch(caps, batch_size).gpu_power_mean_w;
  }
  // A calibrated model has no rail split: half the load above idle on the GPU rail (assumed).
  const double mean = expected(freq_hz, batch_size).power_mean_w;
  return 0.15 * device_.idle_power_w + 0.5 * std::max(0.0, mean - device_.idle_power_w);
}

double EmulatedJetson::effective_freq_hz(int batch_size) const {
  if (options_.power_cap_w <= 0) return pinned_hz_;
  const auto& fs = device_.gpu_freqs_hz;
  // The governor steps down one table entry at a time until the rail stays under the cap.
  for (auto it = std::find(fs.rbegin(), fs.rend(), pinned_hz_); it != fs.rend(); ++it)
    if (expected(*it, batch_size).power_mean_w * drift_factor() <= options_.power_cap_w) return *it;
  return fs.front();
}

double EmulatedJetson::run_batch(int batch_size) {
  load_batch_ = batch_size;
  const double f = effective_freq_hz(batch_size);
  const auto p = expected(f, batch_size);
  std::normal_distribution<double> n01(0.0, 1.0);
  const double t = p.time_per_batch_s * std::max(0.2, 1.0 + options_.time_jitter_rel * n01(rng_));
  const double drift = drift_factor();
  const double mean = p.power_mean_w * drift;
  const double peak = (std::isnan(p.power_peak_w) ? p.power_mean_w : p.power_peak_w) * drift;
  const double s = std::clamp(options_.compute_phase_share, 0.05, 1.0);
  // share 1: no phases, the batch draws its mean power throughout (peak == mean).
  const double high = s >= 1.0 ? mean : peak;
  const double low = s >= 1.0 ? mean : std::max(0.0, (mean - s * peak) / (1.0 - s));
  const double gpu_w = expected_gpu_w(f, batch_size) * drift;
  segments_.push_back({point_s_, point_s_ + t, high, low, gpu_w});
  if (segments_.size() > 4096) segments_.erase(segments_.begin(), segments_.begin() + 2048);
  if (options_.thermal_drift) {
    const double target = options_.ambient_c + options_.thermal_resistance_c_per_w * mean;
    temperature_c_ = target + (temperature_c_ - target) * std::exp(-t / options_.thermal_time_constant_s);
  }
  point_s_ += t;
  return t;
}

void EmulatedJetson::idle(double duration_s) {
  load_batch_ = 0;
  if (options_.thermal_drift) {
    const double target = options_.ambient_c + options_.thermal_resistance_c_per_w * device_.idle_power_w;
    temperature_c_ = target + (temperature_c_ - target) * std::exp(-duration_s / options_.thermal_time_constant_s);
  }
  point_s_ += duration_s;
}

void EmulatedJetson::start_point(const std::vector<double>& setting, int batch_size) {
  rng_.seed(base::stream_seed(options_.seed, setting, batch_size));
  origin_s_ += point_s_;
  point_s_ = 0;
  segments_.clear();
  sensor_value_time_s_ = -1;
}

PowerReading EmulatedJetson::power_at(double t_s) {
  if (options_.sensor_period_s > 0) {
    // The INA3221 converts once per period; reads in between return the held value.
    const double held_at = std::floor(t_s / options_.sensor_period_s) * options_.sensor_period_s;
    if (held_at == sensor_value_time_s_) return sensor_value_;
    t_s = held_at;
  }
  double total = device_.idle_power_w, gpu = 0.15 * device_.idle_power_w;
  const auto it =
      std::upper_bound(segments_.begin(), segments_.end(), t_s, [](double t, const Segment& s) { return t < s.end_s; });
  if (it != segments_.end() && it->start_s <= t_s) {
    const double phase = (t_s - it->start_s) / std::max(1e-12, it->end_s - it->start_s);
    total = phase < options_.compute_phase_share ? it->peak_w : it->low_w;
    gpu = it->gpu_w;
  }
  std::normal_distribution<double> n01(0.0, 1.0);
  PowerReading r;
  r.total_w = std::max(0.0, total * (1.0 + options_.sensor_noise_rel * n01(rng_)));
  if (!device_.gpu_rail.empty()) r.gpu_w = std::max(0.0, gpu * (1.0 + options_.sensor_noise_rel * n01(rng_)));
  if (options_.sensor_period_s > 0) {
    sensor_value_time_s_ = t_s;
    sensor_value_ = r;
  }
  return r;
}

std::vector<std::pair<std::string, double>> EmulatedJetson::rail_powers(double total_w, double gpu_w) const {
  std::vector<std::pair<std::string, double>> out;
  const bool has_total = !device_.total_rail.empty();
  // With a total rail, the other rails miss regulator losses and unmeasured loads (15%, assumed);
  // without one, the rails must add up to the module power because that is how it is measured.
  double rest = (has_total ? 0.85 * total_w : total_w) - (device_.gpu_rail.empty() ? 0.0 : gpu_w);
  rest = std::max(0.0, rest);
  auto weight = [](const std::string& role) {
    if (role == "cpu") return 0.45;
    if (role == "mem") return 0.2;
    if (role == "soc") return 0.2;
    return 0.15;
  };
  double wsum = 0;
  for (const auto& r : device_.rails)
    if (r.role != "nc" && r.name != device_.total_rail && r.name != device_.gpu_rail) wsum += weight(r.role);
  for (const auto& r : device_.rails) {
    if (r.role == "nc")
      out.emplace_back(r.name, 0.0);
    else if (r.name == device_.total_rail)
      out.emplace_back(r.name, total_w);
    else if (r.name == device_.gpu_rail)
      out.emplace_back(r.name, gpu_w);
    else
      out.emplace_back(r.name, wsum > 0 ? rest * weight(r.role) / wsum : 0.0);
  }
  return out;
}

}  // namespace pacer::hw
