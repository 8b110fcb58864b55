#pragma once
// Fake Jetson sysfs trees in the layouts of the catalog (devfreq node, of_node name, INA3221 in iio
// or hwmon form, a GPU thermal zone), and a live server that keeps one updated from an emulated
// Jetson while a workload "runs": the real sysfs backend runs against it unchanged (hardware in
// the loop). The workload side talks to the server through <root>/pacer-emulator/:
//   request   "<seq> <batch_size> <workload>"   written by SleepingExecutor::prepare
//   running   "1" while mini-batches run, "0" otherwise
//   response  "<seq> <batch_size> <freq_hz> <time_per_batch_s>"  refreshed by the server every tick
//   time_scale, device, violations (min_freq > max_freq seen: the kernel would have refused), pid
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "hw/emulator/emulated.hpp"
#include "hw/jetson/sysfs_io.hpp"
#include "traces/records.hpp"

namespace pacer::hw {

struct FakeTreeOptions {
  bool sensors = true;  // false: a board whose INA3221 is missing
  bool thermal = true;
  bool decoy_devfreq = true;  // a non-GPU devfreq entry discovery must skip
  double min_freq_hz = 0;     // 0: lowest table entry (the governor's range at boot)
  double max_freq_hz = 0;     // 0: highest
  double idle_power_w = -1;   // <0: the catalog's idle power
};

// Refuses (OptionError on "root") a root where an emulated tree would overwrite a real one or
// spill into other files: an empty or too long path, a root that is or is inside /sys or /proc,
// whose sys/ is the real /sys (root "/"), that already holds a sys/class/devfreq that pacer did not
// write (no pacer-emulator folder beside it), that is not a folder, or a folder that is not empty
// and holds no pacer emulator tree (/etc, /dev, /home). Accepted: a missing or empty folder, or one
// that holds pacer-emulator/. A root another live emulator serves (it holds the lock
// <root>/pacer-emulator/lock) is a SettingError naming its pid. Nothing is created.
void check_emulation_root(const std::filesystem::path& root);

// Creates the tree under `root` (which may exist; never one inside the real /sys or /proc).
// Paths come from the catalog entry.
void write_fake_tree(const std::filesystem::path& root, const traces::DeviceSpec& device,
                     const FakeTreeOptions& options = {});
// The devfreq directory of a tree written by write_fake_tree.
std::filesystem::path fake_devfreq_dir(const std::filesystem::path& root, const traces::DeviceSpec& device);
// Writes rail values (name -> W) in the board's layout, each file atomically.
void write_fake_rails(const std::filesystem::path& root, const traces::DeviceSpec& device,
                      const std::vector<std::pair<std::string, double>>& rails_w);
// Marks a tree as emulated and creates the control directory.
void write_emulator_dir(const std::filesystem::path& root, const traces::DeviceSpec& device, double time_scale);

// Writes `content` to `path` through a temporary sibling and rename(2), so a concurrent reader
// sees the old or the new value, never an empty file.
void write_small_file_atomic(const std::filesystem::path& path, const std::string& content);

// Every file of the tree's INA3221 rails that holds a reading (in_powerN_input, in_voltageN_input,
// in_currentN_input / inN_input, currN_input), in the board's layout.
std::vector<std::filesystem::path> fake_rail_value_files(const std::filesystem::path& root,
                                                         const traces::DeviceSpec& device);

// Faults of a Jetson's sysfs that the emulated tree injects, so that what the backend does on a
// failing board is tested without one. docs/reliability.md, "Sensor and devfreq faults", gives the
// outcome of each in the backend, sampler and profiler.
struct SysfsFaults {
  enum class Rail {
    none,
    vanish,   // the rail files are gone (ENOENT), as when the INA3221 driver is unbound
    garbage,  // the rail files hold `garbage`
    frozen,   // the rail files keep the value they had when the fault began
    block,    // a read of a rail file blocks (FaultyIo: until release(), then ETIMEDOUT; live tree: a FIFO)
  };
  Rail rail = Rail::none;                // applies to every rail value file
  std::string garbage = "not-a-number";  // what Rail::garbage serves: "-5000", "99999999999999", ...
  int busy_writes = 0;     // the next N writes of min_freq/max_freq fail with EBUSY; < 0: every one (FaultyIo only)
  double cur_freq_hz = 0;  // > 0: cur_freq reads this whatever min_freq/max_freq say
};

// Parses a fault name of `pacer emulate --fault`: none, rail-vanish, rail-garbage[=TEXT],
// rail-frozen, rail-block, cur-freq=HZ. Throws UsageError naming the option otherwise.
SysfsFaults parse_sysfs_fault(const std::string& text);

// A SysfsIo that injects SysfsFaults into any tree (write_fake_tree or a live one) on top of
// another SysfsIo (null: the real files), so the unchanged backend meets each fault. Tests pass it
// as JetsonSysfsOptions::io and change the faults at any moment (thread-safe).
class FaultyIo : public SysfsIo {
 public:
  explicit FaultyIo(std::shared_ptr<SysfsIo> inner = nullptr);
  ~FaultyIo() override;
  void set(const SysfsFaults& faults);  // takes effect at the next read or write; frozen values are re-taken
  SysfsFaults faults() const;
  // Rail::block: the reads blocked now return, failing with ETIMEDOUT (later ones block again
  // while the fault stays set).
  void release();
  int64_t busy_answers() const;  // writes refused with EBUSY so far
  int blocked_reads() const;     // reads blocked right now
  std::string read(const std::filesystem::path& path) const override;
  void write(const std::filesystem::path& path, const std::string& value) override;

