#include "base/cpu_threads.hpp"

#include <fmt/format.h>
#include <sched.h>
#include <stdlib.h>
#include <strings.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <sstream>
#include <thread>

#include "base/error.hpp"

namespace pacer::base {

int cpus_available() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

int max_cpu_threads() {
  return cpus_available();
}

CpuLoad parse_loadavg(const std::string& text) {
  std::istringstream in(text);
  double l1 = 0, l5 = 0, l15 = 0;
  long running = 0, total = 0;
  char slash = 0;
  if (!(in >> l1 >> l5 >> l15 >> running >> slash >> total) || slash != '/' || !(l1 >= 0) || running < 0 ||
      total < running)
    throw Error(fmt::format("load average '{}' is not in the form of /proc/loadavg", text.substr(0, 80)));
  CpuLoad load;
  load.load_1min = l1;
  load.running_others = static_cast<int>(std::max(0L, running - 1));  // the reading task runs
  return load;
}

namespace {

int online_cpus() {
  const long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

std::string read_text(const char* path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return in ? ss.str() : std::string();
}

}  // namespace

CpuLoad read_cpu_load() {
  CpuLoad load;
  bool have = false;
  const char* emulated = std::getenv(kLoadAvgVariable);
  if (emulated) {
    try {
      load = parse_loadavg(emulated);
    } catch (const Error& e) {
      throw Error(fmt::format("{}: {} (unset it to read the machine's)", kLoadAvgVariable, e.what()));
    }
    have = true;
  }
  for (int i = 0; i < 3 && !emulated; ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const std::string text = read_text("/proc/loadavg");
    if (text.empty()) break;
    try {
      const CpuLoad now = parse_loadavg(text);
      load.load_1min = now.load_1min;
      load.running_others = have ? std::min(load.running_others, now.running_others) : now.running_others;
      have = true;
    } catch (const Error&) {
      break;
    }
  }
  if (!have) {
    double avg[1] = {0};
    load.load_1min = getloadavg(avg, 1) == 1 ? std::max(0.0, avg[0]) : 0.0;
    load.running_others = 0;
  }
  load.cpus = cpus_available();
  load.online_cpus = std::max(load.cpus, online_cpus());
  return load;
}

int free_cpu_threads(const CpuLoad& load) {
  const int cpus = std::max(1, load.cpus);
  const double busy_machine = std::max(std::max(0.0, load.load_1min), static_cast<double>(load.running_others));
  const double share = static_cast<double>(cpus) / std::max(cpus, load.online_cpus);
  const int busy = static_cast<int>(std::lround(busy_machine * share));
  return std::clamp(cpus - busy, 1, cpus);
}

int free_cpu_threads() {
  return free_cpu_threads(read_cpu_load());
}

bool set_default_openmp_wait_policy() {
  if (std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT")) return false;
  return ::setenv("GOMP_SPINCOUNT", kOpenMpSpinCount, 1) == 0;
}

std::vector<KernelPin> avx2_kernel_pins() {
  // Haswell is OpenBLAS's AVX2 + FMA kernel set (DYNAMIC_ARCH builds, Debian's); the other two
  // name the same instruction set in their own spelling. Each would stop on a CPU without it.
  return {{"OPENBLAS_CORETYPE", "Haswell"}, {"ATEN_CPU_CAPABILITY", "avx2"}, {"DNNL_MAX_CPU_ISA", "AVX2"}};
}

std::vector<KernelPin> cpu_kernel_pins() {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return avx2_kernel_pins();
#endif
  return {};
}

std::vector<std::string> cpu_kernel_variables() {
  std::vector<std::string> names = {kCpuKernelsVariable};
  for (const auto& pin : avx2_kernel_pins()) names.push_back(pin.variable);
  return names;
}

namespace {

std::optional<std::string> env_value(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  return v ? std::optional<std::string>(v) : std::nullopt;
}

// Whether PACER_CPU_KERNELS asks for this CPU's own kernels; Error for a value it does not know.
bool native_kernels_asked() {
  const char* v = std::getenv(kCpuKernelsVariable);
  if (!v || ::strcasecmp(v, kPinnedCpuKernels) == 0) return false;
  if (::strcasecmp(v, kNativeCpuKernels) == 0) return true;
  throw Error(
      fmt::format("{}={}: give {} (the default: one CPU kernel set on every machine with AVX2) or {} (this "
                  "CPU's own kernels), or unset it",
                  kCpuKernelsVariable, v, kPinnedCpuKernels, kNativeCpuKernels));
}

void set_env(std::vector<EnvChange>& changes, const std::string& name, const std::optional<std::string>& value) {
  changes.push_back({name, env_value(name)});
  if (value)
    ::setenv(name.c_str(), value->c_str(), 1);
  else
    ::unsetenv(name.c_str());
}

}  // namespace

void undo_env_changes(const std::vector<EnvChange>& changes) {
  for (auto it = changes.rbegin(); it != changes.rend(); ++it)
    if (it->before)
      ::setenv(it->variable.c_str(), it->before->c_str(), 1);
    else
      ::unsetenv(it->variable.c_str());
}

std::vector<EnvChange> set_default_cpu_kernels() {
  std::vector<EnvChange> changes;
  const bool native = native_kernels_asked();
  const std::vector<KernelPin> pins = cpu_kernel_pins();
  if (pins.empty()) {
    // A pin this CPU cannot run, come with the environment of a pacer elsewhere: removed.
    for (const auto& pin : avx2_kernel_pins())
      if (env_value(pin.variable) == pin.value) set_env(changes, pin.variable, std::nullopt);
    return changes;
  }
  if (native) return changes;
  for (const auto& pin : pins)
    if (!env_value(pin.variable)) set_env(changes, pin.variable, pin.value);
  return changes;
}

std::string cpu_kernels() {
  const std::vector<KernelPin> pins = cpu_kernel_pins();
  std::string as_set;
  bool pinned = true, any = false;
  for (const auto& pin : pins) {
    const char* v = std::getenv(pin.variable.c_str());
    pinned = pinned && v && pin.value == v;
    any = any || v;
    as_set += fmt::format("{}{}{}", as_set.empty() ? "" : ", ", pin.variable, v ? fmt::format("={}", v) : " unset");
  }
  if (!any) return kNativeCpuKernels;  // nothing to pin here, or nothing pinned (PACER_CPU_KERNELS=native)
  return pinned ? kPinnedCpuKernels : as_set;
}

std::vector<EnvChange> set_training_environment() {
  std::vector<EnvChange> changes = set_default_cpu_kernels();  // first: it may refuse the variable
  const std::optional<std::string> spin = env_value("GOMP_SPINCOUNT");
  if (set_default_openmp_wait_policy()) changes.push_back({"GOMP_SPINCOUNT", spin});
  return changes;
}

}  // namespace pacer::base
