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

std::vector<KernelPin> cpu_kernel_pins() {
#if defined(__x86_64__)
  // Haswell is OpenBLAS's AVX2 + FMA kernel set (DYNAMIC_ARCH builds, Debian's); the other two
  // name the same instruction set in their own spelling. Each would stop on a CPU without it.
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return {{"OPENBLAS_CORETYPE", "Haswell"}, {"ATEN_CPU_CAPABILITY", "avx2"}, {"DNNL_MAX_CPU_ISA", "AVX2"}};
#endif
  return {};
}

namespace {
bool native_kernels_asked() {
  const char* v = std::getenv(kCpuKernelsVariable);
  return v && ::strcasecmp(v, kNativeCpuKernels) == 0;
}
}  // namespace

bool set_default_cpu_kernels() {
  if (native_kernels_asked()) return false;
  bool set = false;
  for (const auto& pin : cpu_kernel_pins())
    if (!std::getenv(pin.variable.c_str())) set = ::setenv(pin.variable.c_str(), pin.value.c_str(), 1) == 0 || set;
  return set;
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

bool set_training_environment() {
  const bool policy = set_default_openmp_wait_policy();
  const bool kernels = set_default_cpu_kernels();
  return policy || kernels;
}

}  // namespace pacer::base
