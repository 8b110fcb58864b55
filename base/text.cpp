#include "base/text.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "base/error.hpp"

namespace pacer::base {

std::string_view trim(std::string_view text) {
  while (!text.empty() && is_blank(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_blank(text.back())) text.remove_suffix(1);
  return text;
}

std::string_view text_input(std::string_view text, const std::string& origin) {
  constexpr std::string_view bom = "\xEF\xBB\xBF";
  if (text.substr(0, bom.size()) == bom) text.remove_prefix(bom.size());
  if (text.find('\r') != std::string_view::npos && text.find('\n') == std::string_view::npos)
    throw Error(
        fmt::format("{} uses CR line ends (an old Mac text file): convert it with `sed -i 's/\\r/\\n/g' {}` "
                    "(or mac2unix) and try again",
                    origin, origin));
  return text;
}

std::string printable(std::string_view text) {
  std::string out;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\\')
      out += "\\\\";
    else if (u < 0x20 || u == 0x7f)
      out += fmt::format("\\x{:02x}", u);
    else
      out += c;
  }
  return out;
}

}  // namespace pacer::base

namespace pacer::base {

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string closest_match(std::string_view word, const std::vector<std::string>& candidates) {
  // Two edits catch a dropped, doubled or swapped letter; a short word allows fewer.
  const size_t limit = std::min<size_t>(2, (word.size() + 1) / 2);
  std::string best;
  size_t best_distance = limit + 1;
  bool tie = false;
  for (const auto& c : candidates) {
    const size_t d = edit_distance(word, c);
    if (d < best_distance) {
      best = c;
      best_distance = d;
      tie = false;
    } else if (d == best_distance && c != best) {
      tie = true;
    }
  }
  return best_distance <= limit && !tie ? best : std::string();
}

std::string count_noun(long long n, std::string_view singular, std::string_view plural) {
  return std::to_string(n) + " " + std::string(n == 1 ? singular : plural);
}

}  // namespace pacer::base
