#include "base/units.hpp"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <utility>

#include "base/error.hpp"
#include "base/text.hpp"

namespace pacer::units {
namespace {

using base::trim;

struct UnitScale {
  std::string_view name;
  double scale;
};

// Exact spellings first; a unit in other letter case is accepted where it cannot mean another
// (same_unit_ignoring_case): "mW" (milli) and "MW" (mega) differ, and "MW" is not offered.
constexpr UnitScale kPower[] = {{"W", 1.0}, {"mW", 1e-3}, {"uW", 1e-6}, {"kW", 1e3}};
constexpr UnitScale kFrequency[] = {{"Hz", 1.0}, {"kHz", 1e3}, {"MHz", 1e6}, {"GHz", 1e9}};
constexpr UnitScale kTime[] = {{"s", 1.0},  {"ms", 1e-3},   {"us", 1e-6}, {"ns", 1e-9},
                               {"min", 60}, {"h", 3600.0}};
constexpr UnitScale kEnergy[] = {{"J", 1.0}, {"mJ", 1e-3}, {"kJ", 1e3}, {"Wh", 3600.0}, {"kWh", 3.6e6}};

std::pair<const UnitScale*, const UnitScale*> table(Dimension d) {
  switch (d) {
    case Dimension::Power: return {std::begin(kPower), std::end(kPower)};
    case Dimension::Frequency: return {std::begin(kFrequency), std::end(kFrequency)};
    case Dimension::Time: return {std::begin(kTime), std::end(kTime)};
    case Dimension::Energy: return {std::begin(kEnergy), std::end(kEnergy)};
  }
  return {nullptr, nullptr};
}

std::string unit_names(Dimension d) {
  std::string out;
  auto [b, e] = table(d);
  for (auto* u = b; u != e; ++u) {
    if (!out.empty()) out += ", ";
    out += u->name;
  }
  return out;
}

// Whether `given` spells `name` up to letter case ("7w", "1.2ghz", "921.6mhz"), except that an
// upper-case M never stands for a lower-case m: "MW" (mega) is not "mW" (milli), while "mhz" can
// only be MHz (there is no millihertz in the table).
bool same_unit_ignoring_case(std::string_view given, std::string_view name) {
  if (given.size() != name.size()) return false;
  for (size_t i = 0; i < given.size(); ++i) {
    const char g = given[i], n = name[i];
    if (g == n) continue;
    if (g == 'M' && n == 'm') return false;
    const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
    if (lower(g) != lower(n)) return false;
  }
  return true;
}

double scale_of(std::string_view unit, Dimension dim, std::string_view text, std::string_view what) {
  auto [b, e] = table(dim);
  for (auto* u = b; u != e; ++u)
    if (u->name == unit) return u->scale;
  // Letter case only where one unit of the table matches: never a guess between two.
  const UnitScale* match = nullptr;
  int matches = 0;
  for (auto* u = b; u != e; ++u)
    if (same_unit_ignoring_case(unit, u->name)) {
      match = u;
      ++matches;
    }
  if (matches == 1) return match->scale;
  throw UsageError(fmt::format("{}: unknown {} unit '{}' in '{}' (use one of {})", what,
                               dimension_name(dim), unit, text, unit_names(dim)));
}

}  // namespace

std::string_view dimension_name(Dimension d) {
  switch (d) {
    case Dimension::Power: return "power";
    case Dimension::Frequency: return "frequency";
    case Dimension::Time: return "time";
    case Dimension::Energy: return "energy";
  }
  return "?";
}

std::string_view si_unit(Dimension d) {
  switch (d) {
    case Dimension::Power: return "W";
    case Dimension::Frequency: return "Hz";
    case Dimension::Time: return "s";
    case Dimension::Energy: return "J";
  }
  return "?";
}

double parse(std::string_view text, Dimension dim, std::string_view bare_unit, std::string_view what) {
  const std::string_view s = trim(text);
  if (s.empty()) throw UsageError(fmt::format("{}: empty {} value", what, dimension_name(dim)));
  double number = 0;
  const auto* first = s.data();
  const auto* last = s.data() + s.size();
  if (*first == '+') ++first;
  auto [ptr, ec] = std::from_chars(first, last, number);
  if (ec != std::errc() || ptr == first)
    throw UsageError(fmt::format("{}: '{}' is not a {} (expected a number with an optional unit: {})",
                                 what, text, dimension_name(dim), unit_names(dim)));
  if (std::isnan(number) || std::isinf(number))
    throw UsageError(fmt::format("{}: '{}' is not a finite {}", what, text, dimension_name(dim)));
  if (number < 0)
    throw UsageError(fmt::format("{}: {} must not be negative, got '{}'", what, dimension_name(dim), text));
  const std::string_view unit = trim(std::string_view(ptr, static_cast<size_t>(last - ptr)));
  const double scale = scale_of(unit.empty() ? bare_unit : unit, dim, text, what);
  // "1e308kW" is a finite number in a valid unit whose SI value overflows to infinity.
  if (!std::isfinite(number * scale))
    throw UsageError(fmt::format("{}: '{}' is too large a {}", what, text, dimension_name(dim)));
  return number * scale;
}

namespace {

// A T filling the whole trimmed text, an explicit '+' allowed (but not "+-"); nothing otherwise.
template <typename T>
std::optional<T> parse_whole(std::string_view text) {
  const std::string_view s = trim(text);
  const char* first = s.data();
  const char* last = s.data() + s.size();
  if (first != last && *first == '+' && (last - first < 2 || first[1] != '-')) ++first;
  T v = 0;
  const auto [ptr, ec] = std::from_chars(first, last, v);
  if (ec != std::errc() || ptr != last || first == last) return std::nullopt;
  return v;
}

}  // namespace

std::optional<double> to_number(std::string_view text) {
  const auto v = parse_whole<double>(text);
  return v && std::isfinite(*v) ? v : std::nullopt;
}

std::optional<int64_t> to_integer(std::string_view text, int64_t lo, int64_t hi) {
  const auto v = parse_whole<int64_t>(text);
  return v && *v >= lo && *v <= hi ? v : std::nullopt;
}

std::vector<double> parse_list(std::string_view text, Dimension dim, std::string_view bare_unit,
                               std::string_view what) {
  std::vector<double> out;
  const std::string_view s = trim(text);
  if (s.find(':') != std::string_view::npos) {
    std::vector<std::string_view> parts;
    size_t start = 0;
    for (size_t pos; (pos = s.find(':', start)) != std::string_view::npos; start = pos + 1)
      parts.push_back(s.substr(start, pos - start));
    parts.push_back(s.substr(start));
    if (parts.size() != 3)
      throw UsageError(fmt::format("{}: range '{}' must be FROM:TO:STEP", what, text));
    const double from = parse(parts[0], dim, bare_unit, what);
    const double to = parse(parts[1], dim, bare_unit, what);
    const double step = parse(parts[2], dim, bare_unit, what);
    if (step <= 0) throw UsageError(fmt::format("{}: step of '{}' must be positive", what, text));
    if (to < from) throw UsageError(fmt::format("{}: range '{}' ends below its start", what, text));
    const double count = std::floor((to - from) / step + 1e-9) + 1;
    if (count > 1e6) throw UsageError(fmt::format("{}: range '{}' has more than a million values", what, text));
    for (int i = 0; i < static_cast<int>(count); ++i) out.push_back(from + i * step);
    return out;
  }
  size_t start = 0;
  while (start <= s.size()) {
    size_t pos = s.find(',', start);
    if (pos == std::string_view::npos) pos = s.size();
    out.push_back(parse(s.substr(start, pos - start), dim, bare_unit, what));
    start = pos + 1;
  }
  return out;
}

namespace {
bool names_no_cap(std::string_view text) {
  std::string s(trim(text));
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s == "none" || s == "uncapped";
}
}  // namespace

bool is_no_cap(double cap_w) {
  return !std::isfinite(cap_w) || cap_w <= 0;
}

double parse_cap(std::string_view text, std::string_view what) {
  if (names_no_cap(text)) return kNoCap;
  return parse(text, Dimension::Power, "W", what);
}

std::vector<double> parse_cap_list(std::string_view text, std::string_view what) {
  const std::string_view s = trim(text);
  if (s.find(':') != std::string_view::npos) return parse_list(s, Dimension::Power, "W", what);
  std::vector<double> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t pos = s.find(',', start);
    if (pos == std::string_view::npos) pos = s.size();
    out.push_back(parse_cap(s.substr(start, pos - start), what));
    start = pos + 1;
  }
  return out;
}

