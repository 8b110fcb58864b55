// `pacer import zeus`: the public Zeus GPU traces into a trace store, following the replay protocol.
#include <fmt/format.h>

#include <spdlog/spdlog.h>
#include <filesystem>

#include <iostream>

#include "experiments/cli/cli.hpp"
#include "traces/error.hpp"
#include "traces/store.hpp"
#include "traces/zeus.hpp"

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

int run_import_zeus(const po::variables_map& vm) {
  traces::zeus::ImportOptions o;
  o.data_dir = vm["data-dir"].as<std::string>();
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
    if (store.has("profiles", w.name)) {
      const auto old = store.read_profile(w.name);
      if (old.device != o.gpu)
        throw Error(fmt::format("{} already holds {} from GPU '{}': import each GPU into its own store (--out)", out,
                                w.name, old.device));
    }
  for (const auto& w : result.workloads) {
    store.write_profile(w.profile, w.name);
    store.write_relation(w.proxy);
    store.write_relation(w.target);
    if (!w.proxy_looser.runs.empty()) store.write_relation(w.proxy_looser);
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
      "<workload>.proxy and <workload>.target, following the replay protocol of shared/data/zeus/SOURCE.md.\n"
      "Then: pacer sweep STORE (10 caps per workload from its lowest to its highest average power).";
  c.add_options = [](po::options_description& d) {
    d.add_options()("gpu", po::value<std::string>()->default_value(traces::zeus::ImportOptions{}.gpu),
                    "GPU of the power trace: the <gpu> of any summary_power_<gpu>.csv in the data folder")(
        "out,o", po::value<std::string>()->required()->value_name("FILE"),
        "trace store to write (HDF5; created if absent)")(
        "data-dir", po::value<std::string>()->default_value("../shared/data/zeus")->value_name("DIR"),
        "folder holding the Zeus CSV files (relative to the working directory; in a config file, to its folder)")(
        "min-runs", po::value<int>()->default_value(3), "runs that must reach the target at every batch size [runs]");
  };
  c.run = run_import_zeus;
  return c;
}

PACER_REGISTER_COMMAND(make);

}  // namespace
}  // namespace pacer::cli
