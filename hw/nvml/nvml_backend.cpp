// NVML's row of the backend table (hw/device_backends.hpp): nvml[:INDEX], an NVIDIA GPU through
// libnvidia-ml (GPU 0 without an index).
#include <fmt/format.h>

#include "base/error.hpp"
#include "base/units.hpp"
#include "hw/device_backends.hpp"
#include "hw/open_device.hpp"

namespace pacer::hw {
namespace {

OpenedDevice open_nvml(const DeviceRequest& r, const std::string& index) {
  OpenedDevice out;
  NvmlOptions o = r.nvml;
  if (!index.empty()) {
    const auto idx = units::to_integer(index, 0, 1023);
    if (!idx) throw OptionError("device", fmt::format("'{}' is not nvml:INDEX (a GPU index 0 .. 1023)", r.spec));
    o.index = static_cast<unsigned>(*idx);
  }
  if (r.knob != traces::KnobKind::gpu_freq && r.knob != traces::KnobKind::power_limit)
    throw OptionError("knob", fmt::format("'{}' is not a knob of an NVML GPU (its power limit)", r.knob));
  out.device = std::make_unique<NvmlDevice>(o);
  out.spec.name = out.device->name();
  return out;
}

}  // namespace

// Training memory unknown (0): NVML tells it only once the GPU is opened.
DeviceBackend nvml_backend() {
  DeviceBackend b;
  b.name = "nvml";
  b.argument = SpecArgument::Optional;
  b.syntax = "nvml[:INDEX]";
  b.help = "an NVIDIA GPU through NVML (GPU 0 without an index)";
  b.options = {"nvml-knob", "allow-gpu-control"};
  b.open = open_nvml;
  return b;
}

}  // namespace pacer::hw
