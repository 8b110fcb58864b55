#include "hw/jetson/sysfs_io.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "base/units.hpp"

namespace pacer::hw {

std::string SysfsIo::read(const std::filesystem::path& path) const {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    throw IoError(fmt::format("cannot read {}: {}", path.string(), std::strerror(e)), e);
  }
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      ::close(fd);
      throw IoError(fmt::format("cannot read {}: {}", path.string(), std::strerror(e)), e);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  while (!out.empty() &&
         (out.back() == '\n' || out.back() == ' ' || out.back() == '\0' || out.back() == '\r' || out.back() == '\t'))
    out.pop_back();
  return out;
}

void SysfsIo::write(const std::filesystem::path& path, const std::string& value) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    throw IoError(fmt::format("cannot write {}: {}", path.string(), std::strerror(e)), e);
  }
  ssize_t n;
  do n = ::write(fd, value.data(), value.size());
  while (n < 0 && errno == EINTR);
  const int e = n < 0 ? errno : 0;
  // sysfs reports a rejected value either from write() or from close().
  const int rc = ::close(fd);
  const int e2 = rc < 0 ? errno : 0;
  if (e != 0 || e2 != 0)
    throw IoError(fmt::format("cannot write '{}' to {}: {}", value, path.string(), std::strerror(e ? e : e2)),
                  e ? e : e2);
}

void write_retrying_busy(SysfsIo& io, const std::filesystem::path& path, const std::string& value,
                         const BusyRetry& retry) {
  const int attempts = std::max(1, retry.attempts);
  const auto t0 = std::chrono::steady_clock::now();
  double backoff = retry.backoff_s;
  for (int i = 1;; ++i) {
    try {
      io.write(path, value);
      return;
    } catch (const IoError& e) {
      if (e.errno_value != EBUSY) throw;
      if (i >= attempts) {
        const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        throw IoError(fmt::format("{} ({} attempts in {:.2f} s)", e.what(), attempts, spent), EBUSY);
      }
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(std::max(0.0, backoff)));
    backoff *= 2;
  }
}

SysfsIo& real_sysfs_io() {
  static SysfsIo io;
  return io;
}

long long parse_sysfs_int(const std::string& text, const std::filesystem::path& origin) {
  const auto v = units::to_integer(text);
  if (!v)
    throw Error(fmt::format("{} holds '{}', not an integer: is this a Jetson sysfs tree?", origin.string(), text));
  return *v;
}

std::string read_or(const std::filesystem::path& path, const std::string& fallback) {
  try {
    return real_sysfs_io().read(path);
  } catch (const IoError&) {
    return fallback;
  }
}

}  // namespace pacer::hw
