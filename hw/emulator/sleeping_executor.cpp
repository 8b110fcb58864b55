// SleepingExecutor: the workload side of the live emulated tree's protocol (hw/emulator/emulated_tree.hpp).
#include <fmt/format.h>

#include <chrono>
#include <sstream>
#include <thread>

#include "base/error.hpp"
#include "base/units.hpp"
#include "hw/emulator/emulated_tree.hpp"
#include "hw/executor.hpp"
#include "hw/jetson/sysfs_io.hpp"

namespace pacer::hw {
namespace fs = std::filesystem;

SleepingExecutor::SleepingExecutor(fs::path emulator_dir, std::string workload, double answer_timeout_s)
    : dir_(std::move(emulator_dir)), workload_(std::move(workload)), answer_timeout_s_(answer_timeout_s) {
  if (!fs::exists(dir_ / "response"))
    throw Error(
        fmt::format("{} is not an emulated tree's control directory (start one with `pacer emulate`)", dir_.string()));
  const std::string scale = read_or(dir_ / "time_scale", "1");
  time_scale_ = units::to_number(scale).value_or(0);
  if (!(time_scale_ > 0))
    throw Error(
        fmt::format("{}/time_scale holds '{}', not a positive number: restart `pacer emulate`", dir_.string(), scale));
  std::istringstream resp(read_or(dir_ / "response", "0"));
  resp >> seq_;
}

SleepingExecutor::~SleepingExecutor() {
  try {
    finish();
  } catch (const std::exception&) {
  }
}

double SleepingExecutor::read_answer(long expected_seq) const {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(answer_timeout_s_);
  for (;;) {
    std::istringstream resp(read_or(dir_ / "response", ""));
    long seq = -1;
    int batch = 0;
    long long f = 0;
    double t = 0;
    if ((resp >> seq >> batch >> f >> t) && seq == expected_seq && t > 0) return t;
    if (std::chrono::steady_clock::now() > deadline)
      throw Error(fmt::format("the emulated tree at {} does not answer: is `pacer emulate` still running?",
                              dir_.parent_path().string()));
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void SleepingExecutor::prepare(int batch_size) {
  ++seq_;
  write_small_file_atomic(dir_ / "request", fmt::format("{} {} {}", seq_, batch_size, workload_));
  write_small_file_atomic(dir_ / "running", "1");
  read_answer(seq_);
  next_end_ = {};
}

void SleepingExecutor::run_batch() {
  // The server refreshes the answer every tick, so throttling by the circuit cap shows up here.
  const double t = read_answer(seq_);
  using clock = std::chrono::steady_clock;
  const auto now = clock::now();
  const auto duration = std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(t * time_scale_));
  // A fresh schedule after prepare() or when more than two mini-batches behind (a stall of the
  // caller's own, not this executor's to make up).
  if (next_end_ == clock::time_point{} || now - next_end_ > 2 * duration) next_end_ = now;
  next_end_ += duration;
  std::this_thread::sleep_until(next_end_);
}

void SleepingExecutor::finish() {
  if (fs::exists(dir_)) write_small_file_atomic(dir_ / "running", "0");
}

}  // namespace pacer::hw
