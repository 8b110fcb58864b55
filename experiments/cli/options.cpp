#include "experiments/cli/options.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "base/cpu_threads.hpp"
#include "base/error.hpp"

namespace pacer::units {
namespace {
namespace po = boost::program_options;

// A quantity error carries its reason; program_options fills in the option's name.
class quantity_error : public po::error_with_option_name {
 public:
  explicit quantity_error(const std::string& reason) : po::error_with_option_name(reason) {}
};

template <typename T>
void parse_into(boost::any& v, const std::vector<std::string>& values, Dimension dim, std::string_view bare,
                double T::*field) {
  po::validators::check_first_occurrence(v);
  const std::string& s = po::validators::get_single_string(values);
  try {
    T out{};
    out.*field = parse(s, dim, bare, "%canonical_option%");
    v = boost::any(out);
  } catch (const UsageError& e) {
    throw quantity_error(e.what());
  }
}

}  // namespace

void validate(boost::any& v, const std::vector<std::string>& values, Power*, int) {
  parse_into<Power>(v, values, Dimension::Power, "W", &Power::w);
}
void validate(boost::any& v, const std::vector<std::string>& values, Frequency*, int) {
  parse_into<Frequency>(v, values, Dimension::Frequency, "MHz", &Frequency::hz);
}
void validate(boost::any& v, const std::vector<std::string>& values, Duration*, int) {
  parse_into<Duration>(v, values, Dimension::Time, "s", &Duration::s);
}
void validate(boost::any& v, const std::vector<std::string>& values, Energy*, int) {
  parse_into<Energy>(v, values, Dimension::Energy, "J", &Energy::j);
}
void validate(boost::any& v, const std::vector<std::string>& values, Rate*, int) {
  parse_into<Rate>(v, values, Dimension::Frequency, "Hz", &Rate::hz);
}
void validate(boost::any& v, const std::vector<std::string>& values, PowerList*, int) {
  po::validators::check_first_occurrence(v);
  const std::string& s = po::validators::get_single_string(values);
  try {
    v = boost::any(PowerList{parse_list(s, Dimension::Power, "W", "%canonical_option%")});
  } catch (const UsageError& e) {
    throw quantity_error(e.what());
  }
}

void validate(boost::any& v, const std::vector<std::string>& values, PowerCap*, int) {
  po::validators::check_first_occurrence(v);
  const std::string& s = po::validators::get_single_string(values);
  try {
    v = boost::any(PowerCap{parse_cap(s, "%canonical_option%")});
  } catch (const UsageError& e) {
    throw quantity_error(e.what());
  }
}
void validate(boost::any& v, const std::vector<std::string>& values, PowerCapList*, int) {
  po::validators::check_first_occurrence(v);
  const std::string& s = po::validators::get_single_string(values);
  try {
    v = boost::any(PowerCapList{parse_cap_list(s, "%canonical_option%")});
  } catch (const UsageError& e) {
    throw quantity_error(e.what());
  }
}

}  // namespace pacer::units

