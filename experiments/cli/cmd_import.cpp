// `pacer import zeus`: the public Zeus GPU traces into a trace store, following the replay protocol.
#include <fmt/format.h>

#include <spdlog/spdlog.h>
#include <filesystem>

#include <iostream>
#include <optional>
#include <set>

#include "base/error.hpp"
#include "base/text.hpp"
#include "experiments/cli/cli.hpp"
#include "experiments/cli/options.hpp"
#include "traces/catalog/catalog.hpp"
#include "traces/catalog/power_modes.hpp"
#include "traces/import/common.hpp"
#include "traces/import/csv_profiles.hpp"
#include "traces/import/csv_relations.hpp"
#include "traces/import/loudva.hpp"
#include "traces/import/tegrastats.hpp"
#include "traces/import/zeus.hpp"
#include "traces/store/outputs.hpp"
#include "traces/store/store.hpp"

namespace pacer::cli {
namespace {

std::string list_ints(const std::vector<int>& v) {
  std::string s;
  for (int x : v) {
    if (!s.empty()) s += ',';
    s += std::to_string(x);
  }
  return s.empty() ? "-" : s;
}

// The store an importer writes (created with its folders), before any input is read.
void check_import_output(const po::variables_map& vm) {
  traces::check_store_output(vm["out"].as<std::string>(), "out", traces::StoreCreation::file_and_folder);
  if (vm.count("workload")) traces::check_record_name_option("profiles", vm["workload"].as<std::string>(), "workload");
}

int run_import_zeus(const po::variables_map& vm) {
  check_import_output(vm);
  traces::zeus::ImportOptions o;
  o.data_dir =
      vm.count("data-dir") ? std::filesystem::path(vm["data-dir"].as<std::string>()) : traces::zeus::default_data_dir();
  o.gpu = vm["gpu"].as<std::string>();
  o.min_runs = vm["min-runs"].as<int>();
  if (o.min_runs < 1) throw UsageError("--min-runs: must be at least 1");
  const std::string out = vm["out"].as<std::string>();
  const auto result = traces::zeus::import_traces(o);
  if (result.workloads.empty())
    throw Error(fmt::format("no workload of the {} trace has a usable target: nothing imported", o.gpu));

  if (const auto parent = std::filesystem::path(out).parent_path(); !parent.empty())
    std::filesystem::create_directories(parent);
  auto store = traces::Store::open_or_create(out);
  for (const auto& w : result.workloads)
    if (store.has<traces::ProfileTable>(w.name)) {
      const auto old = store.read<traces::ProfileTable>(w.name);
      if (old.device != o.gpu)
        throw Error(fmt::format("{} already holds {} from GPU '{}': import each GPU into its own store (--out)", out,
                                w.name, old.device));
    }
  for (const auto& w : result.workloads) {
    store.write(w.profile, w.name);
    store.write(w.proxy);
    store.write(w.target);
    if (!w.proxy_looser.runs.empty()) store.write(w.proxy_looser);
    if (!w.proxy_curve.points.empty()) store.write(w.proxy_curve);
    spdlog::debug("imported {}", w.name);
  }

  std::cout << fmt::format("Zeus {} traces -> {} (feasibility: average power; the traces have no peak)\n\n", o.gpu,
                           out);
  std::cout << fmt::format("{:<36} {:>8} {:>4} {:>7} {:>9} {:>18}  {}\n", "workload (profile)", "target", "|B|",
                           "limits", "configs", "caps [W]", "batch sizes (dropped)");
  for (const auto& w : result.workloads) {
    const auto caps = traces::zeus::protocol_caps_w(w.profile);
    size_t limits = 0;
    {
      std::vector<double> seen;
      for (const auto& p : w.profile.points)
        if (std::find(seen.begin(), seen.end(), p.knob[0]) == seen.end()) seen.push_back(p.knob[0]);
      limits = seen.size();
    }
    std::cout << fmt::format("{:<36} {:>7}{} {:>4} {:>7} {:>9} {:>18}  {} ({})\n", w.name,
                             fmt::format("{:g}", w.target.target), w.target.higher_is_better ? "+" : "-",
                             w.profile.batch_sizes().size(), limits, w.profile.points.size(),
                             fmt::format("{:.1f}-{:.1f}", caps.front(), caps.back()),
                             list_ints(w.profile.batch_sizes()), list_ints(w.dropped_batch_sizes));
  }
  for (const auto& s : result.skipped) std::cout << "skipped " << s << "\n";
  std::cout << "\ntarget: strictest metric every batch size reaches in >= " << o.min_runs
            << " runs (+ higher is better, - lower); relations <workload>.proxy (first half of the runs) and "
               "<workload>.target (all runs)\n";
  return 0;
}

Command make() {
  Command c;
  c.name = "import zeus";
  c.summary = "import the public Zeus GPU traces (power limit x batch size, train runs) into a trace store";
  c.order = 80;
  c.description =
      "Reads summary_power_<gpu>.csv and summary_train.csv (ml-energy/zeus, NSDI'23) in place and writes, per\n"
      "(dataset, network, optimizer), a profile with the GPU power limit as knob and the relations\n"
      "<workload>.proxy and <workload>.target, following the replay protocol (docs/explore.md). The traces ship\n"
      "with pacer in data/zeus (PROVENANCE.md there).\n"
      "Then: pacer sweep STORE (10 caps per workload from its lowest to its highest average power).";
  c.add_options = [](po::options_description& d) {
    d.add_options()("gpu", po::value<std::string>()->default_value(traces::zeus::ImportOptions{}.gpu),
                    "GPU of the power trace: the <gpu> of any summary_power_<gpu>.csv in the data folder")(
        "out,o", po::value<std::string>()->required()->value_name("FILE"),
        "trace store to write (HDF5; created if absent)")(
        "data-dir", po::value<std::string>()->value_name("DIR"),
        "folder holding the Zeus CSV files (default: zeus/ in $PACER_DATA_DIR, else in the data/ folder "
        "shipped with pacer; a relative path in a config file is relative to its folder)")(
        "min-runs", po::value<int>()->default_value(3), "runs that must reach the target at every batch size [runs]");
  };
  c.output_files = {{"out", ""}};
  c.run = run_import_zeus;
  return c;
}

PACER_REGISTER_COMMAND(make);

int run_import_loudva(const po::variables_map& vm) {
  check_import_output(vm);
  traces::loudva::ImportOptions o;
  o.device = traces::find_device(vm["device"].as<std::string>());
  o.dir = vm.count("dir") ? std::filesystem::path(vm["dir"].as<std::string>()) : traces::loudva::default_dir(o.device);
  if (vm.count("nvpmodel-conf")) o.nvpmodel_conf = vm["nvpmodel-conf"].as<std::string>();
  o.workload = vm["workload"].as<std::string>();
  const std::string out = vm["out"].as<std::string>();
  const auto result = traces::loudva::import_dir(o);
  std::vector<std::pair<std::string, traces::ProfileTable>> profiles;
  for (const auto& p : result.profiles) profiles.emplace_back(p.name, p.table);
  traces::import::write_profiles(out, &o.device, profiles, {result.requests});

  std::cout << fmt::format("LoudVA {} -> {} (device {})\n", o.dir.string(), out, o.device.name);
  for (const auto& p : result.profiles) {
    std::set<std::vector<double>> settings;
    for (const auto& pt : p.table.points) settings.insert(pt.knob);
    std::cout << fmt::format("  profile {:<28} knob {:<10} {:>3} settings x {:>3} b = {:>4} points from {} files\n",
                             p.name, p.table.knob.kind, settings.size(), p.table.batch_sizes().size(),
                             p.table.points.size(), p.files.size());
  }
  for (const auto& m : result.modes)
    std::cout << fmt::format("  mode {} {:<10} {}\n", m.id, m.name,
                             traces::power_mode_knob(o.device).format(traces::mode_knob(m, o.device)));
  std::cout << fmt::format("  relation {} (inference: {} requests at every b, r(b) = 1)\n", result.requests.name,
                           result.requests.target);
  std::cout << "source: " << result.profiles.front().table.source << "\n";
  return 0;
}

Command make_loudva() {
  Command c;
  c.name = "import loudva";
  c.summary = "import the public LoudVA Jetson measurements (GPU-frequency sweeps, power modes) into a trace store";
  c.order = 81;
  c.description =
      "Reads, in place, the LoudVA files of one board (github.com/iloudaros/LoudVA; shipped with pacer in\n"
      "data/jetson/loudva, PROVENANCE.md there): energy_calculated_freq_<Hz>.csv become profile <workload> (knob gpu_freq), and\n"
      "performance_measurements_mode_<N>.csv with power_measurement_stats_mode_<N>.csv become profile\n"
      "<workload>.modes (knob power_mode, caps from the board's nvpmodel.conf). b = the perf_analyzer concurrency,\n"
      "time per mini-batch = b / throughput, power = the tegrastats mean. Inference measurements, labelled so.\n"
      "The README's command line: pacer import loudva --device jetson-nano -o nano.h5, then\n"
      "pacer calibrate nano.h5 --points 8 (a store with both profiles: --name <workload> or <workload>.modes).";
  c.add_options = [](po::options_description& d) {
    d.add_options()("dir", po::value<std::string>()->value_name("DIR"),
                    "folder holding one board's LoudVA CSV files (default: jetson/loudva/<device without jetson-> in "
                    "$PACER_DATA_DIR, else in the data/ folder shipped with pacer)")(
        "device", po::value<std::string>()->required(), "the board measured: catalog name or INI file")(
        "out,o", po::value<std::string>()->required(), "trace store to write (HDF5; created if absent)")(
        "nvpmodel-conf", po::value<std::string>(),
        "the board's nvpmodel.conf for the mode files (default: found in DIR or DIR/../nvpmodel)")(
        "workload", po::value<std::string>()->default_value(traces::loudva::ImportOptions{}.workload),
        "profile name (the workload measured)");
  };
  c.input_files = {"nvpmodel-conf", "device"};
  c.output_files = {{"out", ""}};
  c.run = run_import_loudva;
  return c;
}

PACER_REGISTER_COMMAND(make_loudva);

}  // namespace
}  // namespace pacer::cli

