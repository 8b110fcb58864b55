#pragma once
// tegrastats as the power sensor, for boards whose INA3221 files pacer cannot read (containers
// without /sys/bus/i2c, L4T 36 layouts): a tegrastats child process (path a parameter, started with
// `--interval MS`, stopped by its pid) whose lines are parsed by the tegrastats importer's parser
// (traces/import/tegrastats.hpp: one home for the line format). Each read returns the next line's
// module power (the total rail, else the sum of the rails), so a sampler gets every line once.
// Its failures are sensor faults with the sysfs outcomes (docs/reliability.md): the process exits
// -> SensorFault::missing (the run stops); a line that does not parse -> garbage (counted, the
// point skipped when too many); no line at all -> the read blocks, which the sampler abandons after
// its read timeout (the run stops, as for a hung I2C sensor).
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "hw/device.hpp"

namespace pacer::hw {

inline constexpr const char* kDefaultTegrastats = "/usr/bin/tegrastats";

struct TegrastatsOptions {
  std::filesystem::path binary = kDefaultTegrastats;
  double interval_s = 0.1;       // passed as --interval in ms
  double start_timeout_s = 5.0;  // the first valid line must come within this
};

class TegrastatsPower {
 public:
  // Starts tegrastats and waits for its first valid line (to learn the rails). Throws Error when
  // it cannot start, exits, prints nothing within start_timeout_s, or prints a line that does not
  // parse; the child is stopped then.
  explicit TegrastatsPower(TegrastatsOptions options);
  ~TegrastatsPower();
  TegrastatsPower(const TegrastatsPower&) = delete;
  TegrastatsPower& operator=(const TegrastatsPower&) = delete;

  // The next line's power (waits for it). Throws SensorError as described above.
  PowerReading read();
  // A reader that owns a share of the state, for a sampler that may abandon a blocked read.
  std::function<PowerReading()> reader();
  // The rails behind the total ("tegrastats:POM_5V_IN", or each summed rail), then "gpu:NAME".
  std::vector<std::string> rails() const;
  long pid() const;

  struct State;

 private:
  std::shared_ptr<State> state_;
  uint64_t seen_ = 0;  // lines read() has returned
};

// Any device with its power read from tegrastats instead of its own sensor; everything else (knob,
// pinning, restore) is the inner device's.
class TegrastatsPowerDevice final : public Device {
 public:
  TegrastatsPowerDevice(std::unique_ptr<Device> inner, TegrastatsOptions options);
  std::string name() const override { return inner_->name() + ", power from tegrastats"; }
  bool emulated() const override { return inner_->emulated(); }
  const traces::KnobSpace& knob() const override { return inner_->knob(); }
  std::vector<std::vector<double>> settings() const override { return inner_->settings(); }
  void pin(const std::vector<double>& setting) override { inner_->pin(setting); }
  std::vector<double> current() const override { return inner_->current(); }
  PowerReading read_power() override { return power_.read(); }
  std::function<PowerReading()> power_reader() override { return power_.reader(); }
  std::vector<std::string> power_rails() const override { return power_.rails(); }
  void restore() override { inner_->restore(); }
  double temperature_c() const override { return inner_->temperature_c(); }
  std::string board_model() const override { return inner_->board_model(); }
  std::string floating_clocks() const override { return inner_->floating_clocks(); }
  Device& inner() { return *inner_; }

 private:
  std::unique_ptr<Device> inner_;
  TegrastatsPower power_;
};

}  // namespace pacer::hw
