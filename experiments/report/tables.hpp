#pragma once
// Paper-style result tables (Tables 2-4 of the paper): rows are policies (Baseline 1, Baseline 2,
// Ours, pacer, Fastest configuration), columns are datasets x power caps (an uncapped column "N/A"
// last), cells mean +- std of the time to accuracy over seeds. Rendered as Markdown, LaTeX
// (booktabs; split into parts that fit one column) and CSV (caps as numbers in W).
//
// In Markdown and LaTeX the best value at each (dataset, cap) is bold (lower is better; the fastest
// configuration is the oracle, a reference, and is not ranked), a cell with a run whose measured
// power went above the cap carries a dagger and a cap with no feasible configuration shows a dash;
// a legend line under the table explains the marks it uses.
#include <map>
#include <string>
#include <vector>

#include "traces/records.hpp"

namespace pacer::experiments {

struct Cell {
  double mean = traces::kNaN;
  double std = traces::kNaN;
  int runs = 0;        // runs behind the figure
  int censored = 0;    // runs that missed the target within the budget (excluded from mean)
  int infeasible = 0;  // selections with no feasible configuration at the cap
  int over_cap = 0;    // runs whose measured power went above the cap
  double peak_w = traces::kNaN;  // the highest measured peak power of the runs behind it (validations)
};

struct ResultTable {
  std::string caption;  // a sentence, no unit (the unit is in the headings)
  std::string label;    // LaTeX \label: tab:LABEL
  std::string quantity = "time to accuracy";
  std::string unit = "s";
  std::vector<std::string> groups;       // per column: dataset (its label)
  std::vector<double> caps;              // per column: cap [W]; not finite: uncapped
  std::vector<std::string> columns;      // per column: cap_label of caps ("5 W", "N/A")
  std::vector<std::string> rows;         // per row: policy label
  std::vector<std::string> row_ids;      // per row: policy id ("ours", "oracle")
  std::vector<std::vector<Cell>> cells;  // [row][column]
};

// Readable names of datasets (and workloads) in tables and figures: name -> label. A name without a
// label is shown as it is.
using Labels = std::map<std::string, std::string>;
// "NAME=LABEL" entries (a spec's `label = ` keys); throws UsageError on an entry without '='.
Labels parse_labels(const std::vector<std::string>& entries);
std::string label_of(const Labels& labels, const std::string& name);

// The label and paper order of a policy id, from explore's policy table (explore::policy_label,
// explore::policy_rank): "baseline1" -> "Baseline 1", "zeus-cost" -> "Zeus cost".
std::string policy_label(const std::string& policy);
int policy_rank(const std::string& policy);
// "5.9 W"; no cap: "N/A" (the paper's uncapped column).
std::string cap_label(double cap_w);
inline constexpr const char* kUncappedLabel = "N/A";

// One column group per validation (its dataset), one column per cap, one row per policy.
ResultTable time_table(const std::vector<traces::ValidationResult>& results, const Labels& labels = {});
// Energy to accuracy in the same layout (Figure 4 numbers).
ResultTable energy_table(const std::vector<traces::ValidationResult>& results, const Labels& labels = {});
// From simulated sweeps: replayed time to accuracy (mean +- std over the target's seeds).
ResultTable sweep_table(const std::vector<traces::SweepResult>& sweeps, const Labels& labels = {});

// Per (dataset, cap) column, the rows whose value is the best (lowest; ties all bold), the oracle not ranked.
std::vector<std::vector<bool>> best_cells(const ResultTable& t);

std::string to_markdown(const ResultTable& t);
std::string to_latex(const ResultTable& t);
// One line per (dataset, cap, policy): dataset,cap[W],policy,mean[UNIT],std[UNIT],runs,censored,
// infeasible,over_cap,peak[W]; cap[W] is a number, "inf" for the uncapped column (as `pacer export`
// writes a sweep's cap); over_cap counts the runs whose measured power went above the cap (0: none)
// and peak[W] is the highest measured peak of the cell's runs (empty: nothing measured, a simulation).
std::string to_csv(const ResultTable& t);
// Characters a LaTeX tabular line of `to_latex` may take to fit one column of a two-column paper
// (at \small with 3 pt column separation); wider tables are split into parts.
inline constexpr size_t kLatexColumnChars = 52;

}  // namespace pacer::experiments