namespace pacer::cli {
namespace {

int run_import_tegrastats(const po::variables_map& vm) {
  check_import_output(vm);
  traces::tegrastats::ImportOptions o;
  o.log = vm["log"].as<std::string>();
  o.marks = vm["marks"].as<std::string>();
  o.interval_s = vm["interval"].as<units::Duration>().s;
  o.workload = vm["workload"].as<std::string>();
  std::optional<traces::DeviceSpec> device;
  if (vm.count("device")) {
    device = traces::find_device(vm["device"].as<std::string>());
    o.device = device->name;
    o.catalog = &*device;
  }
  const auto table = traces::tegrastats::import_log(o);
  const std::string out = vm["out"].as<std::string>();
  traces::import::write_profiles(out, device ? &*device : nullptr, {{o.workload, table}});
  size_t ok = 0;
  for (const auto& p : table.points) ok += p.status == "ok";
  std::cout << fmt::format("tegrastats {} + {} -> {}:/profiles/{} ({}, {} with timing; knob {})\n", o.log.string(),
                           o.marks.string(), out, o.workload,
                           base::count_noun(static_cast<long long>(table.points.size()), "window", "windows"), ok,
                           table.knob.kind);
  std::cout << "source: " << table.source << "\n";
  return 0;
}

Command make_tegrastats() {
  Command c;
  c.name = "import tegrastats";
  c.summary = "import a tegrastats log and a marks file of time windows into a profile";
  c.order = 82;
  c.usage_tail = "LOG";
  c.description =
      "Reads tegrastats output of any Jetson generation (with or without a date prefix) and a marks CSV of\n"
      "windows: start_s,end_s (seconds since the first sample), b, the knob columns (gpu_freq, or power_limit,\n"
      "or cpu_cores,cpu_freq,gpu_freq,mem_freq; units in brackets, e.g. gpu_freq[MHz]) and, for the timing,\n"
      "batches (mini-batches run in the window) or time_per_batch[s] (one is required; an empty cell leaves a\n"
      "window power only). Windows lie inside the log and do not overlap. Each window becomes a profile point with\n"
      "the mean and peak module power of its samples (the total rail, or the sum of rails where the board has\n"
      "none).";
  c.add_options = [](po::options_description& d) {
    const traces::tegrastats::ImportOptions d0;
    d.add_options()("log", po::value<std::string>()->required(), "tegrastats output (one sample per line)")(
        "marks", po::value<std::string>()->required(), "CSV of time windows (see above)")(
        "out,o", po::value<std::string>()->required(), "trace store to write (HDF5; created if absent)")(
        "interval", duration_opt(d0.interval_s, fmt::format("{:g}s", d0.interval_s)),
        "tegrastats --interval, for lines without a date prefix (bare number: s)")(
        "workload", po::value<std::string>()->default_value(d0.workload), "profile name (the workload measured)")(
        "device", po::value<std::string>(), "the board measured: catalog name or INI file (stored as /device)");
  };
  c.positional = {"log"};
  c.input_files = {"log", "marks", "device"};
  c.output_files = {{"out", ""}};
  c.run = run_import_tegrastats;
  return c;
}

PACER_REGISTER_COMMAND(make_tegrastats);

}  // namespace
}  // namespace pacer::cli

