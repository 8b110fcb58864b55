#pragma once
// Options shared by `pacer select`, `sweep` and `simulate`: where the design space and the
// relations come from; and the guard band every choosing command shares (validate, demo too). Header-only so each
// cmd_*.cpp stays self-contained.
#include <fmt/format.h>

#include <optional>
#include <string>

#include "base/error.hpp"
#include "experiments/cli/cli.hpp"
#include "experiments/cli/options.hpp"
#include "explore/adaptive.hpp"
#include "explore/decide.hpp"
#include "explore/problem.hpp"
#include "models/calibrate.hpp"

namespace pacer::cli {

inline void add_problem_options(po::options_description& d, bool with_profile = true) {
  d.add_options()("store", po::value<std::string>()->required()->value_name("FILE"), "trace store (HDF5)");
  if (with_profile)
    d.add_options()("profile", po::value<std::string>()->default_value(""),
                    "profile in the store (default: the store's only profile)");
  d.add_options()("model", po::value<std::string>()->default_value(""),
                  "calibrated model in the store, evaluated on --device's frequency table, instead of a profile")(
      "device", po::value<std::string>()->default_value(""),
      "catalog device or device file giving the model's frequency grid (default: the store's device)")(
      "batch-sizes", po::value<std::string>()->default_value(""),
      "model grid batch sizes, \"4,8,16\" or \"4:128\" [samples] (default: the relation's)")(
      "relation", po::value<std::string>()->default_value(""),
      "proxy relation, the one the device knows (default: <workload>.proxy, or the store's one relation that is "
      "not a target)")(
      "target", po::value<std::string>()->default_value(""),
      "target relation for the oracle and the replay (default: <workload>.target, or the one <dataset>-true relation "
      "that pacer validate trains)")(
      "allow-workload-mismatch", po::bool_switch(),
      "pair a relation with a profile or model of another workload (refused without it; warned with it)")(
      "feasibility", po::value<std::string>()->default_value("auto"),
      "power compared with the cap: auto (peak where the data has it, else mean) | peak | mean")(
      "eta", po::value<double>()->default_value(explore::IndexOptions{}.eta),
      "Zeus cost weight: eta*energy + (1-eta)*max_power*time [1]")(
      "max-power", po::value<units::Power>(),
      "Zeus cost MAXPOWER [W] (default: as Zeus, the highest power limit for a power-limit knob, else the space's "
      "highest power)")("powertrain-batch", po::value<int>()->default_value(0),
                        "batch size of the PowerTrain-style policy [samples] (0: the largest)");
}

inline explore::ProblemSpec problem_spec(const po::variables_map& vm) {
  explore::ProblemSpec s;
  if (vm.count("profile")) s.profile = vm["profile"].as<std::string>();
  s.model = vm["model"].as<std::string>();
  s.device = vm["device"].as<std::string>();
  const auto bs = vm["batch-sizes"].as<std::string>();
  if (!bs.empty()) s.batch_sizes = parse_int_list(bs, "--batch-sizes");
  s.relation = vm["relation"].as<std::string>();
  s.target = vm["target"].as<std::string>();
  s.allow_workload_mismatch = vm["allow-workload-mismatch"].as<bool>();
  const auto f = vm["feasibility"].as<std::string>();
  if (f == "peak")
    s.basis = explore::PowerBasis::Peak;
  else if (f == "mean")
    s.basis = explore::PowerBasis::Mean;
  else if (f != "auto")
    throw UsageError(fmt::format("--feasibility: '{}' is not one of auto, peak, mean", f));
  s.index.eta = vm["eta"].as<double>();
  require_range(s.index.eta, 0, 1, "--eta", "");
  if (vm.count("max-power")) {
    s.index.max_power_w = vm["max-power"].as<units::Power>().w;
    if (!(s.index.max_power_w > 0)) throw UsageError("--max-power: must be above 0 W");
  }
  if (!s.model.empty() && !s.profile.empty()) throw UsageError("--model and --profile exclude each other");
  return s;
}

// --guard, the one definition for select, sweep, budget, simulate, validate, demo and experiment: every
// policy chooses under cap x (1 - guard); "auto" (the default) is explore::choice_rule's automatic
// guard (explore/decide.hpp), a fraction ("0.05") or percentage ("5%") overrides it, 0 turns it off.
inline void add_guard_option(po::options_description& d) {
  d.add_options()("guard", po::value<std::string>()->default_value("auto"),
                  fmt::format("every policy chooses under cap x (1 - guard) so that sensor noise and model error keep "
                              "the measured peak under the cap: auto = the calibrated model's held-out peak-power "
                              "error ({:g}th percentile, kept within {:g}%..{:g}%) where some point's power is "
                              "predicted, {:g}% (sensor noise) where every point's peak is measured, 0 where the "
                              "measured power is a mean (Zeus, NVML); or a fraction or percentage (0.05, 5%; 0: "
                              "none) [fraction]",
                              100 * models::kPeakErrorQuantile, 100 * explore::kDefaultGuard,
                              100 * explore::kAutoGuardMax, 100 * explore::kDefaultGuard)
                      .c_str());
}

// --extrapolation, the one definition for the adaptive campaigns (relation, bench train): how an
// unfinished run's samples to the target are estimated (explore::AdaptiveExtrapolation).
inline void add_extrapolation_option(po::options_description& d) {
  using explore::AdaptiveExtrapolation;
  d.add_options()(
      "extrapolation",
      po::value<std::string>()->default_value(std::string(explore::to_string(explore::kAdaptiveExtrapolation))),
      fmt::format("--adaptive: how an unfinished run's samples to the target are estimated: {} (the ratio "
                  "target/level of the runs that reached it), {} (the learning curve shared across batch sizes, "
                  "else the ratio) or {} (one power law with an exponent shared by every run, else the ratio)",
                  explore::to_string(AdaptiveExtrapolation::ratio),
                  explore::to_string(AdaptiveExtrapolation::shared_curve),
                  explore::to_string(AdaptiveExtrapolation::power_law))
          .c_str());
}
inline explore::AdaptiveExtrapolation parse_extrapolation_option(const po::variables_map& vm) {
  return explore::parse_adaptive_extrapolation(vm["extrapolation"].as<std::string>(), "extrapolation");
}

// nullopt for "auto"; else the guard, a number or a percentage ("0", "0.0", "5%") checked by the one
// range check, explore::check_guard, whose message names the range.
inline std::optional<double> parse_guard(const po::variables_map& vm) {
  const std::string text = vm["guard"].as<std::string>();
  if (text == "auto") return std::nullopt;
  const auto guard = parse_number_or_percent(text);
  if (!guard)
    throw UsageError(
        fmt::format("--guard: '{}' is not auto, a fraction (0.05) or a percentage (5%): give one in [0, {:g})", text,
                    explore::kGuardLimit));
  explore::check_guard(*guard);
  return *guard + 0.0;  // "-0" is the guard 0
}

}  // namespace pacer::cli
