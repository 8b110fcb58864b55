#include "experiments/report/tables.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "base/error.hpp"
#include "base/stats.hpp"
#include "base/text.hpp"
#include "base/units.hpp"
#include "explore/policy.hpp"
#include "traces/csv.hpp"

namespace pacer::experiments {
namespace {

constexpr size_t kMaxWideColumns = 12;  // wider Markdown tables are transposed: one line per (dataset, cap)

constexpr const char* kOverCapMark = "†";
constexpr const char* kInfeasibleMark = "—";

struct Acc {
  std::vector<double> values;
  int censored = 0;
  int infeasible = 0;
  int over_cap = 0;
  double peak_w = traces::kNaN;
  double given_std = traces::kNaN;  // a single value's own spread (a replay over seeds)
  Cell cell() const {
    Cell c;
    c.runs = static_cast<int>(values.size()) + censored + infeasible;
    c.censored = censored;
    c.infeasible = infeasible;
    c.over_cap = over_cap;
    c.peak_w = peak_w;
    if (values.empty()) return c;
    c.mean = base::mean(values);
    c.std = values.size() > 1 ? base::sample_std(values) : (std::isfinite(given_std) ? given_std : 0.0);
    return c;
  }
};

bool no_cap(double cap) {
  return units::is_no_cap(cap);
}

// Caps ascending, "no cap" last.
bool cap_less(double a, double b) {
  if (no_cap(a) != no_cap(b)) return no_cap(b);
  return !no_cap(a) && a < b;
}

bool same_cap(double a, double b) {
  return traces::same(a, b) || (no_cap(a) && no_cap(b));
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
  for (const auto& p : pol) {
    t.rows.push_back(policy_label(p));
    t.row_ids.push_back(p);
  }
  t.cells.assign(pol.size(), {});
  for (size_t g = 0; g < groups.size(); ++g) {
    std::vector<double> caps;
    for (const auto& r : groups[g]) {
      bool seen = false;
      for (double c : caps) seen = seen || same_cap(c, r.cap_w);
      if (!seen) caps.push_back(r.cap_w);
    }
    std::sort(caps.begin(), caps.end(), cap_less);
    for (double cap : caps) {
      t.groups.push_back(group_names[g]);
      t.caps.push_back(no_cap(cap) ? units::kNoCap : cap);
      t.columns.push_back(cap_label(cap));
      for (size_t p = 0; p < pol.size(); ++p) {
        Acc acc;
        for (const auto& r : groups[g]) {
          if (r.policy != pol[p] || !same_cap(r.cap_w, cap)) continue;
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

// How a cell is written: Markdown or LaTeX.
struct Style {
  std::string pm;                               // " ± " / " $\pm$ "
  std::string (*bold)(const std::string&);      // "**x**" / "\textbf{x}"
  std::string over_cap;                         // marker after the value
  std::string infeasible;                       // the whole cell
  std::string censored;                         // marker after the value; "": "(N censored)"
};

std::string md_bold(const std::string& s) {
  return "**" + s + "**";
}
std::string tex_bold(const std::string& s) {
  return "\\textbf{" + s + "}";
}
const Style kMarkdown{" ± ", md_bold, std::string(" ") + kOverCapMark, kInfeasibleMark};
const Style kLatex{" $\\pm$ ", tex_bold, "$^\\dagger$", "---", "$^\\ddagger$"};

std::string cell_text(const Cell& c, const Style& st, bool best) {
  if (c.runs == 0) return "";
  if (c.infeasible == c.runs) return st.infeasible;
  // A run above the cap is marked whatever else the cell says (a run the watchdog stopped is not reached).
  const std::string over = c.over_cap ? st.over_cap : std::string();
  if (!std::isfinite(c.mean)) return fmt::format("not reached ({}/{}){}", c.censored, c.runs - c.infeasible, over);
  std::string s = fmt_value(c.mean) + st.pm + fmt_value(c.std);
  if (best) s = st.bold(s);
  s += over;
  if (c.censored) s += st.censored.empty() ? fmt::format(" ({} censored)", c.censored) : st.censored;
  return s;
}

// The legend line under a table: what its bold cells and marks mean (only the marks it uses).
std::string legend(const ResultTable& t, const Style& st) {
  bool bold = false, over = false, infeasible = false, oracle = false, censored = false;
  const auto best = best_cells(t);
  for (size_t r = 0; r < t.rows.size(); ++r) {
    oracle = oracle || explore::is_policy(t.row_ids.at(r), explore::Policy::Oracle);
    for (size_t c = 0; c < t.columns.size(); ++c) {
      const Cell& cell = t.cells[r][c];
      bold = bold || best[r][c];
      over = over || cell.over_cap > 0;
      censored = censored || (cell.censored > 0 && std::isfinite(cell.mean));
      infeasible = infeasible || (cell.runs > 0 && cell.infeasible == cell.runs);
    }
  }
  std::vector<std::string> parts;
  if (bold)
    parts.push_back(st.bold("bold") + ": the best at its cap" +
                    (oracle ? std::string(" (the fastest configuration is the oracle, not ranked)") : ""));
  if (over) parts.push_back(st.over_cap.substr(st.over_cap.find_first_not_of(' ')) +
                            " measured peak power above the cap in at least one run");
  if (infeasible) parts.push_back(st.infeasible + " no feasible configuration at this cap");
  if (censored && !st.censored.empty())
    parts.push_back(st.censored + " runs that missed the target within the budget are left out of the mean (the CSV counts them)");
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out.empty() ? out : out + ".";
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

// The short heading of a table's quantity ("time", "energy") with its unit: "time [s]".
std::string unit_heading(const ResultTable& t) {
  const auto space = t.quantity.find(' ');
  return fmt::format("{} [{}]", t.quantity.substr(0, space), t.unit);
}

}  // namespace

Labels parse_labels(const std::vector<std::string>& entries) {
  Labels out;
  for (const auto& e : entries) {
    const auto eq = e.find('=');
    const std::string name(base::trim(e.substr(0, eq == std::string::npos ? 0 : eq)));
    const std::string text(eq == std::string::npos ? "" : base::trim(e.substr(eq + 1)));
    if (eq == std::string::npos || name.empty() || text.empty())
      throw UsageError(fmt::format("label '{}': write NAME=LABEL, e.g. fmnist-target-a=Fashion-MNIST (B)", e));
    out[name] = text;
  }
  return out;
}

std::string label_of(const Labels& labels, const std::string& name) {
  const auto it = labels.find(name);
  return it == labels.end() ? name : it->second;
}

std::string policy_label(const std::string& p) {
  return explore::policy_label(p);
}

int policy_rank(const std::string& p) {
  return explore::policy_rank(p);
}

std::string cap_label(double cap) {
  return no_cap(cap) ? kUncappedLabel : fmt::format("{:.3g} W", cap);
}

namespace {
// One column group per validation (its dataset), cells from `value` of the runs that reached the target.
ResultTable validation_table(const std::vector<traces::ValidationResult>& results, const Labels& labels,
                             double (*value)(const traces::ValidationRow&)) {
  std::vector<std::string> names;
  std::vector<std::vector<traces::ValidationRow>> groups;
  for (const auto& r : results) {
    names.push_back(label_of(labels, r.dataset));
    groups.push_back(r.rows);
  }
  return build(names, groups, [value](const traces::ValidationRow& r, Acc& acc) {
    if (r.batch_size == 0) {
      ++acc.infeasible;  // the policy found no feasible configuration
      return;
    }
    if (r.cap_exceeded) ++acc.over_cap;
    if (std::isfinite(r.power_peak_w)) acc.peak_w = std::isnan(acc.peak_w) ? r.power_peak_w : std::max(acc.peak_w, r.power_peak_w);
    if (r.reached)
      acc.values.push_back(value(r));
    else
      ++acc.censored;
  });
}
}  // namespace

ResultTable time_table(const std::vector<traces::ValidationResult>& results, const Labels& labels) {
  ResultTable t =
      validation_table(results, labels, [](const traces::ValidationRow& r) { return r.device_time_s; });
  const bool emulated = std::any_of(results.begin(), results.end(), [](auto& r) { return r.emulated; });
  t.label = "time-to-accuracy";
  t.caption = fmt::format("Measured time to accuracy (mean ± std over seeds){}.",
                          emulated ? "; emulated device: virtual device time" : "");
  return scaled(t);
}

ResultTable energy_table(const std::vector<traces::ValidationResult>& results, const Labels& labels) {
  ResultTable t = validation_table(results, labels, [](const traces::ValidationRow& r) { return r.energy_j; });
  t.quantity = "energy to accuracy";
  t.unit = "J";
  t.label = "energy";
  t.caption = "Measured energy to accuracy (mean ± std over seeds).";
  return t;
}

ResultTable sweep_table(const std::vector<traces::SweepResult>& sweeps, const Labels& labels) {
  std::vector<std::string> names;
  std::vector<std::vector<traces::SweepRow>> groups;
  for (const auto& s : sweeps) {
    std::map<std::string, std::vector<traces::SweepRow>> by_workload;
    for (const auto& r : s.rows) by_workload[r.workload].push_back(r);
    for (auto& [w, rows] : by_workload) {
      // A label of the workload, else of the target relation, else the workload's own name.
      const std::string name = w.empty() ? s.target : w;
      names.push_back(labels.count(name) || s.target.empty() || !labels.count(s.target)
                          ? label_of(labels, name)
                          : label_of(labels, s.target));
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
  t.label = "simulated";
  t.caption = "Simulated time to accuracy (replay over the target's seeds; mean of means).";
  return scaled(t);
}

std::vector<std::vector<bool>> best_cells(const ResultTable& t) {
  std::vector<std::vector<bool>> best(t.rows.size(), std::vector<bool>(t.columns.size(), false));
  for (size_t c = 0; c < t.columns.size(); ++c) {
    std::vector<size_t> ranked;
    for (size_t r = 0; r < t.rows.size(); ++r) {
      const bool oracle = r < t.row_ids.size() && explore::is_policy(t.row_ids[r], explore::Policy::Oracle);
      if (!oracle && std::isfinite(t.cells[r][c].mean)) ranked.push_back(r);
    }
    if (ranked.size() < 2) continue;  // nothing to compare
    double lo = INFINITY;
    for (size_t r : ranked) lo = std::min(lo, t.cells[r][c].mean);
    for (size_t r : ranked)  // ties as printed are all best
      best[r][c] = fmt_value(t.cells[r][c].mean) == fmt_value(lo);
  }
  return best;
}

std::string to_markdown(const ResultTable& t) {
  const auto best = best_cells(t);
  std::string out;
  if (t.columns.size() > kMaxWideColumns) {  // transposed: one line per (dataset, cap)
    out = fmt::format("{} [{}]\n\n| Dataset | Cap |", t.quantity, t.unit);
    for (const auto& r : t.rows) out += " " + r + " |";
    out += "\n|---|---|" + [&] {
      std::string d;
      for (size_t r = 0; r < t.rows.size(); ++r) d += "---|";
      return d;
    }() + "\n";
    for (size_t c = 0; c < t.columns.size(); ++c) {
      out += fmt::format("| {} | {} |", t.groups[c], t.columns[c]);
      for (size_t r = 0; r < t.rows.size(); ++r) out += " " + cell_text(t.cells[r][c], kMarkdown, best[r][c]) + " |";
      out += "\n";
    }
  } else {
    out = fmt::format("{} [{}]\n\n| Policy |", t.quantity, t.unit);
    for (size_t c = 0; c < t.columns.size(); ++c) out += fmt::format(" {} {} |", t.groups[c], t.columns[c]);
    out += "\n|---|";
    for (size_t c = 0; c < t.columns.size(); ++c) out += "---|";
    out += "\n";
    for (size_t r = 0; r < t.rows.size(); ++r) {
      out += "| " + t.rows[r] + " |";
      for (size_t c = 0; c < t.columns.size(); ++c) out += " " + cell_text(t.cells[r][c], kMarkdown, best[r][c]) + " |";
      out += "\n";
    }
  }
  out += "\n" + t.caption + "\n";
  const std::string leg = legend(t, kMarkdown);
  if (!leg.empty()) out += "\n" + leg + "\n";
  return out;
}

namespace {

std::string tex(const std::string& s) {
  std::string o;
  for (size_t i = 0; i < s.size(); ++i) {
    const char ch = s[i];
    if (s.compare(i, 2, "±") == 0) {
      o += "$\\pm$";
      ++i;
      continue;
    }
    if (ch == '_' || ch == '%' || ch == '&' || ch == '#') o += '\\';
    o += ch;
  }
  return o;
}

// The characters a LaTeX cell shows (a math mark $...$ counts as one character, \\textbf{} none).
size_t shown_chars(const std::string& s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '$' && s.find('$', i + 1) != std::string::npos) {  // $\pm$, $^\dagger$: one mark
      ++n;
      i = s.find('$', i + 1);
    } else if (s.compare(i, 8, "\\textbf{") == 0) {
      i += 7;
    } else if (s[i] == '}' || s[i] == '\\' || (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) {
      // closing brace, escape, UTF-8 continuation byte
    } else {
      ++n;
    }
  }
  return n;
}

constexpr size_t kTexSeparation = 2;  // 2 x 3 pt of \tabcolsep at \small is about 1.5 characters

}  // namespace

namespace {

// Parts of consecutive data columns of `width`, each fitting one paper column beside the leading
// columns (`lead` characters); at least one data column per part.
std::vector<std::pair<size_t, size_t>> column_parts(size_t lead, const std::vector<size_t>& width) {
  std::vector<std::pair<size_t, size_t>> parts;  // [from, to)
  for (size_t c = 0; c < width.size();) {
    size_t used = lead, to = c;
    while (to < width.size() && (to == c || used + kTexSeparation + width[to] <= kLatexColumnChars))
      used += kTexSeparation + width[to++];
    parts.push_back({c, to});
    c = to;
  }
  return parts;
}

// A heading of two lines when it is long ("Fastest configuration"), a nested tabular (no package).
std::string tex_heading(const std::string& h, size_t* shown) {
  size_t cut = std::string::npos;
  if (h.size() > 12)  // the space nearest the middle
    for (size_t i = 0; i < h.size(); ++i)
      if (h[i] == ' ' && (cut == std::string::npos || std::abs(static_cast<long>(2 * i) - static_cast<long>(h.size())) <
                                                          std::abs(static_cast<long>(2 * cut) - static_cast<long>(h.size()))))
        cut = i;
  if (cut == std::string::npos) {
    *shown = shown_chars(tex(h));
    return tex(h);
  }
  const std::string a = h.substr(0, cut), b = h.substr(cut + 1);
  *shown = std::max(shown_chars(tex(a)), shown_chars(tex(b)));
  return "\\begin{tabular}[b]{@{}c@{}}" + tex(a) + "\\\\" + tex(b) + "\\end{tabular}";
}

std::string latex_head() {
  return "% Generated by pacer report; needs \\usepackage{booktabs}\n\\begin{table}[t]\n\\centering\n\\small\n"
         "\\setlength{\\tabcolsep}{3pt}\n";
}

std::string latex_tail(const ResultTable& t) {
  std::string out;
  const std::string leg = legend(t, kLatex);
  if (!leg.empty()) out += "\\par\\smallskip\n{\\footnotesize " + tex(leg) + "}\n";
  return out + fmt::format("\\caption{{{}}}\n\\label{{tab:{}}}\n\\end{{table}}\n", tex(t.caption),
                           t.label.empty() ? "results" : t.label);
}

// Policies as rows, (dataset, cap) as columns.
std::pair<std::string, size_t> latex_by_policy(const ResultTable& t, const std::vector<std::vector<std::string>>& text) {
  const std::string corner = tex(unit_heading(t));
  size_t first_width = std::max(shown_chars(corner), std::string_view("Policy").size());
  for (const auto& r : t.rows) first_width = std::max(first_width, shown_chars(tex(r)));
  std::vector<size_t> width(t.columns.size(), 0);
  for (size_t c = 0; c < t.columns.size(); ++c) {
    width[c] = shown_chars(tex(t.columns[c]));
    for (size_t r = 0; r < t.rows.size(); ++r) width[c] = std::max(width[c], shown_chars(text[r][c]));
  }
  const auto parts = column_parts(first_width, width);
  std::string out;
  for (size_t part = 0; part < parts.size(); ++part) {
    const auto [from, to] = parts[part];
    if (part) out += "\\par\\medskip\n";
    out += "\\begin{tabular}{l" + std::string(to - from, 'c') + "}\n\\toprule\n";
    // Group header with \cmidrule under each dataset.
    out += "Policy";
    std::vector<std::pair<std::string, size_t>> spans;
    for (size_t c = from; c < to; ++c) {
      if (!spans.empty() && spans.back().first == t.groups[c])
        ++spans.back().second;
      else
        spans.push_back({t.groups[c], 1});
    }
    for (const auto& [g, n] : spans) out += fmt::format(" & \\multicolumn{{{}}}{{c}}{{{}}}", n, tex(g));
    out += " \\\\\n";
    size_t col = 2;
    for (const auto& [g, n] : spans) {
      out += fmt::format("\\cmidrule(lr){{{}-{}}}", col, col + n - 1);
      col += n;
    }
    out += "\n" + corner;
    for (size_t c = from; c < to; ++c) out += " & " + tex(t.columns[c]);
    out += " \\\\\n\\midrule\n";
    for (size_t r = 0; r < t.rows.size(); ++r) {
      out += tex(t.rows[r]);
      for (size_t c = from; c < to; ++c) out += " & " + text[r][c];
      out += " \\\\\n";
    }
    out += "\\bottomrule\n\\end{tabular}\n";
  }
  return {out, parts.size()};
}

// Transposed: (dataset, cap) as rows, policies as columns.
std::pair<std::string, size_t> latex_by_cap(const ResultTable& t, const std::vector<std::vector<std::string>>& text) {
  size_t group_width = std::string_view("Dataset").size(), cap_width = shown_chars(tex(unit_heading(t)));
  for (size_t c = 0; c < t.columns.size(); ++c) {
    group_width = std::max(group_width, shown_chars(tex(t.groups[c])));
    cap_width = std::max(cap_width, shown_chars(tex(t.columns[c])));
  }
  std::vector<size_t> width(t.rows.size(), 0);
  std::vector<std::string> heading(t.rows.size());
  for (size_t r = 0; r < t.rows.size(); ++r) {
    heading[r] = tex_heading(t.rows[r], &width[r]);
    for (size_t c = 0; c < t.columns.size(); ++c) width[r] = std::max(width[r], shown_chars(text[r][c]));
  }
  const auto parts = column_parts(group_width + kTexSeparation + cap_width, width);
  std::string out;
  for (size_t part = 0; part < parts.size(); ++part) {
    const auto [from, to] = parts[part];
    if (part) out += "\\par\\medskip\n";
    out += "\\begin{tabular}{ll" + std::string(to - from, 'c') + "}\n\\toprule\nDataset & " + tex(unit_heading(t));
    for (size_t r = from; r < to; ++r) out += " & " + heading[r];
    out += " \\\\\n\\midrule\n";
    for (size_t c = 0; c < t.columns.size(); ++c) {
      out += (c > 0 && t.groups[c] == t.groups[c - 1] ? std::string() : tex(t.groups[c])) + " & " + tex(t.columns[c]);
      for (size_t r = from; r < to; ++r) out += " & " + text[r][c];
      out += " \\\\\n";
    }
    out += "\\bottomrule\n\\end{tabular}\n";
  }
  return {out, parts.size()};
}

}  // namespace

// The orientation that needs fewer parts to fit one column (policies as rows on a tie).
std::string to_latex(const ResultTable& t) {
  const auto best = best_cells(t);
  std::vector<std::vector<std::string>> text(t.rows.size());
  for (size_t r = 0; r < t.rows.size(); ++r)
    for (size_t c = 0; c < t.columns.size(); ++c) text[r].push_back(cell_text(t.cells[r][c], kLatex, best[r][c]));
  auto by_policy = latex_by_policy(t, text);
  auto by_cap = latex_by_cap(t, text);
  return latex_head() + (by_cap.second < by_policy.second ? by_cap.first : by_policy.first) + latex_tail(t);
}

std::string to_csv(const ResultTable& t) {
  std::string out =
      fmt::format("dataset,cap[W],policy,mean[{0}],std[{0}],runs,censored,infeasible,over_cap,peak[W]\n", t.unit);
  for (size_t c = 0; c < t.columns.size(); ++c)
    for (size_t r = 0; r < t.rows.size(); ++r) {
      const Cell& cell = t.cells[r][c];
      const double cap = c < t.caps.size() ? t.caps[c] : traces::kNaN;
      out += fmt::format("{},{},{},{},{},{},{},{},{},{}\n", traces::csv_field(t.groups[c]),
                         no_cap(cap) ? "inf" : fmt::format("{:.6g}", cap), traces::csv_field(t.rows[r]),
                         std::isfinite(cell.mean) ? fmt::format("{:.6g}", cell.mean) : "",
                         std::isfinite(cell.std) ? fmt::format("{:.6g}", cell.std) : "", cell.runs, cell.censored,
                         cell.infeasible, cell.over_cap,
                         std::isfinite(cell.peak_w) ? fmt::format("{:.4g}", cell.peak_w) : "");
    }
  return out;
}

}  // namespace pacer::experiments
