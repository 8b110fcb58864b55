#pragma once
// Error types shared by every layer. The CLI turns Error into one line on stderr and exit 1,
// UsageError into one line and exit 2.
#include <stdexcept>
#include <string>

namespace pacer {

// A runtime failure the user can act on: the message says what happened and what to do.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A malformed or out-of-range command-line value; the message names the option.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace pacer
