#include "base/files.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/error.hpp"

namespace pacer::base {
namespace fs = std::filesystem;

namespace {

std::string kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

std::string size_text(size_t bytes) {
  return bytes >= (size_t{1} << 20) ? fmt::format("{} MiB", bytes >> 20) : fmt::format("{} KiB", bytes >> 10);
}

}  // namespace

std::string path_too_long(const fs::path& path) {
  const std::string text = path.string();
  if (text.size() >= PATH_MAX)
    return fmt::format("the path is too long ({} characters; the system takes at most {}): choose a shorter one",
                       text.size(), PATH_MAX - 1);
  for (const auto& part : path)
    if (part.string().size() > NAME_MAX)
      return fmt::format("the path holds a name of {} characters (the system takes at most {}): choose a shorter one",
                         part.string().size(), NAME_MAX);
  return "";
}

std::string non_regular_kind(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return "";
  return kind_of(st.st_mode);
}

std::string read_regular_file(const fs::path& path, size_t max_bytes, const std::string& what) {
  if (path.empty()) throw Error(fmt::format("no {} given: the file name is empty", what));
  if (const std::string why = path_too_long(path); !why.empty())
    throw Error(fmt::format("{} {}...: {}", what, path.string().substr(0, 60), why));
  // O_NONBLOCK: opening a FIFO for reading must not wait for a writer; the type check follows.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    const int err = errno;
    throw Error(fmt::format("cannot read {} {} ({}): check that the file exists and is readable", what,
                            path.string(), std::strerror(err)));
  }
  struct stat st {};
  const bool stated = ::fstat(fd, &st) == 0;
  if (!stated || !S_ISREG(st.st_mode)) {
    const std::string kind = stated ? kind_of(st.st_mode) : "unreadable";
    ::close(fd);
    throw Error(fmt::format("{} {} is {}, not a regular file: name a file", what, path.string(), kind));
  }
  if (static_cast<uintmax_t>(st.st_size) > max_bytes) {
    ::close(fd);
    throw Error(fmt::format("{} {} is {} bytes, more than the {} pacer reads from one {}: is it the right file?",
                            what, path.string(), static_cast<uintmax_t>(st.st_size), size_text(max_bytes), what));
  }
  std::string bytes;
  bytes.reserve(static_cast<size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw Error(fmt::format("cannot read {} {} ({})", what, path.string(), std::strerror(err)));
    }
    if (n == 0) break;
    bytes.append(buf, static_cast<size_t>(n));
    if (bytes.size() > max_bytes) {  // it grew while being read
      ::close(fd);
      throw Error(fmt::format("{} {} is more than the {} pacer reads from one {}: is it the right file?", what,
                              path.string(), size_text(max_bytes), what));
    }
  }
  ::close(fd);
  return bytes;
}

}  // namespace pacer::base
