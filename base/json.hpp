#pragma once
// The one JSON writer: `pacer ... --json` prints JSON Lines, one object per result, built with
// JsonObject. Keys carry their unit as the CSV headers do ("cap_w", "predicted_time_s"); numbers
// are written with 10 significant digits, NaN and infinity as null; strings are escaped per RFC 8259.
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace pacer::base {

// `s` as a JSON string literal, quotes included.
std::string json_string(std::string_view s);
// `v` as a JSON number, the shortest text that reads back as `v`; null when not finite.
std::string json_number(double v);

class JsonObject {
 public:
  JsonObject& add(std::string_view key, std::string_view value) { return raw(key, json_string(value)); }
  JsonObject& add(std::string_view key, const char* value) { return raw(key, json_string(value)); }
  JsonObject& add(std::string_view key, const std::string& value) { return raw(key, json_string(value)); }
  JsonObject& add(std::string_view key, bool value) { return raw(key, value ? "true" : "false"); }
  template <typename T>
    requires(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>)
  JsonObject& add(std::string_view key, T value) {
    if constexpr (std::is_integral_v<T>) return raw(key, std::to_string(value));
    else return raw(key, json_number(static_cast<double>(value)));
  }
  JsonObject& add(std::string_view key, const std::vector<double>& values);
  // An already formatted JSON value (an object, an array).
  JsonObject& raw(std::string_view key, std::string_view json);
  // "{...}" without a line break.
  std::string str() const { return "{" + body_ + "}"; }

 private:
  std::string body_;
};

}  // namespace pacer::base
