#include "traces/store/store_file.hpp"

#include <H5Cpp.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <set>
#include <utility>

#include "base/error.hpp"
#include "base/files.hpp"
#include "base/units.hpp"

namespace pacer::traces::file {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view kSumMagic = "PACERSUM 1 ";

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string errno_text() {
  return std::strerror(errno);
}

fs::path directory_of(const fs::path& path) {
  return path.parent_path().empty() ? fs::path(".") : path.parent_path();
}

void fsync_path(const fs::path& p, bool directory) {
  const int fd = ::open(p.c_str(), directory ? O_RDONLY | O_DIRECTORY : O_RDONLY);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

// Returns true when a pacer checksum header is present and matches; throws when it is present and
// does not, or when the header itself is damaged.
bool check_header(const fs::path& path, const std::string& bytes) {
  if (bytes.compare(0, kSumMagic.size(), kSumMagic) != 0) {
    // A superblock behind a 512-byte user block is pacer's layout: its header was damaged.
    static constexpr std::string_view kHdf5Signature("\x89HDF\r\n\x1a\n", 8);
    if (bytes.size() >= kUserBlockBytes + kHdf5Signature.size() &&
        bytes.compare(kUserBlockBytes, kHdf5Signature.size(), kHdf5Signature) == 0)
      throw Error(fmt::format("{}: damaged checksum header: restore the store from a copy or rerun the campaign",
                              path.string()));
    return false;
  }
  unsigned sum = 0;
  unsigned long long body = 0;
  const std::string header = bytes.substr(0, std::min<size_t>(bytes.size(), 128));
  if (std::sscanf(header.c_str() + kSumMagic.size(), "crc32=%8x bytes=%llu", &sum, &body) != 2)
    throw Error(
        fmt::format("{}: damaged checksum header: restore the store from a copy or rerun the campaign", path.string()));
  if (bytes.size() < kUserBlockBytes || bytes.size() - kUserBlockBytes != body)
    throw Error(
        fmt::format("{}: the store is {} bytes but its header records {}: the file was truncated or "
                    "extended; restore it from a copy or rerun the campaign",
                    path.string(), bytes.size(), body + kUserBlockBytes));
  if (crc32(bytes.data() + kUserBlockBytes, body) != sum)
    throw Error(
        fmt::format("{}: checksum mismatch: the file is damaged (a flipped or zeroed block); restore it "
                    "from a copy or rerun the campaign (edited on purpose with another HDF5 tool? reseal it "
                    "with pacer export)",
                    path.string()));
  return true;
}

// libhdf5 1.10 loops forever when it loads a global heap collection (where variable-length strings
// live) holding a free-space object of size 0 -- what a zeroed (torn) sector inside a collection
// looks like: its decoder advances by the object's size. Collections are found by their "GCOL"
// signature and walked exactly as H5HG__cache_heap_deserialize does, before libhdf5 sees the file.
void check_global_heaps(const fs::path& path, const std::string& bytes) {
  auto u64 = [&](size_t at) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(bytes[at + static_cast<size_t>(i)]);
    return v;
  };
  constexpr size_t kHeader = 16, kObjectHeader = 16;
  for (size_t at = bytes.find("GCOL"); at != std::string::npos; at = bytes.find("GCOL", at + 1)) {
    if (at + kHeader > bytes.size() || bytes[at + 4] != 1) continue;
    const uint64_t size = u64(at + 8);
    if (size < kHeader || size > bytes.size() - at) continue;  // libhdf5 rejects these itself
    const size_t end = at + static_cast<size_t>(size);
    for (size_t p = at + kHeader; p + kObjectHeader <= end;) {
      const unsigned idx =
          static_cast<uint8_t>(bytes[p]) | (static_cast<unsigned>(static_cast<uint8_t>(bytes[p + 1])) << 8);
      const uint64_t obj = u64(p + 8);
      if (idx == 0 && obj == 0)
        throw Error(
            fmt::format("{}: damaged global heap at byte {} (a zeroed block?): the file cannot be read safely; "
                        "restore it from a copy or rerun the campaign",
                        path.string(), p));
      const uint64_t need = idx > 0 ? kObjectHeader + ((obj + 7) & ~uint64_t{7}) : obj;
      if (need > end - p) break;
      p += static_cast<size_t>(need);
    }
  }
}

// Room for the file system's own blocks and metadata beyond the file's bytes.
constexpr uint64_t kSpaceMarginBytes = 64 * 1024;

void check_space(const fs::path& path, size_t bytes) {
  struct statvfs st {};
  if (::statvfs(directory_of(path).c_str(), &st) != 0) return;  // unknown: the write itself will tell
  const uint64_t free_bytes = static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
  const uint64_t need = bytes + kSpaceMarginBytes;
  if (free_bytes < need)
    throw Error(
        fmt::format("{}: not enough space to write it: {} bytes needed, {} free on {}; free some space or "
                    "write it elsewhere (the file was left as it was)",
                    path.string(), need, free_bytes, directory_of(path).string()));
}

// The refusal of a path that is there and is neither a regular file, a character device nor a FIFO.
std::string refusal(mode_t mode) {
  if (S_ISDIR(mode)) return "is a folder: name a file in it";
  if (S_ISBLK(mode)) return "is a block device (a disk), not a file: name a file";
  if (S_ISSOCK(mode)) return "is a socket, not a file: name a file";
  return "is not a regular file: name a file";
}

void write_fully(int fd, std::string_view bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(errno_text());
    if (n == 0) throw Error("the file system accepted no more bytes (disk full?)");
    done += static_cast<size_t>(n);
  }
}

}  // namespace

