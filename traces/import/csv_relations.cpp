#include "traces/import/csv_relations.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "base/error.hpp"
#include "base/text.hpp"
#include "traces/csv.hpp"
#include "traces/import/common.hpp"

namespace pacer::traces::csv_import {
namespace {

// A column a file may hold: its role, the units its heading may carry ("" always may; "*" any: the
// metric's own name), and the time dimension for wall_time (converted to s).
struct Known {
  std::string role;
  std::vector<std::string> units;
  bool time = false;
};

const std::vector<Known>& run_columns() {
  static const std::vector<Known> k = {
      {"b", {"samples"}},         {"seed", {"1"}},           {"reached", {"bool"}},
      {"samples", {"samples"}},   {"epochs", {"epochs"}},    {"budget", {"samples", "epochs"}},
      {"wall_time", {}, true},    {"final_metric", {"*"}},   {"learning_rate", {"1"}},
      {"threads", {"1"}},
  };
  return k;
}

const std::vector<Known>& curve_columns() {
  static const std::vector<Known> k = {
      {"b", {"samples"}}, {"seed", {"1"}}, {"samples", {"samples"}}, {"epochs", {"epochs"}}, {"metric", {"*"}}};
  return k;
}

struct Found {
  int index = -1;
  std::string unit;
  double factor = 1;  // to SI (wall_time)
  bool present() const { return index >= 0; }
};

// role -> column of the header; an unknown or repeated heading or a unit the column does not take
// is an Error naming the file and the column.
std::map<std::string, Found> resolve(const std::vector<std::string>& header, const std::vector<Known>& known,
                                     const std::string& origin) {
  std::map<std::string, Found> out;
  std::vector<std::string> names;
  for (const auto& k : known) names.push_back(k.role);
  for (size_t i = 0; i < header.size(); ++i) {
    auto [heading, unit] = import::split_heading(header[i]);
    const std::string name = heading == "batch_size" ? "b" : heading;  // the name `pacer export` writes
    const auto k = std::find_if(known.begin(), known.end(), [&](const Known& x) { return x.role == name; });
    if (k == known.end())
      throw Error(fmt::format("{}: unknown column '{}' (known: {})", origin, header[i], fmt::join(names, ", ")));
    if (out.count(name)) throw Error(fmt::format("{}: column {} appears twice", origin, name));
    Found f;
    f.index = static_cast<int>(i);
    f.unit = unit;
    if (k->time) {
      f.factor = import::unit_factor(unit, "s", origin, name);
    } else if (!unit.empty() && !(k->units.size() == 1 && k->units[0] == "*") &&
               std::find(k->units.begin(), k->units.end(), unit) == k->units.end()) {
      throw Error(fmt::format("{}: column {} takes {}, found [{}]", origin, name,
                              k->units.empty() ? std::string("no unit") : fmt::format("[{}]", fmt::join(k->units, "] or [")),
                              unit));
    }
    out[name] = f;
  }
  return out;
}

const Found& need(const std::map<std::string, Found>& cols, const std::string& role, const std::string& origin) {
  const auto it = cols.find(role);
  if (it == cols.end()) throw Error(fmt::format("{}: no '{}' column in the header", origin, role));
  return it->second;
}

// The count column: samples, or epochs (converted with samples_per_epoch). Exactly one of them.
const Found& count_column(const std::map<std::string, Found>& cols, const RelationImportOptions& o,
                          const std::string& origin, bool& in_epochs) {
  const bool s = cols.count("samples") > 0, e = cols.count("epochs") > 0;
  if (s == e)
    throw Error(fmt::format("{}: give the count to the target as one column, samples or epochs ({})", origin,
                            s ? "found both" : "found neither"));
  in_epochs = e;
  if (e && o.samples_per_epoch < 1)
    throw Error(fmt::format("{}: counts in epochs need the samples in one epoch (samples per epoch)", origin));
  return cols.at(e ? "epochs" : "samples");
}

std::string cell(const std::vector<std::string>& row, const Found& f) {
  return std::string(base::trim(row.at(static_cast<size_t>(f.index))));
}

// A positive count of samples from `text` in samples or epochs.
int64_t samples_of(const std::string& text, bool in_epochs, int64_t samples_per_epoch, const std::string& origin,
                   size_t line, const std::string& what) {
  const double v = import::parse_number(text, origin, line, what);
  if (!(v > 0) || (!in_epochs && v != std::floor(v)))
    throw Error(fmt::format("{}:{}: {} holds '{}', not a positive {}", origin, line, what, text,
                            in_epochs ? "number of epochs" : "whole number of samples"));
  const double samples = in_epochs ? std::round(v * static_cast<double>(samples_per_epoch)) : v;
  if (samples < 1 || samples > 9e18)
    throw Error(fmt::format("{}:{}: {} holds '{}', out of range", origin, line, what, text));
  return static_cast<int64_t>(samples);
}

int seed_of(const std::string& text, const std::string& origin, size_t line) {
  const double v = import::parse_number(text, origin, line, "seed");
  if (v < 0 || v != std::floor(v) || v > 2147483647.0)
    throw Error(fmt::format("{}:{}: seed holds '{}', not a whole number >= 0", origin, line, text));
  return static_cast<int>(v);
}

bool reached_of(const std::string& text, const std::string& origin, size_t line) {
  std::string t = text;
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (t == "1" || t == "true" || t == "yes" || t == "reached") return true;
  if (t == "0" || t == "false" || t == "no" || t == "censored") return false;
  throw Error(fmt::format("{}:{}: reached holds '{}', not 1/0, true/false, yes/no or reached/censored", origin, line,
                          text));
}

// The text without its leading comment lines (a `pacer export`'s provenance and title), and how many
// lines were dropped, so that errors still name the file's own line numbers.
std::pair<std::string, size_t> drop_comments(const std::string& text) {
  size_t at = 0, dropped = 0;
  while (at < text.size() && text[at] == '#') {
    const size_t end = text.find('\n', at);
    at = end == std::string::npos ? text.size() : end + 1;
    ++dropped;
  }
  return {text.substr(at), dropped};
}

std::string origin_of(const std::filesystem::path& file) {
  return file.empty() ? "csv" : file.filename().string();
}

}  // namespace

RelationSet import_relation_text(const std::string& csv, const std::string& origin, const RelationImportOptions& o) {
  if (!std::isfinite(o.target)) throw Error("the relation's target (the metric level the counts are to) is missing");
  const auto [text, comments] = drop_comments(csv);
  const CsvTable t = parse_csv(text, origin);
  const auto cols = resolve(t.header, run_columns(), origin);
  const Found &b = need(cols, "b", origin), &seed = need(cols, "seed", origin), &reached = need(cols, "reached", origin);
  bool in_epochs = false;
  const Found& count = count_column(cols, o, origin, in_epochs);
  const auto optional = [&](const std::string& role) { return cols.count(role) ? cols.at(role) : Found{}; };
  const Found budget = optional("budget"), wall = optional("wall_time"), metric = optional("final_metric"),
              lr = optional("learning_rate"), threads = optional("threads");
  const bool budget_in_epochs = budget.present() && (budget.unit == "epochs" || (budget.unit.empty() && in_epochs));
  if (budget_in_epochs && o.samples_per_epoch < 1)
    throw Error(fmt::format("{}: a budget in epochs needs the samples in one epoch (samples per epoch)", origin));

  RelationSet s;
  s.name = o.name;
  s.workload = o.workload;
  s.dataset = o.dataset.empty() ? o.name : o.dataset;
  s.metric = o.metric;
  s.higher_is_better = o.higher_is_better;
  s.target = o.target;
  s.lr_rule = o.lr_rule;
  s.optimizer = o.optimizer;
  s.samples_per_epoch = o.samples_per_epoch;
  std::set<std::pair<int, int>> seen;
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const auto& row = t.rows[r];
    const size_t line = r + 2 + comments;
    RelationRun run;
    run.batch_size = import::parse_count(cell(row, b), origin, line, "b");
    run.seed = seed_of(cell(row, seed), origin, line);
    run.reached = reached_of(cell(row, reached), origin, line);
    run.samples = samples_of(cell(row, count), in_epochs, o.samples_per_epoch, origin, line, in_epochs ? "epochs" : "samples");
    run.budget_samples = run.samples;
    if (budget.present() && !cell(row, budget).empty()) {
      run.budget_samples = samples_of(cell(row, budget), budget_in_epochs, o.samples_per_epoch, origin, line, "budget");
      if (run.budget_samples < run.samples)
        throw Error(fmt::format("{}:{}: budget ({} samples) is below the samples trained ({})", origin, line,
                                run.budget_samples, run.samples));
    }
    if (wall.present() && !cell(row, wall).empty()) {
      run.wall_time_s = import::parse_number(cell(row, wall), origin, line, "wall_time") * wall.factor;
      if (!(run.wall_time_s > 0))
        throw Error(fmt::format("{}:{}: wall_time holds '{}', not a positive time", origin, line, cell(row, wall)));
    }
    if (metric.present() && !cell(row, metric).empty())
      run.final_metric = import::parse_number(cell(row, metric), origin, line, "final_metric");
    if (lr.present() && !cell(row, lr).empty()) {
      run.learning_rate = import::parse_number(cell(row, lr), origin, line, "learning_rate");
      if (!(run.learning_rate > 0))
        throw Error(fmt::format("{}:{}: learning_rate holds '{}', not a positive number", origin, line, cell(row, lr)));
    }
    if (threads.present() && !cell(row, threads).empty()) {  // a pacer export's (0: not recorded)
      const double v = import::parse_number(cell(row, threads), origin, line, "threads");
      if (!(v >= 0) || v != std::floor(v) || v > 1e6)
        throw Error(fmt::format("{}:{}: threads holds '{}', not a whole number >= 0", origin, line, cell(row, threads)));
      run.threads = static_cast<int>(v);
    }
    if (!seen.insert({run.batch_size, run.seed}).second)
      throw Error(fmt::format("{}:{}: the run b={} seed={} appears twice", origin, line, run.batch_size, run.seed));
    s.runs.push_back(run);
  }
  if (s.runs.empty()) throw Error(fmt::format("{}: no runs under the header", origin));
  if (s.relation_vector().empty())
    throw Error(fmt::format("{}: no run reached the target: a relation needs at least one reached run", origin));
  const auto bs = s.batch_sizes();
  s.base_batch = bs.front();
  return s;
}

