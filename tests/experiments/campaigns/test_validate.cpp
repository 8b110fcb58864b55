// `pacer validate` end to end on the emulated Nano with a tiny workload and a small IDX dataset the
// test writes: every policy's choice is trained for real to the target, the run is complete in the
// store, the device time follows the profile, and Ours never exceeds the cap on its power trace.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

#include <fmt/format.h>

#include "experiments/campaigns/validate.hpp"
#include "experiments/campaigns/validate_probe.hpp"
#include "explore/problem.hpp"
#include "tests/support/json_lines.hpp"
#include "tests/support/run_pacer.hpp"
#include "traces/import/zeus.hpp"
#include "traces/store/store.hpp"

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
  // A profile at b = 8, 32 and a proxy relation, in `store`.
  void profile_and_proxy(const std::string& store) const {
    auto r = pacer("profile --device emulated:jetson-nano --workload cnn@1x12x12 --batch-sizes 8,32 --store " + store +
                   " --sensor-rate 100Hz --min-power-samples 30 --measured-batches 1000");
    ASSERT_EQ(r.code, 0) << r.err;
    ASSERT_NO_FATAL_FAILURE(proxy(store));
  }
  // The proxy relation at b = 8, 32, in `store`.
  void proxy(const std::string& store) const {
    const auto r = pacer("relation --dataset idx:" + (dir / "idx").string() +
                         " --checkpoint none --threads 1 --eval-every 64 "
                         "--lr 0.002 --batch-sizes 8,32 --seeds 0 --target 0.9 --budget 4096 --name proxy --out " +
                         store);
    ASSERT_EQ(r.code, 0) << r.err;
  }
};

}  // namespace

TEST_F(Validate, TrainsEveryChoiceToTheTargetAndOursStaysUnderTheCap) {
  const std::string store = (dir / "s.h5").string();
  const std::string data = "idx:" + (dir / "idx").string();
  ASSERT_NO_FATAL_FAILURE(profile_and_proxy(store));

  const auto prof = traces::Store::open(store).read<traces::ProfileTable>("cnn@1x12x12");
  double lo = INFINITY, hi = 0;
  for (const auto& p : prof.points) {
    lo = std::min(lo, p.power_peak_w);
    hi = std::max(hi, p.power_peak_w);
  }
  const double cap = std::round((lo + 0.5 * (hi - lo)) * 100) / 100;
  auto r = pacer(
      fmt::format("validate --store {} --target-dataset {} --checkpoint none --threads 1 --eval-every 64 "
                  "--lr 0.002 --target 0.9 --budget 4096 --seeds 0,1 --sensor-rate 100Hz --power-limits {}W --name v",
                  store, data, cap));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("Verdict"), std::string::npos) << r.out;
  // Progress: each (b, seed) job ends with [k/N], the time so far and an estimate of the rest.
  EXPECT_NE(r.err.find("validate: [1/"), std::string::npos) << r.err;  // "[1/4, 3 s elapsed, about 9 s left]"
  EXPECT_NE(r.err.find(" elapsed, about "), std::string::npos) << r.err;

  auto s = traces::Store::open(store);
  const auto v = s.read<traces::ValidationResult>("v");
  // --json (every job stored: nothing trains again): the rows as JSON Lines, units in the keys.
  if (pacer::testing::have_python3()) {
    const auto j = pacer(
        fmt::format("validate --store {} --target-dataset {} --checkpoint none --threads 1 --eval-every 64 --lr 0.002 "
                    "--target 0.9 --budget 4096 --seeds 0,1 --sensor-rate 100Hz --power-limits {}W --name v --json",
                    store, data, cap));
    ASSERT_EQ(j.code, 0) << j.err;
    EXPECT_NE(j.err.find("Verdict"), std::string::npos) << j.err;
    EXPECT_EQ(pacer::testing::python_checks(j.out, fmt::format(R"(
assert len(rows) == {}, len(rows)
assert {{o["policy"] for o in rows}} == {{"baseline1", "baseline2", "ours", "pacer", "oracle"}}
for o in rows:
    assert o["cap_w"] == {:.10g} and o["reached"] is True and o["gpu_freq_hz"] > 0, o
    assert o["device_time_s"] > 0 and o["power_peak_w"] > 0 and o["energy_j"] > 0, o
)",
                                                               v.rows.size(), cap)),
              0)
        << j.out;
  }
  EXPECT_TRUE(v.emulated);
  EXPECT_EQ(v.device, "jetson-nano");
  // Five policies (Baselines 1 and 2, ours, pacer, oracle) x two seeds, every one trained to the target.
  ASSERT_EQ(v.rows.size(), 10u);
  std::set<std::string> policies;
  for (const auto& row : v.rows) {
    policies.insert(row.policy);
    EXPECT_DOUBLE_EQ(row.cap_w, cap);
    ASSERT_GT(row.batch_size, 0) << row.policy << ": no feasible configuration";
    EXPECT_TRUE(row.reached) << row.policy << " seed " << row.seed;
    EXPECT_GE(row.final_metric, 0.9);
    EXPECT_EQ(row.threads, 1) << row.policy;  // the threads it trained on, which its numerics depend on
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
  EXPECT_EQ(policies, (std::set<std::string>{"baseline1", "baseline2", "ours", "pacer", "oracle"}));
  // The oracle's true relation was measured at every batch size.
  std::string truth_name = v.dataset + "-true";
  std::replace(truth_name.begin(), truth_name.end(), '/', '_');
  const auto truth = s.read<traces::RelationSet>(truth_name);
  EXPECT_EQ(truth.batch_sizes(), (std::vector<int>{8, 32}));

  // Ours: a complete power trace (seed 0) that never exceeds the cap.
  int traces_checked = 0;
  for (const auto& row : v.rows) {
    if (row.policy != "ours") continue;
    EXPECT_FALSE(row.cap_exceeded) << "seed " << row.seed << " peak " << row.power_peak_w << " W, cap " << cap;
    EXPECT_LE(row.power_peak_w, cap);
    if (row.seed != 0) continue;
    ASSERT_TRUE(s.has<traces::PowerSeries>(row.series)) << row.series;
    const auto series = s.read<traces::PowerSeries>(row.series);
    ASSERT_GE(series.power_w.size(), 5u);
    EXPECT_TRUE(std::is_sorted(series.time_s.begin(), series.time_s.end()));
    EXPECT_NEAR(series.time_s.back(), row.device_time_s, 0.2 + 0.02 * row.device_time_s);
    EXPECT_LE(*std::max_element(series.power_w.begin(), series.power_w.end()), cap);
    ++traces_checked;
  }
  EXPECT_EQ(traces_checked, 1);
}

