#pragma once
// The device catalog: built-in entries (from shared/facts/jetson.md) and user device files in the
// same INI schema (docs/devices.md). A --device argument is a catalog name or a path to a file.
#include <filesystem>
#include <string>
#include <vector>

#include "traces/records.hpp"

namespace pacer::traces {

// Built-in names, in catalog order.
std::vector<std::string> builtin_device_names();

// The catalog: built-ins plus every *.ini file named by PACER_DEVICE_PATH (colon-separated files
// or directories). Throws Error for an unknown name, listing the known ones.
DeviceSpec find_device(const std::string& name_or_path);
std::vector<DeviceSpec> all_devices();

// Parses one device file (INI). Throws Error naming the file and the key on bad input.
DeviceSpec parse_device_ini(const std::string& text, const std::string& origin);
std::string to_device_ini(const DeviceSpec& device);

// Human-readable multi-line description (for `pacer devices show`).
std::string describe(const DeviceSpec& device);

}  // namespace pacer::traces
