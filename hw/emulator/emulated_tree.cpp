#include "hw/emulator/emulated_tree.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "base/error.hpp"
#include "base/files.hpp"
#include "base/text.hpp"
#include "base/units.hpp"
#include "hw/emulator/emulated_modes.hpp"
#include "hw/jetson/sysfs_io.hpp"

namespace pacer::hw {
namespace fs = std::filesystem;

namespace {

// Assumed bus voltage of every rail in the fake tree: the real rails sit at 5 V (POM_5V_*,
// VIN_SYS_5V0) or the module input; only the product V x I matters to the readers.
constexpr double kRailMv = 5000.0;

void put(const fs::path& p, const std::string& content) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::trunc);
  if (!out) throw Error(fmt::format("cannot create {} for the fake sysfs tree", p.string()));
  out << content << "\n";
}

void link_relative(const fs::path& link, const fs::path& target) {
  fs::create_directories(link.parent_path());
  std::error_code ec;
  fs::remove(link, ec);
  fs::create_directory_symlink(fs::relative(target, link.parent_path()), link);
}

// The sensor directory of each chip: iio:deviceK / hwmon/hwmonK, K in sorted chip order.
std::map<std::string, fs::path> chip_dirs(const fs::path& root, const traces::DeviceSpec& d) {
  std::set<std::string> chips;
  for (const auto& r : d.rails) chips.insert(r.chip);
  std::map<std::string, fs::path> out;
  int k = 0;
  for (const auto& chip : chips) {
    if (d.sensor_layout == "hwmon")
      out[chip] = root / "sys/bus/i2c/drivers" / (d.sensor_driver.empty() ? "ina3221" : d.sensor_driver) / chip /
                  "hwmon" / fmt::format("hwmon{}", k + 1);
    else
      out[chip] = root / "sys/bus/i2c/drivers" / (d.sensor_driver.empty() ? "ina3221x" : d.sensor_driver) / chip /
                  fmt::format("iio:device{}", k);
    ++k;
  }
  return out;
}

}  // namespace

