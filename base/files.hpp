#pragma once
// Files named by the user, as plain files: the one reader of a text input (config, spec, INI, CSV,
// logs, state files) that takes only a regular file of bounded size, so that /dev/zero, a FIFO or a
// folder is one error line instead of a hang or an endless read; and the words for what a path is
// when it is not a regular file, or why it is too long to be one.
#include <cstddef>
#include <filesystem>
#include <string>

namespace pacer::base {

// Size bounds of text inputs: a configuration (INI, spec, state file) and a data file (CSV, logs,
// traces). A million-row import stays well below the data bound.
inline constexpr size_t kMaxConfigFileBytes = size_t{1} << 20;  // 1 MiB
inline constexpr size_t kMaxDataFileBytes = size_t{256} << 20;  // 256 MiB

// "the path is too long (N characters; ...): choose a shorter one" when `path` or one of its names
// is longer than the system accepts; "" otherwise.
std::string path_too_long(const std::filesystem::path& path);

// What is at `path` when it is there and not a regular file, symbolic links followed ("a folder",
// "a FIFO", "a character device", "a block device", "a socket"); "" for a regular file or nothing.
std::string non_regular_kind(const std::filesystem::path& path);

// The bytes of the regular file at `path`, read up to `max_bytes`. Throws Error naming `what` ("config
// file", "CSV file") and the path when it is missing, unreadable, not a regular file (nothing is read
// from a device, FIFO or folder) or larger than `max_bytes`.
std::string read_regular_file(const std::filesystem::path& path, size_t max_bytes, const std::string& what);

}  // namespace pacer::base
