#include "traces/import/common.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include "base/error.hpp"
#include "base/files.hpp"
#include "base/text.hpp"
#include "base/units.hpp"
#include "traces/catalog/catalog.hpp"

namespace pacer::traces::import {

std::filesystem::path data_dir(const std::string& option) {
  std::error_code ec;
  if (const char* env = std::getenv("PACER_DATA_DIR"); env && *env) {
    if (std::filesystem::is_directory(env, ec)) return env;
    throw SettingError(option, fmt::format("PACER_DATA_DIR is {}, which is not a folder: give the data folder "
                                           "(it holds zeus/ and jetson/loudva/, as data/ in pacer's checkout)",
                                           env));
  }
  const std::filesystem::path source = PACER_SOURCE_DATA_DIR, installed = PACER_INSTALLED_DATA_DIR;
  for (const auto& dir : {source, installed})
    if (std::filesystem::is_directory(dir, ec)) return dir.lexically_normal();
  throw SettingError(option, fmt::format("no data folder at {} (pacer's checkout) nor at {} (its installed copy): "
                                         "give the folder of the data set, or set PACER_DATA_DIR to a copy of "
                                         "pacer's data/ folder",
                                         source.lexically_normal().string(), installed.lexically_normal().string()));
}

std::string read_text(const std::filesystem::path& path) {
  return base::read_regular_file(path, base::kMaxDataFileBytes, "input file");
}

namespace {
std::string where(const std::string& origin, size_t line) {
  return line ? fmt::format("{}:{}", origin, line) : origin;
}
}  // namespace

double parse_number(std::string_view text, const std::string& origin, size_t line, const std::string& what) {
  const auto v = units::to_number(text);
  if (!v) throw Error(fmt::format("{}: {} holds '{}', not a number", where(origin, line), what, base::trim(text)));
  return *v;
}

int parse_count(std::string_view text, const std::string& origin, size_t line, const std::string& what) {
  const double v = parse_number(text, origin, line, what);
  if (v < 1 || v > std::numeric_limits<int>::max() || v != std::floor(v))
    throw Error(fmt::format("{}: {} holds '{}', not a whole number >= 1", where(origin, line), what, base::trim(text)));
  return static_cast<int>(v);
}

namespace {
std::string at_text(const Where& at) {
  return fmt::format("{}: column {}", where(at.origin, at.line), at.column);
}
}  // namespace

double max_power_w(const DeviceSpec* device, std::string* why) {
  if (device && device->max_power_w > 0) {
    if (why)
      *why =
          fmt::format("{} x {:g} of {}'s highest power in the catalog", device->max_power_w, kPowerSlack, device->name);
    return device->max_power_w * kPowerSlack;
  }
  if (why)
    *why = fmt::format("the physics bound for one {} (no catalog data for it)",
                       device ? fmt::format("board ({})", device->name) : std::string("GPU or board"));
  return kMaxPowerW;
}

void check_power(double watts, const Where& at, const DeviceSpec* device) {
  if (!(watts > 0) || !std::isfinite(watts))
    throw Error(fmt::format("{} holds {:g} W: a power must be positive and finite", at_text(at), watts));
  std::string why;
  const double limit = max_power_w(device, &why);
  if (watts > limit)
    throw Error(fmt::format("{} holds {:g} W, above {:g} W ({}): check the unit in the heading (mW as W?)", at_text(at),
                            watts, limit, why));
}

void check_duration(double seconds, const Where& at) {
  if (!(seconds > 0) || !(seconds <= kMaxDurationS))
    throw Error(fmt::format("{} holds {:g} s: a duration must be positive and at most {:g} s (check the unit)",
                            at_text(at), seconds, kMaxDurationS));
}

void check_gpu_frequency(double hz, const Where& at, const DeviceSpec* device, bool force) {
  if (!(hz > 0) || !(hz <= kMaxFrequencyHz))
    throw Error(fmt::format("{} holds {:g} Hz: a clock must be positive and at most {:g} GHz (check the unit)",
                            at_text(at), hz, kMaxFrequencyHz / 1e9));
  if (!device || device->gpu_freqs_hz.empty()) return;
  for (const double f : device->gpu_freqs_hz)
    if (std::abs(f - hz) <= 1e3) return;
  std::vector<std::string> table;
  for (const double f : device->gpu_freqs_hz) table.push_back(fmt::format("{:g}", f / 1e6));
  const std::string message = fmt::format("{} holds {:g} MHz, which is not a GPU frequency of {} ({} MHz)", at_text(at),
                                          hz / 1e6, device->name, fmt::join(table, ", "));
  if (!force) throw Error(message + ": fix the value, or force the import to keep it");
  spdlog::warn("{} (kept: the import was forced)", message);
}

std::optional<DeviceSpec> catalog_device(const std::string& name) {
  const auto names = builtin_device_names();
  if (std::find(names.begin(), names.end(), name) == names.end()) return std::nullopt;
  return find_device(name);
}

}  // namespace pacer::traces::import

#include "base/units.hpp"
#include "traces/store/store.hpp"

