// `pacer calibrate`: fit a time and power model to a profile in the trace store.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <iostream>
#include <optional>
#include <set>

#include "base/error.hpp"
#include "base/units.hpp"
#include "experiments/cli/cli.hpp"
#include "experiments/cli/options.hpp"
#include "models/calibrate.hpp"
#include "models/mode_model.hpp"
#include "models/uncertainty.hpp"
#include "traces/catalog/catalog.hpp"
#include "traces/catalog/power_modes.hpp"
#include "traces/store/outputs.hpp"
#include "traces/store/store.hpp"

namespace pacer::cli {
namespace {

std::string pick_profile(const traces::Store& store, const po::variables_map& vm) {
  const auto names = store.list<traces::ProfileTable>();
  if (vm.count("name")) {
    const auto name = vm["name"].as<std::string>();
    if (!store.has<traces::ProfileTable>(name))
      throw Error(fmt::format("{} has no profile '{}' (it has: {})", store.path().string(), name,
                              names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "))));
    return name;
  }
  // The predicted tables this command writes are not measurements: never pick one by default.
  std::vector<std::string> measured;
  for (const auto& n : names)
    if (!models::is_predicted_profile_name(n)) measured.push_back(n);
  if (measured.size() == 1) return measured.front();
  if (measured.empty()) throw Error(fmt::format("{} holds no profile: run pacer profile first", store.path().string()));
  throw UsageError(fmt::format("--name: {} holds several profiles ({}); name one", store.path().string(),
                               fmt::join(measured, ", ")));
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

// The fitted parameters (or the learned model's size) and the error table of a model record.
std::string format_model(const traces::ModelRecord& record) {
  std::string out;
  const auto kind = traces::find_model_kind(record.kind);
  if (kind != traces::ModelKind::learned && kind != traces::ModelKind::interpolating) {
    out += fmt::format("{:<34} {:>14} {:>12}\n", "parameter", "value", "std err");
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
    if (const auto it = record.settings.find("mode_choice"); it != record.settings.end())
      out += "mode model chosen by " + it->second + "\n" + format_lomo(record);
  } else {
    out += fmt::format("{} parameters ({}; weights in the record's blob: {} bytes)\n", record.param_names.size(),
                       record.kind, record.blob.size());
  }
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

int run_calibrate(const po::variables_map& vm) {
  const std::string path = vm["profile"].as<std::string>();
  // Every output before the fit: the store the model goes to, its name, the predictions CSV.
  traces::check_store_output(path, "profile", traces::StoreCreation::must_exist);
  if (vm.count("model-name"))
    traces::check_record_name_option("models", vm["model-name"].as<std::string>(), "model-name");
  if (vm.count("predictions-csv"))
    traces::check_output_file(vm["predictions-csv"].as<std::string>(), "predictions-csv");
  auto store = traces::Store::open(path);
  const std::string name = pick_profile(store, vm);
  const auto table = store.read<traces::ProfileTable>(name);

  // The device: --device, else the store's /device, else the catalog entry the profile names.
  std::optional<traces::DeviceSpec> device;
  if (vm.count("device"))
    device = traces::find_device(vm["device"].as<std::string>());
  else if (store.has_device())
    device = store.read_device();
  else if (table.knob.kind == traces::KnobKind::gpu_freq && !table.device.empty()) {
    try {
      device = traces::find_device(table.device);
    } catch (const Error&) {
      spdlog::warn("device '{}' is not in the catalog: frequencies are not checked and V(f) is fitted", table.device);
    }
  }

  models::CalibrationOptions opt;
  const std::string model = vm["model"].as<std::string>();
  const auto model_kind = traces::find_model_kind(model);
  if (!model_kind || !traces::is_calibrated(*model_kind))
    throw UsageError(fmt::format("--model: '{}' is not one of {}", model, traces::calibrated_model_names()));
  opt.model = *model_kind;
  const std::string points = vm["points"].as<std::string>();
  if (points != "all") {
    const auto count = units::to_integer(points, 1, INT32_MAX);
    if (!count) throw UsageError(fmt::format("--points: '{}' is neither a positive count nor 'all'", points));
    opt.points = static_cast<int>(*count);
  }
  opt.analytical.voltage = vm["voltage"].as<std::string>();
  if (opt.analytical.voltage != "auto" && opt.analytical.voltage != "catalog" && opt.analytical.voltage != "fit")
    throw UsageError(fmt::format("--voltage: '{}' is not one of auto, catalog, fit", opt.analytical.voltage));
  if (device) opt.analytical.voltage_table = device->voltage_table;
  opt.analytical.prior_weight = vm["prior-weight"].as<double>();  // its range: models::fit_analytical
  opt.cv_folds = vm["cv-folds"].as<int>();
  opt.learned.seed = vm["seed"].as<uint64_t>();
  opt.learned.epochs = vm["epochs"].as<int>();
  opt.learned.transfer_epochs = vm["transfer-epochs"].as<int>();
  opt.learned.threads = vm["threads"].as<int>();

  std::optional<traces::ProfileTable> reference;
  if (vm.count("reference")) {
    if (opt.model != traces::ModelKind::learned) throw UsageError("--reference applies to --model learned only");
    // "NAME" (a profile in the same store) or "FILE.h5:NAME".
    std::string ref = vm["reference"].as<std::string>();
    const auto colon = ref.rfind(':');
    if (colon != std::string::npos && ref.find(".h5") != std::string::npos) {
      const auto other = traces::Store::open(ref.substr(0, colon));
      reference = other.read<traces::ProfileTable>(ref.substr(colon + 1));
    } else {
      if (!store.has<traces::ProfileTable>(ref))
        throw Error(fmt::format("--reference: {} has no profile '{}'", path, ref));
      reference = store.read<traces::ProfileTable>(ref);
    }
    opt.reference = &*reference;
    opt.reference_name = ref;
  }

  std::optional<traces::ProfileTable> sweep;
  if (vm.count("frequency-profile")) {
    const auto fp = vm["frequency-profile"].as<std::string>();
    if (!store.has<traces::ProfileTable>(fp))
      throw Error(fmt::format("--frequency-profile: {} has no profile '{}'", path, fp));
    sweep = store.read<traces::ProfileTable>(fp);
    opt.frequency_profile = &*sweep;
    opt.frequency_profile_name = fp;
  }
  spdlog::info("calibrating the {} model on profile '{}' ({} points{})", opt.model, name, table.points.size(),
               opt.points ? fmt::format(", planner picks {}", opt.points) : "");
  const auto cal = models::calibrate(table, device ? &*device : nullptr, opt);
  const std::string model_name = vm.count("model-name") ? vm["model-name"].as<std::string>() : cal.record.name;
  auto record = cal.record;
  record.name = model_name;

  // Results first, then the files (a failure to write leaves the old store intact: writes are atomic).
  std::cout << fmt::format("model {} ({}) from profile '{}': {} of {} points{}\n", model_name, record.kind, name,
                           cal.used.size(), table.points.size(), opt.points ? " chosen by the planner" : "");
  std::cout << format_model(record);

  store.write(record);
  std::cout << fmt::format("wrote {}:/models/{}\n", path, model_name);
  if (vm.count("predictions-csv")) {
    const std::string csv_path = vm["predictions-csv"].as<std::string>();
    traces::write_file_atomic(csv_path, models::predictions_csv(*cal.model, table.knob, cal.all, cal.used));
    std::cout << fmt::format("wrote {} ({} measured points, {} used for the fit)\n", csv_path, cal.all.size(),
                             cal.used.size());
  }
  if (vm.count("predict")) {
    std::vector<std::vector<double>> settings;
    if (device && table.knob.kind == traces::KnobKind::gpu_freq)
      for (double f : device->gpu_freqs_hz) settings.push_back({f});
    else if (device && table.knob.kind == traces::KnobKind::power_mode && !device->power_modes.empty())
      settings = traces::mode_settings(*device);  // every mode of the board, profiled or not
    else {
      std::set<std::vector<double>> seen;
      for (const auto& p : table.points) seen.insert(p.knob);
      settings.assign(seen.begin(), seen.end());
    }
    auto predicted = models::predict_table(*cal.model, table, settings, table.batch_sizes());
    const std::string pname = models::predicted_profile_name(name);
    store.write(predicted, pname, traces::Replace::always);  // derived from the model: always redone
    std::cout << fmt::format("wrote {}:/profiles/{} ({} settings x {} batch sizes)\n", path, pname, settings.size(),
                             table.batch_sizes().size());
  }
  return 0;
}

Command make() {
  Command c;
  c.name = "calibrate";
  c.summary = "fit a time and power model (analytical, learned or interpolating) to a profile";
  c.order = 30;
  c.description =
      "Fits the model to the profile's points (or to the k points the planner picks from it with --points k),\n"
      "prints its parameters and its errors (in-sample, cross-validated, and on the points left out), and\n"
      "writes it to the store under /models. analytical: P = P_idle + k_leak V(f) + c(b) f V(f)^2 and\n"
      "t = t0 + t1 b + (w0 + w1 b)/f, for a GPU-frequency knob (docs/models.md). learned: an MLP, trained from\n"
      "scratch or transferred from --reference. interpolating: per-b piecewise-linear in a one-dimensional knob\n"
      "such as a power limit (Zeus traces). modes: for nvpmodel power modes, the analytical GPU model at each\n"
      "mode's GPU cap (times its powered TPC share) plus CPU and EMC cap terms, chosen against the GPU model alone\n"
      "by leave-one-mode-out cross-validation; --predict then predicts every mode of the board.";
  c.add_options = [](po::options_description& d) {
    // The library's defaults are the command's.
    const models::CalibrationOptions o;
    d.add_options()("profile", po::value<std::string>()->required(), "trace store (HDF5) holding the profile")(
        "name", po::value<std::string>(), "profile name in the store (default: the only measured profile)")(
        "model", po::value<std::string>()->default_value(std::string(to_string(o.model))),
        fmt::format("{} (a power-mode profile's analytical model is modes)", traces::calibrated_model_names(" | "))
            .c_str())(
        "frequency-profile", po::value<std::string>(),
        "modes: a GPU-frequency profile of the same workload on the board, taken in its top mode with the GPU clock "
        "pinned, joined to every fit (e.g. the LoudVA sweep)")(
        "points", po::value<std::string>()->default_value("all"),
        "number of points the planner picks from the profile (count), or all")(
        "reference", po::value<std::string>(),
        "learned only: reference workload's full profile, NAME in the same store or FILE.h5:NAME")(
        "predictions-csv", po::value<std::string>(),
        "write one row per measured point: knob values, b, used_for_fit, measured and predicted time and power (CSV)")(
        "predict", fmt::format("also write the predicted table for the device's whole grid as profile {}",
                               models::predicted_profile_name("<name>"))
                       .c_str())(
        "device", po::value<std::string>(),
        "device (catalog name or INI file) for the frequency check and V(f) (default: the store's /device)")(
        "voltage", po::value<std::string>()->default_value(o.analytical.voltage),
        "analytical V(f): auto (catalog table if any, else fit) | catalog | fit (floored line)")(
        "prior-weight", number_opt(o.analytical.prior_weight),
        fmt::format("analytical: weight of the weak priors that settle undetermined directions (squared relative "
                    "residual) [0 .. {:g}]",
                    models::kMaxPriorWeight)
            .c_str())(
        "cv-folds", bounded(o.cv_folds, 0, kMaxFolds, "cv-folds"),
        fmt::format("cross-validation folds: 0 = leave-one-out up to 30 points else 10, 1 = none [0 .. {}]", kMaxFolds)
            .c_str())("model-name", po::value<std::string>(),
                      "record name under /models (default: <workload>@<device>:<model>)")(
        "seed", po::value<uint64_t>()->default_value(o.learned.seed),
        "learned: random seed (training is deterministic per seed)");
    add_count_option(d, "epochs", o.learned.epochs, 1, kMaxEpochs,
                     "learned: full-batch epochs when training from scratch");
    add_count_option(d, "transfer-epochs", o.learned.transfer_epochs, 1, kMaxEpochs,
                     "learned: epochs when re-training from --reference");
    add_threads_option(d, o.learned.threads, "learned: libtorch intra-op threads while training");
  };
  c.positional = {"profile"};
  c.run = run_calibrate;
  return c;
}

PACER_REGISTER_COMMAND(make);

}  // namespace
}  // namespace pacer::cli
