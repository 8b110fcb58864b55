#include "traces/csv.hpp"

#include <fmt/format.h>

#include "traces/error.hpp"

namespace pacer::traces {
namespace {

std::string quote(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string num(double v) { return std::isnan(v) ? "" : fmt::format("{:.10g}", v); }

std::string knob_header(const KnobSpace& k) {
  std::string h;
  for (const auto& d : k.dims) h += fmt::format("{}[{}],", d.name, d.unit);
  return h;
}

std::string knob_cells(const std::vector<double>& knob, size_t dims) {
  std::string s;
  for (size_t i = 0; i < dims; ++i) s += (i < knob.size() ? num(knob[i]) : "") + ",";
  return s;
}

}  // namespace

std::string to_csv(const ProfileTable& t) {
  std::string out = fmt::format("# profile workload={} device={} emulated={} virtual_time={} source={}\n",
                                t.workload, t.device, t.emulated, t.virtual_time, t.source);
  out += knob_header(t.knob) +
         "batch_size[samples],time_per_batch_mean[s],time_per_batch_std[s],power_peak[W],power_mean[W],"
         "energy[J],samples[samples],power_samples[1],sensor_rate[Hz],temperature[degC],status\n";
  for (const auto& p : t.points)
    out += knob_cells(p.knob, t.knob.dims.size()) +
           fmt::format("{},{},{},{},{},{},{},{},{},{},{}\n", p.batch_size, num(p.time_per_batch_mean_s),
                       num(p.time_per_batch_std_s), num(p.power_peak_w), num(p.power_mean_w), num(p.energy_j),
                       p.samples, p.power_samples, num(p.sensor_rate_hz), num(p.temperature_c), quote(p.status));
  return out;
}

std::string to_csv(const RelationSet& s) {
  std::string out = fmt::format("# relation name={} workload={} dataset={} metric={} target={} lr_rule=\"{}\"\n",
                                s.name, s.workload, s.dataset, s.metric, num(s.target), s.lr_rule);
  out += fmt::format("batch_size[samples],seed[1],reached[bool],samples[samples],budget[samples],wall_time[s],final_metric[{}],learning_rate[1]\n",
                     s.metric);
  for (const auto& r : s.runs)
    out += fmt::format("{},{},{},{},{},{},{},{}\n", r.batch_size, r.seed, r.reached ? 1 : 0, r.samples,
                       r.budget_samples, num(r.wall_time_s), num(r.final_metric), num(r.learning_rate));
  return out;
}

std::string to_csv(const ModelRecord& m) {
  std::string out = fmt::format("# model name={} kind={} workload={} device={}\n", m.name, m.kind, m.workload, m.device);
  out += "parameter,value[SI],stderr[SI]\n";
  for (size_t i = 0; i < m.param_names.size(); ++i)
    out += fmt::format("{},{},{}\n", quote(m.param_names[i]), num(m.param_values.at(i)), num(m.param_stderr.at(i)));
  for (const auto& [k, v] : m.metrics) out += fmt::format("metric:{},{},\n", quote(k), num(v));
  return out;
}

std::string to_csv(const SweepResult& s) {
  std::string out = fmt::format("# sweep name={} profile={} relation={} target={} feasibility={}\n", s.name,
                                s.profile, s.relation, s.target, s.feasibility);
  out += "cap[W],workload,policy,feasible[bool]," + knob_header(s.knob) +
         "batch_size[samples],predicted_time[s],predicted_energy[J],replayed_time_mean[s],replayed_time_std[s],"
         "replayed_energy[J],regret[1]\n";
  for (const auto& r : s.rows)
    out += fmt::format("{},{},{},{},", num(r.cap_w), quote(r.workload), quote(r.policy), r.feasible ? 1 : 0) +
           knob_cells(r.knob, s.knob.dims.size()) +
           fmt::format("{},{},{},{},{},{},{}\n", r.batch_size, num(r.predicted_time_s), num(r.predicted_energy_j),
                       num(r.replayed_time_mean_s), num(r.replayed_time_std_s), num(r.replayed_energy_j), num(r.regret));
  return out;
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
  std::string out = fmt::format("# validation name={} workload={} device={} dataset={} metric={} target={} emulated={} feasibility={}\n",
                                v.name, v.workload, v.device, v.dataset, v.metric, num(v.target), v.emulated, v.feasibility);
  out += "cap[W],policy," + knob_header(v.knob) +
         "batch_size[samples],seed[1],reached[bool],samples[samples],device_time[s],wall_time[s],energy[J],"
         "power_peak[W],power_mean[W],cap_exceeded[bool],time_over_cap[s],predicted_time[s],predicted_energy[J],"
         "final_metric,series,status\n";
  for (const auto& r : v.rows)
    out += fmt::format("{},{},", num(r.cap_w), quote(r.policy)) + knob_cells(r.knob, v.knob.dims.size()) +
           fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", r.batch_size, r.seed, r.reached ? 1 : 0,
                       r.samples, num(r.device_time_s), num(r.wall_time_s), num(r.energy_j), num(r.power_peak_w),
                       num(r.power_mean_w), r.cap_exceeded ? 1 : 0, num(r.time_over_cap_s), num(r.predicted_time_s),
                       num(r.predicted_energy_j), num(r.final_metric), quote(r.series), quote(r.status));
  return out;
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
      if (t.header.empty()) t.header = std::move(row);
      else {
        if (row.size() != t.header.size())
          throw Error(fmt::format("{}:{}: row has {} fields, the header has {}", origin, row_line, row.size(), t.header.size()));
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