// The audit's repro: a validation on a copy of a store whose oracle relation was trained under
// other settings (budget, max-train, eval-every) reused it silently, exit 0. Now it is refused
// before anything trains, naming each stored and asked value, and writes nothing.
TEST_F(Validate, AnOracleRelationTrainedUnderOtherSettingsIsNotReused) {
  const std::string store = (dir / "s.h5").string();
  const std::string data = "idx:" + (dir / "idx").string();
  ASSERT_NO_FATAL_FAILURE(profile_and_proxy(store));
  const auto prof = traces::Store::open(store).read<traces::ProfileTable>("cnn@1x12x12");
  double lo = INFINITY, hi = 0;
  for (const auto& p : prof.points) {
    lo = std::min(lo, p.power_peak_w);
    hi = std::max(hi, p.power_peak_w);
  }
  const double cap = std::round((lo + 0.5 * (hi - lo)) * 100) / 100;
  const std::string validate = fmt::format(
      "validate --target-dataset {} --checkpoint none --threads 1 --lr 0.002 --target 0.9 --seeds 0 "
      "--sensor-rate 100Hz --power-limits {}W ",
      data, cap);
  auto r = pacer(validate + "--store " + store + " --eval-every 64 --budget 4096 --name v");
  ASSERT_EQ(r.code, 0) << r.err;
  const fs::path copy = dir / "vq.h5";
  fs::copy_file(store, copy);
  const auto before = traces::Store::open(copy).list<traces::ValidationResult>();
  r = pacer(validate + "--store " + copy.string() + " --eval-every 128 --max-train 300 --budget 2048 --name vq");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("training samples 384 (asked: 300)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("evaluation every 64 samples (asked: 128 samples)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("-true'"), std::string::npos) << r.err;
  EXPECT_EQ(traces::Store::open(copy).list<traces::ValidationResult>(), before);
}

