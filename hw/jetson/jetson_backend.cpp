// The Jetson's row of the backend table (hw/device_backends.hpp): jetson, the sysfs backend at the
// request's sysfs root (a board, or a tree served by pacer emulate); with knob power_mode, its
// nvpmodel modes (PowerModeDevice). Its power may come from tegrastats.
#include <fmt/format.h>

#include "base/error.hpp"
#include "hw/device_backends.hpp"
#include "hw/open_device.hpp"
#include "traces/catalog/catalog.hpp"
#include "traces/workload.hpp"

namespace pacer::hw {
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

OpenedDevice open_jetson(const DeviceRequest& r, const std::string&) {
  OpenedDevice out;
  JetsonSysfsOptions o;
  o.root = r.sysfs_root;
  o.state_file = r.state_file;
  auto dev = std::make_unique<JetsonSysfsDevice>(o);
  out.sysfs = dev.get();
  out.spec.name = "jetson-sysfs";
  if (r.knob == traces::KnobKind::power_mode) {
    PowerModeOptions pm;
    pm.board = traces::find_device(board_name(r));
    pm.nvpmodel = r.nvpmodel;
    out.spec = pm.board;
    auto modes = std::make_unique<PowerModeDevice>(std::move(dev), pm);
    out.modes = modes.get();
    out.device = std::move(modes);
    return out;
  }
  if (r.knob != traces::KnobKind::gpu_freq)
    throw OptionError("knob", fmt::format("'{}' is not gpu_freq or power_mode", r.knob));
  out.device = std::move(dev);
  return out;
}

// A Jetson's GPU shares the board's memory: this computer's.
DeviceMemory jetson_memory(const DeviceRequest&, const std::string&) {
  return {traces::host_memory_bytes(), "this Jetson"};
}

}  // namespace

DeviceBackend jetson_backend() {
  DeviceBackend b;
  b.name = "jetson";
  b.argument = SpecArgument::None;
  b.syntax = "jetson";
  b.help = "a Jetson through sysfs at the sysfs root (a board, or a tree served by pacer emulate)";
  b.options = {"sysfs-root", "state-file",   "knob",       "board",
               "nvpmodel",   "power-source", "tegrastats", "tegrastats-interval"};
  b.open = open_jetson;
  b.training_memory = jetson_memory;
  b.tegrastats_power = true;
  return b;
}

}  // namespace pacer::hw
