#pragma once
// Physical quantities parsed once at the edge ("7.5W", "921.6MHz", "30s", "2Wh").
// Inside pacer every value is SI and its unit is in its name: power_w, freq_hz, time_s, energy_j.
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pacer::units {

enum class Dimension { Power, Frequency, Time, Energy };

// Name of the dimension ("power") and its SI unit ("W").
std::string_view dimension_name(Dimension d);
std::string_view si_unit(Dimension d);

// Parses "<number>[unit]" into SI. A bare number is read in `bare_unit` (for example "MHz" for an
// option documented in MHz). Throws UsageError naming `what` (an option name) on a malformed
// value, an unknown unit, NaN, infinity or a negative value.
double parse(std::string_view text, Dimension dim, std::string_view bare_unit, std::string_view what);

// "2W:10W:0.5W" (inclusive range) or "5W,7.5W,10W" (list). Units as in parse().
std::vector<double> parse_list(std::string_view text, Dimension dim, std::string_view bare_unit,
                               std::string_view what);

// A power cap: a power as parse() reads it, or "none" (also "uncapped", any case): no cap, the
// infinite kNoCap, which every feasibility test passes (the paper's "N/A" column).
// parse_cap_list: as parse_list, and a list may name "none" among its caps ("5W,7W,none").
inline constexpr double kNoCap = std::numeric_limits<double>::infinity();
bool is_no_cap(double cap_w);  // infinite, NaN or not positive: no cap (as stored records write it)
double parse_cap(std::string_view text, std::string_view what);
std::vector<double> parse_cap_list(std::string_view text, std::string_view what);
// "5.9 W" or "none".
std::string format_cap(double cap_w);

// The one number parser under every number pacer reads from a user, a file or a record: the whole
// of `text` (blanks around it allowed, as base::trim defines them) as a finite number, or as a
// decimal integer within [lo, hi]. Anything else (trailing text, out of range, NaN, infinity) is
// std::nullopt; the caller's error names the field and the bad value, so no message is ever the C++
// library's bare "stoi"/"stod".
std::optional<double> to_number(std::string_view text);
std::optional<int64_t> to_integer(std::string_view text, int64_t lo = INT64_MIN, int64_t hi = INT64_MAX);

// Human-readable value with a sensible prefix: format(921.6e6, Frequency) -> "921.6 MHz".
std::string format(double value_si, Dimension dim, int significant = 4);

// Strongly typed option values for Boost.Program_options (see experiments/cli/options.hpp).
struct Power { double w = 0; };
struct Frequency { double hz = 0; };
struct Duration { double s = 0; };
struct Energy { double j = 0; };
struct PowerList { std::vector<double> w; };
struct PowerCap { double w = 0; };                // a cap: a power or "none" (kNoCap)
struct PowerCapList { std::vector<double> w; };  // caps, "none" among them allowed

}  // namespace pacer::units
