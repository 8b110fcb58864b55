#include "base/shell.hpp"

#include <algorithm>

namespace pacer::base {

std::string shell_quote(std::string_view word) {
  const auto plain = [](char c) {  // ASCII only, whatever the locale
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("/._-+:,@%").find(c) != std::string_view::npos;
  };
  if (!word.empty() && std::all_of(word.begin(), word.end(), plain)) return std::string(word);
  std::string quoted = "'";
  for (const char c : word) {
    if (c == '\'')
      quoted += "'\\''";  // close the quotes, an escaped ', open them again
    else
      quoted += c;
  }
  return quoted + "'";
}

}  // namespace pacer::base
