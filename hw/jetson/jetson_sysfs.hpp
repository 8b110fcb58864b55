#pragma once
// Jetson sysfs backend: GPU devfreq pinning with guaranteed restore, INA3221 power rails.
// Works on a real board (root "/") and, unchanged, on a fake or live emulated tree (--sysfs-root).
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hw/device.hpp"
#include "hw/jetson/restore_guard.hpp"
#include "hw/jetson/sysfs_io.hpp"
#include "traces/catalog/power_modes.hpp"

namespace pacer::hw {

// Of-node names of Jetson GPUs (facts/jetson.md s1.1).
const std::vector<std::string>& jetson_gpu_node_names();

struct DevfreqNode {
  std::filesystem::path dir;  // the devfreq directory (holds min_freq, max_freq, cur_freq, ...)
  std::string node;           // entry name under /sys/class/devfreq
  std::string of_name;        // "gpu", "gp10b", "gv11b", "ga10b"
};

// Scans <root>/sys/class/devfreq/*/device/of_node/name. Throws Error when no GPU entry exists.
DevfreqNode discover_gpu_devfreq(const std::filesystem::path& root, const SysfsIo& io);

struct PowerRail {
  std::string name;                    // rail_name_N / inN_label, e.g. "POM_5V_IN"
  std::string layout;                  // "iio" | "hwmon"
  std::string chip;                    // "6-0040"
  int channel = 0;                     // as in the file names: 0-based iio, 1-based hwmon
  std::filesystem::path power_file;    // iio in_powerN_input [mW]; empty for hwmon
  std::filesystem::path voltage_file;  // mV
  std::filesystem::path current_file;  // mA
};

// Every INA3221 channel under <root>/sys/bus/i2c/drivers/{ina3221x,ina3221}, NC rails skipped.
std::vector<PowerRail> discover_rails(const std::filesystem::path& root, const SysfsIo& io);

// Which rails make the module total and which is the GPU rail. Exact names, not substrings: a
// total is POM_5V_IN or VDD_IN; a GPU rail has a GPU token and no CPU token (VDD_CPU_GPU_CV is a
// shared rail, not a GPU one). Without a total rail, the total is the sum of all rails.
struct RailSelection {
  std::vector<PowerRail> total;  // one rail, or all rails when summed
  bool summed = false;
  std::optional<PowerRail> gpu;
};
RailSelection select_rails(const std::vector<PowerRail>& rails);

// Power of one rail in W. Throws SensorError naming the rail and the file: `missing` when a file is
// gone (ENOENT, ENODEV), `read_error` for another failed read, `garbage` for a value that is not an
// integer or not plausible (power below -50 mW or above 1 kW, bus voltage outside 0 .. 26 V;
// -50 .. 0 mW is an idle rail's shunt offset and reads as 0).
double read_rail_w(const PowerRail& rail, const SysfsIo& io);

// The board's model as its device tree names it: <root>/proc/device-tree/model (on a Jetson the
// same file as <root>/sys/firmware/devicetree/base/model, which is read when /proc has none),
// without the trailing NUL; "" when the tree has neither.
std::string read_board_model(const std::filesystem::path& root, const SysfsIo& io);

struct JetsonSysfsOptions {
  std::filesystem::path root = "/";
  std::filesystem::path state_file;  // empty: default_state_file(root)
  std::shared_ptr<SysfsIo> io;       // null: the real files
  double verify_timeout_s = 1.0;     // how long cur_freq may take to follow a pin
  BusyRetry busy_retry;              // min_freq/max_freq writes answered with EBUSY are retried
  bool signal_restore = true;        // arm the SIGINT/SIGTERM restore handler
};

class JetsonSysfsDevice final : public Device {
 public:
  // Discovers the GPU and the rails; restores a state file left by a crashed run first. Throws
  // Error when no GPU devfreq node exists or another live pacer holds the state file.
  explicit JetsonSysfsDevice(JetsonSysfsOptions options);
  ~JetsonSysfsDevice() override;
  JetsonSysfsDevice(const JetsonSysfsDevice&) = delete;
  JetsonSysfsDevice& operator=(const JetsonSysfsDevice&) = delete;

  std::string name() const override;
  bool emulated() const override;
  const traces::KnobSpace& knob() const override { return knob_; }
  std::vector<std::vector<double>> settings() const override;
  void pin(const std::vector<double>& setting) override;
  std::vector<double> current() const override;
  PowerReading read_power() override;
  std::function<PowerReading()> power_reader() override;
  std::vector<std::string> power_rails() const override;
  void restore() override;
  double temperature_c() const override;
  // Only the GPU clock is pinned; CPU and EMC follow their governors (an emulated tree has no such noise).
  std::string floating_clocks() const override { return emulated() ? "" : traces::kGpuPinnedFloatingClocks; }
  // The device-tree model ("NVIDIA Jetson Nano Developer Kit"), or the GPU's of_node name when the
  // tree has no model ("Jetson with GPU gv11b (no device-tree model)").
  std::string board_model() const override { return board_model_; }

  const DevfreqNode& devfreq() const { return devfreq_; }
  const RailSelection& rails() const { return rails_; }
  const std::filesystem::path& state_file() const { return state_file_; }
  const std::filesystem::path& root() const { return options_.root; }
  void pin_frequency(double freq_hz);

 private:
  long long read_int(const std::filesystem::path& p) const;
  void write_value(const std::filesystem::path& p, long long value);

  JetsonSysfsOptions options_;
  SysfsIo* io_;
  traces::KnobSpace knob_ = traces::KnobSpace::gpu_frequency();
  DevfreqNode devfreq_;
  std::vector<double> freqs_hz_;
  RailSelection rails_;
  std::optional<std::filesystem::path> thermal_file_;
  std::string board_model_;
  std::filesystem::path state_file_;
  bool saved_ = false;
  long long saved_min_hz_ = 0, saved_max_hz_ = 0;
  SignalRestoreGuard guard_;
};

// `pacer restore`: replays the state file of the device under `sysfs_root` and removes it. Returns
// a line for the user; throws Error when the writes did not take, another pacer still runs, the
// state folder is not private to this user, or the file asks for a write that is not a frequency
// limit of a devfreq node under `sysfs_root` (then nothing is written).
std::string restore_from_state_file(const std::filesystem::path& state_file, const std::filesystem::path& sysfs_root,
                                    SysfsIo& io);

}  // namespace pacer::hw
