#pragma once
// Pieces every measurement importer (traces/import_*.hpp) shares: reading a whole file with an
// actionable error and strict number parsing that names the file, line and column.
#include <filesystem>
#include <string>
#include <string_view>

namespace pacer::traces::import {

// The folder of the real data sets (zeus/, jetson/loudva/): $PACER_DATA_DIR when set, else the
// data/ folder of pacer's source checkout (fixed when pacer is built), else the installed copy
// (<prefix>/share/pacer/data, `make install`), so that the importers find it from any working
// directory. Throws SettingError(option) saying what to pass when none is a folder (exit 1).
std::filesystem::path data_dir(const std::string& option);

// The whole file; throws Error naming it when it cannot be read.
std::string read_text(const std::filesystem::path& path);

// A finite number filling the whole text (units::to_number: blanks around it allowed); throws Error
// "<origin>:<line>: <what> holds '<text>', not a number" otherwise. `line` is 1-based; 0 leaves it out.
double parse_number(std::string_view text, const std::string& origin, size_t line, const std::string& what);

// parse_number, then a whole number >= 1 that fits an int (batch sizes, concurrencies).
int parse_count(std::string_view text, const std::string& origin, size_t line, const std::string& what);

}  // namespace pacer::traces::import

#include <utility>
#include <vector>

#include "traces/records.hpp"

namespace pacer::traces::import {

// Writes imported profiles (name, table), relations and learning curves into the store at `path` (created if absent, its folder
// too), and `device` as the store's /device when the store has none. Call it only after every
// input parsed, so a malformed file writes nothing. Throws Error, before writing anything, when the
// store's /device is another board or a profile of that name came from another device.
void write_profiles(const std::filesystem::path& path, const DeviceSpec* device,
                    const std::vector<std::pair<std::string, ProfileTable>>& profiles,
                    const std::vector<RelationSet>& relations = {}, const std::vector<LearningCurve>& curves = {});

// A column heading "name[unit]" or "name": {name, unit} (unit "" without brackets), both trimmed.
std::pair<std::string, std::string> split_heading(const std::string& heading);

// The factor from `unit` to `si_unit` ("Hz", "W", "s", "J"; "1" for a count, which takes no unit);
// an empty unit means SI. Throws Error naming `origin` and the column for an unknown unit.
double unit_factor(const std::string& unit, const std::string& si_unit, const std::string& origin,
                   const std::string& column);

// The index of the column named `name` (unit ignored), -1 when absent.
int find_column(const std::vector<std::string>& header, const std::string& name);

// The knob columns of a header: gpu_freq; power_limit; or cpu_cores, cpu_freq, gpu_freq, mem_freq
// (a power mode, which wins when all four are present). Units in brackets, else SI.
struct KnobColumns {
  KnobSpace knob;
  std::vector<int> index;      // per knob dimension, the column
  std::vector<double> factor;  // per knob dimension, to SI
  std::vector<double> read(const std::vector<std::string>& row, const std::string& origin, size_t line) const;
};
// Throws Error naming `origin` when no knob's columns are all present.
KnobColumns find_knob_columns(const std::vector<std::string>& header, const std::string& origin);

}  // namespace pacer::traces::import
