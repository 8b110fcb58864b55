#include "traces/import_common.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "traces/error.hpp"

namespace pacer::traces::import {

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("cannot read {}: check that the file exists and is readable", path.string()));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string trim(std::string_view text) {
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  size_t a = 0, b = text.size();
  while (a < b && blank(text[a])) ++a;
  while (b > a && blank(text[b - 1])) --b;
  return std::string(text.substr(a, b - a));
}

namespace {
std::string where(const std::string& origin, size_t line) {
  return line ? fmt::format("{}:{}", origin, line) : origin;
}
}  // namespace

double parse_number(std::string_view text, const std::string& origin, size_t line, const std::string& what) {
  const std::string t = trim(text);
  double v = 0;
  const char* first = t.data();
  const char* last = t.data() + t.size();
  if (!t.empty() && *first == '+') ++first;
  const auto [ptr, ec] = std::from_chars(first, last, v);
  if (t.empty() || ec != std::errc() || ptr != last || !std::isfinite(v))
    throw Error(fmt::format("{}: {} holds '{}', not a number", where(origin, line), what, t));
  return v;
}

int parse_count(std::string_view text, const std::string& origin, size_t line, const std::string& what) {
  const double v = parse_number(text, origin, line, what);
  if (v < 1 || v > std::numeric_limits<int>::max() || v != std::floor(v))
    throw Error(fmt::format("{}: {} holds '{}', not a whole number >= 1", where(origin, line), what, trim(text)));
  return static_cast<int>(v);
}

}  // namespace pacer::traces::import

#include "traces/store.hpp"

namespace pacer::traces::import {

void write_profiles(const std::filesystem::path& path, const DeviceSpec* device,
                    const std::vector<std::pair<std::string, ProfileTable>>& profiles) {
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
    if (store.has("profiles", name)) {
      const auto old = store.read_profile(name);
      if (old.device != table.device)
        throw Error(fmt::format("{} already holds profile '{}' from device '{}': import each board into its own store",
                                path.string(), name, old.device));
    }
  if (device && !has_device) store.write_device(*device);
  for (const auto& [name, table] : profiles) store.write_profile(table, name);
}

}  // namespace pacer::traces::import
