#pragma once
// Typed option values with units for Boost.Program_options. A malformed value becomes a
// program_options error naming the option (exit 2). Bare numbers take the documented unit:
// power W, frequency MHz, time s, energy J.
#include <boost/program_options.hpp>
#include <string>

#include "traces/csv.hpp"
#include "traces/units.hpp"

namespace pacer::units {

void validate(boost::any& v, const std::vector<std::string>& values, Power*, int);
void validate(boost::any& v, const std::vector<std::string>& values, Frequency*, int);
void validate(boost::any& v, const std::vector<std::string>& values, Duration*, int);
void validate(boost::any& v, const std::vector<std::string>& values, Energy*, int);
void validate(boost::any& v, const std::vector<std::string>& values, PowerList*, int);

}  // namespace pacer::units

namespace pacer::cli {

namespace po = boost::program_options;
using traces::split_list;

// Convenience: typed option with default and the default's text ("10W").
inline auto power_opt(double default_w, const std::string& shown) {
  return po::value<units::Power>()->default_value(units::Power{default_w}, shown);
}
inline auto freq_opt() { return po::value<units::Frequency>(); }
inline auto duration_opt(double default_s, const std::string& shown) {
  return po::value<units::Duration>()->default_value(units::Duration{default_s}, shown);
}

// Integer list "4,8,16" or power-of-two range "4:128" (doubling). Throws UsageError naming `what`.
std::vector<int> parse_int_list(const std::string& text, const std::string& what);

// Seeds: list "0,1,2" or inclusive range "0-4"; sorted, duplicates removed (0 is a valid seed).
std::vector<int> parse_seeds(const std::string& text, const std::string& what);

// A fraction in (0, 1] or a percentage "85%". Throws UsageError naming `option`.
double parse_fraction(const std::string& text, const std::string& option);

// Checks a value is within [lo, hi]; throws UsageError naming the option otherwise.
void require_range(double value, double lo, double hi, const std::string& option, const std::string& unit);

}  // namespace pacer::cli
