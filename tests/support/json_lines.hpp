#pragma once
// Test support: checks `pacer ... --json` output with Python's json module, the reference parser.
// python_checks() runs `code` with `rows` bound to the parsed objects of `json_lines` (one per
// line); an assert in it fails the check. Tests skip (GTEST_SKIP) when python3 is absent.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace pacer::testing {

inline bool have_python3() {
  return std::system("python3 -c 'import json' >/dev/null 2>&1") == 0;
}

// Exit status of the check: 0 when every line parsed and every assert held.
inline int python_checks(const std::string& json_lines, const std::string& code) {
  const auto dir = std::filesystem::temp_directory_path();
  const auto tag = std::to_string(::getpid());
  const auto data = dir / ("pacer-json-" + tag), script = dir / ("pacer-json-" + tag + ".py");
  std::ofstream(data) << json_lines;
  std::ofstream(script) << "import json, sys\nrows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]\n"
                        << code << "\n";
  const int status = std::system(("python3 " + script.string() + " " + data.string()).c_str());
  std::filesystem::remove(data);
  std::filesystem::remove(script);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace pacer::testing
