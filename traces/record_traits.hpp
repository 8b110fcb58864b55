#pragma once
// The entry of each record type of the trace store, gem5 ADD_STAT style: where the record is
// stored, which column tables (traces/columns.hpp) lay it out, the name it goes by, which member
// holds its rows, how those rows merge and how its CSV export is titled. The store's reader and
// writer (Store::read<R>, Store::write), its listing (kStoreGroups), reading a whole store back
// (StoreRecord), the CSV export (to_csv below, `pacer export`) and `pacer merge` (RecordMerge,
// traces/store/record_merge.hpp) all follow from the entry.
//
// The store's own groups are the entries StoreGroup<0>, StoreGroup<1>, ... in listing order: a new
// record type of the store is its struct (traces/records.hpp, its fields in traces/columns.hpp) plus
// the next StoreGroup<N> in this file. A record kept outside those groups (a test's) specializes
// RecordTraits<R> with the same members instead.
//
// The members of an entry:
//   Record            the record type (StoreGroup entries only)
//   group             the HDF5 group of its records under the root: /<group>/<name>
//   what              the record in messages: "relation", "power series"
//   name(r)           the name a record is stored under unless its writer names another
//   rows              the member holding its rows; absent for a record without rows. A stored record
//                     is not replaced by one with fewer rows unless the writer asks (Replace).
// A record laid out by its column tables:
//   type              the value of its group's `record` attribute: "RelationSet"
//   attributes        its attribute table (one HDF5 attribute per scalar)
//   columns           the row table of its rows (one dataset per column)
//   knob, metric      the members holding its KnobSpace and its metric's name, when its columns
//                     use kKnobUnit / kMetricUnit
//   check(r)          optional: refuses a record before anything is written
//   after_read(r)     optional: completes a record read back
//   csv_title(r)      the first line of its CSV export ("# relation name=...\n"); its rows follow
// A record with a layout of its own declares write(w, r), read(g) and csv(r) instead (defined in
// traces/store/codecs.cpp and traces/csv.cpp).
// Merging (without merge_key, the stored records of one name merge whole: equal, or an error):
//   merge_key(row)    rows of one key from several stores are one row (equal, or an error); an
//                     entry whose key depends on the rest of the record declares merge_key(r, row)
//   row_text(row), header_text(r)  how a row and the rest of a record read in an error
//   continues(a, b)   optional: row b is row a continued further (a relation's censored run trained
//                     on by an adaptive campaign's later round); b replaces a instead of conflicting
//   merge_cost        optional: a member summed over the inputs that brought new rows
//   board             optional: a member naming the record's board model, which inputs must agree on
//   row_board         optional: a row member naming its board model; one record's rows must agree
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <cmath>
#include <cstddef>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "base/error.hpp"
#include "traces/columns.hpp"
#include "traces/csv.hpp"
#include "traces/records.hpp"

namespace pacer::traces {

namespace h5 {
class GroupWriter;
class GroupReader;
}  // namespace h5

template <size_t I>
struct StoreGroup;  // entry I of the store's own groups
template <typename R>
struct RecordTraits;  // the entry of record type R

// ---------------------------------------------------------------------------------------------
template <>
struct StoreGroup<0> {
  using Record = ProfileTable;
  static constexpr std::string_view group = "profiles";
  static constexpr std::string_view what = "profile";
  static std::string name(const ProfileTable& t) { return t.workload; }
  static constexpr auto rows = &ProfileTable::points;

  static constexpr std::string_view type = "ProfileTable";
  static constexpr const auto& attributes = kProfileTableAttributes;
  static constexpr const auto& columns = kProfilePointColumns;
  static constexpr auto knob = &ProfileTable::knob;
  static void check(const ProfileTable& t) {
    for (const auto& p : t.points)
      if (p.knob.size() != t.knob.dims.size())
        throw Error(fmt::format("profile '{}': a point has {} knob values but the knob space has {} dimensions",
                                t.workload, p.knob.size(), t.knob.dims.size()));
  }
  static std::string csv_title(const ProfileTable& t) {
    return fmt::format("# profile workload={} device={} emulated={} virtual_time={} source={}\n", t.workload, t.device,
                       t.emulated, t.virtual_time, t.source);
  }

