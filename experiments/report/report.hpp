#pragma once
// `pacer report`: regenerates every table and figure from trace files, nothing else.
#include <filesystem>
#include <string>
#include <vector>

namespace pacer::experiments {

struct ReportOptions {
  std::vector<std::filesystem::path> stores;  // trace stores to read
  std::filesystem::path out_dir = "pacer-report";
  double time_samples = 0;  // Figure 1 y axis: 0 = time to accuracy when a relation is stored
};

struct ReportOutput {
  std::vector<std::filesystem::path> files;  // every file written, in order
  std::vector<std::string> tables_markdown;  // the Markdown tables, for printing
  std::vector<std::string> figures;          // one line per figure: "name: what it shows"
  std::vector<std::string> skipped;          // what could not be drawn and why
};

ReportOutput make_report(const ReportOptions& options);

}  // namespace pacer::experiments