namespace pacer::traces::import {

void write_profiles(const std::filesystem::path& path, const DeviceSpec* device,
                    const std::vector<std::pair<std::string, ProfileTable>>& profiles,
                    const std::vector<RelationSet>& relations, const std::vector<LearningCurve>& curves) {
  if (const auto parent = path.parent_path(); !parent.empty()) std::filesystem::create_directories(parent);
  auto store = Store::open_or_create(path);
  const bool has_device = store.has_device();
  if (device && has_device) {
    const auto old = store.read_device();
    if (old.name != device->name)
      throw Error(fmt::format("{} holds measurements of {}, not {}: import each board into its own store",
                              path.string(), old.name, device->name));
  }
  for (const auto& [name, table] : profiles)
    if (store.has<ProfileTable>(name)) {
      const auto old = store.read<ProfileTable>(name);
      if (old.device != table.device)
        throw Error(fmt::format("{} already holds profile '{}' from device '{}': import each board into its own store",
                                path.string(), name, old.device));
    }
  if (device && !has_device) store.write_device(*device);
  for (const auto& [name, table] : profiles) store.write(table, name);
  for (const auto& r : relations) store.write(r);
  for (const auto& c : curves) store.write(c);
}

}  // namespace pacer::traces::import

namespace pacer::traces::import {

std::pair<std::string, std::string> split_heading(const std::string& heading) {
  const std::string h(base::trim(heading));
  const auto open = h.find('[');
  if (open == std::string::npos || h.back() != ']') return {h, ""};
  return {std::string(base::trim(h.substr(0, open))), std::string(base::trim(h.substr(open + 1, h.size() - open - 2)))};
}

double unit_factor(const std::string& unit, const std::string& si_unit, const std::string& origin,
                   const std::string& column) {
  if (unit.empty() || unit == si_unit) return 1.0;
  static const std::map<std::string, units::Dimension> dims = {{"Hz", units::Dimension::Frequency},
                                                               {"W", units::Dimension::Power},
                                                               {"s", units::Dimension::Time},
                                                               {"J", units::Dimension::Energy}};
  const auto it = dims.find(si_unit);
  if (it == dims.end())
    throw Error(fmt::format("{}: column {} is a count and takes no unit, found [{}]", origin, column, unit));
  try {
    return units::parse("1", it->second, unit, column);
  } catch (const UsageError&) {
    throw Error(fmt::format("{}: column {} has unit [{}], not a unit of {} (e.g. [{}], [m{}])", origin, column, unit,
                            units::dimension_name(it->second), si_unit, si_unit));
  }
}

int find_column(const std::vector<std::string>& header, const std::string& name) {
  for (size_t i = 0; i < header.size(); ++i)
    if (split_heading(header[i]).first == name) return static_cast<int>(i);
  return -1;
}

KnobColumns find_knob_columns(const std::vector<std::string>& header, const std::string& origin) {
  for (const KnobSpace& k : {KnobSpace::power_mode(), KnobSpace::gpu_frequency(), KnobSpace::power_limit()}) {
    KnobColumns c;
    c.knob = k;
    for (const auto& d : k.dims) {
      const int i = find_column(header, d.name);
      if (i < 0) break;
      c.index.push_back(i);
      c.factor.push_back(unit_factor(split_heading(header[static_cast<size_t>(i)]).second, d.unit, origin, d.name));
    }
    if (c.index.size() == k.dims.size()) return c;
  }
  throw Error(
      fmt::format("{}: no knob columns in the header: name gpu_freq, or power_limit, or cpu_cores, cpu_freq, "
                  "gpu_freq and mem_freq (a power mode), with units in brackets, e.g. gpu_freq[MHz]",
                  origin));
}

std::vector<double> KnobColumns::read(const std::vector<std::string>& row, const std::string& origin,
                                      size_t line) const {
  std::vector<double> out;
  for (size_t d = 0; d < index.size(); ++d) {
    const double v = parse_number(row.at(static_cast<size_t>(index[d])), origin, line, knob.dims[d].name) * factor[d];
    if (v < 0) throw Error(fmt::format("{}:{}: {} is negative", origin, line, knob.dims[d].name));
    out.push_back(v);
  }
  return out;
}

void require_clock_units(const KnobColumns& knob, const std::vector<std::string>& header, const std::string& origin) {
  for (size_t d = 0; d < knob.index.size(); ++d)
    if (knob.knob.dims[d].unit == "Hz" && split_heading(header[static_cast<size_t>(knob.index[d])]).second.empty())
      throw Error(
          fmt::format("{}: column {} has no unit: name it {}[MHz] (or [Hz], [GHz]) so that its values are "
                      "read as meant",
                      origin, knob.knob.dims[d].name, knob.knob.dims[d].name));
}

void check_knob(const KnobColumns& knob, const std::vector<double>& values, const std::string& origin, size_t line,
                const DeviceSpec* device, bool force) {
  for (size_t d = 0; d < values.size(); ++d) {
    const KnobDim& dim = knob.knob.dims[d];
    const Where at{origin, line, dim.name};
    if (knob.knob.kind == KnobKind::gpu_freq)
      check_gpu_frequency(values[d], at, device, force);
    else if (dim.unit == "W")
      check_power(values[d], at, device);
    else if (dim.unit == "Hz")
      check_gpu_frequency(values[d], at, nullptr, force);  // a power mode's clocks: the bound only
  }
}

}  // namespace pacer::traces::import