  // (b, knob): the order the profiler measures a grid in, so a merged grid lists its points as the
  // profile measured whole does.
  static std::pair<int, std::vector<double>> merge_key(const ProfilePoint& p) { return {p.batch_size, p.knob}; }
  static std::string row_text(const ProfilePoint& p) {
    return fmt::format("point b={} knob [{}]: {:.6g} s/batch, peak {:.6g} W, status {}", p.batch_size,
                       fmt::join(p.knob, ", "), p.time_per_batch_mean_s, p.power_peak_w, p.status);
  }
  static std::string header_text(const ProfileTable& t) {
    return fmt::format("board model {}, workload {}, knob {}, source {}", t.device, t.workload, t.knob.kind, t.source);
  }
  static constexpr auto merge_cost = &ProfileTable::profiling_cost_s;
  static constexpr auto board = &ProfileTable::device;
  static constexpr auto row_board = &ProfilePoint::board_model;
};

// ---------------------------------------------------------------------------------------------
template <>
struct StoreGroup<1> {
  using Record = RelationSet;
  static constexpr std::string_view group = "relations";
  static constexpr std::string_view what = "relation";
  static std::string name(const RelationSet& s) { return s.name; }
  static constexpr auto rows = &RelationSet::runs;

  static constexpr std::string_view type = "RelationSet";
  static constexpr const auto& attributes = kRelationSetAttributes;
  static constexpr const auto& columns = kRelationRunColumns;
  static constexpr auto metric = &RelationSet::metric;
  static std::string csv_title(const RelationSet& s) {
    return fmt::format("# relation name={} workload={} dataset={} metric={} target={} lr_rule=\"{}\"\n", s.name,
                       s.workload, s.dataset, s.metric, csv_number(s.target), s.lr_rule);
  }

  static std::pair<int, int> merge_key(const RelationRun& r) { return {r.batch_size, r.seed}; }
  // A censored run trained further (to a larger budget) by an adaptive campaign's later round.
  static bool continues(const RelationRun& a, const RelationRun& b) {
    return !a.reached && b.budget_samples > a.budget_samples && b.samples >= a.samples;
  }
  static std::string row_text(const RelationRun& r) {
    return fmt::format("b={} seed={} {} after {} samples (metric {:.6g})", r.batch_size, r.seed,
                       r.reached ? "reached" : "censored", r.samples, r.final_metric);
  }
  static std::string header_text(const RelationSet& s) {
    return fmt::format("workload {}, dataset {}, target {:g}, {}, {}", s.workload, s.dataset, s.target, s.lr_rule,
                       s.optimizer);
  }
};

// ---------------------------------------------------------------------------------------------
template <>
struct StoreGroup<2> {
  using Record = LearningCurve;
  static constexpr std::string_view group = "curves";
  static constexpr std::string_view what = "learning curve";
  static std::string name(const LearningCurve& c) { return c.name; }
  static constexpr auto rows = &LearningCurve::points;

  static constexpr std::string_view type = "LearningCurve";
  static constexpr const auto& attributes = kLearningCurveAttributes;
  static constexpr const auto& columns = kCurvePointColumns;
  static constexpr auto metric = &LearningCurve::metric;
  static std::string csv_title(const LearningCurve& c) {
    return fmt::format("# curve name={} metric={} source={}\n", c.name, c.metric, c.source);
  }

  // (b, seed, samples), and the metric in a curve of levels (the Zeus traces: the first epoch each
  // metric level was reached at), where one run may reach two levels at the same sample count (one
  // epoch). In a curve of evaluations one (b, seed, samples) has one metric: another is a conflict.
  static std::tuple<int, int, int64_t, double> merge_key(const LearningCurve& c, const CurvePoint& p) {
    const bool level = c.source == "levels" && !std::isnan(p.metric);
    return {p.batch_size, p.seed, p.samples, level ? p.metric : 0.0};
  }
  static std::string row_text(const CurvePoint& p) {
    return fmt::format("b={} seed={} metric {:.6g} after {} samples", p.batch_size, p.seed, p.metric, p.samples);
  }
  static std::string header_text(const LearningCurve& c) {
    return fmt::format("metric {}, source {}", c.metric, c.source);
  }
};

// ---------------------------------------------------------------------------------------------
// Parameters, metrics, settings and a blob: a layout of its own.
template <>
struct StoreGroup<3> {
  using Record = ModelRecord;
  static constexpr std::string_view group = "models";
  static constexpr std::string_view what = "model";
  static std::string name(const ModelRecord& m) { return m.name; }

  static void write(h5::GroupWriter& w, const ModelRecord& m);
  static ModelRecord read(const h5::GroupReader& g);
  static std::string csv(const ModelRecord& m);
};

// ---------------------------------------------------------------------------------------------
template <>
struct StoreGroup<4> {
  using Record = SweepResult;
  static constexpr std::string_view group = "sweeps";
  static constexpr std::string_view what = "sweep";
  static std::string name(const SweepResult& s) { return s.name; }
  static constexpr auto rows = &SweepResult::rows;

