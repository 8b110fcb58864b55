#pragma once
// JSON Lines of a record's rows (what `pacer sweep --json` and `pacer validate --json` print), from
// the same column tables as the CSV export (traces/columns.hpp): one object per row, each key the
// column's name with its unit as a suffix, in lower case ("cap_w", "predicted_time_s",
// "gpu_freq_hz"); counts, flags and ratios ("batch_size", "feasible", "regret") carry none.
// NaN is null. The JSON itself is written by base/json.
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "base/json.hpp"
#include "traces/columns.hpp"

namespace pacer::traces {

// "cap" + "W" -> "cap_w"; a unit of "", "1", "bool", "samples" or the metric adds nothing.
std::string json_key(std::string_view name, std::string_view unit);

// One object of a row of `table`: the knob as one key per dimension of `knob`.
template <typename Row, size_t N>
base::JsonObject row_json(const std::array<Field<Row>, N>& table, const Row& r, const KnobSpace* knob) {
  base::JsonObject o;
  for (const auto& f : table)
    std::visit(
        [&](auto m) {
          using T = std::remove_cvref_t<decltype(r.*m)>;
          if constexpr (std::is_same_v<T, std::vector<double>>) {
            for (size_t i = 0; i < knob->dims.size(); ++i)
              o.add(json_key(knob->dims[i].name, knob->dims[i].unit), i < (r.*m).size() ? (r.*m)[i] : kNaN);
          } else {
            o.add(json_key(f.name, f.unit == kMetricUnit ? std::string_view() : f.unit), r.*m);
          }
        },
        f.member);
  return o;
}

// JSON Lines: row_json of every row, one line each.
template <typename Row, size_t N>
std::string rows_json(const std::array<Field<Row>, N>& table, const std::vector<Row>& rows, const KnobSpace* knob) {
  std::string out;
  for (const auto& r : rows) out += row_json(table, r, knob).str() + "\n";
  return out;
}

}  // namespace pacer::traces
