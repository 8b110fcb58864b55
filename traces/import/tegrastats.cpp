#include "traces/import/tegrastats.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <regex>
#include <sstream>
#include <tuple>

#include "base/error.hpp"
#include "base/stats.hpp"
#include "base/text.hpp"
#include "base/units.hpp"
#include "traces/catalog/rails.hpp"
#include "traces/csv.hpp"
#include "traces/import/common.hpp"

namespace pacer::traces::tegrastats {
namespace {

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
long days_from_civil(long y, unsigned m, unsigned d) {
  y -= m <= 2;
  const long era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<long>(doe) - 719468;
}

// A number of the log (matched by a pattern, so only its size can be wrong), or an Error naming
// the line, the field and the value.
double number(const std::string& text, const std::string& field, const std::string& where) {
  const auto v = units::to_number(text);
  if (!v || *v > 1e12)
    throw Error(fmt::format("{}: {} holds {}, which is out of range: is the log damaged?", where, field, text));
  return *v;
}

// "12%@[1300,1300]" / "0%@76" / "99%" -> load (0..1) and MHz (NaN when absent; the first of a list).
void load_at_freq(const std::string& name, const std::string& v, double& load, double& freq_hz,
                  const std::string& where) {
  static const std::regex re(R"((\d+(?:\.\d+)?)%(?:@\[?(\d+(?:\.\d+)?)(?:,[\d.,]*)?\]?)?)");
  std::smatch m;
  if (!std::regex_match(v, m, re)) throw Error(fmt::format("{}: '{}' is not load%[@MHz]", where, v));
  load = number(m[1].str(), name, where) / 100.0;
  if (m[2].matched) freq_hz = number(m[2].str(), name, where) * 1e6;
}

}  // namespace

Sample parse_line(const std::string& line, const std::string& origin, size_t line_no, double* date_s) {
  const std::string where = fmt::format("{}:{}", origin, line_no);
  std::istringstream in(line);
  std::vector<std::string> tok;
  for (std::string t; in >> t;) tok.push_back(t);
  Sample s;
  size_t i = 0;
  static const std::regex date_re(R"((\d\d)-(\d\d)-(\d{4}))"), time_re(R"((\d\d):(\d\d):(\d\d))");
  std::smatch dm, tm;
  if (date_s) *date_s = kNaN;
  if (tok.size() >= 2 && std::regex_match(tok[0], dm, date_re) && std::regex_match(tok[1], tm, time_re)) {
    // The date and time fields are two or four digits (the patterns above): no range to check.
    const auto digits = [&](const std::ssub_match& m) { return units::to_integer(m.str()).value_or(0); };
    const long days =
        days_from_civil(digits(dm[3]), static_cast<unsigned>(digits(dm[1])), static_cast<unsigned>(digits(dm[2])));
    if (date_s)
      *date_s = static_cast<double>(days) * 86400.0 +
                static_cast<double>(digits(tm[1]) * 3600 + digits(tm[2]) * 60 + digits(tm[3]));
    i = 2;
  }
  // A rail: "NAME cur/avg", each value an integer with an optional mW (JetPack 7: three values).
  static const std::regex rail_re(R"((-?\d+(?:\.\d+)?)(mW)?/-?\d+(?:\.\d+)?(?:mW)?(?:/-?\d+(?:\.\d+)?(?:mW)?)?)");
  static const std::regex temp_re(R"(([A-Za-z0-9_]+)@(-?\d+(?:\.\d+)?)C(?:/.*)?)");
  std::vector<std::string> order;
  for (; i < tok.size(); ++i) {
    const std::string& t = tok[i];
    const std::string next = i + 1 < tok.size() ? tok[i + 1] : "";
    std::smatch m;
    if (t == "CPU" && !next.empty() && next.front() == '[') {
      const std::string list = next.substr(1, next.find(']') - 1);
      for (const auto& c : split_list(list)) {
        ++s.cpus;
        s.cpus_online += c != "off";
      }
      ++i;
    } else if (t == "GR3D_FREQ" && !next.empty()) {
      load_at_freq(t, next, s.gpu_load, s.gpu_freq_hz, where);
      ++i;
    } else if (t == "EMC_FREQ" && !next.empty()) {
      double load = 0;
      load_at_freq(t, next, load, s.emc_freq_hz, where);
      ++i;
    } else if (!next.empty() && std::regex_match(next, m, rail_re)) {
      s.rails_w[t] = number(m[1].str(), t, where) / 1000.0;  // mW, with or without the suffix
      if (s.rails_w[t] < 0 || next.find("/-") != std::string::npos)
        throw Error(fmt::format("{}: rail {} reads '{}': a power reading is never negative (is the log damaged?)",
                                where, t, next));
      order.push_back(t);
      ++i;
    } else if (std::regex_match(t, m, temp_re)) {
      s.temperatures_c[m[1].str()] = number(m[2].str(), m[1].str(), where);
    }
  }
  if (s.rails_w.empty())
    throw Error(fmt::format("{}: no power rail (NAME cur/avg) on the line: is this tegrastats output?", where));
  for (const auto& name : order)
    if (is_total_rail(name)) {
      s.module_power_w = s.rails_w.at(name);
      return s;
    }
  s.module_power_w = 0;
  s.summed = true;
  for (const auto& name : order)
    if (!is_nc_rail(name)) s.module_power_w += s.rails_w.at(name);
  return s;
}

std::vector<Sample> parse_log(const std::string& text, const std::string& origin, double interval_s) {
  std::vector<Sample> out;
  std::vector<double> dates;
  const std::string_view body = base::text_input(text, origin);
  // A log whose last line has no line end was cut off while tegrastats wrote it (a copy taken
  // mid-run, a full disk): that line is left out, with a warning, when it does not parse or holds
  // fewer fields than the line before it; the complete lines are kept.
  const bool cut = !body.empty() && body.back() != '\n';
  std::istringstream in{std::string(body)};
  size_t line_no = 0;
  size_t previous_fields = 0;
  const auto fields = [](const std::string& line) {
    std::istringstream words(line);
    size_t n = 0;
    for (std::string w; words >> w;) ++n;
    return n;
  };
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (base::trim(line).empty()) continue;
    double date = kNaN;
    if (cut && in.peek() == std::char_traits<char>::eof() && !out.empty()) {
      std::string why;
      try {
        const Sample s = parse_line(line, origin, line_no, &date);
        if (fields(line) < previous_fields)
          why = fmt::format("{} fields where the line before has {}", fields(line), previous_fields);
        else {
          out.push_back(s);
          dates.push_back(date);
        }
      } catch (const Error& e) {
        why = e.what();
      }
      if (!why.empty())
        spdlog::warn(
            "{}:{}: the last line has no line end and is incomplete ({}): left out, the {} complete lines "
            "before it are read",
            origin, line_no, why, out.size());
      continue;
    }
    out.push_back(parse_line(line, origin, line_no, &date));
    dates.push_back(date);
    previous_fields = fields(line);
  }
  if (out.empty()) throw Error(fmt::format("{}: no tegrastats line", origin));
  const bool dated = std::all_of(dates.begin(), dates.end(), [](double d) { return std::isfinite(d); });
  for (size_t k = 0; k < out.size(); ++k) out[k].time_s = static_cast<double>(k) * interval_s;
  if (!dated) return out;
  // The prefix has whole seconds: n lines stamped with one second are spread evenly over it.
  for (size_t k = 0; k < out.size();) {
    size_t n = 1;
    while (k + n < out.size() && dates[k + n] == dates[k]) ++n;
    for (size_t j = 0; j < n; ++j) out[k + j].time_s = dates[k] - dates.front() + static_cast<double>(j) / n;
    k += n;
  }
  return out;
}