std::string format_cap(double cap_w) {
  return is_no_cap(cap_w) ? "none" : format(cap_w, Dimension::Power);
}

std::string format(double v, Dimension dim, int significant) {
  struct Prefix {
    double scale;
    const char* name;
  };
  std::string_view base = si_unit(dim);
  double a = std::fabs(v);
  double scale = 1;
  std::string unit(base);
  if (dim == Dimension::Time) {
    if (a >= 3600 * 2) { scale = 3600; unit = "h"; }
    else if (a >= 120) { scale = 60; unit = "min"; }
    else if (a > 0 && a < 1e-3) { scale = 1e-6; unit = "us"; }
    else if (a > 0 && a < 1) { scale = 1e-3; unit = "ms"; }
  } else {
    static constexpr Prefix kPrefixes[] = {{1e9, "G"}, {1e6, "M"}, {1e3, "k"}, {1, ""}, {1e-3, "m"}};
    for (const auto& p : kPrefixes) {
      if (a >= p.scale || p.scale == 1e-3) {
        scale = p.scale;
        unit = std::string(p.name) + std::string(base);
        break;
      }
    }
    if (a == 0) { scale = 1; unit = std::string(base); }
  }
  return fmt::format("{:.{}g} {}", v / scale, significant, unit);
}

}  // namespace pacer::units
