#include "hw/jetson/nvpmodel.hpp"

#include <fmt/format.h>

#include <sstream>

#include "base/error.hpp"
#include "base/process.hpp"
#include "base/text.hpp"
#include "base/units.hpp"

namespace pacer::hw {
namespace fs = std::filesystem;

namespace {

std::string quoted(const std::string& output) {
  std::string one = output;
  for (char& c : one)
    if (c == '\n') c = '|';
  return one.size() > 200 ? one.substr(0, 200) + "..." : one;
}

}  // namespace

NvpmodelMode parse_nvpmodel_query(const std::string& output, const std::string& program) {
  std::istringstream in(output);
  NvpmodelMode m;
  bool named = false;
  for (std::string line; std::getline(in, line);) {
    const std::string s(base::trim(line));
    if (s.rfind("NV Power Mode:", 0) == 0) {
      m.name = base::trim(std::string_view(s).substr(14));
      named = true;
      continue;
    }
    if (named && !s.empty() && s.find_first_not_of("0123456789") == std::string::npos && s.size() < 5) {
      const auto id = units::to_integer(s, 0, kMaxPowerModeId);
      if (!id) break;  // not a mode id: the error below
      m.id = static_cast<int>(*id);
      return m;
    }
  }
  throw Error(
      fmt::format("`{} -q` printed no power mode ('NV Power Mode: NAME' and its id): '{}'", program, quoted(output)));
}

namespace {
constexpr const char* kNvpmodelHint = "nvpmodel ships with L4T on a Jetson (/usr/sbin/nvpmodel); give its path";

base::RunOptions run_options(double timeout_s) {
  base::RunOptions o;
  o.timeout_s = timeout_s;
  o.missing_hint = kNvpmodelHint;
  return o;
}
}  // namespace

Nvpmodel::Nvpmodel(fs::path binary, double timeout_s) : binary_(std::move(binary)), timeout_s_(timeout_s) {
  std::error_code ec;
  if (!fs::exists(binary_, ec))
    throw OptionError("nvpmodel", fmt::format("{} does not exist: {}", binary_.string(), kNvpmodelHint));
  if (binary_.is_relative()) binary_ = fs::absolute(binary_);
}

NvpmodelMode Nvpmodel::query() const {
  const auto r = base::run_program(binary_, {"-q"}, run_options(timeout_s_));
  if (r.timed_out) throw Error(fmt::format("`{} -q` did not finish within {:g} s", binary_.string(), timeout_s_));
  if (r.exit_code != 0)
    throw Error(fmt::format("`{} -q` failed (exit {}): '{}'", binary_.string(), r.exit_code, quoted(r.output)));
  return parse_nvpmodel_query(r.output, binary_.string());
}

void Nvpmodel::set(int mode_id) const {
  const auto r = base::run_program(binary_, {"-m", std::to_string(mode_id)}, run_options(timeout_s_));
  if (r.timed_out)
    throw Error(fmt::format("`{} -m {}` did not finish within {:g} s", binary_.string(), mode_id, timeout_s_));
  if (r.exit_code != 0)
    throw Error(fmt::format("`{} -m {}` failed (exit {}): '{}'; changing the power mode needs root (sudo)",
                            binary_.string(), mode_id, r.exit_code, quoted(r.output)));
}

}  // namespace pacer::hw
