#include "traces/import/common.hpp"

#include <fmt/format.h>

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

namespace pacer::traces::import {

std::filesystem::path shared_data_dir(const std::string& option) {
  std::error_code ec;
  if (const char* env = std::getenv("PACER_DATA_DIR"); env && *env) {
    if (std::filesystem::is_directory(env, ec)) return env;
    throw SettingError(option, fmt::format("PACER_DATA_DIR is {}, which is not a folder: give the shared data "
                                           "folder (it holds zeus/ and jetson/loudva/)",
                                           env));
  }
  const std::filesystem::path beside = PACER_SHARED_DATA_DIR;
  if (std::filesystem::is_directory(beside, ec)) return beside.lexically_normal();
  throw SettingError(option, fmt::format("the shared data folder is not at {} (beside the checkout pacer was built "
                                         "from): give the folder of the data set, or set PACER_DATA_DIR to the "
                                         "shared data folder",
                                         beside.lexically_normal().string()));
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

}  // namespace pacer::traces::import

#include "base/units.hpp"
#include "traces/store/store.hpp"

namespace pacer::traces::import {

void write_profiles(const std::filesystem::path& path, const DeviceSpec* device,
                    const std::vector<std::pair<std::string, ProfileTable>>& profiles,
                    const std::vector<RelationSet>& relations) {
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

}  // namespace pacer::traces::import
