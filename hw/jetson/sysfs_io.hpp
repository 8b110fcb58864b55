#pragma once
// File access for the sysfs backends, behind a small interface so tests can inject the kernel's
// behaviour (EINVAL for min_freq > max_freq, EACCES for an unprivileged user) into a fake tree:
// chmod does not stop root, who runs the test suite in CI containers.
#include <filesystem>
#include <string>

#include "base/error.hpp"

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

// Retries of a write the driver answers with EBUSY (devfreq's lock held for a moment by the
// governor or by another tool such as nvpmodel): `attempts` tries in all, sleeping backoff_s,
// 2 backoff_s, 4 backoff_s, ... between them (defaults: 5 tries within 0.15 s).
struct BusyRetry {
  int attempts = 5;
  double backoff_s = 0.01;
};

// io.write with BusyRetry. Any other errno is rethrown at once; after the last EBUSY the IoError
// is rethrown with the number of attempts and the time spent in its message.
void write_retrying_busy(SysfsIo& io, const std::filesystem::path& path, const std::string& value,
                         const BusyRetry& retry = {});

// The process-wide real-file implementation.
SysfsIo& real_sysfs_io();

// The text of a real file, or `fallback` when it cannot be read (IoError).
std::string read_or(const std::filesystem::path& path, const std::string& fallback);

// Parses an integer sysfs value ("921600000\n"): the whole text, blanks around it allowed
// (units::to_integer), so "5000abc" is garbage, not 5000. Throws Error naming the file on garbage;
// the power rails read the same way (read_rail_w) but throw SensorError.
long long parse_sysfs_int(const std::string& text, const std::filesystem::path& origin);

}  // namespace pacer::hw
