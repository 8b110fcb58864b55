#pragma once
// Turns a device spec (the --device argument: emulated:NAME, jetson, nvml[:INDEX], ...) into a
// backend, through the table of backends (hw/device_backends.hpp), whose rows live beside their
// backends: emulator/emulated_backend.cpp, jetson/jetson_backend.cpp (with knob power_mode, its
// nvpmodel modes: PowerModeDevice), nvml/nvml_backend.cpp.
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "hw/device.hpp"
#include "hw/device_backends.hpp"
#include "hw/emulator/emulated.hpp"
#include "hw/jetson/jetson_sysfs.hpp"
#include "hw/jetson/power_mode_device.hpp"
#include "hw/jetson/tegrastats_power.hpp"
#include "hw/nvml/nvml.hpp"
#include "traces/workload.hpp"

namespace pacer::hw {

struct DeviceRequest {
  std::string spec;  // the --device value
  std::filesystem::path sysfs_root = "/";
  std::filesystem::path state_file;              // empty: default per root
  std::optional<traces::WorkloadInfo> workload;  // needed by emulated:NAME
  // gpu_freq or power_mode (Jetson and emulated Jetson; NVML has its own knob option).
  traces::KnobKind knob = traces::KnobKind::gpu_freq;
  std::filesystem::path nvpmodel = kDefaultNvpmodel;  // jetson + power_mode
  // jetson + power_mode: the catalog device (or device file) whose modes are set; empty: the emulated
  // tree's own device (<root>/pacer-emulator/device).
  std::string board;
  // Where the power figures come from on a Jetson: "sysfs" (the INA3221 files) or "tegrastats" (a
  // tegrastats child process, hw/jetson/tegrastats_power.hpp), for a backend whose row allows it.
  std::string power_source = "sysfs";
  TegrastatsOptions tegrastats;
  std::shared_ptr<const models::DeviceModel> model;  // replaces the default physics when set
  EmulatorOptions emulator;
  PhysicsParams physics;
  NvmlOptions nvml;
};

// What a backend's open function returns. The typed pointers are for the callers that drive a
// backend beyond the Device interface; a backend sets those that are its own and leaves the rest null.
struct OpenedDevice {
  std::unique_ptr<Device> device;
  EmulatedJetson* emulated = nullptr;  // set for emulated:NAME
  JetsonSysfsDevice* sysfs = nullptr;  // set for jetson (the power reader under power modes)
  PowerModeDevice* modes = nullptr;    // set for jetson with knob power_mode
  traces::DeviceSpec spec;             // the catalog entry (emulated), else name only
};

// Throws UsageError for a malformed spec, Error for a device that cannot be opened.
OpenedDevice open_device(const DeviceRequest& request);

// The one check of a power source name: OptionError on "power-source" unless sysfs or tegrastats.
// The CLI calls it when it reads the option; open_device again, for requests built in code.
void check_power_source(const std::string& power_source);

// The memory a training batch on the requested device may use, without opening it, as its backend's
// row tells it: the catalog's for an emulated board, this computer's for a Jetson (its GPU shares the
// board's memory), 0 (unknown) for NVML and for a spec no backend has. `owner` names it in messages.
struct DeviceMemory {
  double bytes = 0;
  std::string owner;
};
DeviceMemory training_memory(const DeviceRequest& request);

// Refuses, before any work, the batch sizes whose training memory (traces::check_batches_fit) the
// requested device cannot hold: OptionError(option) when `option` is set, else Error.
void check_batches_fit(const DeviceRequest& request, const traces::WorkloadInfo& workload,
                       const std::vector<int>& batch_sizes, const std::string& option = "");

}  // namespace pacer::hw
