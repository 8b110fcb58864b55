#pragma once
// A Jetson's nvpmodel power modes as the knob, on a real board (or on an emulated tree served by
// `pacer emulate`, whose stand-in nvpmodel writes the same files): pin() runs `nvpmodel -m ID`,
// current() asks `nvpmodel -q`; power comes from the board's INA3221 rails through the sysfs
// backend, whose GPU clock this device never pins. The mode in force before the first change is
// put back on every exit path, like a pinned clock (hw/jetson/restore_guard.hpp): the destructor, the
// SIGINT/SIGTERM/SIGHUP/SIGQUIT handler (fork/exec of `nvpmodel -m ID`), and after a SIGKILL the
// state file that `pacer restore` (or the next run on the same tree) replays.
#include <filesystem>
#include <memory>

#include "hw/device.hpp"
#include "hw/jetson/jetson_sysfs.hpp"
#include "hw/jetson/nvpmodel.hpp"
#include "hw/jetson/restore_guard.hpp"
#include "traces/catalog/power_modes.hpp"
#include "traces/records.hpp"

namespace pacer::hw {

struct PowerModeOptions {
  traces::DeviceSpec board;  // the catalog entry (or one whose modes came from the board's nvpmodel.conf)
  std::filesystem::path nvpmodel = kDefaultNvpmodel;
  double nvpmodel_timeout_s = 30;
  bool signal_restore = true;
};

class PowerModeDevice final : public Device {
 public:
  // `power` reads the rails; its state file is this device's. Throws Error when the board lists no
  // complete modes or nvpmodel is missing.
  PowerModeDevice(std::unique_ptr<JetsonSysfsDevice> power, PowerModeOptions options);
  ~PowerModeDevice() override;
  PowerModeDevice(const PowerModeDevice&) = delete;
  PowerModeDevice& operator=(const PowerModeDevice&) = delete;

  std::string name() const override;
  bool emulated() const override { return power_->emulated(); }
  const traces::KnobSpace& knob() const override { return knob_; }
  std::vector<std::vector<double>> settings() const override;
  // Saves the mode in force (state file, signal handler) before the first change, runs
  // `nvpmodel -m ID`, and checks `nvpmodel -q` reports it (SettingNotApplied otherwise).
  void pin(const std::vector<double>& setting) override;
  std::vector<double> current() const override;
  PowerReading read_power() override { return power_->read_power(); }
  std::function<PowerReading()> power_reader() override { return power_->power_reader(); }
  std::vector<std::string> power_rails() const override { return power_->power_rails(); }
  void restore() override;
  double temperature_c() const override { return power_->temperature_c(); }
  std::string board_model() const override { return power_->board_model(); }
  std::string floating_clocks() const override { return emulated() ? "" : traces::kModeFloatingClocks; }

  const traces::DeviceSpec& board() const { return options_.board; }
  const Nvpmodel& nvpmodel() const { return tool_; }
  const std::filesystem::path& state_file() const { return power_->state_file(); }
  JetsonSysfsDevice& power_device() { return *power_; }

 private:
  std::unique_ptr<JetsonSysfsDevice> power_;
  PowerModeOptions options_;
  Nvpmodel tool_;
  traces::KnobSpace knob_;
  bool saved_ = false;
  NvpmodelMode saved_mode_;
  SignalRestoreGuard guard_;
};

}  // namespace pacer::hw
