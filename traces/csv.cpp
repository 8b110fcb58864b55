#include "traces/csv.hpp"
#include "traces/json_rows.hpp"

#include <fmt/format.h>

#include "base/error.hpp"
#include "base/text.hpp"
#include "traces/record_traits.hpp"

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

std::string StoreGroupOf<ModelRecord>::csv(const ModelRecord& m) {
  std::string out =
      fmt::format("# model name={} kind={} workload={} device={}\n", m.name, m.kind, m.workload, m.device);
  out += "parameter,value[SI],stderr[SI]\n";
  for (size_t i = 0; i < m.param_names.size(); ++i)
    out += fmt::format("{},{},{}\n", csv_field(m.param_names[i]), csv_number(m.param_values.at(i)),
                       csv_number(m.param_stderr.at(i)));
  for (const auto& [k, v] : m.metrics) out += fmt::format("metric:{},{},\n", csv_field(k), csv_number(v));
  return out;
}

std::string StoreGroupOf<PowerSeries>::csv(const PowerSeries& s) {
  std::string out = fmt::format("# run name={} emulated={} cap[W]={} failed_reads={}\n", s.name, s.emulated,
                                csv_number(s.cap_w), s.failed_reads);
  out += "time[s],power[W],gpu_power[W],gpu_freq[Hz]\n";
  for (size_t i = 0; i < s.time_s.size(); ++i)
    out += fmt::format("{},{},{},{}\n", csv_number(s.time_s[i]), csv_number(s.power_w.at(i)),
                       i < s.gpu_power_w.size() ? csv_number(s.gpu_power_w[i]) : "",
                       i < s.freq_hz.size() ? csv_number(s.freq_hz[i]) : "");
  return out;
}

std::string to_csv(const DeviceSpec& d) {
  std::string out = fmt::format("# device name={} display_name=\"{}\"\n", d.name, d.display_name);
  out += "gpu_freq[Hz],voltage[V]\n";
  for (double f : d.gpu_freqs_hz) {
    double v = kNaN;
    for (const auto& p : d.voltage_table)
      if (p.freq_hz == f) v = p.volt_v;
    out += fmt::format("{},{}\n", csv_number(f), csv_number(v));
  }
  return out;
}

int CsvTable::column(const std::string& name, const std::string& origin) const {
  for (size_t i = 0; i < header.size(); ++i)
    if (header[i] == name) return static_cast<int>(i);
  throw Error(fmt::format("{}: missing column '{}' in the header", origin, name));
}

CsvTable parse_csv(const std::string& input, const std::string& origin) {
  const std::string_view text = base::text_input(input, origin);
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

namespace pacer::traces {

std::string json_key(std::string_view name, std::string_view unit) {
  if (unit.empty() || unit == "1" || unit == "bool" || unit == "samples") return std::string(name);
  std::string key = std::string(name) + "_";
  for (const char c : unit) key += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  return key;
}

}  // namespace pacer::traces