namespace pacer::cli {

namespace {

// A bound violated at parse time: a program_options error, so the CLI prints it as a usage error.
class bound_error : public po::error {
 public:
  using po::error::error;
};

template <typename T>
po::typed_value<T>* bounded_value(T default_value, T lo, T hi, const std::string& name) {
  return po::value<T>()->default_value(default_value)->notifier([name, lo, hi](T v) {
    if (v < lo || v > hi) throw bound_error(fmt::format("--{}: {} is outside [{} .. {}]", name, v, lo, hi));
  });
}

template <typename T>
void add_bounded(po::options_description& d, const char* name, T default_value, T lo, T hi,
                 const std::string& description) {
  d.add_options()(name, bounded_value<T>(default_value, lo, hi, name),
                  fmt::format("{} [{} .. {}]", description, lo, hi).c_str());
}

}  // namespace

void add_sensor_rate_option(po::options_description& d, double default_hz, const std::string& description) {
  const std::string shown = units::format(default_hz, units::Dimension::Frequency);
  d.add_options()(
      "sensor-rate",
      po::value<units::Rate>()->default_value(units::Rate{default_hz}, shown)->notifier([](units::Rate r) {
        if (!(r.hz >= kMinSensorRateHz && r.hz <= kMaxSensorRateHz))
          throw bound_error(fmt::format("--sensor-rate: {} is outside [{} .. {}]",
                                        units::format(r.hz, units::Dimension::Frequency),
                                        units::format(kMinSensorRateHz, units::Dimension::Frequency),
                                        units::format(kMaxSensorRateHz, units::Dimension::Frequency)));
      }),
      fmt::format("{} [Hz; 10, 10Hz, 1kHz; {:g} .. {:g} Hz]", description, kMinSensorRateHz, kMaxSensorRateHz).c_str());
}

double sensor_rate_hz(const po::variables_map& vm) {
  return vm["sensor-rate"].as<units::Rate>().hz;
}

void add_count_option(po::options_description& d, const char* name, int64_t default_value, int64_t lo, int64_t hi,
                      const std::string& description) {
  add_bounded<int64_t>(d, name, default_value, lo, hi, description);
}

void add_count_option(po::options_description& d, const char* name, int default_value, int lo, int hi,
                      const std::string& description) {
  add_bounded<int>(d, name, default_value, lo, hi, description);
}

po::typed_value<int>* bounded(int default_value, int lo, int hi, const std::string& name) {
  return bounded_value<int>(default_value, lo, hi, name);
}
po::typed_value<int64_t>* bounded(int64_t default_value, int64_t lo, int64_t hi, const std::string& name) {
  return bounded_value<int64_t>(default_value, lo, hi, name);
}

void add_threads_option(po::options_description& d, int default_threads, const std::string& description,
                        const std::string& zero_means) {
  const std::string what =
      fmt::format("{}{}; at most the CPUs this process may use ({} here)", description,
                  zero_means.empty() ? "" : fmt::format("; 0: {}", zero_means), base::max_cpu_threads());
  add_bounded<int>(d, "threads", default_threads, zero_means.empty() ? 1 : 0, base::max_cpu_threads(), what);
}

std::vector<std::string> names_or_every(const po::variables_map& vm, const std::string& key, const std::string& what) {
  auto names = split_list(vm[key].as<std::string>());
  if (names.empty() && !vm[key].defaulted())
    throw UsageError(fmt::format("--{}: name at least one {}, or leave --{} out for every one", key, what, key));
  return names;
}

std::vector<double> parse_positive_numbers(const std::string& text, const std::string& option, bool zero_ok) {
  std::vector<double> out;
  for (const auto& item : split_list(text)) {
    const auto v = units::to_number(item);
    if (!v || !(zero_ok ? *v >= 0 : *v > 0) || !std::isfinite(*v))
      throw UsageError(fmt::format("{}: '{}' is not a {} number", option, item, zero_ok ? "non-negative" : "positive"));
    out.push_back(*v);
  }
  if (out.empty()) throw UsageError(fmt::format("{}: give at least one value", option));
  return out;
}

std::vector<int> parse_int_list(const std::string& text, const std::string& what) {
  std::vector<int> out;
  auto to_int = [&](const std::string& s) {
    const auto v = units::to_integer(s, 1, int64_t{1} << 30);
    if (!v) throw UsageError(fmt::format("{}: '{}' is not a positive integer (at most 2^30)", what, s));
    return static_cast<int>(*v);
  };
  const auto colon = text.find(':');
  if (colon != std::string::npos) {
    const int from = to_int(text.substr(0, colon));
    const int to = to_int(text.substr(colon + 1));
    if (to < from) throw UsageError(fmt::format("{}: range '{}' ends below its start", what, text));
    for (long v = from; v <= to; v *= 2) out.push_back(static_cast<int>(v));
    return out;
  }
  size_t start = 0;
  while (start <= text.size()) {
    size_t pos = text.find(',', start);
    if (pos == std::string::npos) pos = text.size();
    out.push_back(to_int(text.substr(start, pos - start)));
    start = pos + 1;
  }
  return out;
}

std::vector<int> parse_seeds(const std::string& text, const std::string& what) {
  std::vector<int> seeds;
  auto number = [&](const std::string& s) {
    const auto v = units::to_integer(s, 0, INT32_MAX);
    if (!v) throw UsageError(fmt::format("{}: '{}' is not a non-negative integer (write 0,1,2 or 0-4)", what, s));
    return static_cast<int>(*v);
  };
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    const auto dash = item.find('-', 1);
    if (dash == std::string::npos) {
      seeds.push_back(number(item));
      if (seeds.size() > static_cast<size_t>(kMaxSeeds))
        throw UsageError(fmt::format("{}: more than {} seeds (each is a training run)", what, kMaxSeeds));
      continue;
    }
    const int lo = number(item.substr(0, dash)), hi = number(item.substr(dash + 1));
    if (hi < lo) throw UsageError(fmt::format("{}: range '{}' is empty", what, item));
    if (hi - lo >= kMaxSeeds || seeds.size() + static_cast<size_t>(hi - lo) >= kMaxSeeds)
      throw UsageError(fmt::format("{}: more than {} seeds (each is a training run)", what, kMaxSeeds));
    for (int v = lo; v <= hi; ++v) seeds.push_back(v);
  }
  if (seeds.empty()) throw UsageError(what + ": give at least one seed");
  std::sort(seeds.begin(), seeds.end());
  seeds.erase(std::unique(seeds.begin(), seeds.end()), seeds.end());
  return seeds;
}

std::optional<double> parse_number_or_percent(const std::string& text) {
  const bool percent = !text.empty() && text.back() == '%';
  auto v = units::to_number(percent ? std::string_view(text).substr(0, text.size() - 1) : std::string_view(text));
  if (v && percent) *v /= 100;
  return v;
}

double parse_fraction(const std::string& text, const std::string& option) {
  const auto v = parse_number_or_percent(text);
  if (!v || !(*v > 0 && *v <= 1))
    throw UsageError(fmt::format("{}: '{}' is not a fraction in (0, 1] or a percentage like 85%", option, text));
  return *v;
}

void require_range(double value, double lo, double hi, const std::string& option, const std::string& unit) {
  const std::string u = unit.empty() ? std::string() : fmt::format(" {}", unit);  // a plain number: no stray space
  if (!(value >= lo && value <= hi))
    throw UsageError(fmt::format("{}: {:g}{} is out of range [{:g}, {:g}]{}", option, value, u, lo, hi, u));
}

}  // namespace pacer::cli
