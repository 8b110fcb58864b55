#pragma once
// A fake clock for the hardware-in-the-loop tests (issue 23, item 6): the SleepingExecutor of a live
// emulated tree, wrapped so that the profiler times each mini-batch by the time the tree answered
// for it (in wall seconds: device time x the tree's time scale) instead of by the wall clock. The
// mini-batches still sleep that long on the tree's schedule, but a busy machine (a late wake-up, a
// thread held off the CPU) no longer changes the times the profiler records: what a test compares
// with the model is what the tree served for the clock the sysfs backend pinned.
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "hw/executor.hpp"

namespace pacer::hw::test {

class TreeClockExecutor final : public BatchExecutor {
 public:
  // `emulator_dir` is <tree>/pacer-emulator, as for SleepingExecutor.
  TreeClockExecutor(const std::filesystem::path& emulator_dir, const std::string& workload)
      : inner_(emulator_dir, workload), response_(emulator_dir / "response") {}
  std::string kind() const override { return inner_.kind(); }
  void prepare(int batch_size) override { inner_.prepare(batch_size); }
  // The answer the executor slept for: the tree refreshes it every tick, for the clock pinned now.
  void run_batch() override {
    inner_.run_batch();
    now_s_ += answered_s() * inner_.time_scale();
  }
  void finish() override { inner_.finish(); }
  double time_scale() const override { return inner_.time_scale(); }
  double now_s() const override { return now_s_; }
  // The wall seconds the mini-batches were scheduled to take in all: the least wall time they took
  // (they end on the tree's schedule, never before it), on any machine.
  double scheduled_s() const { return now_s_; }

 private:
  double answered_s() const {
    std::ifstream in(response_);
    long seq = 0;
    int batch = 0;
    long long f = 0;
    double t = 0;
    if (!(in >> seq >> batch >> f >> t) || !(t > 0))
      throw std::runtime_error("no time per mini-batch in " + response_.string());
    return t;
  }

  SleepingExecutor inner_;
  std::filesystem::path response_;
  double now_s_ = 0;
};

}  // namespace pacer::hw::test