TEST_F(Validate, MissingCheckpointIsOneActionableLine) {
  const std::string store = (dir / "s.h5").string();
  auto r = pacer("profile --device emulated:jetson-nano --workload cnn@1x12x12 --batch-sizes 8 --store " + store);
  ASSERT_EQ(r.code, 0) << r.err;
  r = pacer("relation --dataset idx:" + (dir / "idx").string() +
            " --checkpoint none --threads 1 --eval-every 64 "
            "--batch-sizes 8 --seeds 0 --target 0.5 --budget 512 --out " +
            store);
  ASSERT_EQ(r.code, 0) << r.err;
  // No --checkpoint: the default pre-trained file, which does not exist here.
  r = pacer("validate --store " + store + " --target-dataset idx:" + (dir / "idx").string() + " --power-limits 6W");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("pacer relation --pretrain"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

// A power model that underestimates: the profile the policies see reads far too low, so Ours picks
// the fastest configuration, whose real mean power is well above the cap. The watchdog stops the
// run, restores the clock and records why; with the watchdog off the same run goes to the target
// over the cap.
TEST_F(Validate, WatchdogStopsARunThatStaysAboveTheCapAndRecordsWhy) {
  const std::string store = (dir / "s.h5").string();
  const std::string data = "idx:" + (dir / "idx").string();
  ASSERT_NO_FATAL_FAILURE(profile_and_proxy(store));
  const auto real = traces::Store::open(store).read<traces::ProfileTable>("cnn@1x12x12");
  double max_mean = 0, max_peak = 0;
  for (const auto& p : real.points) {
    max_mean = std::max(max_mean, p.power_mean_w);
    max_peak = std::max(max_peak, p.power_peak_w);
  }
  const double cap = std::round(0.8 * max_mean * 100) / 100;  // every mean above ~cap/0.8 is over the limit
  {
    auto s = traces::Store::open(store);
    auto prof = real;
    const double scale = 0.9 * cap / max_peak;  // every point fits under cap x (1 - 0.03)
    for (auto& p : prof.points) {
      p.power_peak_w *= scale;
      p.power_mean_w *= scale;
    }
    s.write(prof, "underestimated");
  }
  const std::string common = fmt::format(
      "validate --store {} --profile underestimated --proxy proxy --target-dataset {} --checkpoint none --threads 1 "
      "--eval-every 64 --lr 0.002 --target 0.9 --budget 4096 --seeds 0 --policies ours --sensor-rate 1kHz "
      "--power-limits {}W --watchdog-margin 0.1W ",
      store, data, cap);
  auto r = pacer(common + "--watchdog-time 0 --name free");
  ASSERT_EQ(r.code, 0) << r.err;
  r = pacer(common + "--watchdog-time 10ms --name guarded");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("STOP"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("stopped by the power watchdog"), std::string::npos) << r.out;

  auto s = traces::Store::open(store);
  const auto free = s.read<traces::ValidationResult>("free");
  const auto guarded = s.read<traces::ValidationResult>("guarded");
  ASSERT_EQ(free.rows.size(), 1u);
  ASSERT_EQ(guarded.rows.size(), 1u);
  const auto& f = free.rows[0];
  const auto& g = guarded.rows[0];
  ASSERT_EQ(f.knob, g.knob);
  ASSERT_EQ(f.batch_size, g.batch_size);
  // Unguarded: the run reaches the target with its mean power above the cap.
  EXPECT_TRUE(f.reached);
  EXPECT_TRUE(f.status.empty()) << f.status;
  EXPECT_TRUE(f.cap_exceeded);
  ASSERT_GT(f.power_mean_w, cap + 0.1) << "the chosen point is not over the limit: the test's cap is wrong";
  // Guarded: stopped one 10 ms window in, its mean over the limit.
  EXPECT_FALSE(g.reached);
  EXPECT_EQ(g.status.rfind("stopped: power watchdog", 0), 0u) << g.status;
  EXPECT_NE(g.status.find(fmt::format("the cap {:g} W + 0.1 W margin", cap)), std::string::npos) << g.status;
  EXPECT_TRUE(g.cap_exceeded);
  EXPECT_GT(g.samples, 0);
  EXPECT_LT(g.samples, f.samples);
  EXPECT_LT(g.device_time_s, f.device_time_s);
  // The trace ends at the trip: one full window (10 samples at 1 kHz) whose mean is over the limit.
  const auto series = s.read<traces::PowerSeries>(g.series);
  ASSERT_GE(series.power_w.size(), 10u);
  EXPECT_LE(series.power_w.size(), 12u);
  double sum = 0;
  for (size_t i = series.power_w.size() - 10; i < series.power_w.size(); ++i) sum += series.power_w[i];
  EXPECT_GT(sum / 10, cap + 0.1);
}

namespace {

// The peak-power range of a store's profile, and a cap at `frac` of it (rounded to 10 mW).
double cap_at(const std::string& store, double frac) {
  const auto prof = traces::Store::open(store).read<traces::ProfileTable>("cnn@1x12x12");
  double lo = INFINITY, hi = 0;
  for (const auto& p : prof.points) {
    lo = std::min(lo, p.power_peak_w);
    hi = std::max(hi, p.power_peak_w);
  }
  return std::round((lo + frac * (hi - lo)) * 100) / 100;
}

// A validation or relation up to the wall time of each run (the machine's at that moment).
traces::ValidationResult without_wall_times(traces::ValidationResult v) {
  for (auto& r : v.rows) r.wall_time_s = 0;
  return v;
}
traces::RelationSet without_wall_times(traces::RelationSet s) {
  for (auto& r : s.runs) r.wall_time_s = 0;
  return s;
}

// `got` holds the same validation, oracle relation and power traces as `want`.
void expect_same_validation(const std::string& got, const std::string& want, const std::string& truth) {
  const auto a = traces::Store::open(got), b = traces::Store::open(want);
  const auto va = a.read<traces::ValidationResult>("v"), vb = b.read<traces::ValidationResult>("v");
  EXPECT_EQ(without_wall_times(va), without_wall_times(vb));
  EXPECT_EQ(without_wall_times(a.read<traces::RelationSet>(truth)),
            without_wall_times(b.read<traces::RelationSet>(truth)));
  int traces_compared = 0;
  for (const auto& row : vb.rows)
    if (!row.series.empty()) {
      EXPECT_EQ(a.read<traces::PowerSeries>(row.series), b.read<traces::PowerSeries>(row.series)) << row.series;
      ++traces_compared;
    }
  EXPECT_GT(traces_compared, 0);
}

}  // namespace

// A validation in its two stages, each in shards merged into the store (docs/cluster.md), is the
// whole validation: the same rows in the same order, the same oracle relation, the same power
// traces, up to the wall time of each run. Run whole afterwards it trains nothing.
// A store that holds the true relations of two earlier targets (the text specs validate three
// targets into one store) validates a third: validation measures its own target relation and looks for
// none. Before, the third target's validation failed with "--target: ... holds 2 target relations
// (...); name one", an option validate does not have, after the first two had trained.
TEST_F(Validate, ATargetIsValidatedWhereTheStoreHoldsTheTrueRelationsOfTwoOthers) {
  const std::string store = (dir / "three.h5").string();
  ASSERT_NO_FATAL_FAILURE(profile_and_proxy(store));
  {
    auto st = traces::Store::open(store);
    auto set = st.read<traces::RelationSet>("proxy");
    for (const char* earlier : {"first", "second"}) {
      set.name = traces::true_relation_name(earlier);
      st.write(set);
    }
  }
  const auto r = pacer(fmt::format(
      "validate {} --target-dataset idx:{} --checkpoint none --threads 1 --eval-every 64 --lr 0.002 --target 0.9 "
      "--budget 4096 --seeds 0 --sensor-rate 100Hz --power-limits {}W --name v --list-jobs",
      store, (dir / "idx").string(), cap_at(store, 0.5)));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("stage: oracle\n"), std::string::npos) << r.out;
}

TEST_F(Validate, ShardedStagesMergeToTheWholeValidation) {
  const std::string serial = (dir / "serial.h5").string(), sharded = (dir / "sharded.h5").string();
  ASSERT_NO_FATAL_FAILURE(profile_and_proxy(serial));
  fs::copy_file(serial, sharded);  // the same profile and proxy relation
  const std::string data = "idx:" + (dir / "idx").string();
  const std::string common = fmt::format(
      "validate --target-dataset {} --checkpoint none --threads 1 --eval-every 64 --lr 0.002 --target 0.9 "
      "--budget 4096 --seeds 0,1 --sensor-rate 100Hz --power-limits {}W,{}W --name v ",
      data, cap_at(serial, 0.35), cap_at(serial, 0.8));
  auto r = pacer(common + "--store " + serial);
  ASSERT_EQ(r.code, 0) << r.err;
  std::string truth = "idx:" + (dir / "idx").string() + "-true";
  std::replace(truth.begin(), truth.end(), '/', '_');

  r = pacer(common + "--store " + sharded + " --list-jobs");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("stage: oracle\nrecord: " + truth + "\nstore: " + sharded +
                       "\njobs: 4\njob 0: b=8 seed=0\njob 1: b=8 seed=1\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("stage: runs\nrecord: v\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("job 3: configurations chosen at b=32 seed=1\n"), std::string::npos) << r.out;
  r = pacer(common + "--store " + sharded + " --shard 0/2");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--shard needs --stage"), std::string::npos) << r.err;

  auto shards = [&](const std::string& stage, int n) {
    std::string stores;
    for (int i = 0; i < n; ++i) {
      const auto s = pacer(common + "--store " + sharded + " --stage " + stage + " --shard " + std::to_string(i) + "/" +
                           std::to_string(n));
      EXPECT_EQ(s.code, 0) << stage << " " << i << ": " << s.err;
      const std::string store =
          (dir / ("sharded." + stage + "-shard-" + std::to_string(i) + "-of-" + std::to_string(n) + ".h5")).string();
      EXPECT_EQ(pacer::testing::slurp(store + ".outcome").rfind("done on ", 0), 0u) << store;
      stores += " " + store;
    }
    return stores;
  };
  const std::string oracle_shards = shards("oracle", 3);
  // The runs need the whole oracle relation in the store: before the merge they say so.
  r = pacer(common + "--store " + sharded + " --stage runs --shard 0/2");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("holds no oracle relation '" + truth + "'"), std::string::npos) << r.err;
  ASSERT_EQ(pacer("merge --update " + sharded + oracle_shards).code, 0);
  const std::string run_shards = shards("runs", 2);
  EXPECT_FALSE(traces::Store::open(sharded).has<traces::ValidationResult>("v")) << "a shard writes only its own store";
  r = pacer("merge --update " + sharded + run_shards);
  ASSERT_EQ(r.code, 0) << r.err;
  expect_same_validation(sharded, serial, truth);
  EXPECT_EQ(traces::Store::open(sharded).read<traces::ProfileTable>("cnn@1x12x12"),
            traces::Store::open(serial).read<traces::ProfileTable>("cnn@1x12x12"))
      << "the merge kept the store's profile";

  // Whole, on the merged store: every job is done, nothing trains, the record stays.
  const auto merged = traces::Store::open(sharded).read<traces::ValidationResult>("v");
  r = pacer(common + "--store " + sharded);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\n0 real training runs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Verdict"), std::string::npos) << r.out;
  EXPECT_EQ(traces::Store::open(sharded).read<traces::ValidationResult>("v"), merged);
}