 private:
  SysfsIo& inner() const;
  std::shared_ptr<SysfsIo> inner_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  SysfsFaults faults_;
  mutable std::map<std::string, std::string> frozen_;
  int64_t busy_answers_ = 0;
  mutable int blocked_ = 0;
  mutable uint64_t release_generation_ = 0;
};

using ModelFactory = std::function<std::shared_ptr<const models::DeviceModel>(const std::string& workload)>;

struct LiveTreeOptions {
  double time_scale = 1.0;  // wall seconds per device second
  double tick_s = 0.004;    // wall seconds between updates
  uint64_t seed = 7;
  // Faults applied to the files themselves (any reader meets them, another process included) from
  // the workload side's request number `fault_from_request` on (0: at once). busy_writes cannot be
  // served by plain files: use FaultyIo for it.
  SysfsFaults faults;
  long fault_from_request = 0;
};

class LiveEmulatedTree {
 public:
  // Writes the tree and the control directory, after check_emulation_root and taking the root's
  // lock: a second emulator on a root one serves is refused before it writes anything (a pid file
  // left by a dead one is taken over). `factory` builds the cost model when the workload side names
  // a workload other than the current one (null: the workload must not change).
  LiveEmulatedTree(std::filesystem::path root, std::unique_ptr<EmulatedJetson> emulator, ModelFactory factory,
                   LiveTreeOptions options = {});
  ~LiveEmulatedTree();
  LiveEmulatedTree(const LiveEmulatedTree&) = delete;
  LiveEmulatedTree& operator=(const LiveEmulatedTree&) = delete;

  void start();
  void stop();
  const std::filesystem::path& root() const { return root_; }
  int64_t violations() const { return violations_.load(); }
  int64_t ticks() const { return ticks_.load(); }
  // Runs one update now (the thread calls it every tick; tests may call it directly).
  void tick();

 private:
  // What the workload side asks for in a tick (<root>/pacer-emulator/request and running).
  struct Request {
    long seq = 0;
    int batch = 0;
    bool running = false;  // mini-batches run now
  };
  // What the device shows in a tick: the clock it runs at and the power its rails carry.
  struct Output {
    double freq_hz = 0;
    double total_w = 0, gpu_w = 0;
    double time_per_batch_s = 0;
  };
  // The jobs of one tick, in order: the clock min_freq/max_freq allow (counting min > max writes),
  // the caps of the power mode in force, the workload side's request (switching the cost model when
  // it names another workload), the clock and power the device shows, and the files that show them.
  double follow_freq_limits();
  void follow_power_mode();
  Request follow_request(double pinned_hz);
  Output device_output(const Request& request, double pinned_hz);
  bool faulty(const Request& request) const;  // the faults apply from this request on
  void write_device_files(const Request& request, const Output& output);
  void write_rails(const Request& request, const Output& output);

  std::filesystem::path root_;
  std::unique_ptr<EmulatedJetson> emu_;  // replaced by tick() when the workload side names another workload
  traces::DeviceSpec spec_;              // the board, owned here: it outlives every emu_
  ModelFactory factory_;
  LiveTreeOptions options_;
  std::filesystem::path devfreq_dir_;
  std::filesystem::path ctl_dir_;
  std::string workload_;
  long long last_min_ = 0, last_max_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> violations_{0};
  std::atomic<int64_t> ticks_{0};
  bool in_violation_ = false;
  bool fault_applied_ = false;
  bool modes_ = false;     // the board's power modes are served (<root>/pacer-emulator/nvpmodel)
  traces::ModeCaps caps_;  // as the tree's files put them in force
  std::string last_mode_;
  int caps_age_ = 0;
  std::thread thread_;
  std::mt19937_64 rng_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();  // phase clock of the rails
  // <root>/pacer-emulator/lock, held (flock) while this tree is served; released when it closes,
  // also when the constructor throws after taking it.
  struct HeldLock {
    int fd = -1;
    HeldLock() = default;
    ~HeldLock();
    HeldLock(const HeldLock&) = delete;
    HeldLock& operator=(const HeldLock&) = delete;
  };
  HeldLock lock_;
};

}  // namespace pacer::hw
