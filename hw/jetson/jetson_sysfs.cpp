#include "hw/jetson/jetson_sysfs.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <sstream>
#include <thread>

#include "base/units.hpp"
#include "traces/catalog/rails.hpp"

namespace pacer::hw {
namespace fs = std::filesystem;

const std::vector<std::string>& jetson_gpu_node_names() {
  static const std::vector<std::string> names = {"gpu", "gp10b", "gv11b", "ga10b", "gb10b"};
  return names;
}

namespace {

std::vector<fs::path> sorted_children(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) out.push_back(it->path());
  std::sort(out.begin(), out.end());
  return out;
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

// Rail roles by name: one home, shared with the tegrastats importer.
const auto& tokens = traces::name_tokens;
using traces::is_gpu_rail;
using traces::is_total_rail;
const auto& is_nc = traces::is_nc_rail;

}  // namespace

DevfreqNode discover_gpu_devfreq(const fs::path& root, const SysfsIo& io) {
  const fs::path class_dir = root / "sys/class/devfreq";
  std::vector<std::string> seen;
  for (const auto& entry : sorted_children(class_dir)) {
    std::string of_name;
    try {
      of_name = io.read(entry / "device/of_node/name");
    } catch (const IoError&) {
      continue;  // devfreq entries without an of_node (e.g. on x86 test machines) are not GPUs
    }
    seen.push_back(entry.filename().string() + "=" + of_name);
    const auto& names = jetson_gpu_node_names();
    if (std::find(names.begin(), names.end(), of_name) == names.end()) continue;
    std::error_code ec;
    fs::path dir = fs::canonical(entry, ec);
    if (ec) dir = entry;
    return {dir, entry.filename().string(), of_name};
  }
  throw Error(fmt::format(
      "no GPU devfreq node under {} (looked for device/of_node/name in {{{}}}; found [{}]): is this a Jetson? "
      "If the GPU is railgated, write 0 to its railgate_enable; for a test tree, give its sysfs root",
      class_dir.string(), fmt::join(jetson_gpu_node_names(), ", "), fmt::join(seen, ", ")));
}

std::vector<PowerRail> discover_rails(const fs::path& root, const SysfsIo& io) {
  std::vector<PowerRail> rails;
  // JetPack 4 layout: ina3221x IIO driver, rail_name_N + in_powerN_input [mW].
  for (const auto& chip : sorted_children(root / "sys/bus/i2c/drivers/ina3221x")) {
    for (const auto& dev : sorted_children(chip)) {
      if (!starts_with(dev.filename().string(), "iio:device") && dev.filename() != "iio_device") continue;
      for (int ch = 0; ch < 8; ++ch) {
        std::string label;
        try {
          label = io.read(dev / fmt::format("rail_name_{}", ch));
        } catch (const IoError&) {
          continue;
        }
        if (is_nc(label)) continue;
        PowerRail r;
        r.name = label;
        r.layout = "iio";
        r.chip = chip.filename().string();
        r.channel = ch;
        r.power_file = dev / fmt::format("in_power{}_input", ch);
        r.voltage_file = dev / fmt::format("in_voltage{}_input", ch);
        r.current_file = dev / fmt::format("in_current{}_input", ch);
        rails.push_back(r);
      }
    }
  }
  // JetPack 5+ layout: mainline ina3221 hwmon driver, inN_label + inN_input [mV] x currN_input [mA].
  for (const auto& chip : sorted_children(root / "sys/bus/i2c/drivers/ina3221")) {
    for (const auto& dev : sorted_children(chip / "hwmon")) {
      if (!starts_with(dev.filename().string(), "hwmon")) continue;
      for (int ch = 1; ch <= 3; ++ch) {  // in4..in7 are shunt voltages and their sum, not rails
        std::string label;
        try {
          label = io.read(dev / fmt::format("in{}_label", ch));
        } catch (const IoError&) {
          continue;
        }
        if (is_nc(label)) continue;
        PowerRail r;
        r.name = label;
        r.layout = "hwmon";
        r.chip = chip.filename().string();
        r.channel = ch;
        r.voltage_file = dev / fmt::format("in{}_input", ch);
        r.current_file = dev / fmt::format("curr{}_input", ch);
        rails.push_back(r);
      }
    }
  }
  return rails;
}

RailSelection select_rails(const std::vector<PowerRail>& rails) {
  RailSelection sel;
  for (const auto& r : rails)
    if (is_total_rail(r.name)) {
      sel.total = {r};
      break;
    }
  if (sel.total.empty() && !rails.empty()) {
    sel.total = rails;
    sel.summed = true;
  }
  for (const auto& r : rails)
    if (is_gpu_rail(r.name)) {
      sel.gpu = r;
      break;
    }
  return sel;
}

namespace {

// Plausibility of a rail reading. The INA3221 measures bus voltages up to 26 V, and no Jetson
// module draws anywhere near 1 kW; readings down to -50 mW are the shunt offset of an idle rail
// (the driver reports signed shunt voltages) and count as 0.
constexpr double kMaxRailW = 1000.0;
constexpr double kRailOffsetW = 0.05;
constexpr long long kMaxBusMv = 26000;

SensorError sensor_read_error(const IoError& e) {
  const bool gone = e.errno_value == ENOENT || e.errno_value == ENODEV;
  return SensorError(gone ? fmt::format("{} (the sensor file disappeared)", e.what()) : std::string(e.what()),
                     gone ? SensorFault::missing : SensorFault::read_error);
}

// The whole value must be an integer (the reading of parse_sysfs_int): "5000abc" or "" is garbage,
// not 5000 or 0.
long long sensor_int(const std::string& text, const fs::path& path) {
  const auto v = units::to_integer(text);
  if (!v)
    throw SensorError(fmt::format("{} holds '{}', not an integer: the power sensor returns garbage", path.string(),
                                  text.size() > 40 ? text.substr(0, 40) + "..." : text),
                      SensorFault::garbage);
  return *v;
}

std::string read_sensor(const SysfsIo& io, const fs::path& path) {
  try {
    return io.read(path);
  } catch (const IoError& e) {
    throw sensor_read_error(e);
  }
}

double plausible_w(double w, const fs::path& path, const std::string& shown) {
  if (!(w >= -kRailOffsetW && w <= kMaxRailW))
    throw SensorError(fmt::format("{} reads {}: not a plausible rail power (0 .. {:g} W): the power sensor returns "
                                  "garbage",
                                  path.string(), shown, kMaxRailW),
                      SensorFault::garbage);
  return std::max(0.0, w);
}

double read_rail_v_times_i(const PowerRail& rail, const SysfsIo& io);

double read_rail_w_unnamed(const PowerRail& rail, const SysfsIo& io) {
  if (!rail.power_file.empty()) {
    std::string text;
    try {
      text = io.read(rail.power_file);
    } catch (const IoError& power_error) {
      // Some L4T releases lack in_powerN_input; fall back to V x I as jetson_stats does. When that
      // fails too, the power file is the one to name.
      try {
        return read_rail_v_times_i(rail, io);
      } catch (const SensorError& e) {
        if (e.fault == SensorFault::garbage) throw;
        throw sensor_read_error(power_error);
      }
    }
    const long long mw = sensor_int(text, rail.power_file);
    return plausible_w(static_cast<double>(mw) / 1000.0, rail.power_file, fmt::format("{} mW", mw));
  }
  return read_rail_v_times_i(rail, io);
}

double read_rail_v_times_i(const PowerRail& rail, const SysfsIo& io) {
  const long long mv = sensor_int(read_sensor(io, rail.voltage_file), rail.voltage_file);
  if (mv < 0 || mv > kMaxBusMv)
    throw SensorError(fmt::format("{} reads {} mV: not a plausible bus voltage (0 .. {} mV): the power sensor returns "
                                  "garbage",
                                  rail.voltage_file.string(), mv, kMaxBusMv),
                      SensorFault::garbage);
  const long long ma = sensor_int(read_sensor(io, rail.current_file), rail.current_file);
  return plausible_w(static_cast<double>(mv) * static_cast<double>(ma) / 1e6, rail.current_file,
                     fmt::format("{} mA at {} mV", ma, mv));
}

PowerReading read_selected_rails(const RailSelection& rails, const SysfsIo& io, const fs::path& root) {
  if (rails.total.empty())
    throw Error(
        fmt::format("power sensor not found under {}/sys/bus/i2c/drivers (ina3221x iio or ina3221 hwmon): "
                    "is this a Jetson? for a test tree, give its sysfs root",
                    root.string()));
  PowerReading r;
  double total = 0;
  for (const auto& rail : rails.total) total += read_rail_w(rail, io);
  r.total_w = total;
  if (rails.gpu) r.gpu_w = read_rail_w(*rails.gpu, io);
  return r;
}

}  // namespace

double read_rail_w(const PowerRail& rail, const SysfsIo& io) {
  try {
    return read_rail_w_unnamed(rail, io);
  } catch (const SensorError& e) {
    throw SensorError(fmt::format("power rail {}: {}", rail.name, e.what()), e.fault);
  }
}

// ---------------------------------------------------------------------------------------------

std::string restore_from_state_file(const fs::path& state_file, const fs::path& sysfs_root, SysfsIo& io) {
  const RestoreState s = read_state_file(state_file);
  if (process_alive(s.pid))
    throw Error(fmt::format("pacer process {} still holds {} (state file {}); stop it first (it restores on exit)",
                            s.pid, s.device, state_file.string()));
  std::error_code ec;
  const fs::path root = fs::weakly_canonical(sysfs_root, ec);
  if (!s.sysfs_root.empty() && fs::weakly_canonical(s.sysfs_root, ec) != root)
    throw Error(fmt::format("state file {} was written for the sysfs root {}, not {}: restore it with that root",
                            state_file.string(), s.sysfs_root.string(), root.string()));
  // A state file is replayed with the privileges of whoever runs pacer (root on a board): it may put
  // back the GPU frequency limits it saved and nothing else.
  for (const auto& w : s.writes)
    if (!restorable_path(w.path, root) || w.path.parent_path() != s.writes.front().path.parent_path())
      throw Error(
          fmt::format("state file {} asks to write {}, which is not a GPU frequency limit of one devfreq node "
                      "under {}: refused, nothing was written; delete the file after checking it",
                      state_file.string(), w.path.string(), (root / "sys").string()));
  // Each value is a frequency of the node's own table (not -1, a 20-digit number or shell text).
  for (const auto& w : s.writes) {
    const fs::path table = w.path.parent_path() / "available_frequencies";
    std::vector<std::string> freqs;
    try {
      std::istringstream in(io.read(table));
      for (std::string tok; in >> tok;) freqs.push_back(tok);
    } catch (const IoError&) {
    }
    const bool digits = !w.value.empty() && w.value.size() <= 12 &&
                        w.value.find_first_not_of("0123456789") == std::string::npos;
    if (!digits || std::find(freqs.begin(), freqs.end(), w.value) == freqs.end())
      throw Error(
          fmt::format("state file {} asks to write a value to {} that is not one of the frequencies in {}: refused, "
                      "nothing was written; delete the file after checking it",
                      state_file.string(), w.path.string(), table.string()));
  }
  if (s.mode)
    if (const auto why = unsafe_program_reason(s.mode->nvpmodel); !why.empty())
      throw Error(
          fmt::format("state file {} asks to run {} as nvpmodel, but {}: refused, nothing was written; put the "
                      "power mode back by hand (sudo nvpmodel -m {}) and delete the file",
                      state_file.string(), s.mode->nvpmodel.string(), why, s.mode->mode_id));
  const auto wrong = replay_restore(s.writes, io);
  if (!wrong.empty())
    throw Error(fmt::format("restore from {} did not take: {}; check permissions (run as root) and retry",
                            state_file.string(), fmt::join(wrong, "; ")));
  if (s.mode) replay_mode_restore(*s.mode);
  fs::remove(state_file, ec);
  return fmt::format("restored {} ({} writes{} from {})", s.device, s.writes.size(),
                     s.mode ? fmt::format(", power mode {} {}", s.mode->mode_id, s.mode->mode_name) : "",
                     state_file.string());
}

std::string read_board_model(const fs::path& root, const SysfsIo& io) {
  for (const char* file : {"proc/device-tree/model", "sys/firmware/devicetree/base/model"}) {
    std::error_code ec;
    if (!fs::exists(root / file, ec)) continue;
    try {
      return io.read(root / file);  // SysfsIo::read drops the device-tree string's trailing NUL
    } catch (const IoError&) {
    }
  }
  return "";
}

JetsonSysfsDevice::JetsonSysfsDevice(JetsonSysfsOptions options) : options_(std::move(options)) {
  io_ = options_.io ? options_.io.get() : &real_sysfs_io();
  if (!fs::exists(options_.root))
    throw OptionError("sysfs-root", fmt::format("{} does not exist", options_.root.string()));
  state_file_ = options_.state_file.empty() ? default_state_file(options_.root) : options_.state_file;
  if (fs::exists(state_file_)) {
    spdlog::warn("a previous pacer run left {}: restoring its settings first", state_file_.string());
    spdlog::info("{}", restore_from_state_file(state_file_, options_.root, *io_));
  }
  devfreq_ = discover_gpu_devfreq(options_.root, *io_);
  std::istringstream freqs(io_->read(devfreq_.dir / "available_frequencies"));
  std::string tok;
  while (freqs >> tok)
    freqs_hz_.push_back(static_cast<double>(parse_sysfs_int(tok, devfreq_.dir / "available_frequencies")));
  std::sort(freqs_hz_.begin(), freqs_hz_.end());
  if (freqs_hz_.empty())
    throw Error(fmt::format("{} lists no frequencies", (devfreq_.dir / "available_frequencies").string()));
  rails_ = select_rails(discover_rails(options_.root, *io_));
  for (const auto& zone : sorted_children(options_.root / "sys/class/thermal")) {
    try {
      const auto type = tokens(io_->read(zone / "type"));
      if (std::find(type.begin(), type.end(), "GPU") != type.end()) {
        thermal_file_ = zone / "temp";
        break;
      }
    } catch (const IoError&) {
    }
  }
  board_model_ = read_board_model(options_.root, *io_);
  if (board_model_.empty()) board_model_ = fmt::format("Jetson with GPU {} (no device-tree model)", devfreq_.of_name);
  spdlog::debug("jetson sysfs: {}, GPU {} at {}, {} frequencies, total rails [{}]{}", board_model_, devfreq_.of_name,
                devfreq_.dir.string(), freqs_hz_.size(), fmt::join(power_rails(), ", "),
                rails_.summed ? " (summed: no total rail)" : "");
}

JetsonSysfsDevice::~JetsonSysfsDevice() {
  try {
    restore();
  } catch (const std::exception& e) {
    spdlog::error("{} (state file {} kept: run `pacer restore`)", e.what(), state_file_.string());
  }
}

std::string JetsonSysfsDevice::name() const {
  return fmt::format("jetson sysfs {} ({}){}", options_.root.string(), devfreq_.of_name,
                     emulated() ? " [emulated tree]" : "");
}

bool JetsonSysfsDevice::emulated() const {
  return fs::exists(options_.root / "pacer-emulator");
}

std::vector<std::vector<double>> JetsonSysfsDevice::settings() const {
  std::vector<std::vector<double>> out;
  for (double f : freqs_hz_) out.push_back({f});
  return out;
}

long long JetsonSysfsDevice::read_int(const fs::path& p) const {
  return parse_sysfs_int(io_->read(p), p);
}

void JetsonSysfsDevice::write_value(const fs::path& p, long long value) {
  try {
    write_retrying_busy(*io_, p, std::to_string(value), options_.busy_retry);
  } catch (const IoError& e) {
    if (e.errno_value == EBUSY)
      throw Error(
          fmt::format("{}: the devfreq node stayed busy; another tool (nvpmodel, jetson_clocks) may be "
                      "changing the GPU clocks: wait until it is done and rerun",
                      e.what()));
    if (e.errno_value == EACCES || e.errno_value == EPERM)
      throw Error(
          fmt::format("permission denied writing {}: run pacer as root (sudo) to pin GPU frequencies, or "
                      "give the sysfs root of a test tree",
                      p.string()));
    if (e.errno_value == EINVAL)
      throw Error(
          fmt::format("the kernel rejected {} for {} (EINVAL): another tool may hold the GPU clocks "
                      "(jetson_clocks, nvpmodel); restore them and retry",
                      value, p.string()));
    throw Error(fmt::format("{}; is the GPU railgated?", e.what()));
  }
}

void JetsonSysfsDevice::pin(const std::vector<double>& setting) {
  if (setting.size() != 1)
    throw Error(fmt::format("a Jetson GPU setting is one frequency, got {} values", setting.size()));
  pin_frequency(setting[0]);
}

void JetsonSysfsDevice::pin_frequency(double freq_hz) {
  const auto it =
      std::find_if(freqs_hz_.begin(), freqs_hz_.end(), [&](double f) { return std::abs(f - freq_hz) < 0.5; });
  if (it == freqs_hz_.end())
    throw Error(fmt::format("{} is not in {} ({} values, {} .. {}); pick one of them (pacer devices show)",
                            units::format(freq_hz, units::Dimension::Frequency),
                            (devfreq_.dir / "available_frequencies").string(), freqs_hz_.size(),
                            units::format(freqs_hz_.front(), units::Dimension::Frequency),
                            units::format(freqs_hz_.back(), units::Dimension::Frequency)));
  const long long target = static_cast<long long>(std::llround(*it));
  const fs::path min_p = devfreq_.dir / "min_freq", max_p = devfreq_.dir / "max_freq";
  const long long cur_min = read_int(min_p), cur_max = read_int(max_p);
  if (!saved_) {
    // The state file exists before the first write, so a crash between two writes is recoverable.
    saved_min_hz_ = cur_min;
    saved_max_hz_ = cur_max;
    const std::vector<RestoreWrite> writes = {
        {min_p, std::to_string(cur_min)}, {max_p, std::to_string(cur_max)}, {min_p, std::to_string(cur_min)}};
    write_state_file(state_file_, {static_cast<long>(::getpid()), name(), writes, fs::weakly_canonical(options_.root),
                                   std::nullopt});
    if (options_.signal_restore) guard_.arm(writes, state_file_);
    saved_ = true;
  }
  // The kernel rejects min_freq above max_freq: raise max first when going up, min first going down.
  if (target > cur_max) {
    write_value(max_p, target);
    write_value(min_p, target);
  } else {
    write_value(min_p, target);
    write_value(max_p, target);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(options_.verify_timeout_s);
  long long cur = read_int(devfreq_.dir / "cur_freq");
  while (cur != target && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    cur = read_int(devfreq_.dir / "cur_freq");
  }
  if (cur != target)
    throw SettingNotApplied(
        fmt::format("cur_freq reads {} but {} was requested (min_freq and max_freq were written; waited {:g} s): the "
                    "GPU may be thermally or power throttled, or railgated",
                    units::format(static_cast<double>(cur), units::Dimension::Frequency),
                    units::format(static_cast<double>(target), units::Dimension::Frequency), options_.verify_timeout_s),
        {static_cast<double>(target)}, {static_cast<double>(cur)});
}

std::vector<double> JetsonSysfsDevice::current() const {
  return {static_cast<double>(read_int(devfreq_.dir / "cur_freq"))};
}

PowerReading JetsonSysfsDevice::read_power() {
  return read_selected_rails(rails_, *io_, options_.root);
}

std::function<PowerReading()> JetsonSysfsDevice::power_reader() {
  // Owns copies of the rails and a share of the file layer: a sampler that abandons a blocked read
  // leaves a thread that never touches this object again.
  std::shared_ptr<SysfsIo> io = options_.io ? options_.io : std::shared_ptr<SysfsIo>(&real_sysfs_io(), [](SysfsIo*) {});
  return [rails = rails_, io = std::move(io), root = options_.root] { return read_selected_rails(rails, *io, root); };
}

std::vector<std::string> JetsonSysfsDevice::power_rails() const {
  std::vector<std::string> out;
  for (const auto& r : rails_.total) out.push_back(r.name);
  if (rails_.gpu) out.push_back("gpu:" + rails_.gpu->name);
  return out;
}

double JetsonSysfsDevice::temperature_c() const {
  if (!thermal_file_) return traces::kNaN;
  try {
    return static_cast<double>(read_int(*thermal_file_)) / 1000.0;
  } catch (const Error&) {
    return traces::kNaN;
  }
}

void JetsonSysfsDevice::restore() {
  if (!saved_) return;
  const fs::path min_p = devfreq_.dir / "min_freq", max_p = devfreq_.dir / "max_freq";
  const std::vector<RestoreWrite> writes = {{min_p, std::to_string(saved_min_hz_)},
                                            {max_p, std::to_string(saved_max_hz_)},
                                            {min_p, std::to_string(saved_min_hz_)}};
  const auto wrong = replay_restore(writes, *io_);
  if (!wrong.empty()) throw Error(fmt::format("could not restore the GPU frequency range: {}", fmt::join(wrong, "; ")));
  guard_.disarm();
  std::error_code ec;
  fs::remove(state_file_, ec);
  saved_ = false;
  spdlog::debug("jetson sysfs: restored min_freq {} max_freq {}", saved_min_hz_, saved_max_hz_);
}

}  // namespace pacer::hw
