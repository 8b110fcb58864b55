#pragma once
// Plain-text helpers shared by every reader of text (options, config and catalog files, imported
// traces, sysfs values, program output).
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

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

// Levenshtein distance (insertions, deletions, substitutions of bytes).
size_t edit_distance(std::string_view a, std::string_view b);

// The candidate closest to `word` for a "did you mean ...?" hint: within 2 edits and less than half
// of `word`'s length (so "ab" does not suggest "xy"); "" when none is close or two tie.
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

// "1 window", "3 windows": a count and its noun, singular for exactly one.
std::string count_noun(long long n, std::string_view singular, std::string_view plural);

}  // namespace pacer::base
