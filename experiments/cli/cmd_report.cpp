// `pacer report`: paper-style tables and figures regenerated from trace stores.
#include <fmt/format.h>

#include <iostream>

#include "experiments/cli/cli.hpp"
#include "experiments/report/report.hpp"

namespace pacer::cli {
namespace {

int run_report(const po::variables_map& vm) {
  experiments::ReportOptions opt;
  for (const auto& s : vm["store"].as<std::vector<std::string>>()) opt.stores.emplace_back(s);
  opt.out_dir = vm["out"].as<std::string>();
  const auto out = experiments::make_report(opt);
  for (const auto& md : out.tables_markdown) std::cout << md << "\n";
  std::cout << fmt::format("Figures ({}):\n", out.figures.size());
  for (const auto& f : out.figures) std::cout << "  " << f << "\n";
  for (const auto& s : out.skipped) std::cout << "  skipped: " << s << "\n";
  std::cout << fmt::format("{} files in {}\n", out.files.size(), opt.out_dir.string());
  return 0;
}

Command make() {
  Command c;
  c.name = "report";
  c.summary = "regenerate paper-style tables (Markdown, LaTeX, CSV) and gnuplot figures from trace stores";
  c.order = 80;
  c.usage_tail = "STORE...";
  c.description =
      "Tables: time and energy to accuracy per policy, dataset and cap (from validations), simulated\n"
      "time to accuracy (from sweeps). Figures: time vs power of every configuration with the cap and\n"
      "the chosen points, energy per policy and cap, power over time of a validation run. Each figure\n"
      "comes with its .gp script and .dat data so it can be restyled.";
  c.add_options = [](po::options_description& d) {
    d.add_options()("store", po::value<std::vector<std::string>>()->required()->multitoken()->value_name("FILE"),
                    "trace stores (HDF5) to read")(
        "out,o", po::value<std::string>()->default_value("pacer-report")->value_name("DIR"), "output folder");
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
