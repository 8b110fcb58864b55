#include "hw/jetson/power_mode_device.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "base/error.hpp"
#include "traces/catalog/power_modes.hpp"

namespace pacer::hw {
namespace fs = std::filesystem;

PowerModeDevice::PowerModeDevice(std::unique_ptr<JetsonSysfsDevice> power, PowerModeOptions options)
    : power_(std::move(power)),
      options_(std::move(options)),
      tool_(options_.nvpmodel, options_.nvpmodel_timeout_s),
      knob_(traces::power_mode_knob(options_.board)) {
  if (!power_) throw Error("the power-mode device needs the sysfs backend to read power");
  traces::mode_settings(options_.board);  // every mode must resolve to complete caps
}

PowerModeDevice::~PowerModeDevice() {
  try {
    restore();
  } catch (const std::exception& e) {
    spdlog::error("{} (state file {} kept: run `pacer restore`)", e.what(), state_file().string());
  }
}

std::string PowerModeDevice::name() const {
  return fmt::format("{}, nvpmodel modes of {}", power_->name(), options_.board.name);
}

std::vector<std::vector<double>> PowerModeDevice::settings() const {
  return traces::mode_settings(options_.board);
}

void PowerModeDevice::pin(const std::vector<double>& setting) {
  const auto* mode = traces::find_mode(options_.board, setting);
  if (!mode)
    throw Error(fmt::format("{} is not a power mode of {} (pacer devices show {} lists them)", knob_.format(setting),
                            options_.board.name, options_.board.name));
  if (!saved_) {
    // The state file exists before the first change, so a crash in between is recoverable.
    saved_mode_ = tool_.query();
    const ModeRestore back{tool_.binary(), saved_mode_.id, saved_mode_.name};
    write_state_file(state_file(),
                     {static_cast<long>(::getpid()), name(), {}, fs::weakly_canonical(power_->root()), back});
    if (options_.signal_restore)
      guard_.arm({}, state_file(), {tool_.binary().string(), "-m", std::to_string(saved_mode_.id)});
    saved_ = true;
  }
  tool_.set(mode->id);
  const auto now = tool_.query();
  if (now.id != mode->id)
    throw SettingNotApplied(
        fmt::format("`{} -m {}` left mode {} ({}) in force", tool_.binary().string(), mode->id, now.id, now.name),
        setting, current());
}

std::vector<double> PowerModeDevice::current() const {
  const auto now = tool_.query();
  const auto* mode = traces::find_mode_id(options_.board, now.id);
  if (!mode)
    throw Error(
        fmt::format("nvpmodel reports mode {} ({}), which {} does not list", now.id, now.name, options_.board.name));
  return traces::mode_knob(*mode, options_.board);
}

void PowerModeDevice::restore() {
  if (!saved_) return;
  tool_.set(saved_mode_.id);
  const auto now = tool_.query();
  if (now.id != saved_mode_.id)
    throw Error(fmt::format("could not restore power mode {} ({}): nvpmodel reports {} ({})", saved_mode_.id,
                            saved_mode_.name, now.id, now.name));
  guard_.disarm();
  std::error_code ec;
  fs::remove(state_file(), ec);
  saved_ = false;
  spdlog::debug("power mode {} ({}) restored", saved_mode_.id, saved_mode_.name);
}

}  // namespace pacer::hw
