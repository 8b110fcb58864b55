#include "hw/nvml/nvml.hpp"

#include <dlfcn.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "base/error.hpp"
#include "base/units.hpp"

namespace pacer::hw {

namespace {
using nvmlReturn = int;
using nvmlDev = void*;
constexpr nvmlReturn kSuccess = 0;
constexpr nvmlReturn kNotSupported = 3;
constexpr nvmlReturn kNoPermission = 4;
constexpr int kClockGraphics = 0, kClockSm = 1, kClockMem = 2;
}  // namespace

// Function table filled by dlsym; the names and signatures are NVML's C API (nvml.h).
struct NvmlDevice::Api {
  void* handle = nullptr;
  nvmlDev dev = nullptr;
  nvmlReturn (*init)() = nullptr;
  nvmlReturn (*shutdown)() = nullptr;
  const char* (*error_string)(nvmlReturn) = nullptr;
  nvmlReturn (*get_count)(unsigned*) = nullptr;
  nvmlReturn (*get_handle)(unsigned, nvmlDev*) = nullptr;
  nvmlReturn (*get_name)(nvmlDev, char*, unsigned) = nullptr;
  nvmlReturn (*get_power)(nvmlDev, unsigned*) = nullptr;
  nvmlReturn (*get_clock)(nvmlDev, int, unsigned*) = nullptr;
  nvmlReturn (*get_energy)(nvmlDev, unsigned long long*) = nullptr;
  nvmlReturn (*get_mem_clocks)(nvmlDev, unsigned*, unsigned*) = nullptr;
  nvmlReturn (*get_gr_clocks)(nvmlDev, unsigned, unsigned*, unsigned*) = nullptr;
  nvmlReturn (*set_locked)(nvmlDev, unsigned, unsigned) = nullptr;
  nvmlReturn (*reset_locked)(nvmlDev) = nullptr;
  nvmlReturn (*get_limit)(nvmlDev, unsigned*) = nullptr;
  nvmlReturn (*get_limit_range)(nvmlDev, unsigned*, unsigned*) = nullptr;
  nvmlReturn (*set_limit)(nvmlDev, unsigned) = nullptr;
  nvmlReturn (*get_temp)(nvmlDev, int, unsigned*) = nullptr;
  bool initialised = false;

  ~Api() {
    if (initialised && shutdown) shutdown();
    if (handle) ::dlclose(handle);
  }
  std::string err(nvmlReturn r) const {
    return error_string ? fmt::format("{} (NVML error {})", error_string(r), r) : fmt::format("NVML error {}", r);
  }
  void check(nvmlReturn r, const char* what) const {
    if (r == kSuccess) return;
    if (r == kNoPermission)
      throw Error(fmt::format("NVML {}: {}; changing clocks or power limits needs root (sudo)", what, err(r)));
    throw Error(fmt::format("NVML {}: {}", what, err(r)));
  }
};

namespace {
template <typename F>
void bind_symbol(void* handle, F& fn, const char* symbol, bool required, const std::string& lib) {
  fn = reinterpret_cast<F>(::dlsym(handle, symbol));
  if (!fn && required)
    throw Error(fmt::format("{} lacks {}: the NVIDIA driver is too old or the library is not NVML", lib, symbol));
}
}  // namespace

NvmlDevice::NvmlDevice(NvmlOptions options) : api_(std::make_unique<Api>()), options_(std::move(options)) {
  std::string lib = options_.library;
  if (lib.empty()) {
    const char* env = std::getenv("PACER_NVML_LIBRARY");
    lib = env && *env ? env : "libnvidia-ml.so.1";
  }
  api_->handle = ::dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!api_->handle) {
    const char* why = ::dlerror();
    throw Error(fmt::format("NVML is not available ({}): install the NVIDIA driver, or use the jetson or an "
                            "emulated device on machines without an NVIDIA GPU",
                            why ? why : lib));
  }
  auto* h = api_->handle;
  bind_symbol(h, api_->init, "nvmlInit_v2", true, lib);
  bind_symbol(h, api_->shutdown, "nvmlShutdown", true, lib);
  bind_symbol(h, api_->error_string, "nvmlErrorString", false, lib);
  bind_symbol(h, api_->get_count, "nvmlDeviceGetCount_v2", true, lib);
  bind_symbol(h, api_->get_handle, "nvmlDeviceGetHandleByIndex_v2", true, lib);
  bind_symbol(h, api_->get_name, "nvmlDeviceGetName", true, lib);
  bind_symbol(h, api_->get_power, "nvmlDeviceGetPowerUsage", true, lib);
  bind_symbol(h, api_->get_clock, "nvmlDeviceGetClockInfo", true, lib);
  bind_symbol(h, api_->get_energy, "nvmlDeviceGetTotalEnergyConsumption", false, lib);
  bind_symbol(h, api_->get_mem_clocks, "nvmlDeviceGetSupportedMemoryClocks", false, lib);
  bind_symbol(h, api_->get_gr_clocks, "nvmlDeviceGetSupportedGraphicsClocks", false, lib);
  bind_symbol(h, api_->set_locked, "nvmlDeviceSetGpuLockedClocks", false, lib);
  bind_symbol(h, api_->reset_locked, "nvmlDeviceResetGpuLockedClocks", false, lib);
  bind_symbol(h, api_->get_limit, "nvmlDeviceGetPowerManagementLimit", false, lib);
  bind_symbol(h, api_->get_limit_range, "nvmlDeviceGetPowerManagementLimitConstraints", false, lib);
  bind_symbol(h, api_->set_limit, "nvmlDeviceSetPowerManagementLimit", false, lib);
  bind_symbol(h, api_->get_temp, "nvmlDeviceGetTemperature", false, lib);