uint32_t crc32(const char* data, size_t n) {
  static const auto table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) c = table[(c ^ static_cast<uint8_t>(data[i])) & 0xFFu] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

std::string checksum_header(std::string_view image) {
  if (image.size() < kUserBlockBytes) throw Error("store image shorter than its header");
  const size_t body = image.size() - kUserBlockBytes;
  return fmt::format("{}crc32={:08x} bytes={}\n", kSumMagic, crc32(image.data() + kUserBlockBytes, body), body);
}

void seal(const fs::path& path) {
  const std::string bytes = read_all(path);
  if (bytes.compare(0, kSumMagic.size(), kSumMagic) != 0) return;  // not pacer's layout: left as it is
  if (bytes.size() < kUserBlockBytes) throw Error(fmt::format("{}: store shorter than its header", path.string()));
  const std::string header = checksum_header(bytes);
  std::fstream out(path, std::ios::binary | std::ios::in | std::ios::out);
  out.seekp(0);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.flush();
  if (!out) throw Error(fmt::format("{}: cannot write the checksum header (disk full?)", path.string()));
}

Contents verify(const fs::path& path) {
  std::error_code ec;
  if (const std::string why = base::path_too_long(path); !why.empty())
    throw Error(fmt::format("{}...: {}", path.string().substr(0, 60), why));
  if (!fs::exists(path, ec))
    throw Error(fmt::format("{}: no such trace store (check the path; the commands that record results create it)",
                            path.string()));
  if (const std::string kind = base::non_regular_kind(path); !kind.empty())
    throw Error(fmt::format("{} is {}, not a trace store: a store is a regular file", path.string(), kind));
  Contents c;
  c.bytes = read_all(path);
  c.sealed = check_header(path, c.bytes);  // first: nothing damaged reaches libhdf5
  if (H5Fis_hdf5(path.c_str()) <= 0)
    throw Error(
        fmt::format("{}: not an HDF5 file (a pacer trace store is HDF5; was the file overwritten?)", path.string()));
  check_global_heaps(path, c.bytes);
  return c;
}

