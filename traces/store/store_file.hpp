#pragma once
// The file layer under the trace store: the checksum header, atomic replacement with a space check,
// the writers' lock, and a guard that runs a risky read in a child process. Nothing here knows a
// record; traces/store/store.cpp composes these with the codecs.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <utility>

namespace pacer::traces::file {

// Every store pacer writes starts with this many bytes of HDF5 user block (skipped by libhdf5 and
// h5py) holding "PACERSUM 1 crc32=<8 hex> bytes=<size of the rest>\n".
inline constexpr size_t kUserBlockBytes = 512;

// CRC-32 (IEEE) of n bytes: the store's checksum, and what identifies a relation's checkpoint.
uint32_t crc32(const char* data, size_t n);

// The checksum header that covers `image` (a whole store file, user block included).
std::string checksum_header(std::string_view image);
// Writes the header that covers the file's current content into its user block (no other check:
// the verified reseal is traces::reseal_store). A file without the header is left as it is.
void seal(const std::filesystem::path& path);

struct Contents {
  std::string bytes;
  bool sealed = false;  // carries pacer's checksum header (verified)
};
// Reads the file; throws Error when it is missing, not a regular file, its checksum header does not
// match, or it holds a global heap that libhdf5 would loop on.
Contents verify(const std::filesystem::path& path);

// Where a write of `path` goes. Only a regular file is ever renamed over: a missing or regular file
// is written atomically at `path` itself, or at the end of its symbolic links (the links stay and
// their target gets the bytes); a character device or a FIFO ("/dev/null", a pipe) is written in
// place, as a shell redirection would; anything else (a folder, a socket, a block device) is refused
// and `why` says what it is. This process's own open files (/dev/stdout, /dev/fd/N) are streams
// whatever they lead to (a redirection to a file is appended to, not replaced).
struct WriteTarget {
  enum class Kind { file, stream, refused } kind = Kind::file;
  std::filesystem::path path;  // the file to replace or create (links followed), or the stream
  std::string why;             // for `refused`
};
WriteTarget write_target(const std::filesystem::path& path);

// Why a new file cannot be written at `path`, or "" when it can: a folder (or another kind of file
// that is refused, see write_target) is there, the path is too long, its folder is missing or is not
// a folder, or that folder refuses a new file. A device or FIFO can be written. With `probe`, the
// folder is tried by creating and removing a temporary file (read-only file systems, permissions);
// without, only the cheap checks are made (the write that follows tells the rest with its errno).
std::string why_not_writable(const std::filesystem::path& path, bool probe = true);

// Writes `bytes` to `path` (see write_target): a file atomically, through a temporary sibling
// "<target>.tmp-<pid>", after checking that the file system has room for it, then fsync, rename and
// a directory fsync; any failure removes the temporary file and leaves the file as it was. A device
// or FIFO is written in place; anything else is an Error.
void write_atomic(const std::filesystem::path& path, std::string_view bytes);

// A write_atomic up to, not including, its last step: the bytes are in the temporary file (room
// checked, fsynced), and commit() renames it into place (a device or FIFO, or another stream, is
// written by commit()). Destroyed uncommitted, it removes the temporary file: the file stays as it
// was. For outputs that go with a store record: stage them, write the store, commit them -- a full
// disk fails the staging, before the store is touched, and never leaves one without the other.
class StagedFile {
 public:
  StagedFile() = default;
  StagedFile(std::filesystem::path temporary, std::function<void()> finish)
      : temporary_(std::move(temporary)), finish_(std::move(finish)) {}
  StagedFile(StagedFile&& other) noexcept { *this = std::move(other); }
  StagedFile& operator=(StagedFile&& other) noexcept;
  StagedFile(const StagedFile&) = delete;
  StagedFile& operator=(const StagedFile&) = delete;
  ~StagedFile() { discard(); }
  void commit();   // puts the file in place (once); throws Error when that fails
  void discard();  // removes the temporary file, if any, uncommitted

 private:
  std::filesystem::path temporary_;  // empty for a stream
  std::function<void()> finish_;     // the rename, or the stream's write
};
StagedFile stage_atomic(const std::filesystem::path& path, std::string_view bytes);

// The temporary store a merge into `out` builds before it renames it over `out`:
// ".<out's name>.merge-<pid>" beside `out`.
std::filesystem::path merge_temporary(const std::filesystem::path& out);

// Removes the files that pacer processes which no longer run (killed mid-way: kill(pid, 0) says
// ESRCH) left beside the store at `path`: "<name>.tmp-<pid>" (an atomic rewrite),
// "<name>.probe-<pid>" and "<name>.lock.probe-<pid>" (writability probes), and a merge's ".<name>.merge-<pid>" with its
// own
// ".lock" and ".tmp-<pid>". Called under the store's writers' lock, by every rewrite and merge.
// Beside the target of a symbolic link, where the writes go.
void remove_stale_temporaries(const std::filesystem::path& path);

// Removes the folders "<prefix><pid>" inside `dir` (a report's staging folder ".pacer-report-<pid>")
// that pacer processes which no longer run left, with what they hold; a live process's stay.
void remove_stale_folders(const std::filesystem::path& dir, std::string_view prefix);

// An exclusive advisory lock (flock) on the sibling "<path>.lock", held by every read-modify-write
// of the store, so concurrent writers of different records in different processes never lose one
// another's update. When another process holds it, one line on the log (once per store and process)
// says that this one waits. A store reached through a symbolic link is locked beside its target, so
// writers through the link and through the target take turns.
std::filesystem::path lock_path(const std::filesystem::path& store);  // "<store>.lock"

class WriteLock {
 public:
  explicit WriteLock(const std::filesystem::path& store);
  ~WriteLock();
  WriteLock(const WriteLock&) = delete;
  WriteLock& operator=(const WriteLock&) = delete;
  bool waited() const { return waited_; }

 private:
  int fd_ = -1;
  bool waited_ = false;
};

// What a guarded child process did: returned normally (ok), threw (message = what()), or died by a
// signal (crashed: a crash inside libhdf5, or a loop stopped after the timeout).
struct ChildResult {
  bool ok = true;
  bool crashed = false;
  std::string message;
};
// Runs `fn` in a forked child process, so that a crash or an endless loop inside libhdf5 becomes a
// message instead of killing or hanging this process. The child is killed after `timeout_s`.
ChildResult run_in_child(const std::function<void()>& fn, int timeout_s);

}  // namespace pacer::traces::file
