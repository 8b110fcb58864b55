// Fuzzes units::parse and units::parse_list: only UsageError may escape, and every accepted value
// is a finite, non-negative SI number (a value that overflows to infinity must be rejected). Also
// the plain number parser (units::to_number, units::to_integer): it never throws, a number is
// finite and an integer within its bounds.
#include <cmath>
#include <cstdint>
#include <string>

#include "base/error.hpp"
#include "base/units.hpp"
#include "fuzz_check.hpp"

using pacer::units::Dimension;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  // First byte: dimension (2 bits), list or single (1 bit), bare unit choice (1 bit).
  const uint8_t sel = data[0];
  const Dimension dims[] = {Dimension::Power, Dimension::Frequency, Dimension::Time, Dimension::Energy};
  const Dimension dim = dims[sel & 3];
  const bool list = (sel & 4) != 0;
  const char* bare_units[][2] = {{"W", "mW"}, {"MHz", "Hz"}, {"s", "ms"}, {"J", "Wh"}};
  const char* bare = bare_units[sel & 3][(sel >> 3) & 1];
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  if (const auto n = pacer::units::to_number(text)) PACER_FUZZ_CHECK(std::isfinite(*n));
  if (const auto i = pacer::units::to_integer(text, -1000, 1000)) PACER_FUZZ_CHECK(*i >= -1000 && *i <= 1000);
  try {
    if (list) {
      const auto values = pacer::units::parse_list(text, dim, bare, "--fuzz");
      PACER_FUZZ_CHECK(!values.empty());
      PACER_FUZZ_CHECK(values.size() <= 1'000'001);
      for (double v : values) PACER_FUZZ_CHECK(std::isfinite(v) && v >= 0);
    } else {
      const double v = pacer::units::parse(text, dim, bare, "--fuzz");
      PACER_FUZZ_CHECK(std::isfinite(v) && v >= 0);
      // Formatting an accepted value must work for any magnitude.
      PACER_FUZZ_CHECK(!pacer::units::format(v, dim).empty());
    }
  } catch (const pacer::UsageError& e) {
    PACER_FUZZ_CHECK(std::string(e.what()).find("--fuzz") != std::string::npos);
  }
  return 0;
}
