// Two `pacer` processes writing the same record of one store: two `profile` runs into one profile
// with other frequencies, two `relation` campaigns into one relation with other seeds. Each read
// the record at its start and wrote its own copy whole, so the last writer dropped the other's
// reported points and runs, both exit 0 (issue 22, item 2). The interleaving that lost them is made
// here on purpose: the test holds the store's writers' lock until both writers have read the record
// and wait for the lock with a point or run of their own (each says so on stderr), then lets go.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/child_pacer.hpp"
#include "traces/store/store.hpp"
#include "traces/store/store_file.hpp"

namespace {
namespace fs = std::filesystem;
using pacer::testing::read_trimmed;
using pacer::testing::spawn_pacer;
using pacer::testing::wait_status;
using pacer::traces::Store;

fs::path fresh_dir(const std::string& tag) {
  const fs::path dir = fs::temp_directory_path() / ("pacer-same-record-" + std::to_string(::getpid()) + "-" + tag);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

bool exited_zero(int status) {
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// Starts two pacer commands while this process holds the writers' lock of `store`; lets go once
// both wait for it (each has read the record and has something of its own to write), then waits
// for both. Returns their wait statuses.
std::vector<int> two_writers_after_both_read(const fs::path& store, const fs::path& dir,
                                            const std::vector<std::vector<std::string>>& commands) {
  std::vector<pid_t> pids;
  {
    pacer::traces::file::WriteLock held(store);
    for (size_t i = 0; i < commands.size(); ++i)
      pids.push_back(spawn_pacer(commands[i], (dir / fmt::format("out{}", i)).string(),
                                 (dir / fmt::format("err{}", i)).string()));
    const auto waiting = [&](size_t i) {
      return read_trimmed((dir / fmt::format("err{}", i)).string()).find("waiting for it to finish") !=
             std::string::npos;
    };
    // A hang guard only (10 min): both normally wait within seconds.
    for (int t = 0; t < 6000 && !(waiting(0) && waiting(1)); ++t)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_TRUE(waiting(0) && waiting(1)) << read_trimmed((dir / "err0").string()) << "\n"
                                          << read_trimmed((dir / "err1").string());
  }
  std::vector<int> statuses;
  for (const pid_t pid : pids) statuses.push_back(wait_status(pid));
  return statuses;
}

TEST(SameRecordWriters, TwoProfilesIntoOneProfileKeepEveryReportedPoint) {
  const fs::path dir = fresh_dir("profile");
  const fs::path store = dir / "s.h5";
  const std::vector<std::string> common = {"profile",      "--device", "emulated:jetson-nano", "--workload", "cnn",
                                           "--batch-sizes", "4,8,16",  "--store",              store.string()};
  // The profile exists, with the device, before the two start: both read it and resume it.
  auto first = common;
  first.insert(first.end(), {"--freqs", "460.8"});
  ASSERT_TRUE(exited_zero(wait_status(spawn_pacer(first, (dir / "o").string(), (dir / "e").string()))))
      << read_trimmed((dir / "e").string());
  auto low = common, high = common;
  low.insert(low.end(), {"--freqs", "76.8,153.6"});
  high.insert(high.end(), {"--freqs", "768,921.6"});
  const auto statuses = two_writers_after_both_read(store, dir, {low, high});
  for (size_t i = 0; i < statuses.size(); ++i)
    EXPECT_TRUE(exited_zero(statuses[i])) << read_trimmed((dir / fmt::format("err{}", i)).string());
  // 3 + 6 + 6 points reported, every one stored.
  const auto t = Store::open(store).read<pacer::traces::ProfileTable>("cnn@1x28x28");
  std::set<std::pair<double, int>> points;
  for (const auto& p : t.points) points.insert({p.knob.at(0), p.batch_size});
  std::set<std::pair<double, int>> expected;
  for (double f : {76.8e6, 153.6e6, 460.8e6, 768e6, 921.6e6})
    for (int b : {4, 8, 16}) expected.insert({f, b});
  EXPECT_EQ(points, expected);
  EXPECT_EQ(t.points.size(), expected.size());
  fs::remove_all(dir);
}

TEST(SameRecordWriters, TwoRelationCampaignsIntoOneRelationKeepEveryRun) {
  const fs::path dir = fresh_dir("relation");
  const fs::path store = dir / "s.h5";
  const std::vector<std::string> common = {
      "relation", "--workload",     "cnn-w0.5", "--dataset",      "fmnist-proxy", "--checkpoint",     "none",
      "--max-train", "1500",        "--eval-samples", "300",       "--eval-every", "256",  "--screen-samples",
      "0",        "--target",       "0.75",     "--budget",       "3000",         "--batch-sizes",    "8",
      "--threads", "1",             "--name",   "r",              "--out",        store.string()};
  auto first = common;
  first.insert(first.end(), {"--seeds", "4"});
  ASSERT_TRUE(exited_zero(wait_status(spawn_pacer(first, (dir / "o").string(), (dir / "e").string()))))
      << read_trimmed((dir / "e").string());
  auto a = common, b = common;
  a.insert(a.end(), {"--seeds", "0,1"});
  b.insert(b.end(), {"--seeds", "2,3"});
  const auto statuses = two_writers_after_both_read(store, dir, {a, b});
  for (size_t i = 0; i < statuses.size(); ++i)
    EXPECT_TRUE(exited_zero(statuses[i])) << read_trimmed((dir / fmt::format("err{}", i)).string());
  const Store s = Store::open(store);
  std::set<int> seeds;
  for (const auto& r : s.read<pacer::traces::RelationSet>("r").runs) seeds.insert(r.seed);
  EXPECT_EQ(seeds, (std::set<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(s.read<pacer::traces::RelationSet>("r").runs.size(), 5u);
  std::set<int> curve_seeds;
  for (const auto& p : s.read<pacer::traces::LearningCurve>("r").points) curve_seeds.insert(p.seed);
  EXPECT_EQ(curve_seeds, (std::set<int>{0, 1, 2, 3, 4}));
  fs::remove_all(dir);
}

}  // namespace