ProfileTable import_text(const std::string& log, const std::string& marks, const ImportOptions& o) {
  if (!(o.interval_s > 0)) throw Error("the tegrastats sampling interval must be positive");
  const std::string log_origin = o.log.empty() ? "tegrastats log" : o.log.filename().string();
  const std::string marks_origin = o.marks.empty() ? "marks" : o.marks.filename().string();
  const auto samples = parse_log(log, log_origin, o.interval_s);
  const CsvTable t = parse_csv(marks, marks_origin);
  const auto knob = import::find_knob_columns(t.header, marks_origin);
  const auto need = [&](const std::string& name) {
    const int c = import::find_column(t.header, name);
    if (c < 0) throw Error(fmt::format("{}: missing column '{}' in the header", marks_origin, name));
    return c;
  };
  const int c_start = need("start_s"), c_end = need("end_s"), c_b = need("b");
  const int c_batches = import::find_column(t.header, "batches");
  const int c_tpb = import::find_column(t.header, "time_per_batch");
  if (c_batches < 0 && c_tpb < 0)
    throw Error(
        fmt::format("{}: no 'batches' or 'time_per_batch' column: without one the windows give power only; "
                    "add batches (mini-batches run in each window) or time_per_batch[s] (an empty cell "
                    "leaves one window power only)",
                    marks_origin));
  // The log spans 0..last sample; a window may end up to one sampling interval after it.
  const double log_end = samples.back().time_s;
  struct Window {
    double start, end;
    int b;
    size_t line;
  };
  std::vector<Window> windows;
  const double tpb_factor =
      c_tpb < 0 ? 1.0
                : import::unit_factor(import::split_heading(t.header[static_cast<size_t>(c_tpb)]).second, "s",
                                      marks_origin, "time_per_batch");
  ProfileTable table;
  table.workload = o.workload;
  table.device = o.device;
  table.knob = knob.knob;
  table.source = fmt::format(
      "tegrastats import ({}, windows from {}); power: {}", log_origin, marks_origin,
      samples.front().summed ? "sum of the connected rails (no module-total rail)" : "the module-total rail");
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const auto& row = t.rows[r];
    const size_t line = r + 2;
    ProfilePoint p;
    p.knob = knob.read(row, marks_origin, line);
    p.batch_size = import::parse_count(row.at(static_cast<size_t>(c_b)), marks_origin, line, "b");
    const double start = import::parse_number(row.at(static_cast<size_t>(c_start)), marks_origin, line, "start_s");
    const double end = import::parse_number(row.at(static_cast<size_t>(c_end)), marks_origin, line, "end_s");
    if (!(end > start)) throw Error(fmt::format("{}:{}: end_s must be after start_s", marks_origin, line));
    if (start < 0 || end > log_end + o.interval_s)
      throw Error(
          fmt::format("{}:{}: columns start_s, end_s: the window from {:g} s to {:g} s is {} the log ({} spans 0-{:g} "
                      "s): times count in seconds from the log's first line",
                      marks_origin, line, start, end,
                      end < 0 || start > log_end + o.interval_s ? "outside" : "partly outside", log_origin, log_end));
    import::check_knob(knob, p.knob, marks_origin, line, o.catalog, false);
    windows.push_back({start, end, p.batch_size, line});
    std::vector<double> power, temps;
    for (const auto& s : samples)
      if (s.time_s >= start && s.time_s <= end) {
        power.push_back(s.module_power_w);
        for (const char* name : {"GPU", "gpu"})
          if (s.temperatures_c.count(name)) temps.push_back(s.temperatures_c.at(name));
      }
    if (power.empty())
      throw Error(fmt::format("{}:{}: no tegrastats sample between {:g} s and {:g} s (the log spans 0-{:g} s)",
                              marks_origin, line, start, end, samples.back().time_s));
    p.power_mean_w = base::mean(power);
    import::check_power(p.power_mean_w, {log_origin, 0, fmt::format("power (window of {}:{})", marks_origin, line)},
                        o.catalog);
    p.power_peak_w = *std::max_element(power.begin(), power.end());
    p.power_samples = static_cast<int64_t>(power.size());
    p.sensor_rate_hz = power.size() > 1 ? (power.size() - 1) / (end - start) : kNaN;
    if (!temps.empty()) p.temperature_c = base::mean(temps);
    if (c_tpb >= 0 && !base::trim(row.at(static_cast<size_t>(c_tpb))).empty())
      p.time_per_batch_mean_s =
          import::parse_number(row.at(static_cast<size_t>(c_tpb)), marks_origin, line, "time_per_batch") * tpb_factor;
    else if (c_batches >= 0 && !base::trim(row.at(static_cast<size_t>(c_batches))).empty())
      p.time_per_batch_mean_s =
          (end - start) / import::parse_count(row.at(static_cast<size_t>(c_batches)), marks_origin, line, "batches");
    if (std::isfinite(p.time_per_batch_mean_s)) {
      import::check_duration(p.time_per_batch_mean_s, {marks_origin, line, c_tpb >= 0 ? "time_per_batch" : "batches"});
      p.energy_j = p.power_mean_w * p.time_per_batch_mean_s;
      p.samples = p.batch_size;
    } else {
      p.status = "skipped: power only (the marks give no time per mini-batch)";
    }
    table.points.push_back(std::move(p));
  }
  if (table.points.empty()) throw Error(fmt::format("{}: no window under the header", marks_origin));
  // One window per run: a repeated or overlapping window would mix two runs' samples.
  std::sort(windows.begin(), windows.end(), [](const Window& a, const Window& b) {
    return std::tie(a.start, a.end, a.line) < std::tie(b.start, b.end, b.line);
  });
  for (size_t k = 1; k < windows.size(); ++k) {
    const Window &a = windows[k - 1], &b = windows[k];
    const auto [first, second] = std::minmax(a.line, b.line);
    if (a.start == b.start && a.end == b.end)
      throw Error(fmt::format(
          "{}:{}: columns start_s, end_s: the window from {:g} s to {:g} s is already on line {}{}: one window per run",
          marks_origin, second, b.start, b.end, first,
          a.b == b.b ? "" : fmt::format(" with another batch size (b={} and b={})", a.b, b.b)));
    if (b.start < a.end)
      throw Error(
          fmt::format("{}:{}: columns start_s, end_s: the window from {:g} s to {:g} s overlaps the window "
                      "from {:g} s to {:g} s "
                      "of line {}: windows of different runs must not overlap",
                      marks_origin, b.line, b.start, b.end, a.start, a.end, a.line));
  }
  return table;
}

ProfileTable import_log(const ImportOptions& o) {
  return import_text(import::read_text(o.log), import::read_text(o.marks), o);
}

}  // namespace pacer::traces::tegrastats
