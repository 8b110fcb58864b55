#pragma once
// CSV export of trace-store records. The header names every column with its unit:
// "time_per_batch_mean[s]". Strings are quoted when they contain a comma or a quote. The export of
// a stored record, to_csv(record), follows from its entry (traces/record_traits.hpp): its title
// line, then rows_csv of its row table.
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include "base/json.hpp"
#include "traces/columns.hpp"
#include "traces/records.hpp"

namespace pacer::traces {

std::string to_csv(const DeviceSpec& device);

// One CSV field: quoted (quotes doubled) when it holds a comma, a quote or a line break.
std::string csv_field(const std::string& s);

// One CSV number, empty for NaN; else as base::json_number writes it: the shortest text that reads back
// as the same double (whole numbers without an exponent). Until 2026-11-28 ten significant digits: a
// sweep's cap at a point's own power (the lowest of its grid) read back from the export fell just below
// that point, and `select -P` of it answered infeasible where the record holds a choice.
inline std::string csv_number(double v) {
  if (std::isnan(v)) return "";
  return std::isfinite(v) ? base::json_number(v) : fmt::format("{}", v);
}

// The header and the rows of a record's row table (traces/columns.hpp): numeric columns as
// "name[unit]", the knob as one column per dimension of `knob`, the metric column in `metric`.
template <typename Row, size_t N>
std::string rows_csv(const std::array<Field<Row>, N>& table, const std::vector<Row>& rows, const KnobSpace* knob,
                     const std::string& metric) {
  std::string out;
  for (const auto& f : table) {
    if (f.unit == kKnobUnit) {
      for (const auto& d : knob->dims) out += fmt::format("{}[{}],", d.name, d.unit);
      continue;
    }
    const std::string unit = f.unit == kMetricUnit ? metric : std::string(f.unit);
    out += unit.empty() ? fmt::format("{},", f.name) : fmt::format("{}[{}],", f.name, unit);
  }
  out.back() = '\n';
  for (const auto& r : rows) {
    std::string line;
    for (const auto& f : table)
      std::visit(
          [&](auto m) {
            using T = std::remove_cvref_t<decltype(r.*m)>;
            if constexpr (std::is_same_v<T, std::vector<double>>) {
              for (size_t i = 0; i < knob->dims.size(); ++i)
                line += (i < (r.*m).size() ? csv_number((r.*m)[i]) : "") + ",";
            } else if constexpr (std::is_same_v<T, std::string>) {
              line += csv_field(r.*m) + ",";
            } else if constexpr (std::is_same_v<T, double>) {
              line += csv_number(r.*m) + ",";
            } else {
              line += fmt::format("{},", static_cast<int64_t>(r.*m));
            }
          },
          f.member);
    line.back() = '\n';
    out += line;
  }
  return out;
}

// Minimal CSV reader shared by importers: splits records, honours double quotes. Throws Error
// naming `origin` and the line on a malformed row (unterminated quote).
struct CsvTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  int column(const std::string& name, const std::string& origin) const;  // throws if absent
};
CsvTable parse_csv(const std::string& text, const std::string& origin);

// "a,b,,c" -> {"a", "b", "c"}: a comma-separated list (option values, record-name lists), empty items dropped.
std::vector<std::string> split_list(const std::string& text, char separator = ',');

}  // namespace pacer::traces
