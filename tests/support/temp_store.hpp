#pragma once
// Test helper: a trace store path under the temporary folder, unique to the process, removed with
// the writers' lock the store keeps beside it ("<store>.lock", traces/store/store_file.hpp) when the test
// ends on any path, including a failed ASSERT. Without it every run left a lock file in /tmp.
#include <unistd.h>

#include <filesystem>
#include <string>

#include "traces/store/store_file.hpp"

namespace pacer::testing {

class TempStore {
 public:
  explicit TempStore(const std::string& tag)
      : path_(std::filesystem::temp_directory_path() / ("pacer-" + tag + "-" + std::to_string(::getpid()) + ".h5")) {
    remove();
  }
  ~TempStore() { remove(); }
  TempStore(const TempStore&) = delete;
  TempStore& operator=(const TempStore&) = delete;

  const std::filesystem::path& path() const { return path_; }
  operator const std::filesystem::path&() const { return path_; }  // NOLINT: a path where one is expected
  // The store and its lock, so that a test can start over from no store.
  void remove() const {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
    std::filesystem::remove(traces::file::lock_path(path_), ec);
  }

 private:
  std::filesystem::path path_;
};

}  // namespace pacer::testing
