#pragma once
// CSV export of trace-store records. The header names every column with its unit:
// "time_per_batch_mean[s]". Strings are quoted when they contain a comma or a quote.
#include <string>

#include "traces/records.hpp"

namespace pacer::traces {

std::string to_csv(const ProfileTable& table);
std::string to_csv(const RelationSet& set);
std::string to_csv(const ModelRecord& model);
std::string to_csv(const LearningCurve& curve);
std::string to_csv(const SweepResult& sweep);
std::string to_csv(const PowerSeries& series);
std::string to_csv(const DeviceSpec& device);
std::string to_csv(const ValidationResult& result);

// One CSV field: quoted (quotes doubled) when it holds a comma, a quote or a line break.
std::string csv_field(const std::string& s);

// Minimal CSV reader shared by importers: splits records, honours double quotes. Throws Error
// naming `origin` and the line on a malformed row (unterminated quote).
struct CsvTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  int column(const std::string& name, const std::string& origin) const;  // throws if absent
};
CsvTable parse_csv(const std::string& text, const std::string& origin);

// "a,b,,c" -> {"a", "b", "c"}: a comma-separated list (option values, record-name lists), empty items dropped.
std::vector<std::string> split_list(const std::string& text, char separator = ',');

}  // namespace pacer::traces