  static constexpr std::string_view type = "SweepResult";
  static constexpr const auto& attributes = kSweepResultAttributes;
  static constexpr const auto& columns = kSweepRowColumns;
  static constexpr auto knob = &SweepResult::knob;
  static void after_read(SweepResult& s) {
    for (auto& r : s.rows)
      if (!r.feasible) r.knob.clear();  // infeasible rows have no configuration
  }
  static std::string csv_title(const SweepResult& s) {
    return fmt::format("# sweep name={} profile={} relation={} target={} feasibility={}\n", s.name, s.profile,
                       s.relation, s.target, s.feasibility);
  }
};

// ---------------------------------------------------------------------------------------------
// Columns that may be empty or of the run's length: a layout of its own.
template <>
struct StoreGroup<5> {
  using Record = PowerSeries;
  static constexpr std::string_view group = "runs";
  static constexpr std::string_view what = "power series";
  static std::string name(const PowerSeries& s) { return s.name; }

  static void write(h5::GroupWriter& w, const PowerSeries& s);
  static PowerSeries read(const h5::GroupReader& g);
  static std::string csv(const PowerSeries& s);
};

// ---------------------------------------------------------------------------------------------
template <>
struct StoreGroup<6> {
  using Record = ValidationResult;
  static constexpr std::string_view group = "validations";
  static constexpr std::string_view what = "validation";
  static std::string name(const ValidationResult& v) { return v.name; }
  static constexpr auto rows = &ValidationResult::rows;

  static constexpr std::string_view type = "ValidationResult";
  static constexpr const auto& attributes = kValidationResultAttributes;
  static constexpr const auto& columns = kValidationRowColumns;
  static constexpr auto knob = &ValidationResult::knob;
  static constexpr auto metric = &ValidationResult::metric;
  static std::string csv_title(const ValidationResult& v) {
    return fmt::format(
        "# validation name={} workload={} device={} dataset={} metric={} target={} emulated={} feasibility={}\n",
        v.name, v.workload, v.device, v.dataset, v.metric, csv_number(v.target), v.emulated, v.feasibility);
  }

  static ValidationRowKey merge_key(const ValidationRow& r) { return row_key(r); }
  static std::string row_text(const ValidationRow& r) {
    return fmt::format("cap {:g} W {} seed {} b={}: {} samples, {:.6g} s", r.cap_w, r.policy, r.seed, r.batch_size,
                       r.samples, r.device_time_s);
  }
  static std::string header_text(const ValidationResult& v) {
    return fmt::format("board {}, workload {}, dataset {}, target {:g}", v.device, v.workload, v.dataset, v.target);
  }
  static constexpr auto row_board = &ValidationRow::board_model;
};

// ---------------------------------------------------------------------------------------------
// Added with adaptive relation campaigns: a store written before has no such group (read as none).
template <>
struct StoreGroup<7> {
  using Record = AdaptiveLog;
  static constexpr std::string_view group = "decisions";
  static constexpr std::string_view what = "decision log";
  static std::string name(const AdaptiveLog& l) { return l.name; }
  static constexpr auto rows = &AdaptiveLog::decisions;

  static constexpr std::string_view type = "AdaptiveLog";
  static constexpr const auto& attributes = kAdaptiveLogAttributes;
  static constexpr const auto& columns = kAdaptiveLogRowColumns;
  static std::string csv_title(const AdaptiveLog& l) {
    return fmt::format("# decisions name={} tolerance={} compute_budget={} profile={}\n", l.name,
                       csv_number(l.tolerance), l.compute_budget, l.profile);
  }

