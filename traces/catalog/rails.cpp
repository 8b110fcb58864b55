#include "traces/catalog/rails.hpp"

#include <algorithm>
#include <cctype>

namespace pacer::traces {

std::vector<std::string> name_tokens(const std::string& name) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : name) {
    if (c == '_' || c == '-' || c == ' ') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

bool is_total_rail(const std::string& name) {
  return name == "POM_5V_IN" || name == "VDD_IN";
}

bool is_gpu_rail(const std::string& name) {
  const auto t = name_tokens(name);
  const bool gpu = std::find(t.begin(), t.end(), "GPU") != t.end();
  const bool cpu = std::find(t.begin(), t.end(), "CPU") != t.end();
  return gpu && !cpu;
}

bool is_nc_rail(const std::string& name) {
  return name.empty() || name == "NC" || name == "nc";
}

}  // namespace pacer::traces