WriteTarget write_target(const fs::path& path) {
  // This process's own open files (/dev/stdout, /dev/fd/N, /proc/self/fd/N): written where they
  // are open, whatever they are, never replaced (a redirection to a file keeps its later output).
  const std::string text = path.string();
  for (const char* alias : {"/dev/stdout", "/dev/stderr", "/dev/fd/", "/proc/self/fd/"})
    if (text.rfind(alias, 0) == 0) {
      struct stat st {};
      if (::stat(path.c_str(), &st) == 0 && !S_ISDIR(st.st_mode) && !S_ISSOCK(st.st_mode) && !S_ISBLK(st.st_mode))
        return {WriteTarget::Kind::stream, path, ""};
      break;
    }
  fs::path p = path;
  for (int hop = 0; hop < 40; ++hop) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) return {WriteTarget::Kind::file, p, ""};  // a new file
    if (S_ISLNK(st.st_mode)) {
      struct stat to {};
      if (::stat(p.c_str(), &to) == 0) {  // what the link leads to (also /proc/self/fd/N)
        if (S_ISREG(to.st_mode)) {
          std::error_code ec;
          const fs::path real = fs::canonical(p, ec);
          if (!ec) return {WriteTarget::Kind::file, real, ""};
        } else if (S_ISCHR(to.st_mode) || S_ISFIFO(to.st_mode)) {
          return {WriteTarget::Kind::stream, p, ""};
        } else {
          return {WriteTarget::Kind::refused, p, refusal(to.st_mode)};
        }
      }
      // A link to nothing yet: the file is created where it points.
      std::error_code ec;
      const fs::path to_path = fs::read_symlink(p, ec);
      if (ec)
        return {WriteTarget::Kind::refused, p,
                fmt::format("is a symbolic link that cannot be read ({})", ec.message())};
      p = to_path.is_absolute() ? to_path : directory_of(p) / to_path;
      continue;
    }
    if (S_ISREG(st.st_mode)) return {WriteTarget::Kind::file, p, ""};
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) return {WriteTarget::Kind::stream, p, ""};
    return {WriteTarget::Kind::refused, p, refusal(st.st_mode)};
  }
  return {WriteTarget::Kind::refused, path, "is a chain of more than 40 symbolic links: name the file itself"};
}

std::string why_not_writable(const fs::path& given, bool probe) {
  std::error_code ec;
  if (given.empty()) return "no file name given";
  if (std::string why = base::path_too_long(given); !why.empty()) return why;
  const WriteTarget target = write_target(given);
  if (target.kind == WriteTarget::Kind::refused) return target.why;
  if (target.kind == WriteTarget::Kind::stream) return "";  // written in place
  const fs::path& path = target.path;
  if (std::string why = base::path_too_long(path); !why.empty()) return why;
  const fs::path dir = directory_of(path);
  if (!fs::exists(dir, ec)) return fmt::format("the folder {} does not exist: create it first", dir.string());
  if (!fs::is_directory(dir, ec)) return fmt::format("{} is not a folder", dir.string());
  if (!probe) return "";
  const fs::path tmp = path.string() + fmt::format(".probe-{}", ::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    if (err == EEXIST) return "";  // a file of that name exists: the folder takes files
    return fmt::format("cannot create a file in {} ({}): is the folder writable?", dir.string(), std::strerror(err));
  }
  ::close(fd);
  ::unlink(tmp.c_str());
  return "";
}

namespace {

// A device or FIFO: opened and written as it is (no temporary file, no rename, no fsync).
void write_in_place(const fs::path& given, const fs::path& stream, std::string_view bytes) {
  // O_APPEND: through /dev/stdout redirected to a file, after what is there (as >> would).
  const int fd = ::open(stream.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) throw Error(fmt::format("{}: cannot open it for writing ({})", given.string(), errno_text()));
  try {
    write_fully(fd, bytes);
  } catch (const Error& e) {
    ::close(fd);
    throw Error(fmt::format("{}: writing failed ({})", given.string(), e.what()));
  }
  ::close(fd);
}

}  // namespace

