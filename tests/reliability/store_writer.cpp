// Test helper: a process that writes records into a trace store, the way `pacer profile` does (one
// rewrite of the whole store per measured point), so tests can run several writers at once.
//   store_writer STORE NAME RECORDS POINTS   write RECORDS profiles NAME-0 .. NAME-<RECORDS-1>,
//                                            each grown point by point to POINTS points
//   store_writer --time STORE POINTS         time one POINTS-point profile written point by point
//                                            into STORE, and report the writers' lock's own cost
//   store_writer --merge OUT IN...           merge the stores IN into OUT, keeping what OUT holds
//                                            (traces::merge_into, what `pacer merge --update` runs)
// Exit 0 on success; one line on stderr and exit 1 on an error.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "traces/store/merge.hpp"
#include "traces/store/store.hpp"
#include "traces/store/store_file.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using namespace pacer::traces;

ProfilePoint point(int i) {
  ProfilePoint p;
  p.knob = {76.8e6 * (1 + i % 12)};
  p.batch_size = 4 << (i / 12);
  p.time_per_batch_mean_s = 0.01 * (i + 1);
  p.power_mean_w = 3 + 0.01 * i;
  p.power_peak_w = 4 + 0.01 * i;
  p.samples = 100 + i;
  return p;
}

// Writes `name`, grown from 1 to `points` points, one store rewrite per point.
void grow_profile(Store& store, const std::string& name, int points) {
  ProfileTable t;
  t.workload = name;
  t.device = "jetson-nano";
  t.source = "store_writer";
  for (int i = 0; i < points; ++i) {
    t.points.push_back(point(i));
    store.write(t);
  }
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

int time_profile(const std::string& path, int points) {
  Store store = Store::open_or_create(path);
  auto start = Clock::now();
  grow_profile(store, "timed", points);
  const double with_lock_s = seconds_since(start);
  constexpr int kLocks = 1000;
  start = Clock::now();
  for (int i = 0; i < kLocks; ++i) file::WriteLock lock(path);
  const double lock_s = seconds_since(start) / kLocks;
  std::printf(
      "profile of %d points, one store rewrite per point: %.3f s (%.2f ms per point); "
      "taking and releasing the writers' lock: %.1f us (%.3f %% of a point)\n",
      points, with_lock_s, 1e3 * with_lock_s / points, 1e6 * lock_s, 100 * lock_s / (with_lock_s / points));
  return 0;
}

}  // namespace

int main(int argc, char** argv) try {
  spdlog::set_default_logger(spdlog::stderr_color_mt("store_writer"));
  if (argc == 4 && std::string(argv[1]) == "--time") return time_profile(argv[2], std::atoi(argv[3]));
  if (argc >= 4 && std::string(argv[1]) == "--merge") {
    merge_into(argv[2], std::vector<std::filesystem::path>(argv + 3, argv + argc));
    return 0;
  }
  if (argc != 5) {
    std::fprintf(stderr, "usage: store_writer STORE NAME RECORDS POINTS | --time STORE POINTS | --merge OUT IN...\n");
    return 2;
  }
  Store store = Store::open_or_create(argv[1]);
  for (int r = 0; r < std::atoi(argv[3]); ++r)
    grow_profile(store, std::string(argv[2]) + "-" + std::to_string(r), std::atoi(argv[4]));
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "store_writer: %s\n", e.what());
  return 1;
}
