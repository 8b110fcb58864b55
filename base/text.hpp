#pragma once
// Plain-text helpers shared by every reader of text (options, config and catalog files, imported
// traces, sysfs values, program output).
#include <string>
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

// The text of an input file (INI, CSV, marks, logs) as its lines are to be read: a UTF-8 byte-order
// mark at its start removed (editors on Windows write one). Throws Error "<origin> uses CR line ends
// ..." for a file whose lines end in CR alone (old Mac): it would read as one line. CRLF is fine.
std::string_view text_input(std::string_view text, const std::string& origin);

// `text` with every control character (and DEL) written as \xNN, a backslash as \\: safe to print
// to a terminal (a file's bytes, a message quoting one).
std::string printable(std::string_view text);

}  // namespace pacer::base