namespace pacer::cli {
namespace {

int run_import_csv(const po::variables_map& vm) {
  check_import_output(vm);
  traces::csv_import::ImportOptions o;
  o.file = vm["file"].as<std::string>();
  if (vm.count("columns")) o.columns = traces::csv_import::parse_column_map(vm["columns"].as<std::string>());
  o.workload = vm["workload"].as<std::string>();
  if (vm.count("source")) o.source = vm["source"].as<std::string>();
  std::optional<traces::DeviceSpec> device;
  if (vm.count("device")) {
    device = traces::find_device(vm["device"].as<std::string>());
    o.device = device->name;
    o.catalog = &*device;
  }
  o.force = vm["force"].as<bool>();
  const auto table = traces::csv_import::import_file(o);
  const std::string out = vm["out"].as<std::string>();
  traces::import::write_profiles(out, device ? &*device : nullptr, {{o.workload, table}});
  std::cout << fmt::format("{} -> {}:/profiles/{} ({} points, knob {}, {} batch sizes)\n", o.file.string(), out,
                           o.workload, table.points.size(), table.knob.kind, table.batch_sizes().size());
  return 0;
}

Command make_csv() {
  Command c;
  c.name = "import csv";
  c.summary = "import your own measurements (one CSV row per knob setting and batch size) into a profile";
  c.order = 83;
  c.usage_tail = "FILE";
  c.description =
      "Columns by role: b, time_per_batch, power_mean, optional power_peak, and the knob: gpu_freq, or\n"
      "power_limit, or cpu_cores, cpu_freq, gpu_freq and mem_freq (a power mode). A column named like its\n"
      "role is found by itself; --columns maps others (role=heading). Units in brackets in the heading or the\n"
      "mapping (gpu_freq[MHz], time_per_batch=t[ms]), else SI (W, s); a clock column needs its unit.\n"
      "Every value is checked: positive and finite, powers within the device's catalog power x 1.5 (else\n"
      "1500 W), a peak not below its mean, GPU frequencies in the device's table (--device).";
  c.add_options = [](po::options_description& d) {
    const traces::csv_import::ImportOptions d0;
    d.add_options()("file", po::value<std::string>()->required(), "the CSV file")(
        "out,o", po::value<std::string>()->required(), "trace store to write (HDF5; created if absent)")(
        "columns", po::value<std::string>(), "role=heading[unit],... for columns not named like their role")(
        "workload", po::value<std::string>()->default_value(d0.workload), "profile name (the workload measured)")(
        "device", po::value<std::string>(), "the board measured: catalog name or INI file (stored as /device)")(
        "source", po::value<std::string>(), "who measured it and how (stored with the profile)")(
        "force", po::bool_switch()->default_value(false),
        "keep a GPU frequency that is not in the device's table (a warning names it)");
  };
  c.positional = {"file"};
  c.input_files = {"file", "device"};
  c.output_files = {{"out", ""}};
  c.run = run_import_csv;
  return c;
}

PACER_REGISTER_COMMAND(make_csv);

}  // namespace
}  // namespace pacer::cli

