#include "traces/store/codecs.hpp"

#include <fmt/format.h>

#include <tuple>
#include <utility>

#include "base/error.hpp"
#include "traces/columns.hpp"

namespace pacer::traces::codec {
namespace {

using h5::GroupReader;
using h5::GroupWriter;

// ---------------------------------------------------------------------------------------------
// Attributes: strings as strings, doubles as float64, integers and booleans as int64.
template <typename S, size_t N>
void write_attributes(GroupWriter& w, const std::array<Field<S>, N>& table, const S& rec) {
  for (const auto& f : table)
    std::visit(
        [&](auto m) {
          using T = std::remove_cvref_t<decltype(rec.*m)>;
          if constexpr (std::is_same_v<T, std::vector<double>>)
            throw Error("attribute tables hold no vectors");
          else if constexpr (std::is_same_v<T, int> || std::is_same_v<T, bool>)
            w.attr(std::string(f.name), static_cast<int64_t>(rec.*m));
          else
            w.attr(std::string(f.name), rec.*m);
        },
        f.member);
}

template <typename S, size_t N>
void read_attributes(const GroupReader& g, const std::array<Field<S>, N>& table, S& rec) {
  for (const auto& f : table) {
    const std::string name(f.name);
    if (f.optional && !g.has_attr(name)) continue;
    std::visit(
        [&](auto m) {
          using T = std::remove_cvref_t<decltype(rec.*m)>;
          if constexpr (std::is_same_v<T, std::string>)
            rec.*m = g.str_attr(name);
          else if constexpr (std::is_same_v<T, double>)
            rec.*m = g.num_attr(name);
          else if constexpr (std::is_same_v<T, bool>)
            rec.*m = g.int_attr(name) != 0;
          else if constexpr (std::is_same_v<T, std::vector<double>>)
            throw Error("attribute tables hold no vectors");
          else
            rec.*m = static_cast<T>(g.int_attr(name));
        },
        f.member);
  }
}

// ---------------------------------------------------------------------------------------------
// Knob spaces.
void write_knob_space(GroupWriter& w, const KnobSpace& k) {
  w.attr("knob_kind", k.kind);
  std::vector<std::string> names, units;
  for (const auto& d : k.dims) {
    names.push_back(d.name);
    units.push_back(d.unit);
  }
  w.col("knob_dims", names);
  w.col("knob_units", units);
}

KnobSpace read_knob_space(const GroupReader& r) {
  KnobSpace k;
  k.kind = r.str_attr("knob_kind");
  const auto names = r.col_s("knob_dims");
  const auto units = r.col_s("knob_units", static_cast<long>(names.size()));
  if (names.empty()) r.fail("knob_dims", "a knob space needs at least one dimension");
  for (size_t i = 0; i < names.size(); ++i) k.dims.push_back({names[i], units[i]});
  return k;
}

std::string knob_unit(const KnobSpace& k) {
  std::string u;
  for (const auto& d : k.dims) u += (u.empty() ? "" : ",") + d.unit;
  return u;
}

// What a row table's placeholders stand for in one record.
struct RowContext {
  const KnobSpace* knob = nullptr;  // null: the table has no knob column
  std::string metric;
};

std::string unit_of(std::string_view unit, const RowContext& ctx) {
  if (unit == kMetricUnit) return ctx.metric;
  if (unit == kKnobUnit) return knob_unit(*ctx.knob);
  return std::string(unit);
}

// ---------------------------------------------------------------------------------------------
// Rows: one dataset per column; the knob as a rows x dims matrix (a short knob is padded with NaN).
template <typename Row, size_t N>
void write_rows(GroupWriter& w, const std::array<Field<Row>, N>& table, const std::vector<Row>& rows,
                const RowContext& ctx) {
  for (const auto& f : table) {
    const std::string name(f.name), unit = unit_of(f.unit, ctx);
    std::visit(
        [&](auto m) {
          using T = std::remove_cvref_t<decltype(rows.front().*m)>;
          if constexpr (std::is_same_v<T, std::vector<double>>) {
            const size_t dims = ctx.knob->dims.size();
            std::vector<double> flat;
            for (const auto& r : rows) {
              std::vector<double> k = r.*m;
              k.resize(dims, kNaN);
              flat.insert(flat.end(), k.begin(), k.end());
            }
            w.matrix(name, flat, rows.size(), dims, unit);
          } else if constexpr (std::is_same_v<T, std::string>) {
            std::vector<std::string> col;
            for (const auto& r : rows) col.push_back(r.*m);
            w.col(name, col);
          } else if constexpr (std::is_same_v<T, double>) {
            std::vector<double> col;
            for (const auto& r : rows) col.push_back(r.*m);
            w.col(name, col, unit);
          } else {
            std::vector<int64_t> col;
            for (const auto& r : rows) col.push_back(static_cast<int64_t>(r.*m));
            w.col(name, col, unit);
          }
        },
        f.member);
  }
}

// The row count is the length of the first non-knob column; every other column must match it.
template <typename Row, size_t N>
std::vector<Row> read_rows(const GroupReader& g, const std::array<Field<Row>, N>& table, const RowContext& ctx) {
  long n = -1;
  for (const auto& f : table) {
    if (f.unit == kKnobUnit) continue;
    const std::string name(f.name);
    std::visit(
        [&](auto m) {
          using T = std::remove_cvref_t<decltype(Row{}.*m)>;
          if constexpr (std::is_same_v<T, std::string>)
            n = static_cast<long>(g.col_s(name).size());
          else if constexpr (std::is_same_v<T, double>)
            n = static_cast<long>(g.col_d(name).size());
          else if constexpr (!std::is_same_v<T, std::vector<double>>)
            n = static_cast<long>(g.col_i(name).size());
        },
        f.member);
    break;
  }
  std::vector<Row> rows(static_cast<size_t>(std::max(n, 0L)));
  for (const auto& f : table) {
    const std::string name(f.name);
    if (f.optional && !g.has(name)) continue;
    std::visit(
        [&](auto m) {
          using T = std::remove_cvref_t<decltype(Row{}.*m)>;
          if constexpr (std::is_same_v<T, std::vector<double>>) {
            const size_t dims = ctx.knob->dims.size();
            const auto flat = g.matrix(name, n, dims);
            for (size_t i = 0; i < rows.size(); ++i)
              rows[i].*m = std::vector<double>(flat.begin() + static_cast<long>(i * dims),
                                               flat.begin() + static_cast<long>((i + 1) * dims));
          } else if constexpr (std::is_same_v<T, std::string>) {
            const auto col = g.col_s(name, n);
            for (size_t i = 0; i < rows.size(); ++i) rows[i].*m = col[i];
          } else if constexpr (std::is_same_v<T, double>) {
            const auto col = g.col_d(name, n);
            for (size_t i = 0; i < rows.size(); ++i) rows[i].*m = col[i];
          } else if constexpr (std::is_same_v<T, bool>) {
            const auto col = g.col_i(name, n);
            for (size_t i = 0; i < rows.size(); ++i) rows[i].*m = col[i] != 0;
          } else {
            const auto col = g.col_i(name, n);
            for (size_t i = 0; i < rows.size(); ++i) rows[i].*m = static_cast<T>(col[i]);
          }
        },
        f.member);
  }
  return rows;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
void write(GroupWriter w, const DeviceSpec& d) {
  write_attributes(w, kDeviceSpecAttributes, d);
  w.col("gpu_freqs", d.gpu_freqs_hz, "Hz");
  GroupWriter modes = w.sub("power_modes");
  write_rows(modes, kPowerModeColumns, d.power_modes, {});
  GroupWriter rails = w.sub("rails");
  write_rows(rails, kRailColumns, d.rails, {});
  GroupWriter volt = w.sub("voltage_table");
  write_rows(volt, kVoltageColumns, d.voltage_table, {});
  w.string_map("sources", d.sources);
}

DeviceSpec read_device(const GroupReader& g) {
  DeviceSpec d;
  read_attributes(g, kDeviceSpecAttributes, d);
  d.gpu_freqs_hz = g.col_d("gpu_freqs");
  d.power_modes = read_rows(g.sub("power_modes"), kPowerModeColumns, {});
  d.rails = read_rows(g.sub("rails"), kRailColumns, {});
  d.voltage_table = read_rows(g.sub("voltage_table"), kVoltageColumns, {});
  d.sources = g.string_map("sources");
  return d;
}

void write(GroupWriter w, const ProfileTable& t) {
  for (const auto& p : t.points)
    if (p.knob.size() != t.knob.dims.size())
      throw Error(fmt::format("profile '{}': a point has {} knob values but the knob space has {} dimensions",
                              t.workload, p.knob.size(), t.knob.dims.size()));
  w.attr("record", std::string("ProfileTable"));
  write_attributes(w, kProfileTableAttributes, t);
  write_knob_space(w, t.knob);
  write_rows(w, kProfilePointColumns, t.points, {&t.knob, ""});
}

ProfileTable read_profile(const GroupReader& g) {
  ProfileTable t;
  read_attributes(g, kProfileTableAttributes, t);
  t.knob = read_knob_space(g);
  t.points = read_rows(g, kProfilePointColumns, {&t.knob, ""});
  return t;
}

void write(GroupWriter w, const RelationSet& s) {
  w.attr("record", std::string("RelationSet"));
  write_attributes(w, kRelationSetAttributes, s);
  write_rows(w, kRelationRunColumns, s.runs, {nullptr, s.metric});
}

RelationSet read_relation(const GroupReader& g) {
  RelationSet s;
  read_attributes(g, kRelationSetAttributes, s);
  s.runs = read_rows(g, kRelationRunColumns, {nullptr, s.metric});
  return s;
}

void write(GroupWriter w, const LearningCurve& c) {
  w.attr("record", std::string("LearningCurve"));
  write_attributes(w, kLearningCurveAttributes, c);
  write_rows(w, kCurvePointColumns, c.points, {nullptr, c.metric});
}

LearningCurve read_curve(const GroupReader& g) {
  LearningCurve c;
  read_attributes(g, kLearningCurveAttributes, c);
  c.points = read_rows(g, kCurvePointColumns, {nullptr, c.metric});
  return c;
}

void write(GroupWriter w, const ModelRecord& m) {
  w.attr("record", std::string("ModelRecord"));
  write_attributes(w, kModelRecordAttributes, m);
  w.col("param_names", m.param_names);
  w.col("param_values", m.param_values, "SI (per parameter, see param_names)");
  w.col("param_stderr", m.param_stderr, "SI (per parameter, see param_names)");
  w.number_map("metrics", m.metrics);
  w.string_map("settings", m.settings);
  w.blob("blob", m.blob);
}

ModelRecord read_model(const GroupReader& g) {
  ModelRecord m;
  read_attributes(g, kModelRecordAttributes, m);
  m.param_names = g.col_s("param_names");
  const long n = static_cast<long>(m.param_names.size());
  m.param_values = g.col_d("param_values", n);
  m.param_stderr = g.col_d("param_stderr", n);
  m.metrics = g.number_map("metrics");
  m.settings = g.string_map("settings");
  m.blob = g.blob("blob");
  return m;
}

void write(GroupWriter w, const SweepResult& s) {
  w.attr("record", std::string("SweepResult"));
  write_attributes(w, kSweepResultAttributes, s);
  write_knob_space(w, s.knob);
  write_rows(w, kSweepRowColumns, s.rows, {&s.knob, ""});
}

SweepResult read_sweep(const GroupReader& g) {
  SweepResult s;
  read_attributes(g, kSweepResultAttributes, s);
  s.knob = read_knob_space(g);
  s.rows = read_rows(g, kSweepRowColumns, {&s.knob, ""});
  for (auto& r : s.rows)
    if (!r.feasible) r.knob.clear();  // infeasible rows have no configuration
  return s;
}

void write(GroupWriter w, const PowerSeries& s) {
  w.attr("record", std::string("PowerSeries"));
  write_attributes(w, kPowerSeriesAttributes, s);
  w.col("time", s.time_s, "s");
  w.col("power", s.power_w, "W");
  w.col("gpu_power", s.gpu_power_w, "W");
  w.col("gpu_freq", s.freq_hz, "Hz");
}

PowerSeries read_series(const GroupReader& g) {
  PowerSeries s;
  read_attributes(g, kPowerSeriesAttributes, s);
  s.time_s = g.col_d("time");
  const long n = static_cast<long>(s.time_s.size());
  s.power_w = g.col_d("power", n);
  s.gpu_power_w = g.col_d("gpu_power");
  if (!s.gpu_power_w.empty() && static_cast<long>(s.gpu_power_w.size()) != n)
    g.fail("gpu_power", fmt::format("column has {} rows, expected 0 or {}", s.gpu_power_w.size(), n));
  s.freq_hz = g.col_d("gpu_freq");
  if (!s.freq_hz.empty() && static_cast<long>(s.freq_hz.size()) != n)
    g.fail("gpu_freq", fmt::format("column has {} rows, expected 0 or {}", s.freq_hz.size(), n));
  return s;
}

void write(GroupWriter w, const ValidationResult& v) {
  w.attr("record", std::string("ValidationResult"));
  write_attributes(w, kValidationResultAttributes, v);
  write_knob_space(w, v.knob);
  write_rows(w, kValidationRowColumns, v.rows, {&v.knob, v.metric});
}

ValidationResult read_validation(const GroupReader& g) {
  ValidationResult v;
  read_attributes(g, kValidationResultAttributes, v);
  v.knob = read_knob_space(g);
  v.rows = read_rows(g, kValidationRowColumns, {&v.knob, v.metric});
  return v;
}

namespace {

// The reader of each alternative of StoreRecord, in its order: a reader out of place does not
// compile (alternative I is built from reader I's record).
constexpr auto kRecordReaders = std::make_tuple(&read_profile, &read_relation, &read_curve, &read_model, &read_sweep,
                                                &read_series, &read_validation);
static_assert(std::tuple_size_v<decltype(kRecordReaders)> == std::variant_size_v<StoreRecord>);

template <size_t I>
StoreRecord read_alternative(const GroupReader& g) {
  return StoreRecord(std::in_place_index<I>, std::get<I>(kRecordReaders)(g));
}

template <size_t... I>
StoreRecord read_indexed(size_t group, const GroupReader& g, std::index_sequence<I...>) {
  static constexpr StoreRecord (*kReaders[])(const GroupReader&) = {&read_alternative<I>...};
  return kReaders[group](g);
}

}  // namespace

StoreRecord read_record(size_t group, const GroupReader& g) {
  constexpr size_t kGroups = std::variant_size_v<StoreRecord>;
  if (group >= kGroups) throw Error(fmt::format("no store group number {} (a store has {})", group, kGroups));
  return read_indexed(group, g, std::make_index_sequence<kGroups>{});
}

}  // namespace pacer::traces::codec
