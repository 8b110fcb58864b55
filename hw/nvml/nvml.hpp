#pragma once
// NVML backend: libnvidia-ml is loaded at run time (dlopen), so pacer builds and runs without it.
// Reads power, SM clock, the energy counter and the supported clocks. Changes locked clocks or the
// power limit only when the user allowed it (allow_control) and the driver permits it; restore()
// and the destructor put back what was changed.
#include <memory>
#include <string>
#include <vector>

#include "hw/device.hpp"

namespace pacer::hw {

struct NvmlOptions {
  std::string library;  // empty: $PACER_NVML_LIBRARY, else "libnvidia-ml.so.1"
  unsigned index = 0;
  traces::KnobKind knob = traces::KnobKind::gpu_freq;  // gpu_freq (locked SM clocks) | power_limit
  double power_limit_step_w = 25;  // power-limit settings from the minimum to the maximum limit
  bool allow_control = false;      // pin() refuses unless set: NVML changes are global to the GPU
};

struct NvmlSnapshot {
  std::string name;
  double power_w = 0;
  double sm_clock_hz = 0;
  double mem_clock_hz = 0;
  double energy_j = traces::kNaN;  // since driver load; NaN before Volta
  double power_limit_w = traces::kNaN;
  double temperature_c = traces::kNaN;
  std::vector<double> graphics_clocks_hz;  // at the highest memory clock, ascending
};

class NvmlDevice final : public Device {
 public:
  // Throws Error (never crashes) when the library or the GPU is missing.
  explicit NvmlDevice(NvmlOptions options = {});
  ~NvmlDevice() override;
  NvmlDevice(const NvmlDevice&) = delete;
  NvmlDevice& operator=(const NvmlDevice&) = delete;

  std::string name() const override;
  bool emulated() const override { return false; }
  const traces::KnobSpace& knob() const override { return knob_; }
  std::vector<std::vector<double>> settings() const override;
  void pin(const std::vector<double>& setting) override;
  std::vector<double> current() const override;
  PowerReading read_power() override;
  std::vector<std::string> power_rails() const override { return {"nvml:board"}; }
  void restore() override;
  double temperature_c() const override;
  // Locked graphics clocks leave the memory clock to the driver; under a power limit both float.
  std::string floating_clocks() const override {
    return knob_.kind == traces::KnobKind::power_limit ? "gpu, memory (under the power limit)" : "memory";
  }
  std::string board_model() const override { return gpu_name_; }

  NvmlSnapshot snapshot() const;
  double energy_j() const;  // the driver's counter; NaN when unsupported

 private:
  struct Api;
  std::unique_ptr<Api> api_;
  NvmlOptions options_;
  traces::KnobSpace knob_;
  std::string gpu_name_;
  std::vector<double> clocks_hz_;
  double min_limit_w_ = 0, max_limit_w_ = 0;
  bool clocks_locked_ = false;
  bool limit_changed_ = false;
  double saved_limit_w_ = 0;
};

}  // namespace pacer::hw
