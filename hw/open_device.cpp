#include "hw/open_device.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>

#include "traces/catalog.hpp"
#include "traces/error.hpp"

namespace pacer::hw {

std::string node_name() {
  if (const char* n = std::getenv("SLURMD_NODENAME"); n && *n) return n;
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0 && host[0]) return host;
  return "unknown";
}

OpenedDevice open_device(const DeviceRequest& r) {
  OpenedDevice out;
  const std::string& s = r.spec;
  if (s.rfind("emulated:", 0) == 0) {
    const std::string name = s.substr(9);
    if (name.empty()) throw OptionError("device", "emulated:NAME needs a device name from the catalog");
    out.spec = traces::find_device(name);
    std::shared_ptr<const models::DeviceModel> model = r.model;
    if (!model) {
      if (!r.workload) throw OptionError("workload", "an emulated device needs a workload (its cost comes from the network)");
      model = std::make_shared<WorkloadPhysics>(out.spec, *r.workload, r.physics);
    }
    auto dev = std::make_unique<EmulatedJetson>(out.spec, model, r.emulator);
    out.emulated = dev.get();
    out.device = std::move(dev);
    return out;
  }
  if (s == "jetson") {
    JetsonSysfsOptions o;
    o.root = r.sysfs_root;
    o.state_file = r.state_file;
    auto dev = std::make_unique<JetsonSysfsDevice>(o);
    out.sysfs = dev.get();
    out.spec.name = "jetson-sysfs";
    out.device = std::move(dev);
    return out;
  }
  if (s == "nvml" || s.rfind("nvml:", 0) == 0) {
    NvmlOptions o = r.nvml;
    if (s.size() > 5) {
      try {
        size_t used = 0;
        const unsigned long idx = std::stoul(s.substr(5), &used);
        if (used != s.size() - 5) throw std::invalid_argument("trailing");
        o.index = static_cast<unsigned>(idx);
      } catch (const std::exception&) {
        throw OptionError("device", fmt::format("'{}' is not nvml:INDEX", s));
      }
    }
    out.device = std::make_unique<NvmlDevice>(o);
    out.spec.name = out.device->name();
    return out;
  }
  throw OptionError("device", fmt::format("'{}' is not emulated:NAME, jetson or nvml[:INDEX]", s));
}

}  // namespace pacer::hw
