#include "models/mode_model.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>

#include "base/error.hpp"
#include "base/units.hpp"
#include "models/calibrate.hpp"

namespace pacer::models {
namespace {

constexpr const char* kGpuPrefix = "gpu.";

// The cap features of a mode relative to the board's maxima (0 where a cap or maximum is unknown).
struct Features {
  double gpu_hz = 0;     // the GPU clock cap
  double tpc_share = 1;  // powered TPCs / all TPCs
  double cpu_slow = 0;   // cpu_max / cpu_freq - 1
  double emc_slow = 0;   // emc_max / emc_freq - 1
  double host_drop = 0;  // 1 - cores cpu^2 / (cores_max cpu_max^2)
  double emc_drop = 0;   // 1 - emc / emc_max
};

double ratio(double x, double max) {
  return x > 0 && max > 0 ? x / max : 1.0;
}

Features features(const traces::ModeCaps& c, const traces::ModeCaps& top) {
  Features f;
  f.gpu_hz = c.gpu_freq_hz;
  f.tpc_share = c.gpu_tpcs > 0 && top.gpu_tpcs > 0 ? static_cast<double>(c.gpu_tpcs) / top.gpu_tpcs : 1.0;
  const double cpu = ratio(c.cpu_freq_hz, top.cpu_freq_hz), emc = ratio(c.mem_freq_hz, top.mem_freq_hz);
  const double cores = ratio(c.cpu_cores, top.cpu_cores);
  f.cpu_slow = 1.0 / cpu - 1.0;
  f.emc_slow = 1.0 / emc - 1.0;
  f.host_drop = 1.0 - cores * cpu * cpu;
  f.emc_drop = 1.0 - emc;
  return f;
}

std::vector<double> time_columns(const Features& f, int b) {
  return {f.cpu_slow, b * f.cpu_slow, f.emc_slow, b * f.emc_slow};
}
std::vector<double> power_columns(const Features& f) {
  return {-f.host_drop, -f.emc_drop};
}

// The GPU part at clock f with a share s of its TPCs powered (the form fit_analytical fits with
// compute shares): at s = 1 the analytical model at f, bit for bit (fitted without peak readings,
// no peak: NaN, as AnalyticalModel::predict, so a predicted table is on the mean basis).
Prediction gpu_at(const AnalyticalParams& a, double f, double s, int b) {
  const double t = a.time.at(f * s, b);
  const double v = a.voltage.at(f);
  const double work = a.time.work(b);
  const auto power = [&](const PowerParams& p) {
    return p.idle_w + s * (p.leak_w_per_v * v + p.capacitance(b) * f * v * v) +
           (p.busy_j_per_cycle_v2 * v * v * work + p.traffic_j_per_sample * b) / t;
  };
  return {t, a.has_peak ? power(a.power_peak) : traces::kNaN, power(a.power_mean)};
}

}  // namespace

ModeModel::ModeModel(traces::KnobSpace knob, traces::ModeCaps maxima, std::unique_ptr<AnalyticalModel> gpu,
                     ModeTerms terms, traces::ModelRecord record)
    : knob_(std::move(knob)), maxima_(maxima), gpu_(std::move(gpu)), terms_(terms), record_(std::move(record)) {
  if (knob_.kind != traces::KnobKind::power_mode) throw Error("the mode model needs a power_mode knob");
}

Prediction ModeModel::predict(const std::vector<double>& knob, int batch_size) const {
  if (batch_size < 1) throw Error(fmt::format("batch size must be at least 1, got {}", batch_size));
  const Features f = features(traces::knob_caps(knob_, knob), maxima_);
  Prediction p = gpu_at(gpu_->params(), f.gpu_hz, f.tpc_share, batch_size);
  const auto& m = terms_;
  const double b = batch_size;
  p.time_per_batch_s += (m.time_cpu_s + m.time_cpu_per_sample_s * b) * f.cpu_slow +
                        (m.time_emc_s + m.time_emc_per_sample_s * b) * f.emc_slow;
  p.power_mean_w -= m.power_mean_host_w * f.host_drop + m.power_mean_emc_w * f.emc_drop;
  p.power_peak_w -= m.power_peak_host_w * f.host_drop + m.power_peak_emc_w * f.emc_drop;
  return p;
}

namespace {

const std::vector<std::pair<const char*, double ModeTerms::*>> kTermNames = {
    {"mode_time_cpu_s", &ModeTerms::time_cpu_s},
    {"mode_time_cpu_per_sample_s", &ModeTerms::time_cpu_per_sample_s},
    {"mode_time_emc_s", &ModeTerms::time_emc_s},
    {"mode_time_emc_per_sample_s", &ModeTerms::time_emc_per_sample_s},
    {"mode_power_mean_host_w", &ModeTerms::power_mean_host_w},
    {"mode_power_mean_emc_w", &ModeTerms::power_mean_emc_w},
    {"mode_power_peak_host_w", &ModeTerms::power_peak_host_w},
    {"mode_power_peak_emc_w", &ModeTerms::power_peak_emc_w}};

}  // namespace

traces::ModelRecord ModeModel::to_record() const {
  traces::ModelRecord r = record_;
  const auto gpu = gpu_->to_record();
  r.kind = to_string(kind());
  r.param_names.clear();
  r.param_values.clear();
  r.param_stderr.clear();
  const auto add = [&](const std::string& name, double value, double se) {
    r.param_names.push_back(name);
    r.param_values.push_back(value);
    r.param_stderr.push_back(se);
  };
  for (const auto& [name, member] : kTermNames) add(name, terms_.*member, traces::kNaN);
  add("max_cpu_cores", maxima_.cpu_cores, 0);
  add("max_cpu_freq_hz", maxima_.cpu_freq_hz, 0);
  add("max_gpu_freq_hz", maxima_.gpu_freq_hz, 0);
  add("max_mem_freq_hz", maxima_.mem_freq_hz, 0);
  add("max_gpu_tpcs", maxima_.gpu_tpcs, 0);
  for (size_t i = 0; i < gpu.param_names.size(); ++i)
    add(kGpuPrefix + gpu.param_names[i], gpu.param_values[i], gpu.param_stderr[i]);
  for (const auto& [k, v] : gpu.settings) r.settings[kGpuPrefix + k] = v;
  r.settings["knob_dims"] = std::to_string(knob_.dims.size());
  r.settings["mode_form"] =
      "t = t_gpu(f, s, b) + (a0 + a1 b)(cpu_max/cpu - 1) + (m0 + m1 b)(emc_max/emc - 1); "
      "P = P_gpu(f, s, b) - p_host (1 - cores cpu^2/(cores_max cpu_max^2)) - p_emc (1 - emc/emc_max); s = TPC share";
  return r;
}

std::unique_ptr<ModeModel> modes_from_record(const traces::ModelRecord& record) {
  std::map<std::string, double> p;
  traces::ModelRecord gpu;
  gpu.name = record.name + " (GPU part)";
  gpu.kind = to_string(traces::ModelKind::analytical);
  const std::string prefix = kGpuPrefix;
  for (size_t i = 0; i < record.param_names.size() && i < record.param_values.size(); ++i) {
    const auto& n = record.param_names[i];
    if (n.rfind(prefix, 0) == 0) {
      gpu.param_names.push_back(n.substr(prefix.size()));
      gpu.param_values.push_back(record.param_values[i]);
      gpu.param_stderr.push_back(i < record.param_stderr.size() ? record.param_stderr[i] : traces::kNaN);
    } else {
      p[n] = record.param_values[i];
    }
  }
  for (const auto& [k, v] : record.settings)
    if (k.rfind(prefix, 0) == 0) gpu.settings[k.substr(prefix.size())] = v;
  const auto get = [&](const std::string& name) {
    if (!p.count(name))
      throw Error(
          fmt::format("model record '{}' lacks parameter '{}': recalibrate with pacer calibrate", record.name, name));
    return p.at(name);
  };
  traces::ModeCaps top;
  top.cpu_cores = static_cast<int>(get("max_cpu_cores"));
  top.cpu_freq_hz = get("max_cpu_freq_hz");
  top.gpu_freq_hz = get("max_gpu_freq_hz");
  top.mem_freq_hz = get("max_mem_freq_hz");
  top.gpu_tpcs = static_cast<int>(get("max_gpu_tpcs"));
  const auto dims = record.settings.find("knob_dims");
  const traces::KnobSpace knob =
      traces::power_mode_knob(dims == record.settings.end() ? 0 : units::to_integer(dims->second, 0, 16).value_or(0));
  ModeTerms terms;
  for (const auto& [name, member] : kTermNames) terms.*member = get(name);
  return std::make_unique<ModeModel>(knob, top, analytical_from_record(gpu), terms, record);
}

std::unique_ptr<ModeModel> fit_modes(const std::vector<traces::ProfilePoint>& points, const ModeFitOptions& o) {
  FitExtras ex;
  std::vector<traces::ProfilePoint> gpu_points;
  for (const auto& p : points) {
    const Features f = features(traces::knob_caps(o.knob, p.knob), o.maxima);
    ex.compute_share.push_back(f.tpc_share);
    if (o.cap_terms) {
      ex.time_columns.push_back(time_columns(f, p.batch_size));
      ex.power_columns.push_back(power_columns(f));
    }
    traces::ProfilePoint g = p;
    g.knob = {f.gpu_hz};
    gpu_points.push_back(std::move(g));
  }
  auto gpu = fit_analytical(gpu_points, o.analytical, &ex);
  ModeTerms t;
  if (o.cap_terms) {
    t.time_cpu_s = ex.time_coef.at(0), t.time_cpu_per_sample_s = ex.time_coef.at(1);
    t.time_emc_s = ex.time_coef.at(2), t.time_emc_per_sample_s = ex.time_coef.at(3);
    t.power_mean_host_w = ex.power_mean_coef.at(0), t.power_mean_emc_w = ex.power_mean_coef.at(1);
    t.power_peak_host_w = ex.power_peak_coef.at(0), t.power_peak_emc_w = ex.power_peak_coef.at(1);
  }
  traces::ModelRecord record;
  record.kind = to_string(traces::ModelKind::modes);
  record.settings["cap_terms"] = o.cap_terms ? "1" : "0";
  return std::make_unique<ModeModel>(o.knob, o.maxima, std::move(gpu), t, std::move(record));
}

FitFunction mode_fit(const std::vector<traces::ProfilePoint>& used, const std::vector<traces::ProfilePoint>& anchors,
                     const traces::KnobSpace& knob, const traces::DeviceSpec& device,
                     const AnalyticalFitOptions& analytical, std::map<std::string, double>& metrics,
                     std::map<std::string, std::string>& settings) {
  ModeFitOptions base;
  base.knob = knob;
  base.maxima = traces::mode_maxima(device);
  base.analytical = analytical;
  // V(f) of the GPU part: the catalog's table against a fitted one, by cross-validation on the
  // points with every TPC powered, at their GPU clock.
  {
    std::vector<traces::ProfilePoint> gpu;
    for (const auto* set : {&anchors, &used})
      for (auto p : *set) {
        const Features f = features(traces::knob_caps(knob, p.knob), base.maxima);
        if (f.tpc_share < 1) continue;
        p.knob = {f.gpu_hz};
        gpu.push_back(std::move(p));
      }
    std::string why;
    if (gpu.size() >= 5) base.analytical = choose_voltage(gpu, analytical, 0, &why);
    if (!why.empty()) settings["voltage_choice"] = why;
  }
  const auto fit_with = [anchors, base](bool cap_terms) -> FitFunction {
    ModeFitOptions o = base;
    o.cap_terms = cap_terms;
    return [anchors, o](const std::vector<traces::ProfilePoint>& pts) -> std::unique_ptr<DeviceModel> {
      std::vector<traces::ProfilePoint> all = pts;
      all.insert(all.end(), anchors.begin(), anchors.end());
      return fit_modes(all, o);
    };
  };
  std::vector<LomoEntry> lomo;
  double best = std::numeric_limits<double>::infinity();
  bool chosen_terms = true;
  std::string choice = "leave-one-mode-out MAPE time / P mean:";
  for (const bool terms : {false, true}) {
    std::vector<SettingError> per;
    // Each fold trains on the other modes plus the anchors (fit_with adds them): never held out.
    const auto e = cross_validate_settings(used, {}, fit_with(terms), &per);
    const std::string tag = terms ? "caps" : "gpu";
    metrics["time_mape_lomo_" + tag] = e.time_mape;
    metrics["power_mean_mape_lomo_" + tag] = e.power_mean_mape;
    metrics["power_peak_mape_lomo_" + tag] = e.power_peak_mape;
    metrics["lomo_points_" + tag] = e.points;
    choice += fmt::format(" {} {:.3g}% / {:.3g}%;", tag == "gpu" ? "GPU only" : "GPU + cap terms", e.time_mape,
                          e.power_mean_mape);
    const double score = e.time_mape + e.power_mean_mape;
    if (std::isfinite(score) && score < best) {
      best = score;
      chosen_terms = terms;
    }
    for (const auto& s : per) lomo.push_back({terms, s.knob, s.error.time_mape, s.error.power_mean_mape});
  }
  const std::string tag = chosen_terms ? "caps" : "gpu";
  for (const char* what : {"time", "power_mean", "power_peak"})
    metrics[std::string(what) + "_mape_lomo"] = metrics[std::string(what) + "_mape_lomo_" + tag];
  settings["mode_choice"] =
      choice + (std::isfinite(best) ? fmt::format(" -> {}", chosen_terms ? "GPU + cap terms" : "GPU only")
                                    : " -> GPU + cap terms (too few modes to cross-validate)");
  write_lomo(lomo, settings);
  return fit_with(chosen_terms);
}

void write_lomo(const std::vector<LomoEntry>& entries, std::map<std::string, std::string>& settings) {
  std::string text;
  for (const auto& e : entries)
    text += fmt::format("{}{}|{}|{:.4g}|{:.4g}", text.empty() ? "" : ";", e.cap_terms ? "caps" : "gpu",
                        fmt::join(e.knob, ","), e.time_mape, e.power_mean_mape);
  settings["lomo_per_mode"] = text;
  settings["lomo_format"] = "candidate|knob|time_mape|power_mean_mape (percent, the mode held out)";
}

std::vector<LomoEntry> read_lomo(const traces::ModelRecord& record) {
  std::vector<LomoEntry> out;
  const auto it = record.settings.find("lomo_per_mode");
  if (it == record.settings.end()) return out;
  const auto number = [](const std::string& t) { return units::to_number(t).value_or(traces::kNaN); };
  std::stringstream items(it->second);
  for (std::string item; std::getline(items, item, ';');) {
    std::vector<std::string> f;
    std::stringstream fields(item);
    for (std::string x; std::getline(fields, x, '|');) f.push_back(x);
    if (f.size() != 4) continue;
    LomoEntry e;
    e.cap_terms = f[0] == "caps";
    std::stringstream ks(f[1]);
    for (std::string x; std::getline(ks, x, ',');) e.knob.push_back(number(x));
    e.time_mape = number(f[2]);
    e.power_mean_mape = number(f[3]);
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<traces::ProfilePoint> sweep_as_mode_points(const std::vector<traces::ProfilePoint>& sweep,
                                                       const traces::KnobSpace& knob, const traces::ModeCaps& maxima) {
  std::vector<traces::ProfilePoint> out;
  for (auto p : sweep) {
    if (p.knob.size() != 1) throw Error("a frequency profile's points have one knob value (the GPU clock)");
    traces::ModeCaps c = maxima;
    c.gpu_freq_hz = p.knob[0];
    p.knob = traces::caps_knob(c, knob);
    out.push_back(std::move(p));
  }
  return out;
}

std::string lomo_warning(const traces::ModelRecord& record) {
  std::vector<std::string> large;
  for (const char* target : {"time", "power_mean", "power_peak"}) {
    const auto it = record.metrics.find(std::string(target) + "_mape_lomo");
    if (it != record.metrics.end() && it->second > kLargeLomoErrorPct)
      large.push_back(fmt::format("{} {:.3g}%", target, it->second));
  }
  if (large.empty()) return "";
  return fmt::format(
      "the leave-one-mode-out error is large ({}; above {:g}%): the model predicts modes it did not see poorly, "
      "so its predicted table may rank modes wrongly; profile more modes before relying on it",
      fmt::join(large, ", "), kLargeLomoErrorPct);
}

}  // namespace pacer::models
