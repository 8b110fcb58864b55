#include "hw/open_device.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>

#include "base/error.hpp"
#include "base/units.hpp"
#include "traces/catalog/catalog.hpp"

namespace pacer::hw {

std::string node_name() {
  if (const char* n = std::getenv("SLURMD_NODENAME"); n && *n) return n;
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0 && host[0]) return host;
  return "unknown";
}

namespace {

// The board whose modes a real or served tree has: named, or the emulated tree's own device.
std::string board_name(const DeviceRequest& r) {
  if (!r.board.empty()) return r.board;
  const auto file = r.sysfs_root / "pacer-emulator/device";
  std::error_code ec;
  if (std::filesystem::exists(file, ec)) {
    std::string name = real_sysfs_io().read(file);
    if (!name.empty()) return name;
  }
  throw OptionError("board",
                    "power modes on a Jetson need the board's catalog name (pacer devices lists them) or "
                    "device file, to know its modes and their caps");
}

}  // namespace

static OpenedDevice open_device_with_sensor(const DeviceRequest& r);

OpenedDevice open_device(const DeviceRequest& r) {
  if (r.power_source != "sysfs" && r.power_source != "tegrastats")
    throw OptionError("power-source", fmt::format("'{}' is not sysfs or tegrastats", r.power_source));
  OpenedDevice out = open_device_with_sensor(r);
  if (r.power_source == "tegrastats") {
    if (out.emulated || !(out.sysfs))
      throw OptionError("power-source",
                        "tegrastats reads a Jetson board: it applies to the jetson device (a board, or "
                        "a tree served by pacer emulate), not to an emulated or NVML device");
    out.device = std::make_unique<TegrastatsPowerDevice>(std::move(out.device), r.tegrastats);
  }
  return out;
}

static OpenedDevice open_device_with_sensor(const DeviceRequest& r) {
  OpenedDevice out;
  const std::string& s = r.spec;
  if (s.rfind("emulated:", 0) == 0) {
    const std::string name = s.substr(9);
    if (name.empty()) throw OptionError("device", "emulated:NAME needs a device name from the catalog");
    out.spec = traces::find_device(name);
    std::shared_ptr<const models::DeviceModel> model = r.model;
    if (!model) {
      if (!r.workload)
        throw OptionError("workload", "an emulated device needs a workload (its cost comes from the network)");
      model = std::make_shared<WorkloadPhysics>(out.spec, *r.workload, r.physics);
    }
    EmulatorOptions eo = r.emulator;
    eo.knob = r.knob;
    auto dev = std::make_unique<EmulatedJetson>(out.spec, model, eo);
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
    if (r.knob == "power_mode") {
      PowerModeOptions pm;
      pm.board = traces::find_device(board_name(r));
      pm.nvpmodel = r.nvpmodel;
      out.spec = pm.board;
      auto modes = std::make_unique<PowerModeDevice>(std::move(dev), pm);
      out.modes = modes.get();
      out.device = std::move(modes);
      return out;
    }
    if (r.knob != "gpu_freq") throw OptionError("knob", fmt::format("'{}' is not gpu_freq or power_mode", r.knob));
    out.device = std::move(dev);
    return out;
  }
  if (s == "nvml" || s.rfind("nvml:", 0) == 0) {
    NvmlOptions o = r.nvml;
    if (s.size() > 5) {
      const auto idx = units::to_integer(s.substr(5), 0, 1023);
      if (!idx) throw OptionError("device", fmt::format("'{}' is not nvml:INDEX (a GPU index 0 .. 1023)", s));
      o.index = static_cast<unsigned>(*idx);
    }
    if (r.knob != "gpu_freq" && r.knob != "power_limit")
      throw OptionError("knob", fmt::format("'{}' is not a knob of an NVML GPU (its power limit)", r.knob));
    out.device = std::make_unique<NvmlDevice>(o);
    out.spec.name = out.device->name();
    return out;
  }
  throw OptionError("device", fmt::format("'{}' is not emulated:NAME, jetson or nvml[:INDEX]", s));
}

DeviceMemory training_memory(const DeviceRequest& r) {
  if (r.spec.rfind("emulated:", 0) == 0 && r.spec.size() > 9) {
    const traces::DeviceSpec spec = traces::find_device(r.spec.substr(9));
    return {spec.memory_bytes, spec.name};
  }
  if (r.spec == "jetson") return {traces::host_memory_bytes(), "this Jetson"};
  return {};
}

void check_batches_fit(const DeviceRequest& request, const traces::WorkloadInfo& workload,
                       const std::vector<int>& batch_sizes, const std::string& option) {
  const DeviceMemory memory = training_memory(request);
  traces::check_batches_fit(workload, batch_sizes, memory.bytes, memory.owner, option);
}

}  // namespace pacer::hw
