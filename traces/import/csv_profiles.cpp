#include "traces/import/csv_profiles.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "base/error.hpp"
#include "base/text.hpp"
#include "traces/csv.hpp"
#include "traces/import/common.hpp"

namespace pacer::traces::csv_import {
namespace {

const std::set<std::string>& roles() {
  static const std::set<std::string> r = {"b",           "time_per_batch", "power_mean", "power_peak", "gpu_freq",
                                          "power_limit", "cpu_cores",      "cpu_freq",   "mem_freq"};
  return r;
}

}  // namespace

std::map<std::string, std::string> parse_column_map(const std::string& text) {
  std::map<std::string, std::string> out;
  for (const auto& item : split_list(text)) {
    const auto eq = item.find('=');
    if (eq == std::string::npos)
      throw Error(fmt::format("column mapping '{}' is not role=heading (e.g. time_per_batch=t[ms])", item));
    const std::string role(base::trim(item.substr(0, eq)));
    if (!roles().count(role))
      throw Error(
          fmt::format("column mapping '{}': unknown role '{}' (b, time_per_batch, power_mean, power_peak, "
                      "gpu_freq, power_limit, cpu_cores, cpu_freq, mem_freq)",
                      item, role));
    out[role] = base::trim(item.substr(eq + 1));
  }
  return out;
}

ProfileTable import_text(const std::string& csv, const ImportOptions& o) {
  const std::string origin = o.file.empty() ? "csv" : o.file.filename().string();
  const CsvTable t = parse_csv(csv, origin);
  // Rename the mapped columns to their roles (with the mapping's unit, else the heading's), so the
  // role lookups below see one header.
  std::vector<std::string> header = t.header;
  for (const auto& [role, mapping] : o.columns) {
    const auto [name, unit] = import::split_heading(mapping);
    const int c = import::find_column(t.header, name);
    if (c < 0) throw Error(fmt::format("{}: no column '{}' for {} in the header", origin, name, role));
    const std::string u = unit.empty() ? import::split_heading(t.header[static_cast<size_t>(c)]).second : unit;
    header[static_cast<size_t>(c)] = u.empty() ? role : role + "[" + u + "]";
  }
  const auto knob = import::find_knob_columns(header, origin);
  import::require_clock_units(knob, header, origin);
  const auto need = [&](const std::string& role, const std::string& si, bool required) -> std::pair<int, double> {
    const int c = import::find_column(header, role);
    if (c < 0 && required)
      throw Error(fmt::format("{}: no '{}' column: name it so, or map it (e.g. {}=<heading>)", origin, role, role));
    if (c < 0) return {-1, 1.0};
    return {c, import::unit_factor(import::split_heading(header[static_cast<size_t>(c)]).second, si, origin, role)};
  };
  const auto b = need("b", "1", true), tpb = need("time_per_batch", "s", true), pm = need("power_mean", "W", true),
             pp = need("power_peak", "W", false);
  ProfileTable table;
  table.workload = o.workload;
  table.device = o.device;
  table.knob = knob.knob;
  table.source = o.source.empty() ? fmt::format("csv import ({})", origin) : o.source;
  std::set<std::pair<std::vector<double>, int>> seen;
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const auto& row = t.rows[r];
    const size_t line = r + 2;
    const auto cell = [&](int c) { return row.at(static_cast<size_t>(c)); };
    ProfilePoint p;
    p.knob = knob.read(row, origin, line);
    p.batch_size = import::parse_count(cell(b.first), origin, line, "b");
    p.time_per_batch_mean_s = import::parse_number(cell(tpb.first), origin, line, "time_per_batch") * tpb.second;
    p.power_mean_w = import::parse_number(cell(pm.first), origin, line, "power_mean") * pm.second;
    if (pp.first >= 0 && !base::trim(cell(pp.first)).empty())
      p.power_peak_w = import::parse_number(cell(pp.first), origin, line, "power_peak") * pp.second;
    if (!(p.time_per_batch_mean_s > 0) || !(p.power_mean_w > 0) || p.power_peak_w < 0)
      throw Error(
          fmt::format("{}:{}: time per batch and mean power must be positive, peak power not negative", origin, line));
    import::check_knob(knob, p.knob, origin, line, o.catalog, o.force);
    import::check_duration(p.time_per_batch_mean_s, {origin, line, "time_per_batch"});
    import::check_power(p.power_mean_w, {origin, line, "power_mean"}, o.catalog);
    if (!std::isnan(p.power_peak_w)) {
      import::check_power(p.power_peak_w, {origin, line, "power_peak"}, o.catalog);
      if (p.power_peak_w < p.power_mean_w)
        throw Error(
            fmt::format("{}:{}: column power_peak holds {:g} W, below the mean power {:g} W of the same row: "
                        "the peak of a run is at least its mean (columns swapped?)",
                        origin, line, p.power_peak_w, p.power_mean_w));
    }
    if (!seen.insert({p.knob, p.batch_size}).second)
      throw Error(fmt::format("{}:{}: the same knob setting and b appear twice", origin, line));
    p.energy_j = p.power_mean_w * p.time_per_batch_mean_s;
    p.samples = p.batch_size;
    table.points.push_back(std::move(p));
  }
  if (table.points.empty()) throw Error(fmt::format("{}: no measurement rows under the header", origin));
  return table;
}

ProfileTable import_file(const ImportOptions& o) {
  return import_text(import::read_text(o.file), o);
}

}  // namespace pacer::traces::csv_import
