#pragma once
// Error types shared by every layer. The CLI turns Error into one line on stderr and exit 1,
// UsageError into one line and exit 2.
#include <stdexcept>
#include <string>
#include <utility>

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

// Errors about one setting, raised below the CLI, which names no flag: `option` is the option's key
// ("sysfs-root", "profile-name") and the CLI prints "--<option>: <message>". OptionError is a usage
// error (exit 2); SettingError a runtime failure that another value of the setting avoids (exit 1).
class OptionError : public UsageError {
 public:
  OptionError(std::string option_key, const std::string& message)
      : UsageError(message), option(std::move(option_key)) {}
  std::string option;
};

class SettingError : public Error {
 public:
  SettingError(std::string option_key, const std::string& message) : Error(message), option(std::move(option_key)) {}
  std::string option;
};

}  // namespace pacer
