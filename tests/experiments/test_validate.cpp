// `pacer validate` end to end on the emulated Nano with a tiny workload and a small IDX dataset the
// test writes: every policy's choice is trained for real to the target, the run is complete in the
// store, the device time follows the profile, and Ours never exceeds the cap on its power trace.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "tests/support/run_pacer.hpp"
#include "traces/store.hpp"

namespace fs = std::filesystem;
using namespace pacer;

namespace {

class Validate : public ::testing::Test {
 protected:
  fs::path dir;
  void SetUp() override {
    dir = fs::temp_directory_path() / ("pacer-test-validate-" + std::to_string(::getpid()));
    fs::create_directories(dir / "idx");
    pacer::testing::write_quadrant_idx(dir / "idx", 480, 11);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  pacer::testing::RunResult pacer(const std::string& args) const { return pacer::testing::run_pacer(args, dir); }
};

}  // namespace

TEST_F(Validate, TrainsEveryChoiceToTheTargetAndOursStaysUnderTheCap) {
  const std::string store = (dir / "s.h5").string();
  const std::string data = "idx:" + (dir / "idx").string();
  auto r = pacer("profile --device emulated:jetson-nano --workload cnn@1x12x12 --batch-sizes 8,32 --store " + store +
                 " --sensor-rate-hz 100 --min-power-samples 30 --measured-batches 1000");
  ASSERT_EQ(r.code, 0) << r.err;
  r = pacer("relation --dataset " + data + " --checkpoint none --threads 1 --eval-every 64 --lr 0.002 "
            "--batch-sizes 8,32 --seeds 0 --target 0.9 --budget 4096 --name proxy --out " + store);
  ASSERT_EQ(r.code, 0) << r.err;

  const auto prof = traces::Store::open(store).read_profile("cnn@1x12x12");
  double lo = INFINITY, hi = 0;
  for (const auto& p : prof.points) {
    lo = std::min(lo, p.power_peak_w);
    hi = std::max(hi, p.power_peak_w);
  }
  const double cap = std::round((lo + 0.5 * (hi - lo)) * 100) / 100;
  r = pacer(fmt::format("validate --store {} --target-dataset {} --checkpoint none --threads 1 --eval-every 64 "
                        "--lr 0.002 --target 0.9 --budget 4096 --seeds 0,1 --sensor-rate 100Hz --power-limits {}W --name v",
                        store, data, cap));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("Verdict"), std::string::npos) << r.out;

  auto s = traces::Store::open(store);
  const auto v = s.read_validation("v");
  EXPECT_TRUE(v.emulated);
  EXPECT_EQ(v.device, "jetson-nano");
  // Four policies x two seeds, every one trained to the target.
  ASSERT_EQ(v.rows.size(), 8u);
  std::set<std::string> policies;
  for (const auto& row : v.rows) {
    policies.insert(row.policy);
    EXPECT_DOUBLE_EQ(row.cap_w, cap);
    ASSERT_GT(row.batch_size, 0) << row.policy << ": no feasible configuration";
    EXPECT_TRUE(row.reached) << row.policy << " seed " << row.seed;
    EXPECT_GE(row.final_metric, 0.9);
    // Energy integrates the sampled power over the whole run.
    EXPECT_NEAR(row.energy_j, row.power_mean_w * row.device_time_s, 0.1 * row.energy_j) << row.policy;
    // Device time is the emulator's: samples / b mini-batches at the profiled time per mini-batch.
    const auto* pt = prof.find(row.knob, row.batch_size);
    ASSERT_NE(pt, nullptr);
    const double expected = static_cast<double>(row.samples) / row.batch_size * pt->time_per_batch_mean_s;
    EXPECT_NEAR(row.device_time_s, expected, 0.05 * expected) << row.policy;
    // The policies choose under cap x (1 - guard): the chosen point's profiled peak is under the cap.
    EXPECT_LE(pt->power_peak_w, cap) << row.policy;
  }
  EXPECT_EQ(policies, (std::set<std::string>{"baseline1", "baseline2", "ours", "oracle"}));
  // The oracle's true relation was measured at every batch size.
  std::string truth_name = v.dataset + "-true";
  std::replace(truth_name.begin(), truth_name.end(), '/', '_');
  const auto truth = s.read_relation(truth_name);
  EXPECT_EQ(truth.batch_sizes(), (std::vector<int>{8, 32}));

  // Ours: a complete power trace (seed 0) that never exceeds the cap.
  int traces_checked = 0;
  for (const auto& row : v.rows) {
    if (row.policy != "ours") continue;
    EXPECT_FALSE(row.cap_exceeded) << "seed " << row.seed << " peak " << row.power_peak_w << " W, cap " << cap;
    EXPECT_LE(row.power_peak_w, cap);
    if (row.seed != 0) continue;
    ASSERT_TRUE(s.has("runs", row.series)) << row.series;
    const auto series = s.read_series(row.series);
    ASSERT_GE(series.power_w.size(), 5u);
    EXPECT_TRUE(std::is_sorted(series.time_s.begin(), series.time_s.end()));
    EXPECT_NEAR(series.time_s.back(), row.device_time_s, 0.2 + 0.02 * row.device_time_s);
    EXPECT_LE(*std::max_element(series.power_w.begin(), series.power_w.end()), cap);
    ++traces_checked;
  }
  EXPECT_EQ(traces_checked, 1);
}

TEST_F(Validate, MissingCheckpointIsOneActionableLine) {
  const std::string store = (dir / "s.h5").string();
  auto r = pacer("profile --device emulated:jetson-nano --workload cnn@1x12x12 --batch-sizes 8 --store " + store);
  ASSERT_EQ(r.code, 0) << r.err;
  r = pacer("relation --dataset idx:" + (dir / "idx").string() + " --checkpoint none --threads 1 --eval-every 64 "
            "--batch-sizes 8 --seeds 0 --target 0.5 --budget 512 --out " + store);
  ASSERT_EQ(r.code, 0) << r.err;
  // No --checkpoint: the default pre-trained file, which does not exist here.
  r = pacer("validate --store " + store + " --target-dataset idx:" + (dir / "idx").string() + " --power-limits 6W");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("pacer relation --pretrain"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}
