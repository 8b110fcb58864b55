// Crash safety of `pacer profile` (a measured point must survive a kill): the process is killed
// with SIGKILL after a chosen number of points were reported (plus a random delay, so the kill also
// lands inside a store rewrite), then the test checks that the store opens, that every point
// reported as written is in it with the value of an uninterrupted run, that a rerun resumes without
// measuring those points again and ends with the points of the uninterrupted run, bit for bit
// (virtual time, fixed seed).
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "base/error.hpp"
#include "tests/support/child_pacer.hpp"
#include "traces/store/store.hpp"

namespace {
namespace fs = std::filesystem;
using pacer::traces::ProfileTable;
using pacer::traces::Store;

struct Reported {
  double freq_mhz;
  int batch;
};

struct RunResult {
  int exit_status = -1;     // raw wait status
  bool killed = false;      // we sent SIGKILL
  std::vector<Reported> points;  // "[k/N] f=... MHz b=..." lines seen before the kill
};

// Runs pacer with `args`; when kill_after > 0, sends SIGKILL `delay_ms` after the kill_after-th
// progress line.
RunResult run_pacer(const std::vector<std::string>& args, int kill_after, int delay_ms) {
  static const std::regex progress(R"(\[(\d+)/(\d+)\] f=([0-9.]+) MHz b=(\d+))");
  RunResult r;
  const auto run = pacer::testing::run_pacer_until(args, [&](const std::string& line) {
    std::smatch m;
    if (!std::regex_search(line, m, progress)) return false;
    r.points.push_back({std::stod(m[3].str()), std::stoi(m[4].str())});
    return kill_after > 0 && static_cast<int>(r.points.size()) == kill_after;
  }, delay_ms);
  r.exit_status = run.exit_status;
  r.killed = run.killed;
  return r;
}

const std::vector<std::string> kProfileArgs = {
    "profile", "--device", "emulated:jetson-nano", "--workload", "cnn@1x28x28", "--batch-sizes", "4,8",
    "--freqs", "76.8,153.6,230.4", "--measured-batches", "3", "--warmup-batches", "1", "--seed", "7"};
constexpr int kGridPoints = 6;

class ProfileCrash : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("pacer-crash-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    auto args = kProfileArgs;
    args.insert(args.end(), {"--store", (dir_ / "reference.h5").string()});
    const RunResult ref = run_pacer(args, 0, 0);
    ASSERT_TRUE(WIFEXITED(ref.exit_status) && WEXITSTATUS(ref.exit_status) == 0) << "reference run failed";
    reference_ = Store::open(dir_ / "reference.h5").read<pacer::traces::ProfileTable>("cnn@1x28x28");
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  // Kills a run after `kill_after` reported points (+ delay), checks the store, resumes (killing the
  // resumed run too when `second_kill` > 0) and compares with the reference.
  void crash_and_resume(int kill_after, int delay_ms, int second_kill) {
    const fs::path store = dir_ / ("store-" + std::to_string(kill_after) + "-" + std::to_string(delay_ms) + ".h5");
    auto args = kProfileArgs;
    args.insert(args.end(), {"--store", store.string()});

    const RunResult first = run_pacer(args, kill_after, delay_ms);
    ASSERT_TRUE(first.killed) << "the run ended before the kill point";
    ASSERT_TRUE(WIFSIGNALED(first.exit_status) && WTERMSIG(first.exit_status) == SIGKILL);
    ProfileTable after_kill;
    ASSERT_NO_THROW(after_kill = Store::open(store).read<pacer::traces::ProfileTable>("cnn@1x28x28"))
        << "store unreadable after SIGKILL";
    EXPECT_GE(static_cast<int>(after_kill.points.size()), kill_after);
    for (const auto& p : first.points) {
      const auto* found = after_kill.find({p.freq_mhz * 1e6}, p.batch);
      ASSERT_NE(found, nullptr) << "point f=" << p.freq_mhz << " MHz b=" << p.batch << " was reported but is lost";
      EXPECT_EQ(*found, *reference_.find({p.freq_mhz * 1e6}, p.batch));
    }

    if (second_kill > 0) {
      const RunResult second = run_pacer(args, second_kill, delay_ms);
      ASSERT_NO_THROW(Store::open(store).read<pacer::traces::ProfileTable>("cnn@1x28x28"));
      EXPECT_TRUE(second.killed || WIFEXITED(second.exit_status));
    }
    const RunResult resumed = run_pacer(args, 0, 0);
    ASSERT_TRUE(WIFEXITED(resumed.exit_status) && WEXITSTATUS(resumed.exit_status) == 0);
    const ProfileTable final_table = Store::open(store).read<pacer::traces::ProfileTable>("cnn@1x28x28");
    ASSERT_EQ(static_cast<int>(final_table.points.size()), kGridPoints);
    // Points written before the kill are kept as they were, not measured again.
    for (const auto& p : after_kill.points) {
      const auto* found = final_table.find(p.knob, p.batch_size);
      ASSERT_NE(found, nullptr);
      EXPECT_EQ(*found, p) << "a point written before the kill changed at f=" << p.knob[0] << " b=" << p.batch_size;
    }
    // Points measured after the resume are those of the uninterrupted run, bit for bit: an emulated
    // point draws its noise from the stream of (seed, setting, b) on a clock of its own
    // (EmulatedJetson::start_point), not from what the process measured before it.
    for (const auto& p : reference_.points) {
      const auto* found = final_table.find(p.knob, p.batch_size);
      ASSERT_NE(found, nullptr) << "missing f=" << p.knob[0] << " b=" << p.batch_size;
      EXPECT_EQ(*found, p) << "a point measured after the resume differs at f=" << p.knob[0] << " b=" << p.batch_size;
    }
    // A temporary sibling left by a kill inside a rewrite is removed by the next write.
    for (const auto& e : fs::directory_iterator(dir_))
      EXPECT_EQ(e.path().filename().string().find(store.filename().string() + ".tmp-"), std::string::npos)
          << "stale temporary file " << e.path();
    // The cost adds the same points' virtual times in another grouping (stored + resumed session).
    EXPECT_NEAR(final_table.profiling_cost_s, reference_.profiling_cost_s, 1e-9 * reference_.profiling_cost_s);
  }

  static fs::path dir_;
  static ProfileTable reference_;
};
fs::path ProfileCrash::dir_;
ProfileTable ProfileCrash::reference_;

TEST_F(ProfileCrash, KillRightAfterTheFirstPoint) { crash_and_resume(1, 0, 0); }

TEST_F(ProfileCrash, KillInsideAStoreRewriteMidGrid) {
  // A few random delays after the 3rd point land the kill inside the 4th point or its rewrite.
  std::mt19937 rng(20261122);
  crash_and_resume(3, static_cast<int>(rng() % 40), 0);
}

TEST_F(ProfileCrash, KillTheResumedRunToo) { crash_and_resume(2, 5, 1); }

TEST_F(ProfileCrash, KillBeforeTheLastPoint) { crash_and_resume(kGridPoints - 1, 0, 0); }

}  // namespace
