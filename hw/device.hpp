#pragma once
// The one interface through which pacer touches a device: its knob space and settings, pinning a
// setting, reading power, restoring what it changed. Backends: Jetson sysfs (jetson_sysfs.hpp),
// NVML (nvml.hpp), emulated Jetson (emulated.hpp).
#include <functional>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "traces/records.hpp"

namespace pacer::hw {

// One power reading. total_w is the module total (the total rail, or the sum of the rails named
// in Device::power_rails() when the board has no total rail); gpu_w is NaN without a GPU rail.
struct PowerReading {
  double total_w = traces::kNaN;
  double gpu_w = traces::kNaN;
};

// Why a power reading failed (docs/reliability.md, "Sensor and devfreq faults"): the profiler
// decides a point's outcome from it.
enum class SensorFault {
  read_error,  // the read failed (EIO, ETIMEDOUT, ...): counted; too many skip the point
  missing,     // the sensor file is gone (ENOENT, ENODEV): the run stops
  garbage,     // not a number, or a value no INA3221 rail can hold: counted like a failed read
};

class SensorError : public Error {
 public:
  SensorError(const std::string& message, SensorFault fault) : Error(message), fault(fault) {}
  SensorFault fault;
};

// pin() wrote the setting but the device reports another one in force (a throttled or railgated
// GPU): the profiler records the point as skipped with this message and goes on.
class SettingNotApplied : public Error {
 public:
  SettingNotApplied(const std::string& message, std::vector<double> requested, std::vector<double> actual)
      : Error(message), requested(std::move(requested)), actual(std::move(actual)) {}
  std::vector<double> requested, actual;
};

class Device {
 public:
  virtual ~Device() = default;

  virtual std::string name() const = 0;  // "jetson-nano (emulated)", "jetson sysfs /", "nvml:0 NVIDIA H100"
  virtual bool emulated() const = 0;     // results from it are labelled emulated in files and output
  virtual const traces::KnobSpace& knob() const = 0;
  // Every setting the device accepts, ascending (for a one-dimensional knob: one value each).
  virtual std::vector<std::vector<double>> settings() const = 0;
  // Pins a setting; throws Error when the setting is not supported or the device refuses it, and
  // SettingNotApplied when the device accepted it but runs at another one.
  virtual void pin(const std::vector<double>& setting) = 0;
  // The setting in force now, as the device reports it (cur_freq on a Jetson).
  virtual std::vector<double> current() const = 0;
  // Throws Error when no sensor can be read (SensorError says why); callers that poll (the
  // sampler) count the failure.
  virtual PowerReading read_power() = 0;
  // What a background sampler calls. The default calls read_power() on this object; a backend
  // whose reads can block (sysfs) returns a reader that owns everything it touches, so a sampler
  // may abandon a blocked read (PowerSampler::stop) without it touching a destroyed device later.
  virtual std::function<PowerReading()> power_reader() {
    return [this] { return read_power(); };
  }
  // Which sensor rails make up PowerReading::total_w (and, last, the GPU rail when present).
  virtual std::vector<std::string> power_rails() const = 0;
  // Puts back every setting pin() changed; idempotent; backends also call it from their destructor.
  virtual void restore() = 0;
  // Sensor temperature in Celsius when the backend has one, else NaN.
  virtual double temperature_c() const { return traces::kNaN; }
  // The clocks that float (follow their governors) while a setting is pinned, recorded with every
  // profile (ProfileTable::floating_clocks): "" when none does.
  virtual std::string floating_clocks() const { return ""; }
  // The board as it identifies itself (a Jetson's device-tree model, the NVML device name, an
  // emulated board's catalog name), recorded with every profile point and validation run; "" when
  // the backend cannot tell.
  virtual std::string board_model() const { return ""; }
};

// The machine this process runs on, recorded with every measured point and run: the Slurm node
// name ($SLURMD_NODENAME) when Slurm started this process, else the host name.
std::string node_name();

// The settings of a one-dimensional knob (GPU frequencies in Hz, power limits in W), ascending as
// the device lists them.
inline std::vector<double> knob_values(const Device& device) {
  std::vector<double> out;
  for (const auto& s : device.settings()) out.push_back(s.at(0));
  return out;
}

}  // namespace pacer::hw
