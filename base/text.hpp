#pragma once
// Plain-text helpers shared by every reader of text (options, config and catalog files, imported
// traces, sysfs values, program output).
#include <string_view>

namespace pacer::base {

// The one notion of blank: space, tab, CR, LF, vertical tab and form feed (what std::isspace
// accepts in the C locale). One set for every reader, so that a CRLF file, a sysfs value ending in
// a newline and a padded option read the same.
constexpr bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

// `text` without its leading and trailing blanks; a view into `text`, so it must not outlive it.
std::string_view trim(std::string_view text);

}  // namespace pacer::base
