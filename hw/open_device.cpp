#include "hw/open_device.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>

#include "base/error.hpp"

namespace pacer::hw {

std::string node_name() {
  if (const char* n = std::getenv("SLURMD_NODENAME"); n && *n) return n;
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0 && host[0]) return host;
  return "unknown";
}

void check_power_source(const std::string& power_source) {
  if (power_source != "sysfs" && power_source != "tegrastats")
    throw OptionError("power-source", fmt::format("'{}' is not sysfs or tegrastats", power_source));
}

OpenedDevice open_device(const DeviceRequest& r) {
  check_power_source(r.power_source);
  const auto match = match_device_backend(r.spec);
  if (!match) throw OptionError("device", fmt::format("'{}' is not {}", r.spec, device_spec_choices()));
  OpenedDevice out = match->backend->open(r, match->argument);
  if (r.power_source == "tegrastats") {
    if (!match->backend->tegrastats_power)
      throw OptionError("power-source",
                        "tegrastats reads a Jetson board: it applies to the jetson device (a board, or "
                        "a tree served by pacer emulate), not to an emulated or NVML device");
    out.device = std::make_unique<TegrastatsPowerDevice>(std::move(out.device), r.tegrastats);
  }
  return out;
}

DeviceMemory training_memory(const DeviceRequest& r) {
  const auto match = match_device_backend(r.spec);
  if (!match || !match->backend->training_memory) return {};
  return match->backend->training_memory(r, match->argument);
}

void check_batches_fit(const DeviceRequest& request, const traces::WorkloadInfo& workload,
                       const std::vector<int>& batch_sizes, const std::string& option) {
  const DeviceMemory memory = training_memory(request);
  traces::check_batches_fit(workload, batch_sizes, memory.bytes, memory.owner, option);
}

}  // namespace pacer::hw
