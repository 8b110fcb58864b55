#include "experiments/report/tables.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "base/stats.hpp"
#include "explore/policy.hpp"

namespace pacer::experiments {
namespace {

constexpr size_t kMaxWideColumns = 12;  // wider tables are transposed: one line per (dataset, cap)

struct Acc {
  std::vector<double> values;
  int censored = 0;
  int infeasible = 0;
  double given_std = traces::kNaN;  // a single value's own spread (a replay over seeds)
  Cell cell() const {
    Cell c;
    c.runs = static_cast<int>(values.size()) + censored + infeasible;
    c.censored = censored;
    c.infeasible = infeasible;
    if (values.empty()) return c;
    c.mean = base::mean(values);
    c.std = values.size() > 1 ? base::sample_std(values) : (std::isfinite(given_std) ? given_std : 0.0);
    return c;
  }
};

bool no_cap(double cap) {
  return !std::isfinite(cap) || cap <= 0;
}

// Caps ascending, "no cap" last.
bool cap_less(double a, double b) {
  if (no_cap(a) != no_cap(b)) return no_cap(b);
  return !no_cap(a) && a < b;
}

template <typename Row, typename Value>
ResultTable build(const std::vector<std::string>& group_names, const std::vector<std::vector<Row>>& groups,
                  Value value) {
  ResultTable t;
  std::set<std::string> policies;
  for (const auto& g : groups)
    for (const auto& r : g) policies.insert(r.policy);
  std::vector<std::string> pol(policies.begin(), policies.end());
  std::stable_sort(pol.begin(), pol.end(), [](auto& a, auto& b) { return policy_rank(a) < policy_rank(b); });
  for (const auto& p : pol) t.rows.push_back(policy_label(p));
  t.cells.assign(pol.size(), {});
  for (size_t g = 0; g < groups.size(); ++g) {
    std::vector<double> caps;
    for (const auto& r : groups[g]) {
      bool seen = false;
      for (double c : caps) seen = seen || traces::same(c, r.cap_w) || (no_cap(c) && no_cap(r.cap_w));
      if (!seen) caps.push_back(r.cap_w);
    }
    std::sort(caps.begin(), caps.end(), cap_less);
    for (double cap : caps) {
      t.groups.push_back(group_names[g]);
      t.columns.push_back(cap_label(cap));
      for (size_t p = 0; p < pol.size(); ++p) {
        Acc acc;
        for (const auto& r : groups[g]) {
          const bool same_cap = traces::same(r.cap_w, cap) || (no_cap(r.cap_w) && no_cap(cap));
          if (r.policy != pol[p] || !same_cap) continue;
          value(r, acc);
        }
        t.cells[p].push_back(acc.cell());
      }
    }
  }
  return t;
}

std::string fmt_value(double v) {
  if (!std::isfinite(v)) return "-";
  if (std::fabs(v) >= 100) return fmt::format("{:.0f}", v);
  if (std::fabs(v) >= 10) return fmt::format("{:.1f}", v);
  return fmt::format("{:.2f}", v);
}

std::string cell_text(const Cell& c, const std::string& pm) {
  if (c.runs == 0) return "-";
  if (c.infeasible == c.runs) return "infeasible";
  if (!std::isfinite(c.mean)) return fmt::format("not reached ({}/{})", c.censored, c.runs - c.infeasible);
  std::string s = fmt_value(c.mean) + pm + fmt_value(c.std);
  if (c.censored) s += fmt::format(" ({} censored)", c.censored);
  return s;
}

// Scales a table to minutes when its values are large, as the paper reports minutes.
ResultTable scaled(ResultTable t) {
  if (t.unit != "s") return t;
  std::vector<double> all;
  for (const auto& row : t.cells)
    for (const auto& c : row)
      if (std::isfinite(c.mean)) all.push_back(c.mean);
  if (all.empty()) return t;
  std::sort(all.begin(), all.end());
  if (all[all.size() / 2] < 600) return t;
  t.unit = "min";
  for (auto& row : t.cells)
    for (auto& c : row) {
      c.mean /= 60;
      c.std /= 60;
    }
  return t;
}

}  // namespace

std::string policy_label(const std::string& p) {
  return explore::policy_label(p);
}

int policy_rank(const std::string& p) {
  return explore::policy_rank(p);
}

std::string cap_label(double cap) {
  return no_cap(cap) ? "no cap" : fmt::format("{:.3g} W", cap);
}

namespace {
// One column group per validation (its dataset), cells from `value` of the runs that reached the target.
ResultTable validation_table(const std::vector<traces::ValidationResult>& results,
                             double (*value)(const traces::ValidationRow&)) {
  std::vector<std::string> names;
  std::vector<std::vector<traces::ValidationRow>> groups;
  for (const auto& r : results) {
    names.push_back(r.dataset);
    groups.push_back(r.rows);
  }
  return build(names, groups, [value](const traces::ValidationRow& r, Acc& acc) {
    if (r.batch_size == 0)
      ++acc.infeasible;  // the policy found no feasible configuration
    else if (r.reached)
      acc.values.push_back(value(r));
    else
      ++acc.censored;
  });
}
}  // namespace

ResultTable time_table(const std::vector<traces::ValidationResult>& results) {
  ResultTable t = validation_table(results, [](const traces::ValidationRow& r) { return r.device_time_s; });
  const bool emulated = std::any_of(results.begin(), results.end(), [](auto& r) { return r.emulated; });
  t.caption = fmt::format("Measured time to accuracy (mean ± std over seeds){}.",
                          emulated ? "; emulated device: virtual device time" : "");
  return scaled(t);
}

ResultTable energy_table(const std::vector<traces::ValidationResult>& results) {
  ResultTable t = validation_table(results, [](const traces::ValidationRow& r) { return r.energy_j; });
  t.quantity = "energy to accuracy";
  t.unit = "J";
  t.caption = "Measured energy to accuracy (mean ± std over seeds).";
  return t;
}

ResultTable sweep_table(const std::vector<traces::SweepResult>& sweeps) {
  std::vector<std::string> names;
  std::vector<std::vector<traces::SweepRow>> groups;
  for (const auto& s : sweeps) {
    std::map<std::string, std::vector<traces::SweepRow>> by_workload;
    for (const auto& r : s.rows) by_workload[r.workload].push_back(r);
    for (auto& [w, rows] : by_workload) {
      names.push_back(w.empty() ? s.target : w);
      groups.push_back(rows);
    }
  }
  struct Row {
    double cap_w;
    std::string policy;
    traces::SweepRow r;
  };
  std::vector<std::vector<Row>> wrapped;
  for (const auto& g : groups) {
    wrapped.emplace_back();
    for (const auto& r : g) wrapped.back().push_back({r.cap_w, r.policy, r});
  }
  ResultTable t = build(names, wrapped, [](const Row& row, Acc& acc) {
    if (!row.r.feasible) {
      ++acc.infeasible;
    } else if (std::isfinite(row.r.replayed_time_mean_s)) {
      acc.values.push_back(row.r.replayed_time_mean_s);
      acc.given_std = row.r.replayed_time_std_s;
    } else {
      ++acc.censored;
    }
  });
  t.caption = "Simulated time to accuracy (replay over the target's seeds; mean of means).";
  return scaled(t);
}

std::string to_markdown(const ResultTable& t) {
  if (t.columns.size() > kMaxWideColumns) {  // transposed: one line per (dataset, cap)
    std::string out = fmt::format("{} [{}]\n\n| Dataset | Cap |", t.quantity, t.unit);
    for (const auto& r : t.rows) out += " " + r + " |";
    out += "\n|---|---|" + [&] {
      std::string d;
      for (size_t r = 0; r < t.rows.size(); ++r) d += "---|";
      return d;
    }() + "\n";
    for (size_t c = 0; c < t.columns.size(); ++c) {
      out += fmt::format("| {} | {} |", t.groups[c], t.columns[c]);
      for (size_t r = 0; r < t.rows.size(); ++r) out += " " + cell_text(t.cells[r][c], " ± ") + " |";
      out += "\n";
    }
    return out + "\n" + t.caption + "\n";
  }
  std::string out = fmt::format("{} [{}]\n\n| Policy |", t.quantity, t.unit);
  for (size_t c = 0; c < t.columns.size(); ++c) out += fmt::format(" {} {} |", t.groups[c], t.columns[c]);
  out += "\n|---|";
  for (size_t c = 0; c < t.columns.size(); ++c) out += "---|";
  out += "\n";
  for (size_t r = 0; r < t.rows.size(); ++r) {
    out += "| " + t.rows[r] + " |";
    for (const auto& c : t.cells[r]) out += " " + cell_text(c, " ± ") + " |";
    out += "\n";
  }
  return out + "\n" + t.caption + "\n";
}

std::string to_latex(const ResultTable& t) {
  auto tex = [](std::string s) {
    std::string o;
    for (char ch : s) {
      if (ch == '_' || ch == '%' || ch == '&' || ch == '#') o += '\\';
      o += ch;
    }
    return o;
  };
  std::string out = "% Generated by pacer report; needs \\usepackage{booktabs}\n\\begin{table}[t]\n\\centering\n";
  if (t.columns.size() > kMaxWideColumns) {  // transposed, as in Markdown
    out += "\\begin{tabular}{ll" + std::string(t.rows.size(), 'c') + "}\n\\toprule\nDataset & Cap";
    for (const auto& r : t.rows) out += " & " + tex(r);
    out += " \\\\\n\\midrule\n";
    for (size_t c = 0; c < t.columns.size(); ++c) {
      out += tex(t.groups[c]) + " & " + tex(t.columns[c]);
      for (size_t r = 0; r < t.rows.size(); ++r) out += " & " + tex(cell_text(t.cells[r][c], " $\\pm$ "));
      out += " \\\\\n";
    }
    out +=
        fmt::format("\\bottomrule\n\\end{{tabular}}\n\\caption{{{} [{}]}}\n\\end{{table}}\n", tex(t.caption), t.unit);
    return out;
  }
  out += "\\begin{tabular}{l" + std::string(t.columns.size(), 'c') + "}\n\\toprule\n";
  // Group header with \cmidrule under each dataset.
  out += "Policy";
  std::vector<std::pair<std::string, size_t>> spans;
  for (const auto& g : t.groups) {
    if (!spans.empty() && spans.back().first == g)
      ++spans.back().second;
    else
      spans.push_back({g, 1});
  }
  for (const auto& [g, n] : spans) out += fmt::format(" & \\multicolumn{{{}}}{{c}}{{{}}}", n, tex(g));
  out += " \\\\\n";
  size_t col = 2;
  for (const auto& [g, n] : spans) {
    out += fmt::format("\\cmidrule(lr){{{}-{}}}", col, col + n - 1);
    col += n;
  }
  out += "\n";
  for (const auto& c : t.columns) out += " & " + tex(c);
  out += " \\\\\n\\midrule\n";
  for (size_t r = 0; r < t.rows.size(); ++r) {
    out += tex(t.rows[r]);
    for (const auto& c : t.cells[r]) out += " & " + tex(cell_text(c, " $\\pm$ "));
    out += " \\\\\n";
  }
  out += fmt::format("\\bottomrule\n\\end{{tabular}}\n\\caption{{{} [{}]}}\n\\end{{table}}\n", tex(t.caption), t.unit);
  return out;
}

std::string to_csv(const ResultTable& t) {
  std::string out = fmt::format("dataset,cap,policy,mean[{0}],std[{0}],runs,censored,infeasible\n", t.unit);
  for (size_t c = 0; c < t.columns.size(); ++c)
    for (size_t r = 0; r < t.rows.size(); ++r) {
      const Cell& cell = t.cells[r][c];
      out += fmt::format("{},{},{},{},{},{},{},{}\n", t.groups[c], t.columns[c], t.rows[r],
                         std::isfinite(cell.mean) ? fmt::format("{:.6g}", cell.mean) : "",
                         std::isfinite(cell.std) ? fmt::format("{:.6g}", cell.std) : "", cell.runs, cell.censored,
                         cell.infeasible);
    }
  return out;
}

}  // namespace pacer::experiments
