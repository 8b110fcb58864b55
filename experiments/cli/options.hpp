#pragma once
// Typed option values with units for Boost.Program_options. A malformed value becomes a
// program_options error naming the option (exit 2). Bare numbers take the documented unit:
// power W, frequency MHz, time s, energy J.
#include <fmt/format.h>
#include <boost/program_options.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/units.hpp"
#include "traces/csv.hpp"

namespace pacer::units {

void validate(boost::any& v, const std::vector<std::string>& values, Power*, int);
void validate(boost::any& v, const std::vector<std::string>& values, Frequency*, int);
void validate(boost::any& v, const std::vector<std::string>& values, Duration*, int);
void validate(boost::any& v, const std::vector<std::string>& values, Energy*, int);
void validate(boost::any& v, const std::vector<std::string>& values, PowerList*, int);
void validate(boost::any& v, const std::vector<std::string>& values, PowerCap*, int);
void validate(boost::any& v, const std::vector<std::string>& values, PowerCapList*, int);

// A sampling rate. Unlike Frequency (GPU clocks, bare MHz), a bare number is Hz: "10" is 10 Hz.
struct Rate {
  double hz = 0;
};
void validate(boost::any& v, const std::vector<std::string>& values, Rate*, int);

}  // namespace pacer::units

namespace pacer::cli {

namespace po = boost::program_options;
using traces::split_list;

// The names of list option `key` whose default, the empty list, means "every one" (--gpus): given
// and empty (`--gpus ''`) is a usage error, not every one.
std::vector<std::string> names_or_every(const po::variables_map& vm, const std::string& key, const std::string& what);

// Convenience: typed option with default and the default's text ("10W").
inline auto power_opt(double default_w, const std::string& shown) {
  return po::value<units::Power>()->default_value(units::Power{default_w}, shown);
}
inline auto power_opt(double default_w) {
  return power_opt(default_w, units::format(default_w, units::Dimension::Power));
}
inline auto freq_opt() {
  return po::value<units::Frequency>();
}
inline auto duration_opt(double default_s, const std::string& shown) {
  return po::value<units::Duration>()->default_value(units::Duration{default_s}, shown);
}
inline auto duration_opt(double default_s) {
  return duration_opt(default_s, units::format(default_s, units::Dimension::Time));
}
// A plain number with its default shown as %g ("0.02", not "0.020000").
inline auto number_opt(double default_value) {
  return po::value<double>()->default_value(default_value, fmt::format("{:g}", default_value));
}

// --sensor-rate, the one power-sampling-rate option of every command that samples: Hz, units
// accepted ("10", "10Hz", "1kHz"), within [kMinSensorRateHz, kMaxSensorRateHz].
inline constexpr double kMinSensorRateHz = 0.01;
inline constexpr double kMaxSensorRateHz = 10000;
void add_sensor_rate_option(po::options_description& d, double default_hz, const std::string& description);
// The value of --sensor-rate in Hz (range-checked when the options are parsed).
double sensor_rate_hz(const po::variables_map& vm);

// A count whose bounds are enforced when the options are parsed: a value outside [lo, hi] is a
// usage error naming --`name` (exit 2). Write the bounds into the option's description.
po::typed_value<int>* bounded(int default_value, int lo, int hi, const std::string& name);
po::typed_value<int64_t>* bounded(int64_t default_value, int64_t lo, int64_t hi, const std::string& name);

// A count option with its bounds appended to the description ("... [1 .. 1000]") and enforced.
void add_count_option(po::options_description& d, const char* name, int64_t default_value, int64_t lo, int64_t hi,
                      const std::string& description);
void add_count_option(po::options_description& d, const char* name, int default_value, int lo, int hi,
                      const std::string& description);

// Upper bounds shared by the count options: samples of a training run or an evaluation, a batch.
inline constexpr int64_t kMaxSamples = 1'000'000'000;
inline constexpr int kMaxBatchSize = 1 << 20;
// Mini-batches of one profiled point, and power samples behind one power figure.
inline constexpr int kMaxBatchesPerPoint = 100000;
inline constexpr int kMaxPowerSamples = 1000000;
// Training epochs of a learned device model, and cross-validation folds.
inline constexpr int kMaxEpochs = 1000000;
inline constexpr int kMaxFolds = 1000;
// Caps of a sweep per workload.
inline constexpr int kMaxCapsPerWorkload = 10000;
// Seeds of one campaign: each is a full training run.
inline constexpr int kMaxSeeds = 1000;

// --threads: CPU intra-op threads, from 0 (when `zero_means` is not empty: its meaning) or 1 up to
// the CPUs this process may use; more only oversubscribes them.
void add_threads_option(po::options_description& d, int default_threads, const std::string& description,
                        const std::string& zero_means = "");

// Integer list "4,8,16" or power-of-two range "4:128" (doubling). Throws UsageError naming `what`.
std::vector<int> parse_int_list(const std::string& text, const std::string& what);

// Seeds: list "0,1,2" or inclusive range "0-4"; sorted, duplicates removed (0 is a valid seed).
std::vector<int> parse_seeds(const std::string& text, const std::string& what);

// A list of positive numbers "0.5,1,2" (at least one). Throws UsageError naming `option`.
std::vector<double> parse_positive_numbers(const std::string& text, const std::string& option, bool zero_ok = false);

// A number, or a percentage "85%" (divided by 100), not range-checked; nullopt when it is neither.
std::optional<double> parse_number_or_percent(const std::string& text);

// A fraction in (0, 1] or a percentage "85%". Throws UsageError naming `option`.
double parse_fraction(const std::string& text, const std::string& option);

// Checks a value is within [lo, hi]; throws UsageError naming the option otherwise.
void require_range(double value, double lo, double hi, const std::string& option, const std::string& unit);

}  // namespace pacer::cli