// --jobs 2: both stages as two local processes each, merged, then the whole command completes
// and reports; equal to the serial validation. A validation cut short resumes its missing jobs only.
TEST_F(Validate, LocalJobsEqualTheWholeValidationAndAnInterruptedOneResumes) {
  const std::string serial = (dir / "serial.h5").string(), jobs = (dir / "jobs.h5").string();
  ASSERT_NO_FATAL_FAILURE(profile_and_proxy(serial));
  fs::copy_file(serial, jobs);
  const std::string common = fmt::format(
      "validate --target-dataset idx:{} --checkpoint none --threads 1 --eval-every 64 --lr 0.002 --target 0.9 "
      "--budget 4096 --seeds 0,1 --sensor-rate 100Hz --power-limits {}W --name v ",
      (dir / "idx").string(), cap_at(serial, 0.5));
  auto r = pacer(common + "--store " + serial);
  ASSERT_EQ(r.code, 0) << r.err;
  r = pacer(common + "--store " + jobs + " --jobs 2");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("stage oracle: 2 shards"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("stage runs: 2 shards"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Verdict"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n0 real training runs"), std::string::npos) << r.out;
  std::string truth = "idx:" + (dir / "idx").string() + "-true";
  std::replace(truth.begin(), truth.end(), '/', '_');
  expect_same_validation(jobs, serial, truth);

  // Cut short: the store lost the rows of one (b, seed) job; the same command trains that job only.
  {
    auto s = traces::Store::open(jobs);
    auto v = s.read<traces::ValidationResult>("v");
    const int b = v.rows.front().batch_size, seed = v.rows.front().seed;
    std::erase_if(v.rows, [&](const traces::ValidationRow& row) { return row.batch_size == b && row.seed == seed; });
    const traces::Provenance saved = traces::current_run();
    traces::Provenance cut = traces::this_process();
    cut.command_line = "pacer validate (the run cut short)";
    traces::set_current_run(cut);
    s.write(v, traces::Replace::always);
    traces::set_current_run(saved);
  }
  r = pacer(common + "--store " + jobs);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\n1 real training runs"), std::string::npos) << r.out;
  expect_same_validation(jobs, serial, truth);
  // The record holds the rows of both runs, and names both (not the resuming run alone).
  const std::string group(traces::RecordTraits<traces::ValidationResult>::group);
  const std::string cmd = traces::Store::open(jobs).read_provenance(group, "v").command_line;
  EXPECT_EQ(cmd.rfind("pacer validate (the run cut short) | pacer validate --target-dataset", 0), 0u) << cmd;
}