StagedFile stage_atomic(const fs::path& given, std::string_view bytes) {
  if (const std::string why = why_not_writable(given, false); !why.empty())
    throw Error(fmt::format("{}: {}", given.string(), why));
  const WriteTarget target = write_target(given);
  if (target.kind == WriteTarget::Kind::stream)
    return StagedFile(
        {}, [given, stream = target.path, held = std::string(bytes)] { write_in_place(given, stream, held); });
  const fs::path path = target.path;  // the end of the symbolic links: they stay, it is replaced
  check_space(path, bytes.size());
  const fs::path tmp = path.string() + fmt::format(".tmp-{}", ::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    throw Error(fmt::format("{}: cannot write {} ({}): does the directory exist and is it writable?", path.string(),
                            tmp.string(), errno_text()));
  try {
    try {
      write_fully(fd, bytes);
    } catch (const Error& e) {
      throw Error(fmt::format("{}: writing failed ({}); the file was left as it was", path.string(), e.what()));
    }
    if (::fsync(fd) != 0)
      throw Error(
          fmt::format("{}: flushing to disk failed ({}); the file was left as it was", path.string(), errno_text()));
    if (::close(fd) != 0)
      throw Error(fmt::format("{}: closing failed ({}); the file was left as it was", path.string(), errno_text()));
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  return StagedFile(tmp, [tmp, path] {
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
      const std::string why = errno_text();
      ::unlink(tmp.c_str());
      throw Error(fmt::format("{}: cannot replace it ({})", path.string(), why));
    }
    fsync_path(directory_of(path), true);
  });
}

StagedFile& StagedFile::operator=(StagedFile&& other) noexcept {
  if (this != &other) {
    discard();
    temporary_ = std::exchange(other.temporary_, {});
    finish_ = std::exchange(other.finish_, {});
  }
  return *this;
}

void StagedFile::commit() {
  if (!finish_) return;
  auto finish = std::exchange(finish_, {});
  temporary_.clear();  // the rename owns it now (and removes it when it fails)
  finish();
}

void StagedFile::discard() {
  finish_ = {};
  if (!temporary_.empty()) ::unlink(temporary_.c_str());
  temporary_.clear();
}

void write_atomic(const fs::path& given, std::string_view bytes) {
  stage_atomic(given, bytes).commit();
}

fs::path merge_temporary(const fs::path& out) {
  return directory_of(out) / fmt::format(".{}.merge-{}", out.filename().string(), ::getpid());
}

namespace {

// The pid at the start of `rest` ("123", "123.lock", "123.tmp-123"), or 0 when `rest` is not one
// of the names pacer gives a temporary file.
long temporary_owner(const std::string& rest, bool merge) {
  const size_t digits = rest.find_first_not_of("0123456789");
  const std::string pid_text = rest.substr(0, digits);
  if (pid_text.empty() || pid_text.size() > 10) return 0;
  if (digits != std::string::npos) {
    const std::string tail = rest.substr(digits);
    const bool tmp_of_tmp =
        tail.rfind(".tmp-", 0) == 0 && tail.size() > 5 && tail.find_first_not_of("0123456789", 5) == std::string::npos;
    if (!merge || (tail != ".lock" && !tmp_of_tmp)) return 0;
  }
  return static_cast<long>(units::to_integer(pid_text, 0, INT32_MAX).value_or(0));
}

// Whether the pacer process `pid` that named a temporary file is gone (or is this process, which
// is about to replace its own leftover).
bool owner_gone(long pid) {
  return pid == ::getpid() || (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH);
}

}  // namespace

void remove_stale_folders(const fs::path& dir, std::string_view prefix) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    if (!entry.is_directory(ec) || entry.is_symlink(ec)) continue;
    const long pid = temporary_owner(name.substr(prefix.size()), false);
    if (pid != 0 && owner_gone(pid)) fs::remove_all(entry.path(), ec);
  }
}