void write_small_file_atomic(const fs::path& path, const std::string& content) {
  const fs::path tmp = path.parent_path() / fmt::format(".{}.tmp{}", path.filename().string(), ::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(fmt::format("cannot write {}: {}", tmp.string(), std::strerror(errno)));
  const std::string line = content + "\n";
  const ssize_t n = ::write(fd, line.data(), line.size());
  ::close(fd);
  if (n != static_cast<ssize_t>(line.size()) || ::rename(tmp.c_str(), path.c_str()) != 0)
    throw Error(fmt::format("cannot write {}: {}", path.string(), std::strerror(errno)));
}

namespace {

// The value files of one rail in the board's layout: iio has in_powerN_input [mW] besides
// in_voltageN_input [mV] and in_currentN_input [mA]; hwmon has inN_input [mV] and currN_input [mA].
struct RailValueFiles {
  fs::path power, voltage, current;  // power empty in the hwmon layout
};

RailValueFiles rail_value_files(const fs::path& chip_dir, const traces::DeviceSpec& d, int channel) {
  if (d.sensor_layout == "hwmon")
    return {{}, chip_dir / fmt::format("in{}_input", channel), chip_dir / fmt::format("curr{}_input", channel)};
  return {chip_dir / fmt::format("in_power{}_input", channel), chip_dir / fmt::format("in_voltage{}_input", channel),
          chip_dir / fmt::format("in_current{}_input", channel)};
}

}  // namespace

std::vector<fs::path> fake_rail_value_files(const fs::path& root, const traces::DeviceSpec& d) {
  const auto dirs = chip_dirs(root, d);
  std::vector<fs::path> out;
  for (const auto& r : d.rails) {
    const auto files = rail_value_files(dirs.at(r.chip), d, r.channel);
    for (const auto* f : {&files.power, &files.voltage, &files.current})
      if (!f->empty()) out.push_back(*f);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Fault injection.

namespace {

// in_powerN_input, in_voltageN_input, in_currentN_input (iio) or inN_input, currN_input (hwmon).
bool is_rail_value_file(const fs::path& path) {
  static const std::regex pattern(R"(^(in_power|in_voltage|in_current|in|curr)[0-9]+_input$)");
  return std::regex_match(path.filename().string(), pattern);
}

bool is_freq_limit_file(const fs::path& path) {
  const auto name = path.filename().string();
  return name == "min_freq" || name == "max_freq";
}

}  // namespace

SysfsFaults parse_sysfs_fault(const std::string& text) {
  SysfsFaults f;
  const auto eq = text.find('=');
  const std::string kind = text.substr(0, eq);
  const std::string arg = eq == std::string::npos ? "" : text.substr(eq + 1);
  if (kind == "none" && eq == std::string::npos) return f;
  if (kind == "rail-vanish" && eq == std::string::npos)
    f.rail = SysfsFaults::Rail::vanish;
  else if (kind == "rail-frozen" && eq == std::string::npos)
    f.rail = SysfsFaults::Rail::frozen;
  else if (kind == "rail-block" && eq == std::string::npos)
    f.rail = SysfsFaults::Rail::block;
  else if (kind == "rail-garbage") {
    f.rail = SysfsFaults::Rail::garbage;
    if (eq != std::string::npos) f.garbage = arg;
  } else if (kind == "cur-freq" && !arg.empty()) {
    try {
      f.cur_freq_hz = units::parse(arg, units::Dimension::Frequency, "MHz", "cur-freq");
    } catch (const UsageError& e) {
      throw OptionError("fault", e.what());
    }
    if (!(f.cur_freq_hz > 0)) throw OptionError("fault", "cur-freq=F needs a positive frequency");
  } else {
    throw OptionError("fault", fmt::format("'{}' is not one of none, rail-vanish, rail-garbage[=TEXT], rail-frozen, "
                                           "rail-block, cur-freq=FREQ",
                                           text));
  }
  return f;
}

FaultyIo::FaultyIo(std::shared_ptr<SysfsIo> inner) : inner_(std::move(inner)) {}

FaultyIo::~FaultyIo() {
  release();
}

SysfsIo& FaultyIo::inner() const {
  return inner_ ? *inner_ : real_sysfs_io();
}

void FaultyIo::set(const SysfsFaults& faults) {
  {
    std::lock_guard lock(mu_);
    faults_ = faults;
    frozen_.clear();
    ++release_generation_;  // a changed fault unblocks reads blocked by the old one
  }
  cv_.notify_all();
}

SysfsFaults FaultyIo::faults() const {
  std::lock_guard lock(mu_);
  return faults_;
}

void FaultyIo::release() {
  {
    std::lock_guard lock(mu_);
    ++release_generation_;
  }
  cv_.notify_all();
}

int64_t FaultyIo::busy_answers() const {
  std::lock_guard lock(mu_);
  return busy_answers_;
}

int FaultyIo::blocked_reads() const {
  std::lock_guard lock(mu_);
  return blocked_;
}

std::string FaultyIo::read(const fs::path& path) const {
  std::unique_lock lock(mu_);
  if (faults_.cur_freq_hz > 0 && path.filename() == "cur_freq")
    return std::to_string(std::llround(faults_.cur_freq_hz));
  if (faults_.rail == SysfsFaults::Rail::none || !is_rail_value_file(path)) {
    lock.unlock();
    return inner().read(path);
  }
  switch (faults_.rail) {
    case SysfsFaults::Rail::vanish:
      throw IoError(fmt::format("cannot read {}: {}", path.string(), std::strerror(ENOENT)), ENOENT);
    case SysfsFaults::Rail::garbage:
      return faults_.garbage;
    case SysfsFaults::Rail::frozen: {
      const auto it = frozen_.find(path.string());
      if (it != frozen_.end()) return it->second;
      lock.unlock();
      const std::string value = inner().read(path);
      lock.lock();
      return frozen_.emplace(path.string(), value).first->second;
    }
    case SysfsFaults::Rail::block: {
      const uint64_t generation = release_generation_;
      ++blocked_;
      cv_.wait(lock, [&] { return release_generation_ != generation; });
      --blocked_;
      throw IoError(fmt::format("cannot read {}: {}", path.string(), std::strerror(ETIMEDOUT)), ETIMEDOUT);
    }
    default:
      break;
  }
  lock.unlock();
  return inner().read(path);
}

void FaultyIo::write(const fs::path& path, const std::string& value) {
  {
    std::lock_guard lock(mu_);
    if (faults_.busy_writes != 0 && is_freq_limit_file(path)) {
      if (faults_.busy_writes > 0) --faults_.busy_writes;
      ++busy_answers_;
      throw IoError(fmt::format("cannot write '{}' to {}: {}", value, path.string(), std::strerror(EBUSY)), EBUSY);
    }
  }
  inner().write(path, value);
}

// ---------------------------------------------------------------------------------------------

fs::path fake_devfreq_dir(const fs::path& root, const traces::DeviceSpec& device) {
  return root / device.devfreq_path;
}

namespace {

// `p` is `dir` or inside it, component by component ("/sys" does not contain "/sysfoo").
bool within(const fs::path& p, const fs::path& dir) {
  auto it = p.begin();
  for (const auto& part : dir) {
    if (it == p.end() || *it != part) return false;
    ++it;
  }
  return true;
}

void refuse_system_trees(const fs::path& root) {
  std::error_code ec;
  const fs::path where = fs::weakly_canonical(fs::absolute(root), ec);
  const fs::path tree = fs::weakly_canonical(fs::absolute(root) / "sys", ec);
  for (const fs::path system : {"/sys", "/proc"})
    if (within(where, system) || within(tree, system))
      throw OptionError("root", fmt::format("{} would put the emulated tree into the kernel's own {}: choose an empty "
                                            "folder of your own",
                                            root.string(), system.string()));
}

}  // namespace

namespace {

fs::path emulator_lock_path(const fs::path& root) {
  return root / "pacer-emulator" / "lock";
}

// The refusal of a root a live emulator serves: its lock file is locked by another open file.
SettingError served_by_another(const fs::path& root) {
  std::string pid = "?";
  try {
    pid = std::string(base::trim(base::read_regular_file(root / "pacer-emulator" / "pid", 64, "pid file")));
  } catch (const Error&) {
  }
  return SettingError("root", fmt::format("{} is served by a running emulator (pid {}): stop it first (kill {}) or "
                                          "choose another folder",
                                          root.string(), pid, pid));
}

}  // namespace

void check_emulation_root(const fs::path& root) {
  if (root.empty()) throw OptionError("root", "no folder given: name an empty folder for the emulated tree");
  if (const std::string why = base::path_too_long(root); !why.empty()) throw OptionError("root", why);
  refuse_system_trees(root);
  std::error_code ec;
  const bool ours = fs::is_directory(root / "pacer-emulator", ec);
  if (fs::exists(root / "sys/class/devfreq", ec) && !ours)
    throw OptionError("root", fmt::format("{} already holds a devfreq tree (sys/class/devfreq) that pacer did not "
                                          "write: choose an empty folder",
                                          root.string()));
  if (fs::exists(root, ec) || fs::is_symlink(root, ec)) {
    if (!fs::is_directory(root, ec))
      throw OptionError("root", fmt::format("{} exists and is not a folder: name an empty or missing folder",
                                            root.string()));
    if (!ours && !fs::is_empty(root, ec))
      throw OptionError("root", fmt::format("{} is a folder of other files, not an empty folder nor an emulated tree "
                                            "pacer wrote (pacer-emulator/): name an empty or missing folder",
                                            root.string()));
  }
  if (!ours) return;
  // A live emulator holds its root's lock; a lock file that nobody holds was left by a dead one.
  const int fd = ::open(emulator_lock_path(root).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return;
  const bool held = ::flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);
  if (held) throw served_by_another(root);
}

void write_fake_tree(const fs::path& root, const traces::DeviceSpec& d, const FakeTreeOptions& o) {
  refuse_system_trees(root);
  if (d.devfreq_path.empty() || d.devfreq_node.empty() || d.gpu_device_dir.empty() || d.gpu_freqs_hz.empty())
    throw Error(
        fmt::format("device '{}' lacks devfreq_path, devfreq_node, gpu_device_dir or frequencies: it cannot "
                    "be laid out as a sysfs tree",
                    d.name));
  const fs::path dev_dir = root / d.gpu_device_dir;
  const fs::path df = fake_devfreq_dir(root, d);
  std::string freqs;
  for (double f : d.gpu_freqs_hz) {
    if (!freqs.empty()) freqs += ' ';
    freqs += std::to_string(std::llround(f));
  }
  const long long lo = std::llround(o.min_freq_hz > 0 ? o.min_freq_hz : d.gpu_freqs_hz.front());
  const long long hi = std::llround(o.max_freq_hz > 0 ? o.max_freq_hz : d.gpu_freqs_hz.back());
  put(df / "available_frequencies", freqs);
  put(df / "min_freq", std::to_string(lo));
  put(df / "max_freq", std::to_string(hi));
  put(df / "cur_freq", std::to_string(hi));
  put(df / "governor", "nvhost_podgov");
  put(df / "available_governors", "wmark_active wmark_simple nvhost_podgov userspace performance simple_ondemand");
  put(dev_dir / "railgate_enable", "1");
  put(dev_dir / "load", "0");
  // of_node/name carries a trailing NUL on real boards (device-tree strings).
  fs::create_directories(dev_dir / "of_node");
  {
    std::ofstream name(dev_dir / "of_node/name", std::ios::binary | std::ios::trunc);
    name << d.gpu_arch << '\0';
  }
  if (!fs::exists(df / "device")) link_relative(df / "device", dev_dir);
  // The board's device-tree model, NUL-terminated as on a board, where /proc/device-tree links to it.
  fs::create_directories(root / "sys/firmware/devicetree/base");
  std::ofstream(root / "sys/firmware/devicetree/base/model", std::ios::binary) << d.display_name << '\0';
  link_relative(root / "proc/device-tree", root / "sys/firmware/devicetree/base");
  link_relative(root / "sys/class/devfreq" / d.devfreq_node, df);
  if (o.decoy_devfreq) {
    const fs::path vic = root / "sys/devices/15340000.vic";
    put(vic / "of_node/name", "vic");
    put(vic / "devfreq/15340000.vic/available_frequencies", "115200000 601600000");
    link_relative(vic / "devfreq/15340000.vic/device", vic);
    link_relative(root / "sys/class/devfreq/15340000.vic", vic / "devfreq/15340000.vic");
  }
  if (o.thermal) {
    put(root / "sys/class/thermal/thermal_zone0/type", "CPU-therm");
    put(root / "sys/class/thermal/thermal_zone0/temp", "31000");
    put(root / "sys/class/thermal/thermal_zone1/type",
        d.gpu_arch == "gpu" && d.soc == "T234" ? "gpu-thermal" : "GPU-therm");
    put(root / "sys/class/thermal/thermal_zone1/temp", "30500");
  }
  if (o.sensors) {
    const auto dirs = chip_dirs(root, d);
    for (const auto& r : d.rails) {
      const fs::path dir = dirs.at(r.chip);
      if (d.sensor_layout == "hwmon") {
        put(dir / fmt::format("in{}_label", r.channel), r.name);
        put(dir / "name", "ina3221");
      } else {
        put(dir / fmt::format("rail_name_{}", r.channel), r.name);
        put(dir / "name", "ina3221x");
      }
    }
    const double idle = o.idle_power_w >= 0 ? o.idle_power_w : d.idle_power_w;
    std::vector<std::pair<std::string, double>> rails;
    for (const auto& r : d.rails) {
      double w = 0;
      if (r.role == "nc")
        w = 0;
      else if (r.name == d.total_rail)
        w = idle;
      else if (r.name == d.gpu_rail)
        w = 0.15 * idle;
      else
        w = idle * (d.total_rail.empty() ? 0.85 : 0.7) / std::max<size_t>(1, d.rails.size() - 1);
      rails.emplace_back(r.name, w);
    }
    write_fake_rails(root, d, rails);
  }
  // A board boots in its default mode; the catalog's first mode stands for it (MAXN).
  if (has_complete_modes(d)) write_mode_files(root, d, traces::resolved_caps(d.power_modes.front(), d), false);
}

void write_fake_rails(const fs::path& root, const traces::DeviceSpec& d,
                      const std::vector<std::pair<std::string, double>>& rails_w) {
  const auto dirs = chip_dirs(root, d);
  for (const auto& r : d.rails) {
    const auto it = std::find_if(rails_w.begin(), rails_w.end(), [&](const auto& p) { return p.first == r.name; });
    if (it == rails_w.end()) continue;
    const double mw = std::max(0.0, it->second * 1000.0);
    const long long ma = std::llround(mw / kRailMv * 1000.0);
    const auto files = rail_value_files(dirs.at(r.chip), d, r.channel);
    if (!files.power.empty()) write_small_file_atomic(files.power, std::to_string(std::llround(mw)));
    write_small_file_atomic(files.voltage, std::to_string(std::llround(kRailMv)));
    write_small_file_atomic(files.current, std::to_string(ma));
  }
}

void write_emulator_dir(const fs::path& root, const traces::DeviceSpec& device, double time_scale) {
  const fs::path ctl = root / "pacer-emulator";
  fs::create_directories(ctl);
  write_small_file_atomic(ctl / "device", device.name);
  write_small_file_atomic(ctl / "time_scale", fmt::format("{:.9g}", time_scale));
  write_small_file_atomic(ctl / "running", "0");
  write_small_file_atomic(ctl / "request", "0 0 -");
  write_small_file_atomic(ctl / "response", "0 0 0 0");
  write_small_file_atomic(ctl / "violations", "0");
  write_small_file_atomic(ctl / "pid", std::to_string(::getpid()));
}

// ---------------------------------------------------------------------------------------------

LiveEmulatedTree::LiveEmulatedTree(fs::path root, std::unique_ptr<EmulatedJetson> emulator, ModelFactory factory,
                                   LiveTreeOptions options)
    : root_(std::move(root)),
      emu_(std::move(emulator)),
      factory_(std::move(factory)),
      options_(options),
      rng_(options.seed) {
  if (!emu_) throw Error("the live emulated tree needs an emulated device");
  check_emulation_root(root_);
  // The root's lock, held while this tree is served: taken before anything is written, so a
  // second emulator on this root changes nothing (not the pid file, not max_freq).
  fs::create_directories(root_ / "pacer-emulator");
  lock_.fd = ::open(emulator_lock_path(root_).c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (lock_.fd < 0)
    throw SettingError("root", fmt::format("cannot create {} ({})", emulator_lock_path(root_).string(),
                                           std::strerror(errno)));
  if (::flock(lock_.fd, LOCK_EX | LOCK_NB) != 0) throw served_by_another(root_);
  spec_ = emu_->device();
  if (!(options_.time_scale > 0)) throw OptionError("time-scale", "the time scale must be positive");
  const auto& d = spec_;
  write_fake_tree(root_, d);
  write_emulator_dir(root_, d, options_.time_scale);
  modes_ = has_complete_modes(d);
  caps_ = traces::mode_maxima(d);
  if (modes_) {
    write_fake_nvpmodel(root_, d);
    caps_ = read_mode_files(root_, d);
  }
  devfreq_dir_ = fake_devfreq_dir(root_, d);
  ctl_dir_ = root_ / "pacer-emulator";
  if (const auto* phys = dynamic_cast<const WorkloadPhysics*>(&emu_->model())) workload_ = phys->workload().name;
  last_min_ = std::llround(d.gpu_freqs_hz.front());
  last_max_ = std::llround(d.gpu_freqs_hz.back());
  tick();
}

LiveEmulatedTree::~LiveEmulatedTree() {
  stop();
}

LiveEmulatedTree::HeldLock::~HeldLock() {
  if (fd >= 0) ::close(fd);  // releases the root's lock
}

void LiveEmulatedTree::start() {
  if (thread_.joinable()) return;
  stop_ = false;
  thread_ = std::thread([this] {
    const auto period = std::chrono::duration<double>(options_.tick_s);
    while (!stop_) {
      try {
        tick();
      } catch (const std::exception& e) {
        spdlog::warn("emulated tree update failed: {}", e.what());
      }
      std::this_thread::sleep_for(period);
    }
  });
}

void LiveEmulatedTree::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void LiveEmulatedTree::tick() {
  const double pinned = follow_freq_limits();
  follow_power_mode();
  emu_->set_caps(caps_);
  emu_->pin({pinned});
  const Request request = follow_request(pinned);
  const Output output = device_output(request, pinned);
  write_device_files(request, output);
  write_rails(request, output);
  ticks_++;
}

double LiveEmulatedTree::follow_freq_limits() {
  // min_freq/max_freq are written in place by the backend: a read may catch an empty file.
  auto read_ll = [&](const fs::path& p, long long fallback) {
    try {
      return parse_sysfs_int(real_sysfs_io().read(p), p);
    } catch (const Error&) {
      return fallback;
    }
  };
  const long long mn = read_ll(devfreq_dir_ / "min_freq", last_min_);
  const long long mx = read_ll(devfreq_dir_ / "max_freq", last_max_);
  const bool violation = mn > mx;
  if (violation && !in_violation_) {
    violations_++;
    write_small_file_atomic(ctl_dir_ / "violations", std::to_string(violations_.load()));
    spdlog::warn("emulated tree: min_freq {} above max_freq {} (the kernel would refuse this write)", mn, mx);
  }
  in_violation_ = violation;
  last_min_ = mn;
  last_max_ = mx;
  // The governor runs at the top of the allowed range while loaded; a pinned range is one value.
  const long long ceiling = violation ? mn : mx;
  double pinned = spec_.gpu_freqs_hz.front();
  for (double f : spec_.gpu_freqs_hz)
    if (f <= static_cast<double>(ceiling) + 0.5) pinned = f;
  return pinned;
}

void LiveEmulatedTree::follow_power_mode() {
  // The other caps a power mode sets (CPU cores and clock, EMC, GPU TPCs), as nvpmodel left them.
  // Re-read when nvpmodel switched modes, and every 25 ticks for writes of another tool.
  if (!modes_) return;
  const std::string mode = read_or(ctl_dir_ / "nvpmodel_mode", last_mode_);
  if (mode != last_mode_ || ++caps_age_ >= 25) {
    caps_ = read_mode_files(root_, spec_);
    last_mode_ = mode;
    caps_age_ = 0;
  }
}

LiveEmulatedTree::Request LiveEmulatedTree::follow_request(double pinned_hz) {
  std::istringstream in(read_or(ctl_dir_ / "request", "0 0 -"));
  Request r;
  std::string workload;
  in >> r.seq >> r.batch >> workload;
  if (!workload.empty() && workload != "-" && workload != workload_) {
    if (!factory_)
      throw Error(fmt::format("the workload side asks for '{}' but this emulator serves '{}'", workload, workload_));
    // spec_, not emu_'s own device: emu_ is replaced here.
    emu_ = std::make_unique<EmulatedJetson>(spec_, factory_(workload), emu_->options());
    emu_->set_caps(caps_);
    emu_->pin({pinned_hz});
    workload_ = workload;
  }
  r.running = read_or(ctl_dir_ / "running", "0") == "1" && r.batch > 0;
  return r;
}

LiveEmulatedTree::Output LiveEmulatedTree::device_output(const Request& r, double pinned_hz) {
  Output o;
  o.freq_hz = r.running ? emu_->effective_freq_hz(r.batch) : pinned_hz;
  o.total_w = spec_.idle_power_w;
  o.gpu_w = 0.15 * spec_.idle_power_w;
  if (r.batch > 0) o.time_per_batch_s = emu_->expected(o.freq_hz, r.batch).time_per_batch_s;
  if (r.running) {
    // The mini-batch's power phases, as the emulated device's own sensor sees them: the peak for
    // the compute share of every batch, the rest at the level that keeps the mean. The phase runs
    // on this tree's clock (device time); a sensor sampling it at a rate unrelated to the batch
    // period meets the same mix of peak and low readings as one on the device.
    const auto p = emu_->expected(o.freq_hz, r.batch);
    const double s = std::clamp(emu_->options().compute_phase_share, 0.05, 1.0);
    const double peak = std::isnan(p.power_peak_w) ? p.power_mean_w : p.power_peak_w;
    o.total_w = p.power_mean_w;
    if (s < 1.0 && o.time_per_batch_s > 0) {
      const double device_t =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count() / options_.time_scale;
      const double phase = std::fmod(device_t, o.time_per_batch_s) / o.time_per_batch_s;
      o.total_w = phase < s ? peak : std::max(0.0, (p.power_mean_w - s * peak) / (1.0 - s));
    }
    o.gpu_w = emu_->expected_gpu_w(o.freq_hz, r.batch);
  }
  std::normal_distribution<double> n01(0.0, 1.0);
  const double noise = emu_->options().sensor_noise_rel;
  o.total_w *= std::max(0.0, 1.0 + noise * n01(rng_));
  o.gpu_w *= std::max(0.0, 1.0 + noise * n01(rng_));
  return o;
}

bool LiveEmulatedTree::faulty(const Request& r) const {
  return r.seq >= options_.fault_from_request;
}

void LiveEmulatedTree::write_device_files(const Request& r, const Output& o) {
  const SysfsFaults& faults = options_.faults;
  const double shown_freq = faulty(r) && faults.cur_freq_hz > 0 ? faults.cur_freq_hz : o.freq_hz;
  write_small_file_atomic(devfreq_dir_ / "cur_freq", std::to_string(std::llround(shown_freq)));
  write_small_file_atomic(root_ / spec_.gpu_device_dir / "load", r.running ? "999" : "0");
  write_small_file_atomic(ctl_dir_ / "response",
                          fmt::format("{} {} {} {:.9g}", r.seq, r.batch, std::llround(o.freq_hz), o.time_per_batch_s));
}

void LiveEmulatedTree::write_rails(const Request& r, const Output& o) {
  const SysfsFaults& faults = options_.faults;
  if (!faulty(r) || faults.rail == SysfsFaults::Rail::none) {
    write_fake_rails(root_, spec_, emu_->rail_powers(o.total_w, o.gpu_w));
    return;
  }
  std::error_code ec;
  for (const auto& file : fake_rail_value_files(root_, spec_)) {
    switch (faults.rail) {
      case SysfsFaults::Rail::vanish:
        fs::remove(file, ec);
        break;
      case SysfsFaults::Rail::garbage:
        write_small_file_atomic(file, faults.garbage);
        break;
      case SysfsFaults::Rail::block:
        // open(2) of a FIFO without a writer blocks, as a read of a hung I2C sensor does.
        if (!fault_applied_) {
          fs::remove(file, ec);
          if (::mkfifo(file.c_str(), 0644) != 0)
            throw Error(fmt::format("cannot make {} a FIFO: {}", file.string(), std::strerror(errno)));
        }
        break;
      default:  // frozen: the files keep their last values
        break;
    }
  }
  if (!fault_applied_) spdlog::info("emulated tree: rail fault injected at request {}", r.seq);
  fault_applied_ = true;
}

}  // namespace pacer::hw
