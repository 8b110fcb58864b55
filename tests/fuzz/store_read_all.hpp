#pragma once
// Reads every record of a trace store through the public Store API, the way `pacer export` and the
// other subcommands do. A damaged store must give pacer::Error; any other exception escapes and
// the fuzz target aborts.
#include <filesystem>
#include <string>

#include "base/error.hpp"
#include "traces/store/store.hpp"

namespace pacer::fuzz {

// Scratch files go to /dev/shm when it exists: the targets rewrite a file on every input.
inline std::string scratch_dir() {
  std::error_code ec;
  return std::filesystem::is_directory("/dev/shm", ec) ? "/dev/shm" : "/tmp";
}

// Returns the number of records read back intact.
inline int read_all_records(const std::string& path) {
  int ok = 0;
  traces::Store store = traces::Store::open(path);
  auto attempt = [&](auto&& fn) {
    try {
      fn();
      ++ok;
    } catch (const Error&) {
    }
  };
  attempt([&] {
    if (store.has_device()) (void)store.read_device();
  });
  for (const char* g : traces::kStoreGroups) {
    std::vector<std::string> names;
    try {
      names = store.list(g);
    } catch (const Error&) {
      continue;
    }
    for (const auto& n : names) {
      attempt([&] { (void)store.read_record(g, n); });
      attempt([&] { (void)store.has(g, n); });
    }
  }
  return ok;
}

}  // namespace pacer::fuzz
