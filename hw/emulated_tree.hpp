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
#include <filesystem>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "hw/emulated.hpp"
#include "traces/records.hpp"

namespace pacer::hw {

struct FakeTreeOptions {
  bool sensors = true;        // false: a board whose INA3221 is missing
  bool thermal = true;
  bool decoy_devfreq = true;  // a non-GPU devfreq entry discovery must skip
  double min_freq_hz = 0;     // 0: lowest table entry (the governor's range at boot)
  double max_freq_hz = 0;     // 0: highest
  double idle_power_w = -1;   // <0: the catalog's idle power
};

// Creates the tree under `root` (which may exist). Paths come from the catalog entry.
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

using ModelFactory = std::function<std::shared_ptr<const models::DeviceModel>(const std::string& workload)>;

struct LiveTreeOptions {
  double time_scale = 1.0;  // wall seconds per device second
  double tick_s = 0.004;    // wall seconds between updates
  uint64_t seed = 7;
};

class LiveEmulatedTree {
 public:
  // Writes the tree and the control directory. `factory` builds the cost model when the workload
  // side names a workload other than the current one (null: the workload must not change).
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
  std::filesystem::path root_;
  std::unique_ptr<EmulatedJetson> emu_;
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
  std::thread thread_;
  std::mt19937_64 rng_;
};

}  // namespace pacer::hw
