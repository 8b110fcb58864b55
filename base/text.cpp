#include "base/text.hpp"

#include <fmt/format.h>

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
