#pragma once
// Environment variables a test changes, unset for its scope and restored as they were at its end:
// a test of what pacer does with a variable must not depend on what the caller exported.
#include <stdlib.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace pacer::testing {

class SavedEnvironment {
 public:
  explicit SavedEnvironment(std::vector<std::string> names) : names_(std::move(names)) {
    for (const auto& n : names_) {
      const char* v = std::getenv(n.c_str());
      saved_.push_back(v ? std::optional<std::string>(v) : std::nullopt);
      ::unsetenv(n.c_str());
    }
  }
  ~SavedEnvironment() {
    for (size_t i = 0; i < names_.size(); ++i)
      if (saved_[i])
        ::setenv(names_[i].c_str(), saved_[i]->c_str(), 1);
      else
        ::unsetenv(names_[i].c_str());
  }
  SavedEnvironment(const SavedEnvironment&) = delete;
  SavedEnvironment& operator=(const SavedEnvironment&) = delete;

 private:
  std::vector<std::string> names_;
  std::vector<std::optional<std::string>> saved_;
};

}  // namespace pacer::testing