LearningCurve import_curve_text(const std::string& csv, const std::string& origin, const RelationImportOptions& o,
                                const RelationSet& relation) {
  const auto [text, comments] = drop_comments(csv);
  const CsvTable t = parse_csv(text, origin);
  const auto cols = resolve(t.header, curve_columns(), origin);
  const Found &b = need(cols, "b", origin), &seed = need(cols, "seed", origin), &metric = need(cols, "metric", origin);
  bool in_epochs = false;
  const Found& count = count_column(cols, o, origin, in_epochs);
  std::set<std::pair<int, int>> runs;
  for (const auto& r : relation.runs) runs.insert({r.batch_size, r.seed});
  LearningCurve c;
  c.name = relation.name;
  c.metric = relation.metric;
  c.higher_is_better = relation.higher_is_better;
  c.source = "evaluations";
  std::set<std::tuple<int, int, int64_t>> seen;
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const auto& row = t.rows[r];
    const size_t line = r + 2 + comments;
    CurvePoint p;
    p.batch_size = import::parse_count(cell(row, b), origin, line, "b");
    p.seed = seed_of(cell(row, seed), origin, line);
    p.samples = samples_of(cell(row, count), in_epochs, o.samples_per_epoch, origin, line, in_epochs ? "epochs" : "samples");
    p.metric = import::parse_number(cell(row, metric), origin, line, "metric");
    if (!runs.count({p.batch_size, p.seed}))
      throw Error(fmt::format("{}:{}: b={} seed={} is not a run of the relation's file", origin, line, p.batch_size,
                              p.seed));
    if (!seen.insert({p.batch_size, p.seed, p.samples}).second)
      throw Error(fmt::format("{}:{}: b={} seed={} at {} samples appears twice", origin, line, p.batch_size, p.seed,
                              p.samples));
    c.points.push_back(p);
  }
  if (c.points.empty()) throw Error(fmt::format("{}: no points under the header", origin));
  std::stable_sort(c.points.begin(), c.points.end(), [](const CurvePoint& x, const CurvePoint& y) {
    return std::tie(x.batch_size, x.seed, x.samples) < std::tie(y.batch_size, y.seed, y.samples);
  });
  return c;
}

ImportedRelation import_relation(const RelationImportOptions& o) {
  ImportedRelation out;
  out.relation = import_relation_text(import::read_text(o.file), origin_of(o.file), o);
  if (!o.curve_file.empty())
    out.curve = import_curve_text(import::read_text(o.curve_file), origin_of(o.curve_file), o, out.relation);
  return out;
}

}  // namespace pacer::traces::csv_import