  const nvmlReturn r = api_->init();
  if (r != kSuccess)
    throw Error(fmt::format("NVML could not initialise: {}; is the NVIDIA driver loaded (nvidia-smi)?", api_->err(r)));
  api_->initialised = true;
  unsigned count = 0;
  api_->check(api_->get_count(&count), "device count");
  if (options_.index >= count)
    throw Error(fmt::format("NVIDIA GPU {} does not exist: this machine has {} NVIDIA GPU(s), numbered from 0",
                            options_.index, count));
  api_->check(api_->get_handle(options_.index, &api_->dev), "device handle");
  char name[96] = {0};
  api_->check(api_->get_name(api_->dev, name, sizeof name), "device name");
  gpu_name_ = name;

  if (options_.knob == traces::KnobKind::gpu_freq) {
    knob_ = traces::KnobSpace::gpu_frequency();
    if (api_->get_mem_clocks && api_->get_gr_clocks) {
      unsigned n = 64;
      std::vector<unsigned> mem(n);
      if (api_->get_mem_clocks(api_->dev, &n, mem.data()) == kSuccess && n > 0) {
        const unsigned top_mem = *std::max_element(mem.begin(), mem.begin() + n);
        unsigned m = 512;
        std::vector<unsigned> gr(m);
        if (api_->get_gr_clocks(api_->dev, top_mem, &m, gr.data()) == kSuccess)
          for (unsigned i = 0; i < m; ++i) clocks_hz_.push_back(gr[i] * 1e6);
      }
    }
    std::sort(clocks_hz_.begin(), clocks_hz_.end());
  } else if (options_.knob == traces::KnobKind::power_limit) {
    knob_ = traces::KnobSpace::power_limit();
    if (!api_->get_limit_range) throw Error("this NVML has no power-limit constraints: profile the gpu_freq knob instead");
    unsigned lo = 0, hi = 0;
    api_->check(api_->get_limit_range(api_->dev, &lo, &hi), "power-limit constraints");
    min_limit_w_ = lo / 1000.0;
    max_limit_w_ = hi / 1000.0;
  } else {
    throw OptionError("nvml-knob", fmt::format("'{}' is not gpu_freq or power_limit", options_.knob));
  }
}

NvmlDevice::~NvmlDevice() {
  try {
    restore();
  } catch (const std::exception& e) {
    spdlog::error("{} (reset by hand: nvidia-smi -rgc / nvidia-smi -pl)", e.what());
  }
}

std::string NvmlDevice::name() const { return fmt::format("nvml:{} {}", options_.index, gpu_name_); }

std::vector<std::vector<double>> NvmlDevice::settings() const {
  std::vector<std::vector<double>> out;
  if (knob_.kind == traces::KnobKind::gpu_freq) {
    for (double f : clocks_hz_) out.push_back({f});
  } else {
    for (double w = min_limit_w_; w <= max_limit_w_ + 1e-9; w += options_.power_limit_step_w) out.push_back({w});
    if (out.empty() || std::abs(out.back()[0] - max_limit_w_) > 1e-9) out.push_back({max_limit_w_});
  }
  return out;
}

