// `pacer report`: paper-style tables and figures regenerated from trace stores.
#include <fmt/format.h>

#include <iostream>

#include "experiments/cli/cli.hpp"
#include "experiments/cli/explore_options.hpp"
#include "experiments/cli/options.hpp"
#include "experiments/report/report.hpp"

namespace pacer::cli {
namespace {

int run_report(const po::variables_map& vm) {
  experiments::ReportOptions opt;
  for (const auto& s : vm["store"].as<std::vector<std::string>>()) opt.stores.emplace_back(s);
  opt.out_dir = vm["out"].as<std::string>();
  if (vm.count("label")) opt.labels = experiments::parse_labels(vm["label"].as<std::vector<std::string>>());
  if (vm.count("figure-caps")) opt.figure_caps_w = vm["figure-caps"].as<units::PowerList>().w;
  if (vm.count("policies"))
    for (const auto& p : split_list(vm["policies"].as<std::string>()))
      opt.policies.push_back(explore::parse_policy(p, "policies"));
  if (vm.count("power-trace")) opt.power_traces = vm["power-trace"].as<std::vector<std::string>>();
  if (vm.count("sweep")) opt.sweeps = vm["sweep"].as<std::vector<std::string>>();
  const auto out = experiments::make_report(opt);
  for (const auto& md : out.tables_markdown) std::cout << md << "\n";
  std::cout << fmt::format("Figures ({}):\n", out.figures.size());
  for (const auto& f : out.figures) std::cout << "  " << f << "\n";
  for (const auto& s : out.skipped) std::cout << "  skipped: " << s << "\n";
  std::cout << fmt::format("{} files in {}; open {} to see them on one page\n", out.files.size(),
                           opt.out_dir.string(), out.index.string());
  return 0;
}

Command make() {
  Command c;
  c.name = "report";
  c.summary = "regenerate paper-style tables (Markdown, LaTeX, CSV) and gnuplot figures from trace stores";
  c.order = 80;
  c.usage_tail = "STORE...";
  c.description =
      "Tables (NAME.md, NAME.tex, NAME.csv): time and energy to accuracy per policy, dataset and cap (from\n"
      "validations), simulated time to accuracy (from sweeps); the best value at each cap bold, a dagger\n"
      "where a run's measured power went above the cap, a dash where no configuration is feasible; caps\n"
      "as numbers (cap[W]) in the CSV, an uncapped column as N/A.\n"
      "Figures (NAME.png, NAME.svg, NAME.pdf, with the .gp script and .dat data to restyle them):\n" +
      experiments::report_figures_help() +
      "index.html shows every table and figure on one page with the run's provenance (provenance.md of\n"
      "the folder, else the stores and their records); it needs no network.";
  c.add_options = [](po::options_description& d) {
    const std::string policies_help =
        fmt::format("policies Figure 1 marks, comma-separated (default: the paper's rows the sweep ran; one of {})",
                    explore::policy_names());
    d.add_options()("store", po::value<std::vector<std::string>>()->required()->multitoken()->value_name("FILE"),
                    "trace stores (HDF5) to read")(
        "out,o", po::value<std::string>()->default_value("pacer-report")->value_name("DIR"), "output folder")(
        "label", po::value<std::vector<std::string>>()->composing()->value_name("NAME=LABEL"),
        "readable name of a data set (or workload) in tables and figures; repeat per name")(
        "figure-caps", po::value<units::PowerList>()->value_name("CAPS"),
        "caps of Figures 1 and 5: list 5W,7W or range 5W:8W:1W (default: the validated caps, else a third and "
        "two thirds of the sweep's range)")(
        "policies", po::value<std::string>()->value_name("LIST"),
        policies_help.c_str())(
        "power-trace", po::value<std::vector<std::string>>()->composing()->value_name("RUN"),
        "power trace to draw: a validation run's series under /runs (repeat for more; default: Ours at the "
        "tightest cap)")(
        "sweep", po::value<std::vector<std::string>>()->composing()->value_name("NAME"),
        "sweep whose table and figures are drawn (repeat for more; default: every sweep)");
  };
  c.positional = {"store"};
  c.positional_repeat = true;
  c.input_files = {"store"};
  c.run = run_report;
  return c;
}

PACER_REGISTER_COMMAND(make);

}  // namespace
}  // namespace pacer::cli
