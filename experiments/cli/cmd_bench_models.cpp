// `pacer bench models`: the accuracy table of the device models versus the number k of profiled
// points (experiments/bench/model_bench.hpp does the work; this file parses and prints).
#include <fmt/format.h>

#include <iostream>
#include <sstream>

#include "base/error.hpp"
#include "experiments/bench/model_bench.hpp"
#include "experiments/cli/cli.hpp"
#include "experiments/cli/options.hpp"
#include "traces/csv.hpp"
#include "traces/store/store.hpp"

namespace pacer::cli {
namespace {

std::vector<int> parse_ks(const std::string& text) {
  std::vector<int> ks;
  for (const auto& item : traces::split_list(text)) {
    if (item == "all") {
      ks.push_back(experiments::kAllPoints);
      continue;
    }
    const auto k = units::to_integer(item, 0, INT32_MAX);
    if (!k) throw UsageError(fmt::format("--ks: '{}' is neither a count nor 'all'", item));
    ks.push_back(static_cast<int>(*k));
    if (ks.back() < 1) throw UsageError("--ks: counts must be >= 1");
  }
  return ks;
}

std::string ks_text(const std::vector<int>& ks) {
  std::string s;
  for (int k : ks)
    s += (s.empty() ? "" : ",") + (k == experiments::kAllPoints ? std::string("all") : std::to_string(k));
  return s;
}

int run_bench_models(const po::variables_map& vm) {
  experiments::ModelBenchOptions o;
  o.ks = parse_ks(vm["ks"].as<std::string>());
  const auto sections = vm.count("real") ? std::string("c") : vm["sections"].as<std::string>();
  if (sections.find_first_not_of("abc") != std::string::npos || sections.empty())
    throw UsageError("--sections: use letters a (emulated), b (Zeus), c (real Jetson), e.g. ab");
  o.emulated = sections.find('a') != std::string::npos;
  o.zeus = sections.find('b') != std::string::npos;
  o.real = sections.find('c') != std::string::npos;
  if (!vm["figures"].as<std::string>().empty() && !o.real)
    throw UsageError("--figures draws the real Jetson boards' k-curve: give --real (or --sections with c)");
  o.device = vm["device"].as<std::string>();
  o.workloads = traces::split_list(vm["workloads"].as<std::string>());
  o.batch_sizes = parse_int_list(vm["batch-sizes"].as<std::string>(), "--batch-sizes");
  o.sensor_noise_rel = vm["sensor-noise"].as<double>();
  o.thermal_drift = vm["thermal-drift"].as<bool>();
  o.zeus_dir = vm["zeus-dir"].as<std::string>();
  o.loudva_dir = vm["loudva-dir"].as<std::string>();
  o.seed = vm["seed"].as<uint64_t>();
  o.curve_ks = parse_ks(vm["curve-ks"].as<std::string>());
  o.transfer_weight = vm["transfer-weight"].as<double>();
  if (!(o.transfer_weight > 0)) throw UsageError("--transfer-weight: must be a positive number of points");
  o.learned_real = !vm.count("analytical-only");
  o.figure_dir = vm["figures"].as<std::string>();
  const auto result = experiments::run_model_bench(o);
  std::cout << result.markdown;
  const std::string out = vm["csv"].as<std::string>();
  write_output(out, result.csv(), fmt::format("{} rows", result.rows.size()));
  for (const auto& f : result.figures) std::cerr << fmt::format("wrote {}\n", f.string());
  return 0;
}

Command make() {
  Command c;
  c.name = "bench models";
  c.summary = "accuracy of the device models vs the number of profiled points (Markdown + CSV)";
  c.order = 96;
  c.description =
      "For each k, fits each model on the planner's k points and scores it on the points left out (k = all:\n"
      "cross-validation). (a) the emulated Jetson, analytical vs learned (transferred from another workload);\n"
      "(b) the real Zeus GPU traces (knob = power limit), interpolating vs learned; (c) real Jetson boards (the\n"
      "LoudVA GPU-frequency sweeps of a Nano and an AGX Xavier), analytical, learned and interpolating.\n"
      "Each table ends with the goal verdict computed from its rows; (c) then prints, per board, the goal lines\n"
      "against the model's every-point error, the k-curve, the coverage of the stated uncertainty and the\n"
      "transfer from the other board (docs/models.md).";
  const experiments::ModelBenchOptions d0;
  c.add_options = [d0](po::options_description& d) {
    d.add_options()("ks", po::value<std::string>()->default_value(ks_text(d0.ks)),
                    "numbers of profiled points, comma-separated; 'all' = cross-validation on every point")(
        "sections", po::value<std::string>()->default_value("ab"),
        "a (emulated Jetson), b (Zeus traces), c (real Jetson boards), or several: ab, abc")(
        "real", "the real Jetson boards only (= --sections c)")(
        "device", po::value<std::string>()->default_value(d0.device), "(a) device: catalog name or INI file")(
        "workloads", po::value<std::string>()->default_value(fmt::format("{}", fmt::join(d0.workloads, ","))),
        "(a) workloads, comma-separated (pacer workloads lists them); each is the next one's transfer reference")(
        "batch-sizes", po::value<std::string>()->default_value(fmt::format("{}", fmt::join(d0.batch_sizes, ","))),
        "(a) batch sizes: list or doubling range")("sensor-noise",
                                                   po::value<double>()->default_value(d0.sensor_noise_rel),
                                                   "(a) relative sigma of one power reading (1)")(
        "thermal-drift", po::value<bool>()->default_value(d0.thermal_drift),
        "(a) leakage rises with die temperature (true|false)")(
        "zeus-dir", po::value<std::string>()->default_value(d0.zeus_dir.string()),
        "(b) folder with summary_power_<gpu>.csv (default: zeus/ of the data folder, as pacer import zeus)")("loudva-dir",
                                                   po::value<std::string>()->default_value(d0.loudva_dir.string()),
                                                   "(c) folder with the LoudVA board folders (nano, agx-xavier; default: jetson/loudva/ of the data folder)")(
        "seed", po::value<uint64_t>()->default_value(d0.seed), "emulator and learned-model seed")(
        "curve-ks", po::value<std::string>()->default_value(ks_text(d0.curve_ks)),
        "(c) the analytical k-curve: numbers of points (from 4), comma-separated")(
        "transfer-weight", po::value<double>()->default_value(d0.transfer_weight),
        "(c) weight of the other board's prior in the transfer rows' prior-always fit, in points (pacer calibrate "
        "--prior-points; the gated fit chooses its weight as pacer calibrate does)")(
        "analytical-only", "(c) the analytical model only (no learned or interpolating rows)")(
        "figures", po::value<std::string>()->default_value(""),
        "(c) draw the k-curve and the planner's points into this folder (gnuplot: .dat, .gp, .png, .svg)")(
        "csv", po::value<std::string>()->default_value("bench-models.csv"),
        "per-workload results (CSV, units in header)");
  };
  c.input_files = {"device"};
  c.output_files = {{"csv", ""}};
  c.run = run_bench_models;
  return c;
}

PACER_REGISTER_COMMAND(make);

}  // namespace
}  // namespace pacer::cli
