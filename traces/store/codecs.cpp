#include "traces/store/codecs.hpp"

#include <fmt/format.h>

#include "base/error.hpp"
#include "traces/columns.hpp"

namespace pacer::traces {
namespace codec {
namespace {

std::string knob_unit(const KnobSpace& k) {
  std::string u;
  for (const auto& d : k.dims) u += (u.empty() ? "" : ",") + d.unit;
  return u;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Knob spaces.
void write_knob_space(GroupWriter& w, const KnobSpace& k) {
  w.attr("knob_kind", std::string(to_string(k.kind)));
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
  const std::string kind = r.str_attr("knob_kind");
  const auto known = find_knob_kind(kind);
  if (!known) r.fail("knob_kind", fmt::format("'{}' is not a knob kind ({})", kind, knob_kind_names()));
  k.kind = *known;
  const auto names = r.col_s("knob_dims");
  const auto units = r.col_s("knob_units", static_cast<long>(names.size()));
  if (names.empty()) r.fail("knob_dims", "a knob space needs at least one dimension");
  for (size_t i = 0; i < names.size(); ++i) k.dims.push_back({names[i], units[i]});
  return k;
}

std::string unit_of(std::string_view unit, const RowContext& ctx) {
  if (unit == kMetricUnit) return ctx.metric;
  if (unit == kKnobUnit) return knob_unit(*ctx.knob);
  return std::string(unit);
}

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

}  // namespace codec

using h5::GroupReader;
using h5::GroupWriter;

// ---------------------------------------------------------------------------------------------
// The records with a layout of their own (their entries: traces/record_traits.hpp).
void StoreGroupOf<ModelRecord>::write(GroupWriter& w, const ModelRecord& m) {
  w.attr("record", std::string("ModelRecord"));
  codec::write_attributes(w, kModelRecordAttributes, m);
  w.col("param_names", m.param_names);
  w.col("param_values", m.param_values, "SI (per parameter, see param_names)");
  w.col("param_stderr", m.param_stderr, "SI (per parameter, see param_names)");
  w.number_map("metrics", m.metrics);
  w.string_map("settings", m.settings);
  w.blob("blob", m.blob);
}

ModelRecord StoreGroupOf<ModelRecord>::read(const GroupReader& g) {
  ModelRecord m;
  codec::read_attributes(g, kModelRecordAttributes, m);
  m.param_names = g.col_s("param_names");
  const long n = static_cast<long>(m.param_names.size());
  m.param_values = g.col_d("param_values", n);
  m.param_stderr = g.col_d("param_stderr", n);
  m.metrics = g.number_map("metrics");
  m.settings = g.string_map("settings");
  m.blob = g.blob("blob");
  return m;
}

void StoreGroupOf<PowerSeries>::write(GroupWriter& w, const PowerSeries& s) {
  w.attr("record", std::string("PowerSeries"));
  codec::write_attributes(w, kPowerSeriesAttributes, s);
  w.col("time", s.time_s, "s");
  w.col("power", s.power_w, "W");
  w.col("gpu_power", s.gpu_power_w, "W");
  w.col("gpu_freq", s.freq_hz, "Hz");
}

PowerSeries StoreGroupOf<PowerSeries>::read(const GroupReader& g) {
  PowerSeries s;
  codec::read_attributes(g, kPowerSeriesAttributes, s);
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

}  // namespace pacer::traces