void remove_stale_temporaries(const fs::path& given) {
  const fs::path path = write_target(given).path;
  const std::string name = path.filename().string();
  const std::string prefixes[] = {name + ".tmp-", name + ".probe-", name + ".lock.probe-", "." + name + ".merge-"};
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(directory_of(path), ec)) {
    const std::string file = entry.path().filename().string();
    for (const auto& prefix : prefixes) {
      if (file.size() <= prefix.size() || file.compare(0, prefix.size(), prefix) != 0) continue;
      const long pid = temporary_owner(file.substr(prefix.size()), prefix[0] == '.');
      if (pid == 0) continue;
      if (owner_gone(pid)) fs::remove(entry.path(), ec);
    }
  }
}

fs::path lock_path(const fs::path& store) {
  const WriteTarget target = write_target(store);
  return (target.kind == WriteTarget::Kind::file ? target.path : store).string() + ".lock";
}

WriteLock::WriteLock(const fs::path& store) {
  const fs::path lock = lock_path(store);
  fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw Error(fmt::format("{}: cannot create the writers' lock file {} ({}): is the directory writable?",
                            store.string(), lock.string(), errno_text()));
  int rc = ::flock(fd_, LOCK_EX | LOCK_NB);
  if (rc != 0 && errno == EWOULDBLOCK) {
    waited_ = true;
    // Once per store and process: a campaign that rewrites the store per point would repeat it.
    static std::mutex mutex;
    static std::set<std::string> announced;
    bool first = false;
    {
      std::lock_guard<std::mutex> guard(mutex);
      first = announced.insert(store.string()).second;
    }
    if (first)
      spdlog::warn("{}: another process is writing this trace store; waiting for it to finish", store.string());
    while ((rc = ::flock(fd_, LOCK_EX)) != 0 && errno == EINTR) {
    }
  }
  if (rc != 0) {
    const std::string why = errno_text();
    ::close(fd_);
    throw Error(
        fmt::format("{}: cannot lock {} ({}): this file system does not support the writers' lock "
                    "(NFS without a lock service?); keep the store on a local disk",
                    store.string(), lock.string(), why));
  }
}

WriteLock::~WriteLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

ChildResult run_in_child(const std::function<void()>& fn, int timeout_s) {
  int pipe_fd[2];
  if (::pipe2(pipe_fd, O_CLOEXEC) != 0) throw Error(fmt::format("cannot create a pipe: {}", errno_text()));
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(pipe_fd[0]);
    ::close(pipe_fd[1]);
    throw Error(fmt::format("cannot start a child process: {}", errno_text()));
  }
  if (pid == 0) {
    ::close(pipe_fd[0]);
    ::alarm(static_cast<unsigned>(timeout_s));
    int code = 0;
    std::string message;
    try {
      fn();
    } catch (const std::exception& e) {
      message = e.what();
      code = 1;
    } catch (...) {
      message = "unknown exception";
      code = 1;
    }
    if (!message.empty()) (void)!::write(pipe_fd[1], message.data(), message.size());
    ::_exit(code);  // no atexit handlers: they belong to the parent
  }
  ::close(pipe_fd[1]);
  std::string message;
  char buf[512];
  for (;;) {
    const ssize_t n = ::read(pipe_fd[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    message.append(buf, static_cast<size_t>(n));
  }
  ::close(pipe_fd[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) {
    if (WEXITSTATUS(status) == 0) return {};
    return {false, false, message.empty() ? fmt::format("failed (exit status {})", WEXITSTATUS(status)) : message};
  }
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
    return {false, true,
            fmt::format("the HDF5 library did not finish within {} s (it loops on some damaged files)", timeout_s)};
  if (WIFSIGNALED(status))
    return {false, true,
            fmt::format("the HDF5 library crashed reading it (signal {}, {})", WTERMSIG(status),
                        ::strsignal(WTERMSIG(status)))};
  return {false, true, "failed"};
}

}  // namespace pacer::traces::file