namespace pacer::cli {
namespace {

int run_import_relation(const po::variables_map& vm) {
  traces::check_store_output(vm["out"].as<std::string>(), "out", traces::StoreCreation::file_and_folder);
  traces::csv_import::RelationImportOptions o;
  o.name = vm["name"].as<std::string>();
  traces::check_record_name_option("relations", o.name, "name");
  o.file = vm["file"].as<std::string>();
  if (vm.count("curve")) o.curve_file = vm["curve"].as<std::string>();
  o.workload = vm["workload"].as<std::string>();
  if (vm.count("dataset")) o.dataset = vm["dataset"].as<std::string>();
  o.metric = vm["metric"].as<std::string>();
  o.higher_is_better = !vm["lower-is-better"].as<bool>();
  // A level of any metric (an accuracy, a word error rate): a number, or a percentage like 85%.
  const std::string target = vm["target"].as<std::string>();
  if (!target.empty() && target.back() == '%') {
    o.target = parse_fraction(target, "--target");
  } else {
    const auto level = units::to_number(target);
    if (!level) throw UsageError(fmt::format("--target: '{}' is not a number or a percentage like 85%", target));
    o.target = *level;
  }
  o.samples_per_epoch = vm["samples-per-epoch"].as<int64_t>();
  if (o.samples_per_epoch < 0) throw UsageError("--samples-per-epoch: must be 0 (none) or more");
  if (vm.count("optimizer")) o.optimizer = vm["optimizer"].as<std::string>();
  if (vm.count("lr-rule")) o.lr_rule = vm["lr-rule"].as<std::string>();
  const auto imported = traces::csv_import::import_relation(o);
  const std::string out = vm["out"].as<std::string>();
  std::vector<traces::LearningCurve> curves;
  if (imported.curve) curves.push_back(*imported.curve);
  traces::import::write_profiles(out, nullptr, {}, {imported.relation}, curves);
  const auto& r = imported.relation;
  size_t reached = 0;
  for (const auto& run : r.runs) reached += run.reached;
  std::cout << fmt::format("{} -> {}:/relations/{} (workload {}, {} runs, {} reached, {} censored; batch sizes {})\n",
                           o.file.string(), out, r.name, r.workload, r.runs.size(), reached, r.runs.size() - reached,
                           list_ints(r.batch_sizes()));
  if (imported.curve)
    std::cout << fmt::format("{} -> {}:/curves/{} ({} points)\n", o.curve_file.string(), out, r.name,
                             imported.curve->points.size());
  return 0;
}

Command make_relation() {
  Command c;
  c.name = "import relation";
  c.summary = "import your own samples-to-target runs (one CSV row per batch size and seed) into a relation";
  c.order = 84;
  c.usage_tail = "FILE";
  c.description =
      "One row per training run: b, seed, reached (1/0), and samples or epochs (to the target, or where a\n"
      "censored run stopped); optional budget, wall_time[s], final_metric, learning_rate. Headings carry units in\n"
      "brackets where a column has them (epochs need --samples-per-epoch). --curve adds the learning curve: b,\n"
      "seed, samples or epochs, metric. The format, with an example: docs/trace-store.md. Then: pacer select STORE\n"
      "--relation NAME (the profile of the same --workload, e.g. from pacer import csv).";
  c.add_options = [](po::options_description& d) {
    const traces::csv_import::RelationImportOptions d0;
    d.add_options()("file", po::value<std::string>()->required()->value_name("FILE"), "the CSV file of the runs")(
        "out,o", po::value<std::string>()->required(), "trace store to write (HDF5; created if absent)")(
        "name", po::value<std::string>()->required(), "relation record name (the proxy: select --relation NAME)")(
        "workload", po::value<std::string>()->required(),
        "the network trained, as the profile it goes with names its workload")(
        "target", po::value<std::string>()->required(),
        "the metric level the counts are to: a number (0.85, a word error rate 0.3) or a percentage (85%)")(
        "metric", po::value<std::string>()->default_value(d0.metric), "the metric's name")(
        "lower-is-better", po::bool_switch(), "the metric improves downwards (an error rate, a loss)")(
        "dataset", po::value<std::string>(), "the data trained on (default: the record name)")(
        "samples-per-epoch", po::value<int64_t>()->default_value(0),
        "samples in one epoch, for counts in epochs [samples] (0: none)")(
        "curve", po::value<std::string>()->value_name("FILE"), "CSV of the learning curve (b, seed, samples, metric)")(
        "optimizer", po::value<std::string>(), "optimizer used (stored with the relation)")(
        "lr-rule", po::value<std::string>(), "learning-rate rule used (stored with the relation)");
  };
  c.positional = {"file"};
  c.run = run_import_relation;
  return c;
}

PACER_REGISTER_COMMAND(make_relation);

}  // namespace
}  // namespace pacer::cli