// Board fleets: a validation through the Jetson sysfs backend (a tree served by `pacer emulate`,
// hardware in the loop) under a Slurm node name records the node and the board's device-tree model
// with every run it trained.
TEST_F(Validate, EveryRunOnAJetsonRecordsItsNodeAndBoardModel) {
  const fs::path root = dir / "board";
  const std::string log = (dir / "emulate.txt").string();
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execl(PACER_BINARY, PACER_BINARY, "emulate", "--device", "jetson-tx2", "--root", root.c_str(), "--time-scale",
            "0.05", "--duration", "600s", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  struct Stop {
    pid_t pid;
    ~Stop() {
      ::kill(pid, SIGTERM);
      ::waitpid(pid, nullptr, 0);
    }
  } stop{pid};
  for (int i = 0; i < 3000 && !fs::exists(root / "pacer-emulator/pid"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(fs::exists(root / "pacer-emulator/pid")) << pacer::testing::slurp(log);
  const std::string store = (dir / "tx2.h5").string(), state = (dir / "state").string();
  // A point runs until 30 power samples (3 s of device time) or 200 x --measured-batches mini-batches
  // of 4.2 ms: 10 gave a cap of 8.4 s, and a busy machine that held the sampler off the CPU left points
  // without a power figure ("only N power samples"); 100 keep the cap ten times further. The frozen
  // check is off: at time scale 0.05 a pause of 0.25 s of the busy emulator is 5 s of device time.
  auto r = pacer("profile --device jetson --sysfs-root " + root.string() + " --state-file " + state +
                 " --workload cnn@1x12x12 --batch-sizes 8,32 --freqs 624.75,1300.5 --warmup-batches 1 "
                 "--measured-batches 100 --sensor-frozen 0 --store " +
                 store);
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_NO_FATAL_FAILURE(proxy(store));
  ::setenv("SLURMD_NODENAME", "tx2-03", 1);
  r =
      pacer(fmt::format("validate --store {} --device jetson --sysfs-root {} --target-dataset idx:{} --checkpoint none "
                        "--threads 1 --eval-every 64 --lr 0.002 --target 0.9 --budget 4096 --seeds 0 "
                        "--policies ours,oracle --power-limits 100W --name v",
                        store, root.string(), (dir / "idx").string()));
  ::unsetenv("SLURMD_NODENAME");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto v = traces::Store::open(store).read<traces::ValidationResult>("v");
  ASSERT_EQ(v.rows.size(), 2u);
  for (const auto& row : v.rows) {
    ASSERT_GT(row.batch_size, 0) << row.policy;
    EXPECT_EQ(row.node, "tx2-03") << row.policy;
    EXPECT_EQ(row.board_model, "NVIDIA Jetson TX2 8GB") << row.policy;
  }
  const auto profile = traces::Store::open(store).read<traces::ProfileTable>("cnn@1x12x12");
  for (const auto& p : profile.points) EXPECT_EQ(p.board_model, "NVIDIA Jetson TX2 8GB");
}

// A run that misses the target within its budget is censored, not a run of 0 s. The table says how
// many runs reached the target instead of "0.0 ± 0.0" and a 0 % error, and the verdict says Ours
// was censored (and what to do), not that it found no feasible configuration.
TEST_F(Validate, CensoredRunsAreReportedAsNotReachedNotAsZeroSeconds) {
  const std::string store = (dir / "s.h5").string();
  const std::string data = "idx:" + (dir / "idx").string();
  ASSERT_NO_FATAL_FAILURE(profile_and_proxy(store));
  auto r =
      pacer(fmt::format("validate --store {} --target-dataset {} --checkpoint none --threads 1 --eval-every 16 "
                        "--lr 0.002 --target 0.9 --budget 32 --seeds 0,1 --sensor-rate 100Hz --power-limits 20W "
                        "--policies ours,baseline1,oracle --name censored",
                        store, data));
  ASSERT_EQ(r.code, 0) << r.err;
  for (const auto& row : traces::Store::open(store).read<traces::ValidationResult>("censored").rows)
    ASSERT_FALSE(row.reached) << "the budget must censor every run for this test";
  EXPECT_EQ(r.out.find("0.0 ± 0.0"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(" 0.0%"), std::string::npos) << "no error or regret without a measured time\n" << r.out;
  EXPECT_NE(r.out.find("0 of 2 reached"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("found no feasible configuration"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("none of the 2 runs of Ours reached the target within the budget of 32 samples"),
            std::string::npos)
      << r.out;
}

// Probe before commit: a model that under-predicts the power puts the chosen configurations under
// the cap when the device's true power is above it. Without the probe the runs exceed the cap; with
// it every chosen point the store never measured is profiled first, the ones above cap x (1 - guard)
// give way to the policy's next choice, the probes land in the store's measured profile, the rows
// say which choice was replaced and why, and no run exceeds the cap.
TEST_F(Validate, AProbeReplacesAChoiceWhoseTruePowerIsOverTheCap) {
  const std::string store = (dir / "s.h5").string();
  const std::string data = "idx:" + (dir / "idx").string();
  ASSERT_NO_FATAL_FAILURE(profile_and_proxy(store));
  const auto real = traces::Store::open(store).read<traces::ProfileTable>("cnn@1x12x12");
  double lo = INFINITY, hi = 0, f_min = INFINITY;
  for (const auto& p : real.points) {
    lo = std::min(lo, p.power_peak_w);
    hi = std::max(hi, p.power_peak_w);
    f_min = std::min(f_min, p.knob.at(0));
  }
  const double cap = std::round((lo + 0.5 * (hi - lo)) * 100) / 100;
  size_t kept = 0;
  {
    auto s = traces::Store::open(store);
    auto predicted = real;  // a model that predicts 60 % of the true power everywhere
    for (auto& p : predicted.points) {
      p.power_peak_w *= 0.6;
      p.power_mean_w *= 0.6;
    }
    s.write(predicted, "cnn@1x12x12-predicted");
    auto measured = real;  // the store measured only the lowest frequency
    std::erase_if(measured.points, [&](const traces::ProfilePoint& p) { return p.knob.at(0) != f_min; });
    kept = measured.points.size();
    s.write(measured, "cnn@1x12x12", traces::Replace::always);
  }
  const std::string common = fmt::format(
      "validate --store {} --profile cnn@1x12x12-predicted --proxy proxy --target-dataset {} --checkpoint none "
      "--threads 1 --eval-every 64 --lr 0.002 --target 0.9 --budget 4096 --seeds 0 --sensor-rate 100Hz "
      "--power-limits {}W --watchdog-time 0 ",
      store, data, cap);
  // Without the probe: the prediction alone carries some run over the cap (the test's premise).
  auto r = pacer(common + "--probe-batches 0 --name unprobed");
  ASSERT_EQ(r.code, 0) << r.err;
  {
    const auto v = traces::Store::open(store).read<traces::ValidationResult>("unprobed");
    EXPECT_TRUE(std::any_of(v.rows.begin(), v.rows.end(), [](auto& row) { return row.cap_exceeded; }));
    EXPECT_EQ(traces::Store::open(store).read<traces::ProfileTable>("cnn@1x12x12").points.size(), kept);
  }
  r = pacer(common + "--name probed");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("probe before commit: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("replaced: cap "), std::string::npos) << r.out;
  auto s = traces::Store::open(store);
  const auto v = s.read<traces::ValidationResult>("probed");
  const auto measured = s.read<traces::ProfileTable>("cnn@1x12x12");
  EXPECT_GT(measured.points.size(), kept);  // the probes are in the measured profile
  int runs = 0, replaced = 0;
  for (const auto& row : v.rows) {
    replaced += !row.probe.empty();
    if (row.batch_size == 0) continue;  // no feasible measured point: no run
    ++runs;
    EXPECT_FALSE(row.cap_exceeded) << row.policy << " peak " << row.power_peak_w << " W, cap " << cap;
    EXPECT_LE(row.power_peak_w, cap) << row.policy;
    // Every trained configuration stands on a measured point under cap x (1 - guard).
    const auto* pt = measured.find(row.knob, row.batch_size);
    ASSERT_NE(pt, nullptr) << row.policy << ": trained a configuration that was never measured";
    EXPECT_LE(pt->power_peak_w, cap * (1 - 0.03)) << row.policy;
  }
  EXPECT_GT(runs, 0);
  EXPECT_GT(replaced, 0);
  EXPECT_TRUE(std::any_of(v.rows.begin(), v.rows.end(), [](auto& row) {
    return row.probe.find("power") != std::string::npos &&
           row.probe.find("above cap x (1 - 0.03)") != std::string::npos;
  }));
  // Run again: the probes are in the store, each measured point standing at its own projected run
  // peak (explore/space.hpp projected_run_peak_w), the same as in the loop that probed it; once the
  // measured points stop changing, a run measures and trains nothing again and writes the same record.
  auto previous = v.rows;
  bool settled = false;
  for (int i = 0; i < 4 && !settled; ++i) {
    r = pacer(common + "--name probed");
    ASSERT_EQ(r.code, 0) << r.err;
    const auto rows = traces::Store::open(store).read<traces::ValidationResult>("probed").rows;
    settled = r.out.find("probe before commit: ") == std::string::npos && rows == previous;
    previous = rows;
  }
  EXPECT_TRUE(settled) << "four reruns still measured or trained something";
}

// A store for validation's choice step: one workload's measured and predicted b=128 points on the
// Nano (each pair from `point`, the predicted one chosen from), a one-run proxy and target relation;
// select's problem on the predicted profile, and validation's choices on it (choose_measured).
struct ChoiceStore {
  const std::string workload = "cnn@1x28x28";
  fs::path dir, path;
  traces::RelationSet proxy, target;
  std::unique_ptr<explore::Problem> problem;  // select's, on the predicted profile
  explore::ChoiceRule rule;

  // `point(i, predicted, measured)` fills the i-th pair (knob, time and power set for b=128).
  ChoiceStore(const std::string& tag, size_t n,
              const std::function<void(size_t, traces::ProfilePoint&, traces::ProfilePoint&)>& point) {
    dir = fs::temp_directory_path() / ("pacer-test-validate-" + tag + "-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    path = dir / "s.h5";
    traces::ProfileTable measured, predicted;
    for (auto* t : {&measured, &predicted}) {
      t->workload = workload;
      t->device = "jetson-nano";
      t->knob = traces::KnobSpace::gpu_frequency();
    }
    for (size_t i = 0; i < n; ++i) {
      traces::ProfilePoint p, m;
      p.batch_size = m.batch_size = 128;
      point(i, p, m);
      predicted.points.push_back(p);
      measured.points.push_back(m);
    }
    proxy.name = traces::zeus::proxy_name(workload);
    proxy.workload = workload;
    proxy.metric = "accuracy";
    proxy.target = 0.9;
    proxy.runs.push_back({128, 0, true, 30000, 10000000});
    target = proxy;
    target.name = traces::zeus::target_name(workload);
    {
      auto store = traces::Store::open_or_create(path);
      store.write(measured, workload);
      store.write(predicted, workload + "-predicted");
      store.write(proxy);
      store.write(target);
    }
    explore::ProblemSpec spec;
    spec.profile = workload + "-predicted";
    problem = explore::load_problem(traces::Store::open(path), spec);
    rule = explore::choice_rule(*problem);
  }
  ~ChoiceStore() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::vector<experiments::validate_detail::Choice> validate(const std::vector<std::string>& policies, double cap,
                                                             int& probes) const {
    experiments::ValidateOptions opt;
    opt.store = path;
    opt.caps_w = {cap};
    opt.policies = policies;
    opt.probe_batches = 0;
    experiments::validate_detail::ChoiceInputs in;
    in.profile_name = workload + "-predicted";
    in.workload = workload;
    in.rule = rule;
    in.proxy = &proxy;
    in.target = &target;
    return experiments::validate_detail::choose_measured(opt, in, dir / "out.h5", probes);
  }
};

// Validation's choice step chooses as select does (explore/decide.hpp): a measured point replacing
// its prediction keeps its sample count, so it stands at its own projected run peak there too. The
// emulated Nano's b=128 points of issue 23's text-nano run: 460.8 MHz peaked 5.704 W over 31 samples
// (mean 5.474 W), projected 6.05 W, over 5.9 x 0.97; 384 MHz is steady (projected 5.47 W). The model
// predicts both at their raw peaks (no samples). Before the measured point's sample count was kept,
// validation chose 460.8 MHz while select chose 384 MHz.
TEST(ValidateChoice, AMeasuredPointReplacingItsPredictionStandsAtItsProjectedRunPeak) {
  const std::vector<std::tuple<double, double, double, int, double>> points = {{384e6, 5.40, 5.35, 100, 0.2413},
                                                                               {460.8e6, 5.704, 5.474, 31, 0.2047}};
  const ChoiceStore s("choice", points.size(), [&](size_t i, traces::ProfilePoint& p, traces::ProfilePoint& m) {
    const auto& [f, peak, mean, samples, time] = points[i];
    p.knob = {f};
    p.time_per_batch_mean_s = time;
    p.power_peak_w = peak;
    p.power_mean_w = mean;
    m = p;
    m.power_samples = samples;
  });
  const auto select = explore::decide(explore::Policy::Ours, s.problem->context(), 5.9, s.rule);
  ASSERT_TRUE(select.feasible);
  EXPECT_EQ(select.knob, std::vector<double>{384e6});

  int probes = 0;
  const auto choices = s.validate({"ours"}, 5.9, probes);
  ASSERT_EQ(choices.size(), 1u);
  ASSERT_TRUE(choices[0].selection.feasible);
  EXPECT_EQ(choices[0].selection.knob, select.knob) << "validation chose what select chose";
  EXPECT_NEAR(choices[0].selection.power_w, explore::projected_run_peak_w(5.40, 5.35, 100), 1e-9);
  EXPECT_EQ(probes, 0);
}

// Validation's choice step and select choose from one space: a measured point's power replaces its
// prediction, its time stays the model's (explore::Space::overlay_measured), and a configuration
// whose measurement failed (the watchdog stopped it) is in neither. Before, validation copied the
// measured time into its own table: at b=128 the model puts 384 MHz at 0.20 s per mini-batch and
// 460.8 MHz at 0.22 s, measured 0.30 s and 0.22 s, and the validation trained 460.8 MHz where
// select and sweep chose 384 MHz; and select chose a configuration the watchdog had stopped, from
// its prediction, which validation had dropped.
struct ChoicePoint {
  double f, predicted_time, measured_time;
  std::string status;
};

std::pair<std::vector<std::vector<double>>, std::vector<std::vector<double>>> select_and_validate_choices(
    const std::vector<ChoicePoint>& points, const std::vector<std::string>& policies, double cap) {
  const ChoiceStore s("times", points.size(), [&](size_t i, traces::ProfilePoint& p, traces::ProfilePoint& m) {
    const ChoicePoint& c = points[i];
    p.knob = {c.f};
    p.time_per_batch_mean_s = c.predicted_time;
    p.power_peak_w = 5.0 + c.f / 1e9;  // far under the cap, steady
    p.power_mean_w = p.power_peak_w - 0.02;
    p.power_samples = 100;
    m = p;
    m.time_per_batch_mean_s = c.measured_time;
    m.status = c.status;
  });
  std::vector<std::vector<double>> select, validate;
  for (const auto& name : policies) {
    const auto d = explore::decide(*explore::policy_from_string(name), s.problem->context(), cap, s.rule);
    select.push_back(d.feasible ? d.knob : std::vector<double>{});
  }
  int probes = 0;
  for (const auto& c : s.validate(policies, cap, probes))
    validate.push_back(c.selection.feasible ? c.selection.knob : std::vector<double>{});
  return {select, validate};
}

TEST(ValidateChoice, ChoosesAsSelectWhereTheMeasuredTimeDiffersFromTheModels) {
  const auto [select, validate] = select_and_validate_choices({{384e6, 0.20, 0.30, "ok"}, {460.8e6, 0.22, 0.22, "ok"}},
                                                              {"ours-robust", "oracle", "pacer"}, 7.0);
  for (size_t i = 0; i < select.size(); ++i) {
    EXPECT_EQ(select[i], std::vector<double>{384e6}) << i << ": the model's time decides";
    EXPECT_EQ(validate[i], select[i]) << i << ": validation chose what select chose";
  }
}

TEST(ValidateChoice, AConfigurationWhoseMeasurementTheWatchdogStoppedIsChosenByNoCommand) {
  const auto [select, validate] = select_and_validate_choices(
      {{384e6, 0.25, 0.25, "ok"},
       {460.8e6, 0.20, 0.20, "stopped: power watchdog: mean power 7.9 W over 2 s above the cap 7 W + 500 mW margin"}},
      {"ours", "ours-robust", "oracle"}, 7.0);
  for (size_t i = 0; i < select.size(); ++i) {
    EXPECT_EQ(select[i], std::vector<double>{384e6}) << i << ": the stopped 460.8 MHz is out";
    EXPECT_EQ(validate[i], select[i]) << i;
  }
}
