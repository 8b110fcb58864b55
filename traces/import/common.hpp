#pragma once
// Pieces every measurement importer (traces/import_*.hpp) shares: reading a whole file with an
// actionable error and strict number parsing that names the file, line and column.
#include <filesystem>
#include <optional>
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

#include "traces/records.hpp"

namespace pacer::traces::import {

// The plausibility checks every importer makes of the values it reads (issue 22), one home for all:
// each throws Error "<origin>:<line>: column <column> holds <value>: <why>" (one line naming the
// file, the row and the column). `device`: the board measured, from the catalog; null when it is not
// known (a Zeus GPU has no catalog entry): then only the physics bounds below apply.
struct Where {
  std::string origin;  // the file's name
  size_t line = 0;     // 1-based
  std::string column;
};
inline constexpr double kPowerSlack = 1.5;       // a reading may exceed the catalog's max_power_w by this factor
inline constexpr double kMaxPowerW = 1500;       // no single GPU or board draws more (the physics bound)
inline constexpr double kMaxDurationS = 1e7;     // 115 days: no epoch or mini-batch takes longer
inline constexpr double kMaxFrequencyHz = 10e9;  // 10 GHz: no GPU, CPU or memory clock is faster
// The highest plausible power reading: max_power_w x kPowerSlack for a catalog device that has one,
// else kMaxPowerW; `why` (may be null) receives how the bound was made, for the message.
double max_power_w(const DeviceSpec* device, std::string* why = nullptr);
// 0 < watts <= max_power_w(device).
void check_power(double watts, const Where& at, const DeviceSpec* device);
// 0 < seconds <= kMaxDurationS.
void check_duration(double seconds, const Where& at);
// 0 < hz <= kMaxFrequencyHz and, with a device, one of its GPU frequencies (within 1 kHz). An
// off-table value is kept with a warning when `force` is set.
void check_gpu_frequency(double hz, const Where& at, const DeviceSpec* device, bool force);
// The catalog's entry for `name`, or nothing when the catalog has none (no error).
std::optional<DeviceSpec> catalog_device(const std::string& name);

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
// Throws Error naming `origin` and the column when a clock column's heading has no unit
// (gpu_freq, not gpu_freq[MHz]): a bare 460.8 would be read as 460.8 Hz.
void require_clock_units(const KnobColumns& knob, const std::vector<std::string>& header, const std::string& origin);
// The plausibility checks of one row's knob values (check_gpu_frequency for a GPU-frequency knob,
// against `device`'s table; check_power for a power limit; the clock bound for a power mode's clocks).
void check_knob(const KnobColumns& knob, const std::vector<double>& values, const std::string& origin, size_t line,
                const DeviceSpec* device, bool force);

}  // namespace pacer::traces::import
