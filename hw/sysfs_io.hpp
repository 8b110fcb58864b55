#pragma once
// File access for the sysfs backends, behind a small interface so tests can inject the kernel's
// behaviour (EINVAL for min_freq > max_freq, EACCES for an unprivileged user) into a fake tree:
// chmod does not stop root, who runs the test suite in CI containers.
#include <filesystem>
#include <string>

#include "traces/error.hpp"

namespace pacer::hw {

// A failed read or write; errno_value says why (EACCES, EINVAL, ENOENT, ...).
class IoError : public Error {
 public:
  IoError(const std::string& message, int errno_value) : Error(message), errno_value(errno_value) {}
  int errno_value;
};

class SysfsIo {
 public:
  virtual ~SysfsIo() = default;
  // Contents with trailing whitespace and NULs removed (of_node/name ends in a NUL on real boards).
  virtual std::string read(const std::filesystem::path& path) const;
  // One write(2) of `value`, as `echo value > path` does; sysfs applies it or fails with errno.
  virtual void write(const std::filesystem::path& path, const std::string& value);
};

// The process-wide real-file implementation.
SysfsIo& real_sysfs_io();

// Parses an integer sysfs value ("921600000\n"); throws Error naming the file on garbage.
long long parse_sysfs_int(const std::string& text, const std::filesystem::path& origin);

}  // namespace pacer::hw
