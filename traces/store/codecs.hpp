#pragma once
// Record <-> HDF5 group, for every record type with an entry (traces/record_traits.hpp): a record
// laid out by its column tables (traces/columns.hpp) is written and read here, generically; one with
// a layout of its own by its entry's write and read. docs/trace-store.md documents the layout.
#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "base/error.hpp"
#include "traces/columns.hpp"
#include "traces/record_traits.hpp"
#include "traces/records.hpp"
#include "traces/store/h5io.hpp"

namespace pacer::traces::codec {

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
// Knob spaces: the kind as an attribute, the dimensions' names and units as two string columns.
void write_knob_space(GroupWriter& w, const KnobSpace& k);
KnobSpace read_knob_space(const GroupReader& r);

// The unit a row table's column is stored with: its own, or what its placeholder stands for.
std::string unit_of(std::string_view unit, const RowContext& ctx);

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

// ---------------------------------------------------------------------------------------------
// A whole record: its `record` attribute, its attributes, its knob space (when it has one), its rows.
template <StoredRecord R>
void write(GroupWriter& w, const R& r) {
  using E = RecordTraits<R>;
  if constexpr (TableLayout<R>) {
    if constexpr (requires { E::check(r); }) E::check(r);
    w.attr("record", std::string(E::type));
    write_attributes(w, E::attributes, r);
    if constexpr (requires { E::knob; }) write_knob_space(w, r.*E::knob);
    write_rows(w, E::columns, r.*E::rows, row_context(r));
  } else {
    E::write(w, r);
  }
}

template <StoredRecord R>
R read(const GroupReader& g) {
  using E = RecordTraits<R>;
  if constexpr (TableLayout<R>) {
    R r;
    read_attributes(g, E::attributes, r);
    if constexpr (requires { E::knob; }) r.*E::knob = read_knob_space(g);
    r.*E::rows = read_rows(g, E::columns, row_context(r));
    if constexpr (requires { E::after_read(r); }) E::after_read(r);
    return r;
  } else {
    return E::read(g);
  }
}

// The device description (/device): not a record group of its own.
void write(GroupWriter w, const DeviceSpec& d);
DeviceSpec read_device(const GroupReader& g);

}  // namespace pacer::traces::codec