  // (round, action, b, seed): one decision of a kind per run and round.
  static std::tuple<int, std::string, int, int> merge_key(const AdaptiveLogRow& d) {
    return {d.round, d.action, d.batch_size, d.seed};
  }
  static std::string row_text(const AdaptiveLogRow& d) {
    return fmt::format("round {} {} b={} seed={}: {}", d.round, d.action, d.batch_size, d.seed, d.reason);
  }
  static std::string header_text(const AdaptiveLog& l) {
    return fmt::format("tolerance {:g}, compute budget {}, profile {}", l.tolerance, l.compute_budget, l.profile);
  }
};

// ---------------------------------------------------------------------------------------------
// What follows from the entries above (no StoreGroup entry may be declared after this line).
namespace detail {

template <size_t I>
concept DeclaredStoreGroup = requires { typename StoreGroup<I>::Record; };

template <size_t I>
constexpr size_t count_store_groups() {
  if constexpr (DeclaredStoreGroup<I>)
    return count_store_groups<I + 1>();
  else
    return I;
}

template <typename Indices>
struct StoreGroupList;
template <size_t... I>
struct StoreGroupList<std::index_sequence<I...>> {
  using Variant = std::variant<typename StoreGroup<I>::Record...>;
  static constexpr std::array<const char*, sizeof...(I)> names{StoreGroup<I>::group.data()...};
};

}  // namespace detail

inline constexpr size_t kStoreGroupCount = detail::count_store_groups<0>();
static_assert(!detail::DeclaredStoreGroup<kStoreGroupCount + 1>, "StoreGroup entries are numbered without a gap");
using StoreGroupIndices = std::make_index_sequence<kStoreGroupCount>;

// The store's record groups under the root (besides /device), in listing order.
inline constexpr auto kStoreGroups = detail::StoreGroupList<StoreGroupIndices>::names;
// A record of any of them as its own type: kStoreGroups[i] holds the records of alternative i.
// Code that handles every group (reading a whole store back, `pacer export`) dispatches on it.
using StoreRecord = detail::StoreGroupList<StoreGroupIndices>::Variant;

// The place of R among the store's groups; kStoreGroupCount when it has none.
template <typename R>
constexpr size_t store_group_index() {
  return []<size_t... I>(std::index_sequence<I...>) {
    size_t index = kStoreGroupCount;
    ((std::is_same_v<R, typename StoreGroup<I>::Record> ? (index = I, true) : false) || ...);
    return index;
  }(StoreGroupIndices{});
}

template <typename R>
concept InStoreGroups = store_group_index<R>() < kStoreGroupCount;

// The entry of a record of the store's own groups.
template <InStoreGroups R>
struct RecordTraits<R> : StoreGroup<store_group_index<R>()> {};
// The entry of R by its type, for defining the members of an entry out of line.
template <typename R>
using StoreGroupOf = StoreGroup<store_group_index<R>()>;

// A record type with an entry (the store's own, or a RecordTraits specialization).
template <typename R>
concept StoredRecord = requires {
  { RecordTraits<R>::group } -> std::convertible_to<std::string_view>;
};

template <typename R>
concept RecordWithRows = StoredRecord<R> && requires { RecordTraits<R>::rows; };
template <typename R>
concept TableLayout = StoredRecord<R> && requires {
  RecordTraits<R>::attributes;
  RecordTraits<R>::columns;
};
template <typename R>
concept KeyedMerge = RecordWithRows<R> && (requires(const R& r) {
                       RecordTraits<R>::merge_key((r.*RecordTraits<R>::rows).front());
                     } || requires(const R& r) { RecordTraits<R>::merge_key(r, (r.*RecordTraits<R>::rows).front()); });

// The merge key of `row`, one of the rows of `record` (or of a record with its header).
template <KeyedMerge R, typename Row>
auto row_merge_key(const R& record, const Row& row) {
  if constexpr (requires { RecordTraits<R>::merge_key(record, row); })
    return RecordTraits<R>::merge_key(record, row);
  else
    return RecordTraits<R>::merge_key(row);
}

// The rows of `r` (profile points, relation runs, sweep or validation rows); 0 for a record
// without rows.
template <StoredRecord R>
size_t record_rows(const R& r) {
  if constexpr (RecordWithRows<R>)
    return (r.*RecordTraits<R>::rows).size();
  else
    return 0;
}

// Calls f(std::type_identity<R>{}) for each record type R of the store's groups, in listing order.
template <typename F>
void for_each_store_group(F&& f) {
  [&]<size_t... I>(std::index_sequence<I...>) {
    (f(std::type_identity<typename StoreGroup<I>::Record>{}), ...);
  }(StoreGroupIndices{});
}

// f(std::type_identity<R>{}) for the record type R of kStoreGroups[index].
template <size_t I = 0, typename F>
decltype(auto) visit_store_group(size_t index, F&& f) {
  if constexpr (I + 1 < kStoreGroupCount) {
    if (index != I) return visit_store_group<I + 1>(index, std::forward<F>(f));
  } else {
    if (index != I) throw Error(fmt::format("no store group number {} (a store has {})", index, kStoreGroupCount));
  }
  return f(std::type_identity<typename StoreGroup<I>::Record>{});
}

// What a row table's placeholders (kKnobUnit, kMetricUnit) stand for in one record.
struct RowContext {
  const KnobSpace* knob = nullptr;  // null: the table has no knob column
  std::string metric;
};

template <TableLayout R>
RowContext row_context(const R& r) {
  using E = RecordTraits<R>;
  RowContext context;
  if constexpr (requires { E::knob; }) context.knob = &(r.*E::knob);
  if constexpr (requires { E::metric; }) context.metric = r.*E::metric;
  return context;
}

// The CSV export of a record: its title line, then one line per row with the units in the header
// (rows_csv, traces/csv.hpp); a record with a layout of its own writes its CSV itself.
template <StoredRecord R>
std::string to_csv(const R& r) {
  using E = RecordTraits<R>;
  if constexpr (TableLayout<R>) {
    const RowContext context = row_context(r);
    return E::csv_title(r) + rows_csv(E::columns, r.*E::rows, context.knob, context.metric);
  } else {
    return E::csv(r);
  }
}

}  // namespace pacer::traces