void NvmlDevice::pin(const std::vector<double>& setting) {
  if (setting.size() != 1) throw Error("an NVML setting is one value");
  if (!options_.allow_control)
    throw OptionError("allow-gpu-control", fmt::format("pinning {} on {} changes the GPU for every user: permit "
                                                       "GPU control explicitly to allow it",
                                                       knob_.kind, name()));
  if (knob_.kind == traces::KnobKind::gpu_freq) {
    if (!api_->set_locked) throw Error("this NVML cannot lock clocks (needs Volta or newer and a recent driver)");
    if (std::none_of(clocks_hz_.begin(), clocks_hz_.end(), [&](double f) { return std::abs(f - setting[0]) < 0.5e6; }))
      throw Error(fmt::format("{} is not a supported graphics clock of {}",
                              units::format(setting[0], units::Dimension::Frequency), name()));
    const auto mhz = static_cast<unsigned>(std::lround(setting[0] / 1e6));
    api_->check(api_->set_locked(api_->dev, mhz, mhz), "lock clocks");
    clocks_locked_ = true;
  } else {
    if (!api_->set_limit || !api_->get_limit) throw Error("this NVML cannot set the power limit");
    if (setting[0] < min_limit_w_ - 1e-9 || setting[0] > max_limit_w_ + 1e-9)
      throw Error(fmt::format("power limit {} is outside [{}, {}] for {}",
                              units::format(setting[0], units::Dimension::Power),
                              units::format(min_limit_w_, units::Dimension::Power),
                              units::format(max_limit_w_, units::Dimension::Power), name()));
    if (!limit_changed_) {
      unsigned mw = 0;
      api_->check(api_->get_limit(api_->dev, &mw), "read power limit");
      saved_limit_w_ = mw / 1000.0;
    }
    api_->check(api_->set_limit(api_->dev, static_cast<unsigned>(std::lround(setting[0] * 1000))), "set power limit");
    limit_changed_ = true;
  }
}

std::vector<double> NvmlDevice::current() const {
  if (knob_.kind == traces::KnobKind::gpu_freq) {
    unsigned mhz = 0;
    api_->check(api_->get_clock(api_->dev, kClockSm, &mhz), "SM clock");
    return {mhz * 1e6};
  }
  unsigned mw = 0;
  api_->check(api_->get_limit(api_->dev, &mw), "power limit");
  return {mw / 1000.0};
}

PowerReading NvmlDevice::read_power() {
  unsigned mw = 0;
  api_->check(api_->get_power(api_->dev, &mw), "power usage");
  PowerReading r;
  r.total_w = mw / 1000.0;
  r.gpu_w = r.total_w;
  return r;
}

double NvmlDevice::energy_j() const {
  if (!api_->get_energy) return traces::kNaN;
  unsigned long long mj = 0;
  const nvmlReturn r = api_->get_energy(api_->dev, &mj);
  if (r == kNotSupported) return traces::kNaN;
  api_->check(r, "energy counter");
  return static_cast<double>(mj) / 1000.0;
}

double NvmlDevice::temperature_c() const {
  unsigned c = 0;
  if (!api_->get_temp || api_->get_temp(api_->dev, 0, &c) != kSuccess) return traces::kNaN;
  return c;
}

NvmlSnapshot NvmlDevice::snapshot() const {
  NvmlSnapshot s;
  s.name = gpu_name_;
  unsigned v = 0;
  api_->check(api_->get_power(api_->dev, &v), "power usage");
  s.power_w = v / 1000.0;
  api_->check(api_->get_clock(api_->dev, kClockSm, &v), "SM clock");
  s.sm_clock_hz = v * 1e6;
  if (api_->get_clock(api_->dev, kClockMem, &v) == kSuccess) s.mem_clock_hz = v * 1e6;
  (void)kClockGraphics;
  s.energy_j = energy_j();
  if (api_->get_limit && api_->get_limit(api_->dev, &v) == kSuccess) s.power_limit_w = v / 1000.0;
  s.temperature_c = temperature_c();
  s.graphics_clocks_hz = clocks_hz_;
  return s;
}

void NvmlDevice::restore() {
  if (clocks_locked_) {
    api_->check(api_->reset_locked(api_->dev), "reset locked clocks");
    clocks_locked_ = false;
  }
  if (limit_changed_) {
    api_->check(api_->set_limit(api_->dev, static_cast<unsigned>(std::lround(saved_limit_w_ * 1000))),
                "restore power limit");
    limit_changed_ = false;
  }
}

}  // namespace pacer::hw
