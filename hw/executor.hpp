#pragma once
// The mini-batch executor the profiler drives, injected so one profiler serves every setting:
//  - VirtualExecutor: the emulated Jetson advances its virtual clock by the model's time;
//  - SleepingExecutor: hardware in the loop against a live emulated sysfs tree (emulated_tree.hpp):
//    it tells the tree what runs and sleeps the tree's time per mini-batch, scaled;
//  - FunctionExecutor: real training steps. dnn/train.hpp's step runner plugs in here
//    (make_training_executor in experiments/campaigns/profiling.cpp is the adapter).
#include <chrono>
#include <filesystem>
#include <functional>
#include <string>

namespace pacer::hw {

class EmulatedJetson;

class BatchExecutor {
 public:
  virtual ~BatchExecutor() = default;
  virtual std::string kind() const = 0;
  // Sets up batch size b before the warm-up (data, buffers); not timed.
  virtual void prepare(int /*batch_size*/) {}
  // Runs one mini-batch of the prepared size and returns when it is done.
  virtual void run_batch() = 0;
  // The load stops (between points, and at the end).
  virtual void finish() {}
  // Wall seconds per device second; the profiler divides measured wall times by it.
  virtual double time_scale() const { return 1.0; }
  // Non-null when time is the emulated device's virtual clock, not the wall clock.
  virtual EmulatedJetson* virtual_device() { return nullptr; }
  // The clock the profiler times mini-batches (and its cost) by when there is no virtual device
  // [wall s, any origin]: the steady clock. A test wraps an executor to give a fake one, so that
  // what it checks does not depend on how fast the machine runs.
  virtual double now_s() const;
};

class VirtualExecutor final : public BatchExecutor {
 public:
  explicit VirtualExecutor(EmulatedJetson& device) : device_(device) {}
  std::string kind() const override { return "virtual (emulated device clock)"; }
  void prepare(int batch_size) override { batch_size_ = batch_size; }
  void run_batch() override;
  EmulatedJetson* virtual_device() override { return &device_; }

 private:
  EmulatedJetson& device_;
  int batch_size_ = 0;
};

class SleepingExecutor final : public BatchExecutor {
 public:
  // `emulator_dir` is <tree>/pacer-emulator; the time scale is read from it.
  SleepingExecutor(std::filesystem::path emulator_dir, std::string workload, double answer_timeout_s = 5.0);
  ~SleepingExecutor() override;
  std::string kind() const override { return "sleeping (hardware in the loop)"; }
  void prepare(int batch_size) override;
  void run_batch() override;
  void finish() override;
  double time_scale() const override { return time_scale_; }

 private:
  double read_answer(long expected_seq) const;
  std::filesystem::path dir_;
  std::string workload_;
  double answer_timeout_s_;
  double time_scale_ = 1.0;
  long seq_ = 0;
  // Mini-batches end on an absolute schedule, so the overhead of one wake-up (tens of us, large
  // against a compressed mini-batch) is made up by the next instead of adding up.
  std::chrono::steady_clock::time_point next_end_{};
};

class FunctionExecutor final : public BatchExecutor {
 public:
  struct Hooks {
    std::string kind = "training";
    std::function<void(int)> prepare;  // may be empty
    std::function<void()> step;        // one real mini-batch (forward, backward, optimizer step, sync)
    std::function<void()> finish;      // may be empty
  };
  explicit FunctionExecutor(Hooks hooks);
  std::string kind() const override { return hooks_.kind; }
  void prepare(int batch_size) override {
    if (hooks_.prepare) hooks_.prepare(batch_size);
  }
  void run_batch() override { hooks_.step(); }
  void finish() override {
    if (hooks_.finish) hooks_.finish();
  }

 private:
  Hooks hooks_;
};

}  // namespace pacer::hw
