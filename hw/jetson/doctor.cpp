#include "hw/jetson/doctor.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <regex>
#include <sstream>

#include "base/error.hpp"
#include "base/text.hpp"
#include "base/units.hpp"
#include "hw/device.hpp"
#include "hw/jetson/jetson_sysfs.hpp"
#include "hw/jetson/restore_guard.hpp"
#include "traces/store/store_file.hpp"

namespace pacer::hw {

namespace fs = std::filesystem;

namespace {

// What a user does about each missing part (docs/jetson.md holds the details).
constexpr const char* kPermissionFix =
    "run pacer as root (sudo), or let your user write the devfreq limits with the udev rule of docs/jetson.md";

DoctorCheck check(std::string name, CheckStatus status, std::string detail, std::string fix = "") {
  return DoctorCheck{std::move(name), status, std::move(detail), std::move(fix)};
}

bool executable(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

std::string mhz_range(const std::vector<long long>& hz) {
  const auto [lo, hi] = std::minmax_element(hz.begin(), hz.end());
  return fmt::format("{:g}-{:g} MHz", static_cast<double>(*lo) / 1e6, static_cast<double>(*hi) / 1e6);
}

std::vector<DoctorCheck> board_checks(const DoctorOptions& o, SysfsIo& io, std::optional<DevfreqNode>& devfreq) {
  std::vector<DoctorCheck> out;
  const std::string model = read_board_model(o.root, io);
  const bool emulated = fs::exists(o.root / "pacer-emulator");
  try {
    devfreq = discover_gpu_devfreq(o.root, io);
  } catch (const Error&) {
    devfreq.reset();
  }
  if (!devfreq)
    out.push_back(check("board", CheckStatus::missing,
                        fmt::format("not a Jetson: emulated and replay only (no GPU devfreq node under {}{})",
                                    (o.root / "sys/class/devfreq").string(), model.empty() ? "" : ", model " + model),
                        "emulate a board (pacer emulate, the emulated devices) and replay stored runs; on a board, "
                        "check /sys is mounted"));
  else
    out.push_back(check("board", CheckStatus::ok,
                        fmt::format("{}{}", model.empty() ? "Jetson without a device-tree model" : model,
                                    emulated ? " (an emulated tree)" : "")));

  const fs::path release = o.root / "etc/nv_tegra_release";
  const std::string text = read_or(release, "");
  const std::string l4t = parse_l4t_release(text);
  if (!l4t.empty())
    out.push_back(check("l4t", CheckStatus::ok, fmt::format("L4T {} ({})", l4t, release.string())));
  else
    out.push_back(check("l4t", CheckStatus::warn,
                        text.empty()
                            ? fmt::format("no {}: not an L4T system", release.string())
                            : fmt::format("{} is not in the form '# R35 (release), REVISION: 4.1'", release.string()),
                        "none needed for emulation; on a board, install JetPack (docs/jetson.md)"));
  return out;
}

DoctorCheck devfreq_check(const DevfreqNode& node, SysfsIo& io) {
  const fs::path table = node.dir / "available_frequencies";
  try {
    std::vector<long long> hz;
    std::istringstream in(io.read(table));
    for (std::string tok; in >> tok;) hz.push_back(parse_sysfs_int(tok, table));
    if (hz.empty())
      return check("gpu devfreq", CheckStatus::missing, fmt::format("{} lists no frequencies", table.string()),
                   "the GPU's devfreq driver is not loaded: reflash or reboot the board");
    return check("gpu devfreq", CheckStatus::ok,
                 fmt::format("{} ({}): {} frequencies, {}", node.dir.string(), node.of_name, hz.size(), mhz_range(hz)));
  } catch (const Error& e) {
    return check("gpu devfreq", CheckStatus::missing, e.what(), "the GPU's devfreq table cannot be read");
  }
}

DoctorCheck rails_check(const DoctorOptions& o, SysfsIo& io, bool tegrastats) {
  const auto rails = discover_rails(o.root, io);
  if (rails.empty())
    return check("power rails", tegrastats ? CheckStatus::warn : CheckStatus::missing,
                 fmt::format("no INA3221 rails under {}", (o.root / "sys/bus/i2c/drivers").string()),
                 tegrastats ? "take the power from tegrastats (power source tegrastats)"
                            : "load the ina3221 driver (L4T does by default), or install tegrastats and take the "
                              "power from it (power source tegrastats)");
  const auto sel = select_rails(rails);
  std::vector<PowerRail> read = sel.total;
  if (sel.gpu) read.push_back(*sel.gpu);
  std::vector<std::string> values;
  for (const auto& rail : read) {
    try {
      values.push_back(fmt::format("{} {:.2f} W", rail.name, read_rail_w(rail, io)));
    } catch (const Error& e) {
      return check("power rails", CheckStatus::missing,
                   fmt::format("{} rails ({}) found, {} does not answer: {}", rails.size(), rails.front().layout,
                               rail.name, e.what()),
                   "check the INA3221 files are readable (docs/jetson.md), or take the power from tegrastats");
    }
  }
  std::string joined;
  for (const auto& v : values) joined += (joined.empty() ? "" : ", ") + v;
  return check("power rails", CheckStatus::ok,
               fmt::format("{} rails ({}), {}{}", rails.size(), rails.front().layout, joined,
                           sel.summed ? " (no total rail: summed)" : ""));
}

// Writes min_freq and max_freq back with the values they hold: what a pin needs, with no change.
DoctorCheck clock_control_check(const DevfreqNode& node, SysfsIo& io) {
  for (const char* name : {"min_freq", "max_freq"}) {
    const fs::path p = node.dir / name;
    try {
      const std::string value = io.read(p);
      io.write(p, value);
    } catch (const IoError& e) {
      return check(
          "clock control", CheckStatus::missing, e.what(),
          e.errno_value == EROFS ? "the file system holding it is read-only: remount /sys read-write" : kPermissionFix);
    } catch (const Error& e) {
      return check("clock control", CheckStatus::missing, e.what(), kPermissionFix);
    }
  }
  return check("clock control", CheckStatus::ok,
               fmt::format("min_freq and max_freq of {} are writable", node.dir.string()));
}

DoctorCheck program_check(const std::string& name, const std::vector<fs::path>& candidates, const std::string& what) {
  for (const auto& p : candidates)
    if (executable(p)) return check(name, CheckStatus::ok, p.string());
  return check(name, CheckStatus::warn, fmt::format("no executable {}", candidates.front().string()),
               fmt::format("{} is unavailable; it ships with L4T (JetPack): none needed otherwise", what));
}

DoctorCheck torch_check(const TorchInfo& t) {
  if (!t.linked)
    return check("libtorch", CheckStatus::missing, t.note,
                 "build pacer-train beside pacer (setup.sh; on a board, against JetPack's PyTorch: docs/jetson.md)");
  const std::string detail =
      fmt::format("libtorch {}, CUDA {}, CPU kernels: {}", t.version,
                  t.cuda ? fmt::format("yes ({} device{})", t.cuda_devices, t.cuda_devices == 1 ? "" : "s") : "no",
                  t.blas_kernels == "unknown" ? "BLAS not OpenBLAS (not reported)" : "OpenBLAS " + t.blas_kernels);
  if (!t.cuda)
    return check("libtorch", CheckStatus::warn, detail,
                 "training runs on the CPU; on a board, build against JetPack's PyTorch (docs/jetson.md)");
  return check("libtorch", CheckStatus::ok, detail);
}

std::vector<DoctorCheck> store_checks(const DoctorOptions& o) {
  std::vector<DoctorCheck> out;
  std::error_code ec;
  const auto space = fs::space(o.store_dir, ec);
  if (ec)
    out.push_back(check("disk", CheckStatus::missing, fmt::format("{}: {}", o.store_dir.string(), ec.message()),
                        "name a store folder that exists"));
  else {
    const double free_b = static_cast<double>(space.available);
    const std::string detail = fmt::format("{:.1f} GB free under {}", free_b / 1e9, o.store_dir.string());
    out.push_back(
        free_b >= o.min_free_bytes
            ? check("disk", CheckStatus::ok, detail)
            : check("disk", CheckStatus::missing, detail,
                    fmt::format("free at least {:.1f} GB, or name another store folder", o.min_free_bytes / 1e9)));
  }
  const std::string why = traces::file::why_not_writable(o.store_dir / ".pacer-doctor-check");
  out.push_back(why.empty() ? check("store", CheckStatus::ok, fmt::format("{} takes new files", o.store_dir.string()))
                            : check("store", CheckStatus::missing, why,
                                    "name a writable store folder (trace stores are written there)"));
  return out;
}

DoctorCheck state_check(const DoctorOptions& o) {
  const fs::path file = o.state_file.empty() ? default_state_file(o.root) : o.state_file;
  std::error_code ec;
  if (!fs::exists(file, ec)) return check("state file", CheckStatus::ok, fmt::format("none at {}", file.string()));
  const std::string restore = fmt::format("run `pacer restore` on the sysfs root {}", o.root.string());
  try {
    const RestoreState state = read_state_file(file);
    if (process_alive(state.pid))
      return check("state file", CheckStatus::warn,
                   fmt::format("{}: pacer run pid {} is pinning {} now", file.string(), state.pid, state.device),
                   "wait for it to end before a validation");
    return check("state file", CheckStatus::missing,
                 fmt::format("{} left by a killed run (pid {}, {}): the clocks may still be pinned", file.string(),
                             state.pid, state.device),
                 restore);
  } catch (const Error& e) {
    return check("state file", CheckStatus::missing, e.what(), restore);
  }
}

}  // namespace

const char* check_status_name(CheckStatus status) {
  switch (status) {
    case CheckStatus::ok:
      return "ok";
    case CheckStatus::warn:
      return "warn";
    case CheckStatus::missing:
      return "missing";
  }
  return "?";
}

std::string torch_line(const TorchInfo& info) {
  return fmt::format("libtorch {} cuda={} devices={} blas={}", info.version, info.cuda ? "yes" : "no",
                     info.cuda_devices, info.blas_kernels);
}

TorchInfo parse_torch_line(const std::string& text) {
  static const std::regex line(R"(^libtorch (\S+) cuda=(yes|no) devices=(\d+)(?: blas=(\S+))?$)");
  std::istringstream in(text);
  TorchInfo found;
  for (std::string l; std::getline(in, l);) {
    std::smatch m;
    const std::string t(base::trim(l));
    if (!std::regex_match(t, m, line)) continue;
    found.linked = true;
    found.version = m[1];
    found.cuda = m[2] == "yes";
    found.cuda_devices = static_cast<int>(units::to_integer(m[3].str(), 0, 1 << 20).value_or(0));
    if (m[4].matched) found.blas_kernels = m[4];
  }
  if (!found.linked) {
    const std::string said(base::trim(text));
    found.note = fmt::format("no libtorch line in: {}", said.empty() ? "(nothing)" : said);
  }
  return found;
}

std::string parse_l4t_release(const std::string& text) {
  static const std::regex first(R"(^# R(\d+) \(release\), REVISION: ([0-9.]+))");
  std::smatch m;
  const std::string line = text.substr(0, text.find('\n'));
  if (!std::regex_search(line, m, first)) return "";
  return fmt::format("R{}.{}", m[1].str(), m[2].str());
}

bool DoctorReport::ready() const {
  return std::none_of(checks.begin(), checks.end(),
                      [](const DoctorCheck& c) { return c.status == CheckStatus::missing; });
}

DoctorReport run_doctor(const DoctorOptions& o) {
  // A mistyped root read as a machine that is "not a Jetson", exit 1, among lines of checks.
  std::error_code ec;
  if (!o.io && !fs::is_directory(o.root, ec))
    throw OptionError("root",
                      fmt::format("{} {}: name the root of the board's file system (/ on the board, the "
                                  "folder of an emulated tree)",
                                  o.root.string(), fs::exists(o.root, ec) ? "is not a folder" : "does not exist"));
  SysfsIo& io = o.io ? *o.io : real_sysfs_io();
  DoctorReport r;
  std::optional<DevfreqNode> devfreq;
  for (auto& c : board_checks(o, io, devfreq)) r.checks.push_back(std::move(c));
  r.jetson = devfreq.has_value();
  const fs::path tegrastats = o.tegrastats.empty() ? o.root / "usr/bin/tegrastats" : o.tegrastats;
  if (devfreq) {
    r.checks.push_back(devfreq_check(*devfreq, io));
    r.checks.push_back(rails_check(o, io, executable(tegrastats)));
    r.checks.push_back(clock_control_check(*devfreq, io));
  }
  std::vector<fs::path> nvpmodel{o.root / "usr/sbin/nvpmodel", o.root / "pacer-emulator/nvpmodel"};
  if (!o.nvpmodel.empty()) nvpmodel = {o.nvpmodel};
  r.checks.push_back(program_check("nvpmodel", nvpmodel, "the power-mode knob (knob power_mode)"));
  r.checks.push_back(program_check("tegrastats", {tegrastats}, "tegrastats as the power source"));
  if (o.torch) r.checks.push_back(torch_check(*o.torch));
  for (auto& c : store_checks(o)) r.checks.push_back(std::move(c));
  r.checks.push_back(state_check(o));
  return r;
}

std::string format_doctor(const DoctorReport& report) {
  std::string out;
  for (const auto& c : report.checks) {
    out += fmt::format("{:<8}{}: {}", check_status_name(c.status), c.name, c.detail);
    if (!c.fix.empty()) out += fmt::format(" -> {}", c.fix);
    out += '\n';
  }
  if (report.ready())
    out += "ready: this machine has what a validation needs\n";
  else if (!report.jetson)
    out += "not ready: not a Jetson: emulated and replay only\n";
  else
    out += "not ready: fix the lines marked missing, then run pacer doctor again\n";
  return out;
}

}  // namespace pacer::hw
