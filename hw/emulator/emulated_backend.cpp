// The emulated Jetson's row of the backend table (hw/device_backends.hpp): emulated:NAME, a catalog
// device (or device file) driven by the workload's physics or a given model, in virtual time.
#include <fmt/format.h>

#include "base/error.hpp"
#include "hw/device_backends.hpp"
#include "hw/open_device.hpp"
#include "traces/catalog/catalog.hpp"

namespace pacer::hw {
namespace {

OpenedDevice open_emulated(const DeviceRequest& r, const std::string& name) {
  if (name.empty()) throw OptionError("device", "emulated:NAME needs a device name from the catalog");
  OpenedDevice out;
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

// The catalog's memory of the board.
DeviceMemory emulated_memory(const DeviceRequest&, const std::string& name) {
  if (name.empty()) return {};
  const traces::DeviceSpec spec = traces::find_device(name);
  return {spec.memory_bytes, spec.name};
}

}  // namespace

DeviceBackend emulated_backend() {
  DeviceBackend b;
  b.name = "emulated";
  b.argument = SpecArgument::Required;
  b.syntax = "emulated:NAME";
  b.help = "the emulated Jetson NAME (catalog name or device file), virtual time";
  b.options = {"workload",    "knob",        "sensor-noise",  "sensor-period",
               "time-jitter", "circuit-cap", "thermal-drift", "seed"};
  b.open = open_emulated;
  b.training_memory = emulated_memory;
  return b;
}

}  // namespace pacer::hw
