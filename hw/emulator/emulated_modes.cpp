#include "hw/emulator/emulated_modes.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <bit>
#include <cmath>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "base/error.hpp"
#include "base/shell.hpp"
#include "hw/emulator/emulated_tree.hpp"
#include "hw/jetson/sysfs_io.hpp"

namespace pacer::hw {
namespace fs = std::filesystem;

namespace {

fs::path cpu_dir(const fs::path& root, int n) {
  return root / fmt::format("sys/devices/system/cpu/cpu{}", n);
}
fs::path emc_cap(const fs::path& root) {
  return root / "sys/kernel/nvpmodel_emc_cap/emc_iso_cap";
}
fs::path tpc_mask(const fs::path& root) {
  return root / "sys/devices/gpu.0/tpc_pg_mask";
}

// The writes of one mode, in nvpmodel's order: CPUs online, their clock caps, GPU range, EMC, TPCs.
std::vector<std::pair<fs::path, std::string>> mode_writes(const fs::path& root, const traces::DeviceSpec& d,
                                                          const traces::ModeCaps& caps) {
  const traces::ModeCaps top = traces::mode_maxima(d);
  std::vector<std::pair<fs::path, std::string>> w;
  for (int n = 0; n < top.cpu_cores; ++n) w.emplace_back(cpu_dir(root, n) / "online", n < caps.cpu_cores ? "1" : "0");
  for (int n = 0; n < caps.cpu_cores; ++n)
    w.emplace_back(cpu_dir(root, n) / "cpufreq/scaling_max_freq", std::to_string(std::llround(caps.cpu_freq_hz / 1e3)));
  double gpu = d.gpu_freqs_hz.front();
  for (double f : d.gpu_freqs_hz)
    if (f <= caps.gpu_freq_hz * (1 + 1e-9)) gpu = f;
  const fs::path df = root / d.devfreq_path;
  w.emplace_back(df / "min_freq", std::to_string(std::llround(d.gpu_freqs_hz.front())));
  w.emplace_back(df / "max_freq", std::to_string(std::llround(gpu)));
  w.emplace_back(emc_cap(root), std::to_string(std::llround(caps.mem_freq_hz)));
  if (top.gpu_tpcs > 0) {
    const unsigned all = (1u << top.gpu_tpcs) - 1u, on = (1u << caps.gpu_tpcs) - 1u;
    w.emplace_back(tpc_mask(root), std::to_string(all & ~on));
  }
  return w;
}

long long read_ll(const fs::path& p) {
  try {
    return parse_sysfs_int(real_sysfs_io().read(p), p);
  } catch (const Error&) {
    return -1;
  }
}

}  // namespace

bool has_complete_modes(const traces::DeviceSpec& device) {
  if (device.power_modes.empty() || device.gpu_freqs_hz.empty()) return false;
  try {
    traces::mode_settings(device);
    return true;
  } catch (const Error&) {
    return false;
  }
}

void write_mode_files(const fs::path& root, const traces::DeviceSpec& device, const traces::ModeCaps& caps,
                      bool gpu_range) {
  const traces::ModeCaps top = traces::mode_maxima(device);
  for (int n = 0; n < top.cpu_cores; ++n) {
    fs::create_directories(cpu_dir(root, n) / "cpufreq");
    const fs::path info = cpu_dir(root, n) / "cpufreq/cpuinfo_max_freq";
    if (!fs::exists(info)) write_small_file_atomic(info, std::to_string(std::llround(top.cpu_freq_hz / 1e3)));
  }
  fs::create_directories(emc_cap(root).parent_path());
  if (top.gpu_tpcs > 0) fs::create_directories(tpc_mask(root).parent_path());
  const fs::path df = root / device.devfreq_path;
  for (const auto& [path, value] : mode_writes(root, device, caps))
    if (gpu_range || path.parent_path() != df) write_small_file_atomic(path, value);
}

traces::ModeCaps read_mode_files(const fs::path& root, const traces::DeviceSpec& device) {
  const traces::ModeCaps top = traces::mode_maxima(device);
  traces::ModeCaps c;
  for (int n = 0; n < top.cpu_cores; ++n) {
    if (!fs::exists(cpu_dir(root, n))) continue;
    const long long online = fs::exists(cpu_dir(root, n) / "online") ? read_ll(cpu_dir(root, n) / "online") : 1;
    if (online != 1) continue;
    ++c.cpu_cores;
    const long long khz = read_ll(cpu_dir(root, n) / "cpufreq/scaling_max_freq");
    if (khz > 0) c.cpu_freq_hz = std::max(c.cpu_freq_hz, static_cast<double>(khz) * 1e3);
  }
  const long long gpu = read_ll(root / device.devfreq_path / "max_freq");
  if (gpu > 0) c.gpu_freq_hz = static_cast<double>(gpu);
  const long long emc = read_ll(emc_cap(root));
  if (emc > 0) c.mem_freq_hz = static_cast<double>(emc);
  const long long mask = top.gpu_tpcs > 0 ? read_ll(tpc_mask(root)) : -1;
  if (mask >= 0) c.gpu_tpcs = std::max(0, top.gpu_tpcs - std::popcount(static_cast<unsigned long long>(mask)));
  return c;
}

fs::path write_fake_nvpmodel(const fs::path& root, const traces::DeviceSpec& device) {
  const fs::path ctl = root / "pacer-emulator";
  fs::create_directories(ctl);
  const fs::path script = ctl / "nvpmodel", state = ctl / "nvpmodel_mode";
  std::string names, sets;
  for (const auto& m : device.power_modes) {
    names += fmt::format("    {}) name={} ;;\n", m.id, base::shell_quote(m.name));
    sets += fmt::format("    {})\n", m.id);
    for (const auto& [path, value] : mode_writes(root, device, traces::resolved_caps(m, device)))
      sets += fmt::format("      printf '%s\\n' {} > {} || exit 1\n", base::shell_quote(value),
                          base::shell_quote(path.string()));
    sets += "      ;;\n";
  }
  const std::string text = fmt::format(
      "#!/bin/sh\n"
      "# nvpmodel of the emulated {} served under {} (written by pacer emulate; hw/emulator/emulated_modes.cpp).\n"
      "state={}\n"
      "case \"$1\" in\n"
      "  -q)\n"
      "    id=$(cat \"$state\")\n"
      "    case \"$id\" in\n{}"
      "    *) echo \"NVPM ERROR: unknown mode $id in $state\" >&2; exit 1 ;;\n"
      "    esac\n"
      "    printf 'NV Power Mode: %s\\n%s\\n' \"$name\" \"$id\" ;;\n"
      "  -m)\n"
      "    case \"$2\" in\n{}"
      "    *) echo \"NVPM ERROR: Invalid power mode id: $2\" >&2; exit 1 ;;\n"
      "    esac\n"
      "    printf '%s\\n' \"$2\" > \"$state\" ;;\n"
      "  *) echo 'usage: nvpmodel -q | -m ID' >&2; exit 2 ;;\n"
      "esac\n",
      device.name, root.string(), base::shell_quote(state.string()), names, sets);
  write_small_file_atomic(script, text);
  ::chmod(script.c_str(), 0755);
  write_small_file_atomic(state, std::to_string(device.power_modes.front().id));
  return script;
}

}  // namespace pacer::hw
