#include "traces/csv.hpp"

#include <fmt/format.h>

#include "base/error.hpp"
#include "traces/columns.hpp"

namespace pacer::traces {

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

namespace {

std::string quote(const std::string& s) {
  return csv_field(s);
}

std::string num(double v) {
  return std::isnan(v) ? "" : fmt::format("{:.10g}", v);
}

std::string knob_header(const KnobSpace& k) {
  std::string h;
  for (const auto& d : k.dims) h += fmt::format("{}[{}],", d.name, d.unit);
  return h;
}

// The header and the rows of a record's row table (traces/columns.hpp): numeric columns as
// "name[unit]", the knob as one column per dimension, the metric column in the record's metric.
template <typename Row, size_t N>
std::string rows_csv(const std::array<Field<Row>, N>& table, const std::vector<Row>& rows, const KnobSpace* knob,
                     const std::string& metric) {
  std::string out;
  for (const auto& f : table) {
    if (f.unit == kKnobUnit) {
      out += knob_header(*knob);
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
              for (size_t i = 0; i < knob->dims.size(); ++i) line += (i < (r.*m).size() ? num((r.*m)[i]) : "") + ",";
            } else if constexpr (std::is_same_v<T, std::string>) {
              line += quote(r.*m) + ",";
            } else if constexpr (std::is_same_v<T, double>) {
              line += num(r.*m) + ",";
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

}  // namespace

std::string to_csv(const ProfileTable& t) {
  return fmt::format("# profile workload={} device={} emulated={} virtual_time={} source={}\n", t.workload, t.device,
                     t.emulated, t.virtual_time, t.source) +
         rows_csv(kProfilePointColumns, t.points, &t.knob, "");
}

std::string to_csv(const RelationSet& s) {
  return fmt::format("# relation name={} workload={} dataset={} metric={} target={} lr_rule=\"{}\"\n", s.name,
                     s.workload, s.dataset, s.metric, num(s.target), s.lr_rule) +
         rows_csv(kRelationRunColumns, s.runs, nullptr, s.metric);
}

std::string to_csv(const LearningCurve& c) {
  return fmt::format("# curve name={} metric={} source={}\n", c.name, c.metric, c.source) +
         rows_csv(kCurvePointColumns, c.points, nullptr, c.metric);
}

std::string to_csv(const ModelRecord& m) {
  std::string out =
      fmt::format("# model name={} kind={} workload={} device={}\n", m.name, m.kind, m.workload, m.device);
  out += "parameter,value[SI],stderr[SI]\n";
  for (size_t i = 0; i < m.param_names.size(); ++i)
    out += fmt::format("{},{},{}\n", quote(m.param_names[i]), num(m.param_values.at(i)), num(m.param_stderr.at(i)));
  for (const auto& [k, v] : m.metrics) out += fmt::format("metric:{},{},\n", quote(k), num(v));
  return out;
}

std::string to_csv(const SweepResult& s) {
  return fmt::format("# sweep name={} profile={} relation={} target={} feasibility={}\n", s.name, s.profile, s.relation,
                     s.target, s.feasibility) +
         rows_csv(kSweepRowColumns, s.rows, &s.knob, "");
}

std::string to_csv(const PowerSeries& s) {
  std::string out = fmt::format("# run name={} emulated={} cap[W]={} failed_reads={}\n", s.name, s.emulated,
                                num(s.cap_w), s.failed_reads);
  out += "time[s],power[W],gpu_power[W],gpu_freq[Hz]\n";
  for (size_t i = 0; i < s.time_s.size(); ++i)
    out += fmt::format("{},{},{},{}\n", num(s.time_s[i]), num(s.power_w.at(i)),
                       i < s.gpu_power_w.size() ? num(s.gpu_power_w[i]) : "",
                       i < s.freq_hz.size() ? num(s.freq_hz[i]) : "");
  return out;
}

std::string to_csv(const DeviceSpec& d) {
  std::string out = fmt::format("# device name={} display_name=\"{}\"\n", d.name, d.display_name);
  out += "gpu_freq[Hz],voltage[V]\n";
  for (double f : d.gpu_freqs_hz) {
    double v = kNaN;
    for (const auto& p : d.voltage_table)
      if (p.freq_hz == f) v = p.volt_v;
    out += fmt::format("{},{}\n", num(f), num(v));
  }
  return out;
}

std::string to_csv(const ValidationResult& v) {
  return fmt::format(
             "# validation name={} workload={} device={} dataset={} metric={} target={} emulated={} feasibility={}\n",
             v.name, v.workload, v.device, v.dataset, v.metric, num(v.target), v.emulated, v.feasibility) +
         rows_csv(kValidationRowColumns, v.rows, &v.knob, v.metric);
}

int CsvTable::column(const std::string& name, const std::string& origin) const {
  for (size_t i = 0; i < header.size(); ++i)
    if (header[i] == name) return static_cast<int>(i);
  throw Error(fmt::format("{}: missing column '{}' in the header", origin, name));
}

CsvTable parse_csv(const std::string& text, const std::string& origin) {
  CsvTable t;
  std::vector<std::string> row;
  std::string cell;
  bool in_quotes = false, cell_started = false;
  size_t line = 1, row_line = 1;
  auto end_row = [&] {
    row.push_back(cell);
    cell.clear();
    cell_started = false;
    const bool blank = row.size() == 1 && row[0].empty();
    if (!blank) {
      if (t.header.empty())
        t.header = std::move(row);
      else {
        if (row.size() != t.header.size())
          throw Error(fmt::format("{}:{}: row has {} fields, the header has {}", origin, row_line, row.size(),
                                  t.header.size()));
        t.rows.push_back(std::move(row));
      }
    }
    row.clear();
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_quotes) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          cell += '"';
          ++i;
        } else {
          in_quotes = false;
        }
      } else {
        if (c == '\n') ++line;
        cell += c;
      }
      continue;
    }
    if (c == '"' && !cell_started) {
      in_quotes = true;
      cell_started = true;
    } else if (c == ',') {
      row.push_back(cell);
      cell.clear();
      cell_started = false;
    } else if (c == '\n') {
      end_row();
      row_line = ++line;
    } else if (c == '\r') {
      // tolerate CRLF
    } else {
      cell += c;
      cell_started = true;
    }
  }
  if (in_quotes) throw Error(fmt::format("{}:{}: unterminated quoted field", origin, row_line));
  if (!cell.empty() || !row.empty()) end_row();
  if (t.header.empty()) throw Error(fmt::format("{}: empty CSV file (no header)", origin));
  return t;
}

std::vector<std::string> split_list(const std::string& text, char separator) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t pos = text.find(separator, start);
    if (pos == std::string::npos) pos = text.size();
    if (pos > start) out.push_back(text.substr(start, pos - start));
    start = pos + 1;
  }
  return out;
}

}  // namespace pacer::traces
