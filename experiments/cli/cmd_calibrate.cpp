// `pacer calibrate`: fit a time and power model to a profile in the trace store.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <iostream>
#include <optional>

#include "base/error.hpp"
#include "base/units.hpp"
#include "experiments/campaigns/calibration.hpp"
#include "experiments/cli/cli.hpp"
#include "experiments/cli/options.hpp"
#include "models/calibrate.hpp"

namespace pacer::cli {
namespace {

std::optional<std::string> given(const po::variables_map& vm, const char* option) {
  return vm.count(option) ? std::optional(vm[option].as<std::string>()) : std::nullopt;
}

traces::ModelKind model_option(const po::variables_map& vm) {
  const std::string model = vm["model"].as<std::string>();
  const auto kind = traces::find_model_kind(model);
  if (!kind || !traces::is_calibrated(*kind))
    throw UsageError(fmt::format("--model: '{}' is not one of {}", model, traces::calibrated_model_names()));
  return *kind;
}

experiments::CalibrationRequest request_from(const po::variables_map& vm) {
  experiments::CalibrationRequest r;
  if (vm.count("store") && vm.count("profile"))
    throw UsageError("--profile is the old spelling of --store: give the store once");
  if (vm.count("profile")) {
    spdlog::warn("calibrate --profile is deprecated: the store is --store (or the first argument), as in every "
                 "other command; a profile in it is --name");
    r.store = vm["profile"].as<std::string>();
  } else if (vm.count("store")) {
    r.store = vm["store"].as<std::string>();
  } else {
    throw UsageError("name the trace store: pacer calibrate STORE (or --store FILE)");
  }
  r.json = vm.count("json") > 0;
  r.profile = given(vm, "name");
  r.device = given(vm, "device");
  r.model_name = given(vm, "model-name");
  r.predictions_csv = given(vm, "predictions-csv");
  r.predict = vm.count("predict") > 0;
  r.reference = given(vm, "reference");
  r.prior = given(vm, "prior");
  r.frequency_profile = given(vm, "frequency-profile");
  models::CalibrationOptions& opt = r.calibration;
  opt.model = model_option(vm);
  const std::string points = vm["points"].as<std::string>();
  if (points != "all") {
    const auto count = units::to_integer(points, 1, INT32_MAX);
    if (!count) throw UsageError(fmt::format("--points: '{}' is neither a positive count nor 'all'", points));
    opt.points = static_cast<int>(*count);
  }
  opt.analytical.voltage = vm["voltage"].as<std::string>();
  if (opt.analytical.voltage != "auto" && opt.analytical.voltage != "catalog" && opt.analytical.voltage != "fit")
    throw UsageError(fmt::format("--voltage: '{}' is not one of auto, catalog, fit", opt.analytical.voltage));
  opt.analytical.prior_weight = vm["prior-weight"].as<double>();  // its range: models::fit_analytical
  opt.analytical.power_loss = vm["power-loss"].as<std::string>();  // checked by models::fit_analytical
  opt.cv_folds = vm["cv-folds"].as<int>();
  opt.learned.seed = vm["seed"].as<uint64_t>();
  opt.learned.epochs = vm["epochs"].as<int>();
  opt.learned.transfer_epochs = vm["transfer-epochs"].as<int>();
  opt.learned.threads = vm["threads"].as<int>();
  if (r.reference && opt.model != traces::ModelKind::learned)
    throw UsageError("--reference applies to --model learned only");
  if (vm.count("prior-points")) {
    opt.prior_weight_points = vm["prior-points"].as<double>();
    opt.prior_weight_by_gate = false;
    if (!(opt.prior_weight_points > 0 && opt.prior_weight_points <= 1e6))
      throw UsageError(fmt::format("--prior-points: {:g} is not a positive weight (points' worth of the prior)",
                                   opt.prior_weight_points));
  }
  if (r.prior && opt.model != traces::ModelKind::analytical)
    throw UsageError("--prior applies to --model analytical only (a GPU-frequency profile)");
  opt.transfer_gate = !vm.count("prior-always");
  if (!opt.transfer_gate && !r.prior) throw UsageError("--prior-always needs --prior");
  if (vm.count("prior-gate")) {
    if (!r.prior || !opt.transfer_gate) throw UsageError("--prior-gate needs --prior (and no --prior-always)");
    opt.transfer_gate_mode = models::parse_transfer_gate_mode(vm["prior-gate"].as<std::string>());
  }
  return r;
}

int run_calibrate(const po::variables_map& vm) {
  experiments::run_calibration(request_from(vm), std::cout);
  return 0;
}

Command make() {
  Command c;
  c.name = "calibrate";
  c.summary = "fit a time and power model (analytical, learned or interpolating) to a profile";
  c.order = 30;
  c.usage_tail = "STORE";
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
    d.add_options()("store", po::value<std::string>()->value_name("FILE"), "trace store (HDF5) holding the profile")(
        "profile", po::value<std::string>()->value_name("FILE"), "deprecated spelling of --store")(
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
        "prior", po::value<std::string>(),
        fmt::format("analytical: transfer from another board -- its full sweep of the same workload, NAME in the "
                    "same store or FILE.h5:NAME; the model fitted on it regularises the fit on this profile's (few) "
                    "points where leave-one-out on them says it helps: the points alone, the prior, or the prior "
                    "with its batch sizes scaled to this board's range, each for time and power or for time only "
                    "(printed; from {} points, below that the prior is kept)",
                    models::kMinTransferGatePoints)
            .c_str())("prior-always", "analytical, with --prior: always fit with the prior (no leave-one-out gate)")(
        "prior-gate", po::value<std::string>(),
        "analytical, with --prior: joint (default: one candidate for the whole model) or per-axis (the time and "
        "the power model each take their own)")(
        "prior-points", po::value<double>(),
        fmt::format("analytical, with --prior: weight of the other board's model, in points' worth (default: "
                    "the gate chooses it with the candidate from {:g}; {:g} with --prior-always, --prior-gate "
                    "per-axis or below {} points)",
                    fmt::join(models::transfer_weight_grid(), ", "), models::kDefaultTransferWeight,
                    models::kMinTransferGatePoints)
            .c_str())(
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
        "power-loss", po::value<std::string>()->default_value(o.analytical.power_loss),
        "analytical: loss of the mean and peak power fits: absolute (sum of absolute relative errors; one point "
        "off the trend does not pull the fit) | squared")(
        "cv-folds", bounded(o.cv_folds, 0, kMaxFolds, "cv-folds"),
        fmt::format("cross-validation folds: 0 = leave-one-out up to 30 points else 10, 1 = none [0 .. {}]", kMaxFolds)
            .c_str())("model-name", po::value<std::string>(),
                      "record name under /models (default: <workload>@<device>:<model>)")(
        "seed", po::value<uint64_t>()->default_value(o.learned.seed),
        "learned: random seed (training is deterministic per seed)")(
        "json",
        "print the model as one JSON object (parameters with their units in the names, metrics in "
        "percent as *_pct) instead of the text; the lines naming the files written go to stderr");
    add_count_option(d, "epochs", o.learned.epochs, 1, kMaxEpochs,
                     "learned: full-batch epochs when training from scratch");
    add_count_option(d, "transfer-epochs", o.learned.transfer_epochs, 1, kMaxEpochs,
                     "learned: epochs when re-training from --reference");
    add_threads_option(d, o.learned.threads, "learned: libtorch intra-op threads while training");
  };
  c.positional = {"store"};
  c.input_files = {"device"};
  c.output_files = {{"store", ""}, {"profile", ""}, {"predictions-csv", ""}};  // profile: the old name of store
  c.run = run_calibrate;
  return c;
}

PACER_REGISTER_COMMAND(make);

}  // namespace
}  // namespace pacer::cli
