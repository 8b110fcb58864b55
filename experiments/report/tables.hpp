#pragma once
// Paper-style result tables (Tables 2-4 of the paper): rows are policies (Baseline 1, Baseline 2,
// Ours, Fastest configuration), columns are datasets x power caps, cells mean +- std of the time to
// accuracy over seeds. Rendered as Markdown, LaTeX (booktabs) and CSV.
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
};

struct ResultTable {
  std::string caption;
  std::string quantity = "time to accuracy";
  std::string unit = "s";
  std::vector<std::string> groups;       // per column: dataset
  std::vector<std::string> columns;      // per column: cap ("5 W", "no cap")
  std::vector<std::string> rows;         // per row: policy label
  std::vector<std::vector<Cell>> cells;  // [row][column]
};

// The label and paper order of a policy id, from explore's policy table (explore::policy_label,
// explore::policy_rank): "baseline1" -> "Baseline 1", "zeus-cost" -> "Zeus cost".
std::string policy_label(const std::string& policy);
int policy_rank(const std::string& policy);
std::string cap_label(double cap_w);

// One column group per validation (its dataset), one column per cap, one row per policy.
ResultTable time_table(const std::vector<traces::ValidationResult>& results);
// Energy to accuracy in the same layout (Figure 4 numbers).
ResultTable energy_table(const std::vector<traces::ValidationResult>& results);
// From simulated sweeps: replayed time to accuracy (mean +- std over the target's seeds).
ResultTable sweep_table(const std::vector<traces::SweepResult>& sweeps);

std::string to_markdown(const ResultTable& t);
std::string to_latex(const ResultTable& t);
std::string to_csv(const ResultTable& t);

}  // namespace pacer::experiments
