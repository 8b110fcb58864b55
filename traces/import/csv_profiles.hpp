#pragma once
// Importer for a user's own measurements in a CSV file: one row per (knob setting, batch size).
// Columns are found by role; a role's column defaults to the column named like the role, and a
// mapping "role=heading" names another one. Units come from the heading's brackets
// ("time[ms]") or from the mapping ("time_per_batch=t[ms]"), else SI.
//   roles: b (required), time_per_batch (required), power_mean (required), power_peak (optional),
//          and the knob: gpu_freq, or power_limit, or cpu_cores, cpu_freq, gpu_freq and mem_freq
//          (a power mode).
#include <filesystem>
#include <map>
#include <string>

#include "traces/records.hpp"

namespace pacer::traces::csv_import {

struct ImportOptions {
  std::filesystem::path file;
  std::map<std::string, std::string> columns;  // role -> "heading" or "heading[unit]"
  std::string workload = "measured";
  std::string device;  // recorded in the table, may be empty
  // The board measured, for the plausibility checks (powers within its catalog power x 1.5, GPU
  // frequencies in its table); null: the physics bounds only (traces/import/common.hpp).
  const DeviceSpec* catalog = nullptr;
  bool force = false;  // keep a plausible GPU frequency that is not in the device's table, with a warning
  std::string source;  // who measured it and how; "" -> "csv import (<file>)"
};

// "b=batch,time_per_batch=t[ms]" -> {{"b", "batch"}, {"time_per_batch", "t[ms]"}}. Throws Error for an
// item without '=' or an unknown role.
std::map<std::string, std::string> parse_column_map(const std::string& text);

// Throws Error naming the file and line of a malformed row, and a missing or unknown column.
ProfileTable import_file(const ImportOptions& options);
ProfileTable import_text(const std::string& csv, const ImportOptions& options);

}  // namespace pacer::traces::csv_import
