#include "experiments/campaigns/calibration.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <set>
#include <sstream>
#include <vector>

#include "base/error.hpp"
#include "base/json.hpp"
#include "models/mode_model.hpp"
#include "models/uncertainty.hpp"
#include "traces/catalog/catalog.hpp"
#include "traces/catalog/power_modes.hpp"
#include "traces/store/outputs.hpp"
#include "traces/store/store.hpp"

namespace pacer::experiments {
namespace {

using traces::KnobKind;

// Every output before the fit: the store the model goes to, its name, the predictions CSV.
void check_outputs(const CalibrationRequest& r) {
  traces::check_store_output(r.store, "store", traces::StoreCreation::must_exist);
  if (r.model_name) traces::check_record_name_option("models", *r.model_name, "model-name");
  if (r.predictions_csv) traces::check_output_file(*r.predictions_csv, "predictions-csv");
}

std::string pick_profile(const traces::Store& store, const std::optional<std::string>& name) {
  const auto names = store.list<traces::ProfileTable>();
  if (name) {
    if (!store.has<traces::ProfileTable>(*name))
      throw Error(fmt::format("{} has no profile '{}' (it has: {})", store.path().string(), *name,
                              names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "))));
    return *name;
  }
  // The predicted tables calibration writes are not measurements: never pick one by default.
  std::vector<std::string> measured;
  for (const auto& n : names)
    if (!models::is_predicted_profile_name(n)) measured.push_back(n);
  if (measured.size() == 1) return measured.front();
  if (measured.empty()) throw Error(fmt::format("{} holds no profile: run pacer profile first", store.path().string()));
  throw OptionError("name", fmt::format("{} holds several profiles ({}); name one", store.path().string(),
                                        fmt::join(measured, ", ")));
}

// The request's device, else the store's /device, else the catalog entry a GPU-frequency profile names.
std::optional<traces::DeviceSpec> resolve_device(const CalibrationRequest& r, const traces::Store& store,
                                                 const traces::ProfileTable& table) {
  if (r.device) return traces::find_device(*r.device);
  if (store.has_device()) return store.read_device();
  if (table.knob.kind == KnobKind::gpu_freq && !table.device.empty()) {
    try {
      return traces::find_device(table.device);
    } catch (const Error&) {
      spdlog::warn("device '{}' is not in the catalog: frequencies are not checked and V(f) is fitted", table.device);
    }
  }
  return std::nullopt;
}

// The profiles a fit reads beside the calibrated one: a learned model's reference, the modes
// model's GPU-frequency sweep.
struct ExtraProfiles {
  std::optional<traces::ProfileTable> reference, frequency_profile, prior;
  std::optional<traces::DeviceSpec> prior_device;
};

// A profile named "NAME" (in `store`) or "FILE.h5:NAME" (another store), for option `setting`.
traces::ProfileTable read_named_profile(const std::string& ref, const traces::Store& store, const std::string& path,
                                        const std::string& setting) {
  const auto colon = ref.rfind(':');
  if (colon != std::string::npos && ref.find(".h5") != std::string::npos) {
    const auto other = traces::Store::open(ref.substr(0, colon));
    if (!other.has<traces::ProfileTable>(ref.substr(colon + 1)))
      throw SettingError(setting, fmt::format("{} has no profile '{}'", ref.substr(0, colon), ref.substr(colon + 1)));
    return other.read<traces::ProfileTable>(ref.substr(colon + 1));
  }
  if (!store.has<traces::ProfileTable>(ref)) throw SettingError(setting, fmt::format("{} has no profile '{}'", path, ref));
  return store.read<traces::ProfileTable>(ref);
}

ExtraProfiles read_extra_profiles(const CalibrationRequest& r, const traces::Store& store) {
  ExtraProfiles out;
  const std::string path = r.store.string();
  if (r.reference) out.reference = read_named_profile(*r.reference, store, path, "reference");
  if (r.prior) {
    out.prior = read_named_profile(*r.prior, store, path, "prior");
    try {
      out.prior_device = traces::find_device(out.prior->device);
    } catch (const Error&) {
      spdlog::warn("prior's device '{}' is not in the catalog: its V(f) is fitted and f_max is its highest clock",
                   out.prior->device);
    }
  }
  if (r.frequency_profile) {
    const std::string& fp = *r.frequency_profile;
    if (!store.has<traces::ProfileTable>(fp))
      throw SettingError("frequency-profile", fmt::format("{} has no profile '{}'", path, fp));
    out.frequency_profile = store.read<traces::ProfileTable>(fp);
  }
  return out;
}

// The knob settings of the predicted table: the device's frequency table or every mode of the board
// (profiled or not), else the profile's own settings.
std::vector<std::vector<double>> grid_settings(const traces::ProfileTable& table,
                                               const std::optional<traces::DeviceSpec>& device) {
  std::vector<std::vector<double>> settings;
  if (device && table.knob.kind == KnobKind::gpu_freq) {
    for (double f : device->gpu_freqs_hz) settings.push_back({f});
  } else if (device && table.knob.kind == KnobKind::power_mode && !device->power_modes.empty()) {
    settings = traces::mode_settings(*device);
  } else {
    std::set<std::vector<double>> seen;
    for (const auto& p : table.points) seen.insert(p.knob);
    settings.assign(seen.begin(), seen.end());
  }
  return settings;
}

std::string fmt_value(double v) {
  return std::isfinite(v) ? fmt::format("{:.4g}", v) : "-";
}

// Each mode's errors when it was held out, per candidate (settings "lomo_per_mode").
std::string format_lomo(const traces::ModelRecord& record) {
  const auto entries = models::read_lomo(record);
  if (entries.empty()) return "";
  std::string out =
      fmt::format("{:<10} {:<52} {:>10} {:>10}\n", "candidate", "mode held out", "time [%]", "P mean [%]");
  for (const auto& e : entries)
    out += fmt::format("{:<10} {:<52} {:>10} {:>10}\n", e.cap_terms ? "GPU+caps" : "GPU only",
                       traces::power_mode_knob(e.knob.size()).format(e.knob), fmt_value(e.time_mape),
                       fmt_value(e.power_mean_mape));
  return out;
}

// The fitted parameters, or the size of a model whose parameters are weights or table points.
std::string format_parameters(const traces::ModelRecord& record) {
  const auto kind = traces::find_model_kind(record.kind);
  if (kind == traces::ModelKind::learned || kind == traces::ModelKind::interpolating)
    return fmt::format("{} parameters ({}; weights in the record's blob: {} bytes)\n", record.param_names.size(),
                       record.kind, record.blob.size());
  std::string out = fmt::format("{:<34} {:>14} {:>12}\n", "parameter", "value", "std err");
  int table_points = 0;
  for (size_t i = 0; i < record.param_names.size(); ++i) {
    // The catalog's V(f) table is stored with the model but is an input, not a fitted value.
    if (record.param_names[i].find("volt_table_freq_hz_") != std::string::npos) ++table_points;
    if (record.param_names[i].find("volt_table_") != std::string::npos) continue;
    out += fmt::format("{:<34} {:>14} {:>12}\n", record.param_names[i], fmt_value(record.param_values[i]),
                       fmt_value(record.param_stderr[i]));
  }
  if (table_points) out += fmt::format("V(f): the device catalog's table ({} points)\n", table_points);
  if (const auto it = record.settings.find("voltage_choice"); it != record.settings.end())
    out += "V(f) chosen by " + it->second + "\n";
  if (const auto t = models::describe_transfer(record); !t.empty()) out += t + "\n";
  if (const auto it = record.settings.find("mode_choice"); it != record.settings.end())
    out += "mode model chosen by " + it->second + "\n" + format_lomo(record);
  return out;
}

// The files after the printed results: a failure to write leaves the old store intact (writes are atomic).
void write_results(const CalibrationRequest& r, traces::Store& store, const std::string& profile_name,
                   const traces::ProfileTable& table, const std::optional<traces::DeviceSpec>& device,
                   const models::Calibration& cal, const traces::ModelRecord& record, std::ostream& out) {
  const std::string path = r.store.string();
  store.write(record);
  out << fmt::format("wrote {}:/models/{}\n", path, record.name);
  if (r.predictions_csv) {
    traces::write_file_atomic(*r.predictions_csv, models::predictions_csv(*cal.model, table.knob, cal.all, cal.used));
    out << fmt::format("wrote {} ({} measured points, {} used for the fit)\n", *r.predictions_csv, cal.all.size(),
                       cal.used.size());
  }
  if (r.predict) {
    const auto settings = grid_settings(table, device);
    auto predicted = models::predict_table(*cal.model, table, settings, table.batch_sizes());
    const std::string pname = models::predicted_profile_name(profile_name);
    store.write(predicted, pname, traces::Replace::always);  // derived from the model: always redone
    out << fmt::format("wrote {}:/profiles/{} ({} settings x {} batch sizes)\n", path, pname, settings.size(),
                       table.batch_sizes().size());
  }
}

}  // namespace

std::string format_model_record(const traces::ModelRecord& record) {
  std::string out = format_parameters(record);
  out += fmt::format("\n{:<12} {:>10} {:>10} {:>10}\n", "MAPE [%]", "time", "P mean", "P peak");
  for (const char* what : {"fit", "cv", "heldout", "lomo"}) {
    const auto get = [&](const std::string& target) {
      const auto it = record.metrics.find(target + "_mape_" + what);
      return it == record.metrics.end() ? traces::kNaN : it->second;
    };
    if (!std::isfinite(get("time"))) continue;
    out += fmt::format("{:<12} {:>10} {:>10} {:>10}\n", what, fmt_value(get("time")), fmt_value(get("power_mean")),
                       fmt_value(get("power_peak")));
  }
  out += "(fit: in-sample; cv: cross-validated on the fitted points; heldout: the points the planner left out";
  if (record.metrics.count("time_mape_lomo")) out += "; lomo: each mode predicted by a model fitted without it";
  out += ")\n";
  if (const auto u = models::read_uncertainty(record)) out += "uncertainty: " + models::describe_uncertainty(*u) + "\n";
  return out;
}

std::string model_record_json(const traces::ModelRecord& record, const std::string& profile, size_t points_used,
                              size_t points) {
  base::JsonObject o;
  o.add("model", record.name).add("kind", record.kind).add("workload", record.workload).add("device", record.device);
  o.add("profile", profile).add("points_used", points_used).add("points", points);
  base::JsonObject values, errors;
  for (size_t i = 0; i < record.param_names.size(); ++i) {
    values.add(record.param_names[i], record.param_values[i]);
    errors.add(record.param_names[i], i < record.param_stderr.size() ? record.param_stderr[i] : traces::kNaN);
  }
  o.raw("parameters", values.str()).raw("parameter_stderr", errors.str());
  base::JsonObject metrics;
  for (const auto& [name, value] : record.metrics)
    metrics.add(name.find("_mape_") != std::string::npos ? name + "_pct" : name, value);
  o.raw("metrics", metrics.str());
  if (!record.transfer_choice.empty())
    o.add("transfer_gate", record.transfer_gate).add("transfer_choice", record.transfer_choice);
  return o.str();
}

void run_calibration(const CalibrationRequest& r, std::ostream& out) {
  check_outputs(r);
  auto store = traces::Store::open(r.store);
  const std::string name = pick_profile(store, r.profile);
  const auto table = store.read<traces::ProfileTable>(name);
  const auto device = resolve_device(r, store, table);

  models::CalibrationOptions opt = r.calibration;
  if (device) opt.analytical.voltage_table = device->voltage_table;
  const ExtraProfiles extra = read_extra_profiles(r, store);
  if (extra.reference) {
    opt.reference = &*extra.reference;
    opt.reference_name = *r.reference;
  }
  if (extra.prior) {
    opt.prior = &*extra.prior;
    opt.prior_device = extra.prior_device ? &*extra.prior_device : nullptr;
    opt.prior_name = *r.prior;
  }
  if (extra.frequency_profile) {
    opt.frequency_profile = &*extra.frequency_profile;
    opt.frequency_profile_name = *r.frequency_profile;
  }
  models::check_calibration(table, device ? &*device : nullptr, opt);  // an error before the info line
  spdlog::info("calibrating the {} model on profile '{}' ({} points{})", opt.model, name, table.points.size(),
               opt.points ? fmt::format(", planner picks {}", opt.points) : "");
  const auto cal = models::calibrate(table, device ? &*device : nullptr, opt);
  auto record = cal.record;
  if (r.model_name) record.name = *r.model_name;

  // Results first, then the files.
  if (r.json) {
    out << model_record_json(record, name, cal.used.size(), table.points.size()) << "\n";
  } else {
    out << fmt::format("model {} ({}) from profile '{}': {} of {} points{}\n", record.name, record.kind, name,
                       cal.used.size(), table.points.size(), opt.points ? " chosen by the planner" : "");
    out << format_model_record(record);
  }
  if (const std::string warning = models::lomo_warning(record); !warning.empty()) spdlog::warn("{}", warning);
  std::ostringstream files;
  write_results(r, store, name, table, device, cal, record, r.json ? files : out);
  if (r.json) {
    std::string line;
    for (std::istringstream in(files.str()); std::getline(in, line);) spdlog::info("{}", line);
  }
}

}  // namespace pacer::experiments
