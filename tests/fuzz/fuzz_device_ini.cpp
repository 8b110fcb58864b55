// Fuzzes traces::parse_device_ini: only pacer::Error may escape; an accepted device satisfies the
// documented invariants, and its written form (to_device_ini) parses again to the same shape.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "base/error.hpp"
#include "fuzz_check.hpp"
#include "traces/catalog/catalog.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  pacer::traces::DeviceSpec spec;
  try {
    spec = pacer::traces::parse_device_ini(text, "fuzz.ini");
  } catch (const pacer::Error&) {
    return 0;
  }
  PACER_FUZZ_CHECK(!spec.gpu_freqs_hz.empty());
  PACER_FUZZ_CHECK(std::is_sorted(spec.gpu_freqs_hz.begin(), spec.gpu_freqs_hz.end()));
  PACER_FUZZ_CHECK(spec.cuda_cores > 0);
  PACER_FUZZ_CHECK(spec.sensor_layout == "iio" || spec.sensor_layout == "hwmon");
  for (double f : spec.gpu_freqs_hz) PACER_FUZZ_CHECK(std::isfinite(f) && f >= 0);
  PACER_FUZZ_CHECK(std::isfinite(spec.memory_bytes) && std::isfinite(spec.mem_bandwidth_bytes_s));
  const std::string written = pacer::traces::to_device_ini(spec);
  pacer::traces::DeviceSpec again;
  try {
    again = pacer::traces::parse_device_ini(written, "fuzz-roundtrip.ini");
  } catch (const pacer::Error& e) {
    std::fprintf(stderr, "accepted device does not parse after to_device_ini: %s\n", e.what());
    std::abort();
  }
  PACER_FUZZ_CHECK(again.name == spec.name);
  PACER_FUZZ_CHECK(again.gpu_freqs_hz.size() == spec.gpu_freqs_hz.size());
  PACER_FUZZ_CHECK(again.rails == spec.rails);
  PACER_FUZZ_CHECK(again.power_modes.size() == spec.power_modes.size());
  PACER_FUZZ_CHECK(again.voltage_table.size() == spec.voltage_table.size());
  PACER_FUZZ_CHECK(!pacer::traces::describe(spec).empty());
  return 0;
}
