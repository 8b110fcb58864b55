#pragma once
// The one table of device backends, as explore/policy.hpp is the one table of policies: each row
// says how a device spec names the backend, what it is, which request settings it reads, how to
// open it, how much memory a training batch may use on it and whether tegrastats may measure its
// power. open_device (open_device.hpp) dispatches through it; the device-spec help of the commands
// and the message for an unknown spec are written from it.
//
// A new backend is one file, which defines its Device and a function returning its row, plus one
// line in builtin_backends() (device_backends.cpp). Code outside pacer_hw (a test, a plug-in)
// registers a row from its own file with PACER_REGISTER_DEVICE_BACKEND.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pacer::hw {

struct DeviceRequest;
struct OpenedDevice;
struct DeviceMemory;

// What may follow the backend's name in a spec, after a ':'.
enum class SpecArgument {
  None,      // "jetson": the name alone
  Optional,  // "nvml" or "nvml:0"
  Required,  // "emulated:NAME" (the name alone is no spec of this backend)
};

// `argument`: the text after "name:" ("" when none).
using OpenBackendFn = OpenedDevice (*)(const DeviceRequest& request, const std::string& argument);
using BackendMemoryFn = DeviceMemory (*)(const DeviceRequest& request, const std::string& argument);

struct DeviceBackend {
  std::string_view name;  // "emulated", "jetson", "nvml": the spec up to its ':'
  SpecArgument argument = SpecArgument::None;
  std::string_view syntax;                // "emulated:NAME", "nvml[:INDEX]": the spec in help texts and messages
  std::string_view help;                  // one line: what the backend is
  std::vector<std::string_view> options;  // the DeviceRequest settings it reads, as option keys ("sysfs-root")
  OpenBackendFn open = nullptr;
  // The memory a training batch may use on it, without opening it; null: unknown (0 bytes).
  BackendMemoryFn training_memory = nullptr;
  // Its power may come from a tegrastats child process instead of its own sensor (a Jetson board).
  bool tegrastats_power = false;
};

// Every backend: the built-in ones, then the registered ones in registration order.
const std::vector<DeviceBackend>& device_backends();

// Adds a row; throws Error when a backend of that name exists. Returns true (for the macro). Rows
// are added at static initialisation (the macro), before any lookup holds a BackendMatch.
bool register_device_backend(DeviceBackend backend);

// The backend a spec names and the text after its ':' ("" when none); nullopt when none does.
struct BackendMatch {
  const DeviceBackend* backend = nullptr;
  std::string argument;
};
std::optional<BackendMatch> match_device_backend(const std::string& spec);

std::string device_spec_syntax();   // "emulated:NAME | jetson | nvml[:INDEX]", for option descriptions
std::string device_spec_choices();  // "emulated:NAME, jetson or nvml[:INDEX]", for messages
std::string device_backend_help();  // one "  SYNTAX: help (settings: ...)" line per backend

}  // namespace pacer::hw

#define PACER_DEVICE_BACKEND_CONCAT_INNER(a, b) a##b
#define PACER_DEVICE_BACKEND_CONCAT(a, b) PACER_DEVICE_BACKEND_CONCAT_INNER(a, b)
// Registers the row `row_function()` returns when this file's object is linked (a test's, a
// plug-in's; the built-in backends are listed in device_backends.cpp, which a static library
// cannot drop).
#define PACER_REGISTER_DEVICE_BACKEND(row_function)                                    \
  static const bool PACER_DEVICE_BACKEND_CONCAT(pacer_registered_backend_, __LINE__) = \
      ::pacer::hw::register_device_backend(row_function())
