#pragma once
// `pacer report`: regenerates every table and figure from trace files, nothing else.
#include <filesystem>
#include <string>
#include <vector>

#include "experiments/report/tables.hpp"
#include "explore/policy.hpp"

namespace pacer::experiments {

struct ReportOptions {
  std::vector<std::filesystem::path> stores;  // trace stores to read
  std::filesystem::path out_dir = "pacer-report";
  double time_samples = 0;  // Figure 1 y axis: 0 = time to accuracy when a relation is stored
  Labels labels;            // readable dataset (and workload) names in tables and figures
  // Figures 1 and 5 at these caps (each sweep's cap nearest to each); empty: the sweep caps nearest the
  // validated caps, else at one and two thirds of the sweep's range.
  std::vector<double> figure_caps_w;
  // The policies Figure 1 marks; empty: the paper's rows that the sweep ran.
  std::vector<explore::Policy> policies;
  // The validation runs whose power over time is drawn (PowerSeries names under /runs); empty: per
  // validation, Ours at its tightest cap.
  std::vector<std::string> power_traces;
  // The sweeps whose figures are drawn (names under /sweeps); empty: every sweep.
  std::vector<std::string> sweeps;
};

// The figures `pacer report` draws, one line each, for its --help.
std::string report_figures_help();

struct ReportOutput {
  std::vector<std::filesystem::path> files;  // every file written, in order
  std::vector<std::string> tables_markdown;  // the Markdown tables, for printing
  std::vector<std::string> table_stems;      // their file stems ("table-time-to-accuracy")
  std::vector<std::pair<std::string, std::string>> svgs;  // (SVG file name, what the figure shows)
  std::vector<std::string> figures;          // one line per figure: "name: what it shows"
  std::vector<std::string> skipped;          // what could not be drawn and why
  std::filesystem::path index;               // index.html: tables, figures and provenance on one page
};

ReportOutput make_report(const ReportOptions& options);

// The choices Figure 1 of sweep `sweep` in store `store` marks at `cap_w` for `policies`, one per
// policy: the explorer's (explore::decide) on profile `profile` under the sweep's recorded basis and
// guard, measured points winning: the same choices as the sweep's rows and a validation's table.
std::vector<explore::Selection> figure1_choices(const std::filesystem::path& store, const std::string& sweep,
                                               const std::string& profile, double cap_w,
                                               const std::vector<explore::Policy>& policies);

}  // namespace pacer::experiments
