#include "base/json.hpp"

#include <fmt/format.h>

namespace pacer::base {

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) out += fmt::format("\\u{:04x}", c);
        else out += ch;  // UTF-8 bytes pass through
    }
  }
  return out + "\"";
}

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  // Integral values without an exponent ("1500000000", not "1.5e+09"); the rest as the shortest text
  // that reads back as the same double: a power printed by `--json` and given back as a cap
  // (`-P 6.3219854153xxW`) is the same number, never one rounded below the point it came from.
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{:.0f}", v);
  return fmt::format("{}", v);
}

JsonObject& JsonObject::add(std::string_view key, const std::vector<double>& values) {
  std::string a = "[";
  for (size_t i = 0; i < values.size(); ++i) a += (i ? "," : "") + json_number(values[i]);
  return raw(key, a + "]");
}

JsonObject& JsonObject::raw(std::string_view key, std::string_view json) {
  if (!body_.empty()) body_ += ",";
  body_ += json_string(key);
  body_ += ":";
  body_ += json;
  return *this;
}

}  // namespace pacer::base
