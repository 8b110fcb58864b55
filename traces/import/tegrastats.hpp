#pragma once
// Importer for tegrastats output of every Jetson generation plus a marks file of time windows:
// each window (a knob setting and a batch size, run between two times) becomes one ProfilePoint
// with the mean and peak of the module power over the samples inside it.
//  - Lines: optional "MM-DD-YYYY HH:MM:SS " prefix; rails "NAME cur/avg" (Nano/TX1 POM_*, TX2 VDD_*,
//    mW implied), "NAME curmW/avgmW" (Xavier, Orin) or "NAME amW/bmW/cmW" (JetPack 7); "CPU [..]"
//    with "off" cores; "GR3D_FREQ load%[@MHz|@[MHz,..]]"; "EMC_FREQ load%[@MHz]"; "NAME@tempC".
//  - Module power per sample: the total rail (POM_5V_IN, VDD_IN) where the board has one, else the
//    sum of its connected rails (traces/catalog/rails.hpp, the sysfs backend's rule).
//  - Time of a sample: seconds since the first sample, from the date prefix where every line has
//    one (n lines stamped with one second are spread evenly over it), else line index x the
//    sampling interval.
//  - Marks (CSV): start_s, end_s (seconds since the first sample), b, the knob columns (gpu_freq,
//    or power_limit, or cpu_cores, cpu_freq, gpu_freq, mem_freq for a power mode; the unit in
//    brackets, e.g. gpu_freq[MHz], else SI), and batches (mini-batches run in the window) or
//    time_per_batch[s] for the timing (one of the two columns is required). A window whose timing
//    cell is empty is stored with status "skipped: power only". Windows lie inside the log and do
//    not overlap; values are checked as every importer checks them (traces/import/common.hpp).
//  - A last line without a line end that does not parse (cut off) is left out with a warning.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "traces/records.hpp"

namespace pacer::traces::tegrastats {

struct Sample {
  double time_s = kNaN;                   // seconds since the first sample of the log
  std::map<std::string, double> rails_w;  // rail -> current reading
  double module_power_w = kNaN;           // the total rail, or the sum of the connected rails
  bool summed = false;                    // module_power_w is a sum (no total rail on the line)
  double gpu_freq_hz = kNaN;
  double gpu_load = kNaN;  // 0..1
  double emc_freq_hz = kNaN;
  int cpus_online = 0;
  int cpus = 0;
  std::map<std::string, double> temperatures_c;
};

// One line; `date_s` receives the prefix's seconds since 1970 (NaN without a prefix). Throws Error
// "<origin>:<line>: ..." for a line with no power rail or a malformed field.
Sample parse_line(const std::string& line, const std::string& origin, size_t line_no, double* date_s = nullptr);

// Every non-blank line, times filled in as described above.
std::vector<Sample> parse_log(const std::string& text, const std::string& origin, double interval_s);

struct ImportOptions {
  std::filesystem::path log;
  std::filesystem::path marks;
  double interval_s = 1.0;  // tegrastats --interval, used when lines carry no date
  std::string workload = "tegrastats";
  std::string device;  // recorded in the table (catalog name), may be empty
  const DeviceSpec* catalog = nullptr;  // the board, for the plausibility checks (traces/import/common.hpp)
};

// The log and the marks into one ProfileTable. Throws Error naming the file and line of a
// malformed line or mark, a window with no sample in it, or knob columns of no known knob.
ProfileTable import_log(const ImportOptions& options);
ProfileTable import_text(const std::string& log, const std::string& marks, const ImportOptions& options);

}  // namespace pacer::traces::tegrastats
