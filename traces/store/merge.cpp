#include "traces/store/merge.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <functional>
#include <optional>
#include <tuple>
#include <utility>

#include "base/error.hpp"
#include "traces/store/store.hpp"
#include "traces/store/store_file.hpp"

namespace pacer::traces {
namespace {

namespace fs = std::filesystem;

// One record of a name being merged: its header (the record with its keyed entries removed), the
// file the header came from, and every keyed entry with the file it came from.
template <class Record, class Key, class Entry>
struct Merging {
  Record header;
  fs::path header_from;
  std::map<Key, std::pair<Entry, fs::path>> entries;
  double cost_s = 0;  // profiles: profiling cost of the inputs that brought new points
  std::string board_model;  // of the entries that record one, and the file the first came from
  fs::path board_from;
};

// How one record type is merged: which member holds its entries, the key of an entry, and how a
// header and an entry read in an error message.
template <class Record, class Key, class Entry>
struct Kind {
  std::string what;  // "relation"
  std::vector<Entry> Record::*entries;
  std::function<Key(const Entry&)> key;
  std::function<std::string(const Entry&)> entry_text;
  std::function<std::string(const Record&)> header_text;
  std::function<void(Record&)> normalise = [](Record&) {};  // fields that may differ between shards
  std::function<std::string(const Entry&)> board_model = {};  // entries measured on a board say which
};

// Every entry of one record that names its board model must name the same one: a profile or a
// validation belongs to one board model (docs/cluster.md, board fleets).
template <class Record, class Key, class Entry>
void check_board_model(Merging<Record, Key, Entry>& m, const Kind<Record, Key, Entry>& kind, const std::string& name,
                       const Entry& e, const fs::path& from) {
  if (!kind.board_model) return;
  const std::string model = kind.board_model(e);
  if (model.empty()) return;
  if (m.board_model.empty()) {
    m.board_model = model;
    m.board_from = from;
  } else if (m.board_model != model) {
    throw Error(fmt::format(
        "{} '{}' was measured on board model '{}' in {} but on '{}' in {}: {}s of different board models cannot be "
        "merged into one (give each board model's {} its own name, or its own store)",
        kind.what, name, m.board_model, m.board_from.string(), model, from.string(), kind.what, kind.what));
  }
}

template <class Record, class Key, class Entry>
void add_record(std::map<std::string, Merging<Record, Key, Entry>>& acc, const Kind<Record, Key, Entry>& kind,
                const std::string& name, Record record, const fs::path& from, MergeReport& report,
                const std::function<double(const Record&)>& cost = {}) {
  std::vector<Entry> entries = std::move(record.*kind.entries);
  (record.*kind.entries).clear();
  const double record_cost = cost ? cost(record) : 0;
  kind.normalise(record);
  auto [it, fresh] = acc.try_emplace(name);
  auto& m = it->second;
  if (fresh) {
    m.header = record;
    m.header_from = from;
  } else if (!(m.header == record)) {
    throw Error(fmt::format("{} '{}' differs between {} ({}) and {} ({}): merge only the shards of one campaign",
                            kind.what, name, m.header_from.string(), kind.header_text(m.header), from.string(),
                            kind.header_text(record)));
  }
  bool brought_new = false;
  for (auto& e : entries) {
    check_board_model(m, kind, name, e, from);
    const Key k = kind.key(e);
    const auto found = m.entries.find(k);
    if (found == m.entries.end()) {
      m.entries.emplace(k, std::make_pair(std::move(e), from));
      brought_new = true;
    } else if (found->second.first == e) {
      ++report.duplicates;
    } else {
      throw Error(
          fmt::format("{} '{}': {} in {} but {} in {}: two different results for the same job; keep one of "
                      "the two stores out of the merge or rerun that job",
                      kind.what, name, kind.entry_text(found->second.first), found->second.second.string(),
                      kind.entry_text(e), from.string()));
    }
  }
  if (brought_new) m.cost_s += record_cost;
}

template <class Record, class Key, class Entry>
Record assemble(const Merging<Record, Key, Entry>& m, const Kind<Record, Key, Entry>& kind, MergeReport& report) {
  Record r = m.header;
  for (const auto& [k, e] : m.entries) (r.*kind.entries).push_back(e.first);
  report.entries += static_cast<int>(m.entries.size());
  return r;
}

// Records merged as a whole: equal or an error.
template <class Record>
void add_whole(std::map<std::string, std::pair<Record, fs::path>>& acc, const std::string& what,
               const std::string& name, Record record, const fs::path& from, MergeReport& report) {
  const auto it = acc.find(name);
  if (it == acc.end()) {
    acc.emplace(name, std::make_pair(std::move(record), from));
  } else if (it->second.first == record) {
    ++report.duplicates;
  } else {
    throw Error(fmt::format("{} '{}' differs between {} and {}: keep one of the two stores out of the merge", what,
                            name, it->second.second.string(), from.string()));
  }
}

using RelKey = std::pair<int, int>;
using CurveKey = std::tuple<int, int, int64_t>;
// (b, knob): the order the profiler measures a grid in, so a merged grid lists its points as the
// profile measured whole does.
using PointKey = std::pair<int, std::vector<double>>;
using RowKey = ValidationRowKey;

const Kind<RelationSet, RelKey, RelationRun>& relation_kind() {
  static const Kind<RelationSet, RelKey, RelationRun> k{
      "relation", &RelationSet::runs,
      [](const RelationRun& r) {
        return RelKey{r.batch_size, r.seed};
      },
      [](const RelationRun& r) {
        return fmt::format("b={} seed={} {} after {} samples (metric {:.6g})", r.batch_size, r.seed,
                           r.reached ? "reached" : "censored", r.samples, r.final_metric);
      },
      [](const RelationSet& s) {
        return fmt::format("workload {}, dataset {}, target {:g}, {}, {}", s.workload, s.dataset, s.target, s.lr_rule,
                           s.optimizer);
      }};
  return k;
}

const Kind<LearningCurve, CurveKey, CurvePoint>& curve_kind() {
  static const Kind<LearningCurve, CurveKey, CurvePoint> k{
      "learning curve", &LearningCurve::points,
      [](const CurvePoint& p) {
        return CurveKey{p.batch_size, p.seed, p.samples};
      },
      [](const CurvePoint& p) {
        return fmt::format("b={} seed={} metric {:.6g} after {} samples", p.batch_size, p.seed, p.metric, p.samples);
      },
      [](const LearningCurve& c) { return fmt::format("metric {}, source {}", c.metric, c.source); }};
  return k;
}

const Kind<ProfileTable, PointKey, ProfilePoint>& profile_kind() {
  static const Kind<ProfileTable, PointKey, ProfilePoint> k{
      "profile",
      &ProfileTable::points,
      [](const ProfilePoint& p) {
        return PointKey{p.batch_size, p.knob};
      },
      [](const ProfilePoint& p) {
        return fmt::format("point b={} knob [{}]: {:.6g} s/batch, peak {:.6g} W, status {}", p.batch_size,
                           fmt::join(p.knob, ", "), p.time_per_batch_mean_s, p.power_peak_w, p.status);
      },
      [](const ProfileTable& t) {
        return fmt::format("board model {}, workload {}, knob {}, source {}", t.device, t.workload, t.knob.kind,
                           t.source);
      },
      [](ProfileTable& t) { t.profiling_cost_s = 0; },
      [](const ProfilePoint& p) { return p.board_model; }};
  return k;
}

const Kind<ValidationResult, RowKey, ValidationRow>& validation_kind() {
  static const Kind<ValidationResult, RowKey, ValidationRow> k{
      "validation",
      &ValidationResult::rows,
      row_key,
      [](const ValidationRow& r) {
        return fmt::format("cap {:g} W {} seed {} b={}: {} samples, {:.6g} s", r.cap_w, r.policy, r.seed, r.batch_size,
                           r.samples, r.device_time_s);
      },
      [](const ValidationResult& v) {
        return fmt::format("board {}, workload {}, dataset {}, target {:g}", v.device, v.workload, v.dataset, v.target);
      },
      [](ValidationResult&) {},
      [](const ValidationRow& r) { return r.board_model; }};
  return k;
}

struct Merged {
  std::optional<std::pair<DeviceSpec, fs::path>> device;
  std::map<std::string, Merging<RelationSet, RelKey, RelationRun>> relations;
  std::map<std::string, Merging<LearningCurve, CurveKey, CurvePoint>> curves;
  std::map<std::string, Merging<ProfileTable, PointKey, ProfilePoint>> profiles;
  std::map<std::string, Merging<ValidationResult, RowKey, ValidationRow>> validations;
  std::map<std::string, std::pair<ModelRecord, fs::path>> models;
  std::map<std::string, std::pair<SweepResult, fs::path>> sweeps;
  std::map<std::string, std::pair<PowerSeries, fs::path>> series;
};

void read_input(const fs::path& path, Merged& m, MergeReport& report) {
  const Store in = Store::open(path);
  if (in.has_device()) {
    DeviceSpec d = in.read_device();
    if (!m.device) {
      m.device.emplace(std::move(d), path);
    } else if (!(m.device->first == d)) {
      throw Error(
          fmt::format("{} describes device '{}' but {} describes '{}'{}: stores of different devices cannot be "
                      "merged into one",
                      m.device->second.string(), m.device->first.name, path.string(), d.name,
                      m.device->first.name == d.name ? " with other settings" : ""));
    }
  }
  for (const auto& name : in.list("relations"))
    add_record(m.relations, relation_kind(), name, in.read_relation(name), path, report);
  for (const auto& name : in.list("curves"))
    add_record(m.curves, curve_kind(), name, in.read_curve(name), path, report);
  for (const auto& name : in.list("profiles")) {
    ProfileTable t = in.read_profile(name);
    const auto it = m.profiles.find(name);
    if (it != m.profiles.end() && it->second.header.device != t.device)
      throw Error(
          fmt::format("profile '{}' was measured on board model {} in {} but on {} in {}: profiles of different "
                      "board models cannot be merged into one profile (give each board's profile its own name)",
                      name, it->second.header.device, it->second.header_from.string(), t.device, path.string()));
    add_record<ProfileTable, PointKey, ProfilePoint>(m.profiles, profile_kind(), name, std::move(t), path, report,
                                                     [](const ProfileTable& p) { return p.profiling_cost_s; });
  }
  for (const auto& name : in.list("validations"))
    add_record(m.validations, validation_kind(), name, in.read_validation(name), path, report);
  for (const auto& name : in.list("models")) add_whole(m.models, "model", name, in.read_model(name), path, report);
  for (const auto& name : in.list("sweeps")) add_whole(m.sweeps, "sweep", name, in.read_sweep(name), path, report);
  for (const auto& name : in.list("runs"))
    add_whole(m.series, "power series", name, in.read_series(name), path, report);
}

void write_merged(const Merged& m, const fs::path& tmp, MergeReport& report) {
  Store out = Store::open_or_create(tmp);
  if (m.device) out.write_device(m.device->first);
  for (const auto& [name, r] : m.relations) {
    out.write_relation(assemble(r, relation_kind(), report));
    ++report.records["relations"];
  }
  for (const auto& [name, c] : m.curves) {
    out.write_curve(assemble(c, curve_kind(), report));
    ++report.records["curves"];
  }
  for (const auto& [name, p] : m.profiles) {
    ProfileTable t = assemble(p, profile_kind(), report);
    t.profiling_cost_s = p.cost_s;
    out.write_profile(t, name);
    ++report.records["profiles"];
  }
  for (const auto& [name, v] : m.validations) {
    out.write_validation(assemble(v, validation_kind(), report));
    ++report.records["validations"];
  }
  for (const auto& [name, r] : m.models) out.write_model(r.first), ++report.records["models"];
  for (const auto& [name, r] : m.sweeps) out.write_sweep(r.first), ++report.records["sweeps"];
  for (const auto& [name, r] : m.series) out.write_series(r.first), ++report.records["runs"];
}

}  // namespace

MergeReport merge_stores(const fs::path& out, const std::vector<fs::path>& inputs) {
  if (inputs.empty()) throw Error("nothing to merge: name at least one input store");
  MergeReport report;
  Merged merged;
  for (const auto& in : inputs) read_input(in, merged, report);
  const fs::path dir = out.has_parent_path() ? out.parent_path() : fs::path(".");
  fs::create_directories(dir);
  const fs::path tmp = dir / fmt::format(".{}.merge-{}", out.filename().string(), ::getpid());
  std::error_code ec;
  fs::remove(tmp, ec);
  try {
    write_merged(merged, tmp, report);
    fs::rename(tmp, out);
    fs::remove(file::lock_path(tmp), ec);  // the temporary store's own writers' lock
  } catch (...) {
    fs::remove(tmp, ec);
    fs::remove(file::lock_path(tmp), ec);
    throw;
  }
  return report;
}

MergeReport merge_into(const fs::path& out, const std::vector<fs::path>& inputs) {
  std::vector<fs::path> all = inputs;
  if (fs::exists(out)) all.insert(all.begin(), out);
  return merge_stores(out, all);
}

std::string format_merge_report(const MergeReport& report, const fs::path& out) {
  std::vector<std::string> parts;
  for (const auto& [group, n] : report.records) parts.push_back(fmt::format("{} {}", n, group));
  return fmt::format("merged into {}: {} ({} runs, points and rows; {} identical duplicates kept once)\n", out.string(),
                     parts.empty() ? std::string("nothing") : fmt::format("{}", fmt::join(parts, ", ")), report.entries,
                     report.duplicates);
}

}  // namespace pacer::traces
