#include "hw/device_backends.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.hpp"

namespace pacer::hw {

// The rows of the built-in backends, each defined in its backend's folder.
DeviceBackend emulated_backend();  // emulator/emulated_backend.cpp
DeviceBackend jetson_backend();    // jetson/jetson_backend.cpp
DeviceBackend nvml_backend();      // nvml/nvml_backend.cpp

namespace {

// Listed here rather than registered from their files: an object of a static library that nothing
// refers to is left out of the program, and its registration with it.
std::vector<DeviceBackend> builtin_backends() {
  return {emulated_backend(), jetson_backend(), nvml_backend()};
}

std::vector<DeviceBackend>& registry() {
  static std::vector<DeviceBackend> rows = builtin_backends();
  return rows;
}

}  // namespace

const std::vector<DeviceBackend>& device_backends() {
  return registry();
}

bool register_device_backend(DeviceBackend backend) {
  for (const auto& row : registry())
    if (row.name == backend.name) throw Error(fmt::format("a device backend named '{}' exists already", row.name));
  registry().push_back(std::move(backend));
  return true;
}

std::optional<BackendMatch> match_device_backend(const std::string& spec) {
  const std::string_view s = spec;
  for (const auto& row : registry()) {
    if (s == row.name && row.argument != SpecArgument::Required) return BackendMatch{&row, ""};
    if (row.argument != SpecArgument::None && s.size() > row.name.size() && s.substr(0, row.name.size()) == row.name &&
        s[row.name.size()] == ':')
      return BackendMatch{&row, std::string(s.substr(row.name.size() + 1))};
  }
  return std::nullopt;
}

std::string device_spec_syntax() {
  std::string s;
  for (const auto& row : registry()) s += (s.empty() ? "" : " | ") + std::string(row.syntax);
  return s;
}

std::string device_spec_choices() {
  const auto& rows = registry();
  std::string s;
  for (size_t i = 0; i < rows.size(); ++i)
    s += (i == 0 ? "" : i + 1 == rows.size() ? " or " : ", ") + std::string(rows[i].syntax);
  return s;
}

std::string device_backend_help() {
  std::string s;
  for (const auto& row : registry())
    s += fmt::format("  {}: {}{}\n", row.syntax, row.help,
                     row.options.empty() ? "" : fmt::format(" (settings: {})", fmt::join(row.options, ", ")));
  return s;
}

}  // namespace pacer::hw
