// traces::merge_stores: the shards of a campaign merged record by record (traces/store/merge.hpp).
#include "traces/store/merge.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <tuple>

#include "base/error.hpp"
#include "traces/catalog/catalog.hpp"
#include "traces/store/store.hpp"

using namespace pacer;
using namespace pacer::traces;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("pacer-merge-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  fs::path operator/(const std::string& name) const { return path / name; }
};

// A relation of 3 batch sizes x 2 seeds whose r(b) depends on every run.
RelationSet serial_relation() {
  RelationSet s;
  s.name = "proxy";
  s.workload = "cnn@1x28x28";
  s.dataset = "fmnist-proxy";
  s.metric = "accuracy";
  s.target = 0.75;
  s.lr_rule = "lr = 0.001 * sqrt(b / 32)";
  s.base_lr = 1e-3;
  s.base_batch = 32;
  s.optimizer = "adam";
  int64_t samples = 1000;
  for (int b : {8, 16, 32})
    for (int seed : {0, 1}) {
      RelationRun r;
      r.batch_size = b;
      r.seed = seed;
      r.reached = !(b == 8 && seed == 1);
      r.samples = samples += 137 * b + 31 * seed;
      r.budget_samples = 4000;
      r.wall_time_s = 0.5 * b + seed;
      r.final_metric = 0.75 + 0.001 * b;
      r.learning_rate = 1e-3 * std::sqrt(b / 32.0);
      s.runs.push_back(r);
    }
  return s;
}

// The runs of job indices j with j % n == i, as shard i of n writes them.
RelationSet shard_of(const RelationSet& s, size_t i, size_t n) {
  RelationSet out = s;
  out.runs.clear();
  for (size_t j = i; j < s.runs.size(); j += n) out.runs.push_back(s.runs[j]);
  return out;
}

void write_store(const fs::path& path, const RelationSet& set, const std::string& device = "jetson-nano") {
  Store s = Store::open_or_create(path);
  s.write_device(find_device(device));
  s.write(set);
}

ProfileTable profile(const std::string& board, std::vector<int> batches, double cost_s) {
  ProfileTable t;
  t.workload = "cnn@1x28x28";
  t.device = board;
  t.source = "test";
  t.profiling_cost_s = cost_s;
  for (double f : {76.8e6, 921.6e6})
    for (int b : batches) {
      ProfilePoint p;
      p.knob = {f};
      p.batch_size = b;
      p.time_per_batch_mean_s = b / f * 1e6;
      p.power_peak_w = f / 1e8 + b / 100.0;
      t.points.push_back(p);
    }
  return t;
}

std::string bytes_of(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

std::string merge_error(const fs::path& out, const std::vector<fs::path>& in) {
  try {
    merge_stores(out, in);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Merge, ShardsOfARelationEqualTheSerialRelation) {
  TempDir dir;
  const RelationSet serial = serial_relation();
  std::vector<fs::path> shards;
  for (size_t i = 0; i < 4; ++i) {  // 6 jobs in 4 shards: shards of 2, 2, 1 and 1 runs
    shards.push_back(dir / ("s" + std::to_string(i) + ".h5"));
    write_store(shards.back(), shard_of(serial, i, 4));
  }
  const auto report = merge_stores(dir / "out.h5", {shards[3], shards[1], shards[0], shards[2]});
  EXPECT_EQ(report.records.at("relations"), 1);
  EXPECT_EQ(report.entries, 6);
  EXPECT_EQ(report.duplicates, 0);
  const Store out = Store::open(dir / "out.h5");
  const RelationSet merged = out.read<RelationSet>("proxy");
  EXPECT_EQ(merged, serial);  // runs in (b, seed) order, as the serial campaign stores them
  EXPECT_EQ(out.read_device(), find_device("jetson-nano"));
  // Means, spreads and r(b) are those of all runs, not of one shard.
  EXPECT_EQ(merged.relation_vector(), serial.relation_vector());
  EXPECT_NE(shard_of(serial, 0, 4).relation_vector(), serial.relation_vector());
  for (int b : {8, 16, 32}) {
    EXPECT_DOUBLE_EQ(merged.mean_samples(b), serial.mean_samples(b));
    EXPECT_TRUE(same(merged.std_samples(b), serial.std_samples(b)));
  }
}

TEST(Merge, LearningCurvesMergePointByPoint) {
  TempDir dir;
  LearningCurve full;
  full.name = "proxy";
  full.metric = "accuracy";
  full.source = "evaluations";
  for (int seed : {0, 1})
    for (int64_t n : {1000, 2000, 3000}) full.points.push_back({8, seed, n, 0.2 * static_cast<double>(n) / 1000});
  LearningCurve a = full, b = full;
  a.points.resize(3);                                      // seed 0
  b.points.erase(b.points.begin(), b.points.begin() + 2);  // seed 0's last point and seed 1
  for (const auto& [name, c] : {std::pair{"a.h5", a}, std::pair{"b.h5", b}}) {
    Store s = Store::open_or_create(dir / name);
    s.write(c);
  }
  const auto report = merge_stores(dir / "out.h5", {dir / "a.h5", dir / "b.h5"});
  EXPECT_EQ(report.records.at("curves"), 1);
  EXPECT_EQ(report.duplicates, 1);
  EXPECT_EQ(Store::open(dir / "out.h5").read<LearningCurve>("proxy"), full);
  b.points[0].metric = 0.5;  // the shared point with another value: a conflict naming both files
  Store::open_or_create(dir / "b.h5").write(b, Replace::always);
  const std::string msg = merge_error(dir / "out2.h5", {dir / "a.h5", dir / "b.h5"});
  EXPECT_NE(msg.find("learning curve 'proxy'"), std::string::npos) << msg;
  EXPECT_NE(msg.find((dir / "b.h5").string()), std::string::npos) << msg;
}

TEST(Merge, IsIdempotent) {
  TempDir dir;
  const RelationSet serial = serial_relation();
  write_store(dir / "a.h5", shard_of(serial, 0, 2));
  write_store(dir / "b.h5", shard_of(serial, 1, 2));
  merge_stores(dir / "out.h5", {dir / "a.h5", dir / "b.h5"});
  const RelationSet once = Store::open(dir / "out.h5").read<RelationSet>("proxy");
  // The same merge again, the result with one of its inputs, and the result with itself.
  merge_stores(dir / "out.h5", {dir / "a.h5", dir / "b.h5"});
  EXPECT_EQ(Store::open(dir / "out.h5").read<RelationSet>("proxy"), once);
  const auto again = merge_stores(dir / "out2.h5", {dir / "out.h5", dir / "a.h5", dir / "out.h5"});
  EXPECT_EQ(again.duplicates, 3 + 6);  // a's three runs and out's six seen twice
  EXPECT_EQ(Store::open(dir / "out2.h5").read<RelationSet>("proxy"), once);
  merge_stores(dir / "out.h5", {dir / "out.h5"});
  EXPECT_EQ(Store::open(dir / "out.h5").read<RelationSet>("proxy"), once);
}

TEST(Merge, ConflictingValuesNameBothFiles) {
  TempDir dir;
  const RelationSet serial = serial_relation();
  RelationSet other = shard_of(serial, 0, 2);
  other.runs[1].samples += 1;  // b=16 seed=0 with another count
  write_store(dir / "a.h5", shard_of(serial, 0, 2));
  write_store(dir / "b.h5", other);
  const std::string msg = merge_error(dir / "out.h5", {dir / "a.h5", dir / "b.h5"});
  EXPECT_NE(msg.find((dir / "a.h5").string()), std::string::npos) << msg;
  EXPECT_NE(msg.find((dir / "b.h5").string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("b=16 seed=0"), std::string::npos) << msg;
  EXPECT_NE(msg.find(std::to_string(other.runs[1].samples)), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(dir / "out.h5"));

  // Other settings under the same relation name are a conflict too.
  RelationSet retargeted = shard_of(serial, 1, 2);
  retargeted.target = 0.8;
  write_store(dir / "c.h5", retargeted);
  const std::string header = merge_error(dir / "out.h5", {dir / "a.h5", dir / "c.h5"});
  EXPECT_NE(header.find("target 0.8"), std::string::npos) << header;
  EXPECT_NE(header.find((dir / "c.h5").string()), std::string::npos) << header;
}

// An adaptive campaign's later round continues a censored run to a larger budget: the continued
// run replaces it whichever store comes first; two different results for one budget still conflict.
TEST(Merge, ACensoredRunContinuedFurtherReplacesItInEitherOrder) {
  TempDir dir;
  RelationSet before = serial_relation();
  before.runs = {before.runs[0]};
  before.runs[0].reached = false;
  before.runs[0].samples = before.runs[0].budget_samples = 512;
  RelationSet after = before;
  after.runs[0].reached = true;
  after.runs[0].samples = 1536;
  after.runs[0].budget_samples = 2048;
  write_store(dir / "round1.h5", before);
  write_store(dir / "round2.h5", after);
  for (const auto& inputs : {std::vector<fs::path>{dir / "round1.h5", dir / "round2.h5"},
                             std::vector<fs::path>{dir / "round2.h5", dir / "round1.h5"}}) {
    fs::remove(dir / "out.h5");
    merge_stores(dir / "out.h5", inputs);
    EXPECT_EQ(Store::open(dir / "out.h5").read<RelationSet>("proxy"), after);
  }
  RelationSet other = after;
  other.runs[0].samples = 1600;
  write_store(dir / "other.h5", other);
  const std::string msg = merge_error(dir / "out2.h5", {dir / "round2.h5", dir / "other.h5"});
  EXPECT_NE(msg.find("two different results"), std::string::npos) << msg;
}

// The provenance of the run `name`, started at `when` on `host`.
Provenance run_named(const std::string& name, const std::string& when, const std::string& host) {
  Provenance p = this_process();
  p.command_line = "pacer relation --shard " + name;
  p.start_time = when;
  p.host = host;
  return p;
}

// A merged record says which runs measured it, not which process merged it: the shards' provenance
// combined where its rows came from several, one input's where from one, and a run replaced by its
// continuation in another input no longer counts.
TEST(Merge, ARecordKeepsTheProvenanceOfTheRunsThatMeasuredIt) {
  TempDir dir;
  const Provenance before = current_run();
  const Provenance a = run_named("1/2", "2026-11-27T10:00:00Z", "node-a");
  const Provenance b = run_named("2/2", "2026-11-26T09:00:00Z", "node-b");
  const RelationSet serial = serial_relation();
  set_current_run(a);
  write_store(dir / "a.h5", shard_of(serial, 0, 2));
  Store::open(dir / "a.h5").write(profile("orin", {1, 2}, 3.0), "p");
  RelationSet censored = serial;  // a run stopped short in a, trained on to the target in b
  censored.name = "continued";
  censored.runs = {serial.runs[0]};
  censored.runs[0].reached = false;
  censored.runs[0].samples = censored.runs[0].budget_samples = 512;
  Store::open(dir / "a.h5").write(censored);
  set_current_run(b);
  write_store(dir / "b.h5", shard_of(serial, 1, 2));
  RelationSet continued = censored;
  continued.runs[0].reached = true;
  continued.runs[0].samples = 1536;
  continued.runs[0].budget_samples = 2048;
  Store::open(dir / "b.h5").write(continued);
  Provenance merger = this_process();
  merger.command_line = "pacer merge a.h5 b.h5 -o out.h5";
  set_current_run(merger);
  merge_stores(dir / "out.h5", {dir / "a.h5", dir / "b.h5"});
  set_current_run(before);

  const Store out = Store::open(dir / "out.h5");
  const Provenance both = out.read_provenance("relations", "proxy");
  EXPECT_EQ(both.command_line, "pacer relation --shard 1/2 | pacer relation --shard 2/2");
  EXPECT_EQ(both.host, "node-a | node-b");
  EXPECT_EQ(both.start_time, "2026-11-26T09:00:00Z .. 2026-11-27T10:00:00Z");  // earliest .. latest
  EXPECT_EQ(both.git_commit, a.git_commit);                                    // one value where they agree
  EXPECT_EQ(out.read_provenance("profiles", "p"), a);
  EXPECT_EQ(out.read_provenance("relations", "continued"), b);
  EXPECT_EQ(out.read_provenance("device", ""), a);
  // Merged again, with its own output among the inputs, it says the same.
  merge_stores(dir / "out2.h5", {dir / "out.h5", dir / "b.h5", dir / "a.h5"});
  EXPECT_EQ(Store::open(dir / "out2.h5").read_provenance("relations", "proxy"), both);
}

TEST(Merge, DifferentDevicesRefuse) {
  TempDir dir;
  const RelationSet serial = serial_relation();
  write_store(dir / "a.h5", shard_of(serial, 0, 2), "jetson-nano");
  write_store(dir / "b.h5", shard_of(serial, 1, 2), "jetson-tx2");
  const std::string msg = merge_error(dir / "out.h5", {dir / "a.h5", dir / "b.h5"});
  EXPECT_NE(msg.find("jetson-nano"), std::string::npos) << msg;
  EXPECT_NE(msg.find("jetson-tx2"), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(dir / "out.h5"));
}

TEST(Merge, ProfilesOfDifferentBoardModelsRefuse) {
  TempDir dir;
  Store::open_or_create(dir / "a.h5").write(profile("jetson-nano", {8}, 10), "cnn");
  Store::open_or_create(dir / "b.h5").write(profile("jetson-tx2", {16}, 20), "cnn");
  const std::string msg = merge_error(dir / "out.h5", {dir / "a.h5", dir / "b.h5"});
  EXPECT_NE(msg.find("board model"), std::string::npos) << msg;
  EXPECT_NE(msg.find("jetson-tx2"), std::string::npos) << msg;

  // Two grids of one board: the points join and the profiling cost is the sum of both.
  Store::open_or_create(dir / "c.h5").write(profile("jetson-nano", {16}, 20), "cnn");
  merge_stores(dir / "out.h5", {dir / "a.h5", dir / "c.h5", dir / "a.h5"});
  const ProfileTable t = Store::open(dir / "out.h5").read<ProfileTable>("cnn");
  EXPECT_EQ(t.points.size(), 4u);
  EXPECT_DOUBLE_EQ(t.profiling_cost_s, 30);
  EXPECT_EQ(t.batch_sizes(), (std::vector<int>{8, 16}));
}

// A board fleet (docs/cluster.md): every point records the node and the board model it was measured
// on. Points of one board model from several nodes join; points of two board models under one
// profile name (a Jetson profile's device name is the backend's, the same on every board) refuse,
// naming both files and both models, and leave no output.
TEST(Merge, ProfilePointsOfDifferentBoardModelsRefuseNamingBothFilesAndModels) {
  TempDir dir;
  auto fleet = [](std::vector<int> batches, const std::string& node, const std::string& model) {
    ProfileTable t = profile("jetson-sysfs", std::move(batches), 5);
    for (auto& p : t.points) {
      p.node = node;
      p.board_model = model;
    }
    return t;
  };
  Store::open_or_create(dir / "n1.h5").write(fleet({8}, "orin-01", "NVIDIA Jetson Orin Nano"), "cnn");
  Store::open_or_create(dir / "n2.h5").write(fleet({16}, "orin-02", "NVIDIA Jetson Orin Nano"), "cnn");
  Store::open_or_create(dir / "agx.h5").write(fleet({32}, "agx-01", "NVIDIA Jetson AGX Orin"), "cnn");
  merge_stores(dir / "orin.h5", {dir / "n1.h5", dir / "n2.h5"});
  const ProfileTable joined = Store::open(dir / "orin.h5").read<ProfileTable>("cnn");
  ASSERT_EQ(joined.points.size(), 4u);
  for (const auto& p : joined.points) {
    EXPECT_EQ(p.board_model, "NVIDIA Jetson Orin Nano");
    EXPECT_EQ(p.node, p.batch_size == 8 ? "orin-01" : "orin-02");
  }
  const std::string msg = merge_error(dir / "out.h5", {dir / "n1.h5", dir / "n2.h5", dir / "agx.h5"});
  EXPECT_NE(msg.find("'NVIDIA Jetson Orin Nano' in " + (dir / "n1.h5").string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("'NVIDIA Jetson AGX Orin' in " + (dir / "agx.h5").string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("board models cannot be merged"), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(dir / "out.h5"));
  // A profile written before points recorded their board (board_model "") joins either.
  Store::open_or_create(dir / "old.h5").write(profile("jetson-sysfs", {64}, 1), "cnn");
  merge_stores(dir / "out.h5", {dir / "old.h5", dir / "agx.h5"});
  EXPECT_EQ(Store::open(dir / "out.h5").read<ProfileTable>("cnn").points.size(), 4u);
}

ValidationResult validation_of(const std::vector<std::tuple<double, std::string, int>>& rows,
                               const std::string& model) {
  ValidationResult v;
  v.name = "val";
  v.workload = "cnn@1x28x28";
  v.device = "jetson-sysfs";
  v.dataset = "fmnist-target-a";
  v.metric = "accuracy";
  v.target = 0.8;
  for (const auto& [cap, policy, seed] : rows) {
    ValidationRow r;
    r.cap_w = cap;
    r.policy = policy;
    r.seed = seed;
    r.knob = {614.4e6};
    r.batch_size = 32;
    r.samples = 1000 + 10 * seed;
    r.device_time_s = cap + seed;
    r.node = "node-" + std::to_string(seed);
    r.board_model = model;
    v.rows.push_back(r);
  }
  return v;
}

// Validation rows from shards join into the order a whole validation stores them in (sort_rows);
// rows of two board models under one name refuse.
TEST(Merge, ValidationShardsJoinInTheWholeValidationsOrderAndRefuseTwoBoardModels) {
  TempDir dir;
  const std::string nano = "NVIDIA Jetson Nano Developer Kit";
  Store::open_or_create(dir / "a.h5").write(validation_of({{6, "ours", 1}, {5, "oracle", 0}}, nano));
  Store::open_or_create(dir / "b.h5").write(validation_of({{5, "ours", 0}, {6, "baseline1", 1}}, nano));
  merge_stores(dir / "out.h5", {dir / "a.h5", dir / "b.h5"});
  ValidationResult whole = validation_of({{5, "ours", 0}, {6, "baseline1", 1}, {6, "ours", 1}, {5, "oracle", 0}}, nano);
  sort_rows(whole);
  EXPECT_EQ(Store::open(dir / "out.h5").read<ValidationResult>("val"), whole);
  EXPECT_EQ(whole.rows.front().policy, "oracle");  // cap 5 W first, then policies by name
  EXPECT_EQ(whole.rows.back().policy, "ours");

  Store::open_or_create(dir / "tx2.h5").write(validation_of({{7, "ours", 0}}, "NVIDIA Jetson TX2"));
  const std::string msg = merge_error(dir / "bad.h5", {dir / "a.h5", dir / "tx2.h5"});
  EXPECT_NE(msg.find("validation 'val'"), std::string::npos) << msg;
  EXPECT_NE(msg.find(nano), std::string::npos) << msg;
  EXPECT_NE(msg.find("'NVIDIA Jetson TX2' in " + (dir / "tx2.h5").string()), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(dir / "bad.h5"));
}

// merge_into keeps what the output store held (a campaign's store and its shards): its profile
// stays beside the merged relation.
TEST(Merge, IntoAStoreKeepsWhatItHeld) {
  TempDir dir;
  const RelationSet serial = serial_relation();
  Store::open_or_create(dir / "campaign.h5").write(profile("jetson-nano", {8}, 10), "cnn");
  write_store(dir / "s0.h5", shard_of(serial, 0, 2));
  write_store(dir / "s1.h5", shard_of(serial, 1, 2));
  merge_into(dir / "campaign.h5", {dir / "s0.h5", dir / "s1.h5"});
  const Store out = Store::open(dir / "campaign.h5");
  EXPECT_EQ(out.read<RelationSet>("proxy"), serial);
  EXPECT_EQ(out.read<ProfileTable>("cnn"), profile("jetson-nano", {8}, 10));
  // Again: nothing changes (idempotent); into a store that does not exist yet: the shards' union.
  merge_into(dir / "campaign.h5", {dir / "s0.h5", dir / "s1.h5"});
  EXPECT_EQ(Store::open(dir / "campaign.h5").read<RelationSet>("proxy"), serial);
  merge_into(dir / "fresh.h5", {dir / "s1.h5", dir / "s0.h5"});
  EXPECT_EQ(Store::open(dir / "fresh.h5").read<RelationSet>("proxy"), serial);
}

TEST(Merge, DamagedInputLeavesTheOutputAlone) {
  TempDir dir;
  const RelationSet serial = serial_relation();
  write_store(dir / "a.h5", shard_of(serial, 0, 2));
  write_store(dir / "b.h5", shard_of(serial, 1, 2));
  merge_stores(dir / "out.h5", {dir / "a.h5"});
  const std::string before = bytes_of(dir / "out.h5");
  {
    std::fstream f(dir / "b.h5", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(dir / "b.h5") / 2));
    f.write("\xde\xad\xbe\xef", 4);
  }
  const std::string msg = merge_error(dir / "out.h5", {dir / "a.h5", dir / "b.h5"});
  EXPECT_NE(msg.find((dir / "b.h5").string()), std::string::npos) << msg;
  EXPECT_EQ(bytes_of(dir / "out.h5"), before);
  for (const auto& e : fs::directory_iterator(dir.path))
    EXPECT_EQ(e.path().filename().string().find(".merge-"), std::string::npos) << "temporary file left behind";
}

}  // namespace

// The Zeus importer's curves are of levels: the first epoch each metric level was reached at, so
// one run can reach two levels at one sample count. `pacer merge m.h5 zeus.h5` took the two for
// two results of one job (issue 22, item 23); a curve of evaluations still refuses them.
TEST(Merge, ACurveOfLevelsReachedAtOneEpochMergesIntoAnEmptyStoreAndIntoItself) {
  TempDir dir;
  LearningCurve levels;
  levels.name = "cifar100.shufflenetv2.adadelta.proxy";
  levels.metric = "accuracy";
  levels.source = "levels";
  levels.points = {{8, 1, 50000, 0.05}, {8, 1, 50000, 0.1}, {8, 1, 100000, 0.2}, {16, 1, 50000, 0.05}};
  Store::open_or_create(dir / "s.h5").write(levels);
  const auto report = merge_stores(dir / "m.h5", {dir / "s.h5"});
  EXPECT_EQ(report.entries, 4);
  EXPECT_EQ(Store::open(dir / "m.h5").read<LearningCurve>(levels.name), levels);
  merge_into(dir / "s.h5", {dir / "s.h5", dir / "m.h5"});
  EXPECT_EQ(Store::open(dir / "s.h5").read<LearningCurve>(levels.name), levels);

  LearningCurve evaluations = levels;
  evaluations.source = "evaluations";
  Store::open_or_create(dir / "e.h5").write(evaluations);
  const std::string msg = merge_error(dir / "me.h5", {dir / "e.h5"});
  EXPECT_NE(msg.find("two different results for the same job"), std::string::npos) << msg;
}

// A pid that no process has now: a child that has exited and been waited for.
pid_t gone_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return pid;
}

// A merge killed mid-way left ".OUT.merge-PID" (the whole merged store) and its lock, and a
// writer killed mid-rewrite "OUT.tmp-PID"; later merges never removed them (issue 22, item 13).
// Those of processes that no longer run go when the next merge starts; a live one's stay.
TEST(Merge, TheTemporariesOfKilledMergesAndWritersAreRemovedOnStart) {
  TempDir dir;
  write_store(dir / "a.h5", serial_relation());
  merge_stores(dir / "out.h5", {dir / "a.h5"});
  const pid_t dead = gone_pid(), live = ::getppid();
  const std::vector<std::string> stale = {fmt::format(".out.h5.merge-{}", dead),
                                          fmt::format(".out.h5.merge-{}.lock", dead),
                                          fmt::format(".out.h5.merge-{}.tmp-{}", dead, dead),
                                          fmt::format("out.h5.tmp-{}", dead), fmt::format("out.h5.probe-{}", dead)};
  const std::vector<std::string> kept = {fmt::format(".out.h5.merge-{}", live),
                                         fmt::format("out.h5.tmp-{}", live),
                                         fmt::format(".out.h5.merge-{}x", dead),
                                         ".out.h5.merge-",
                                         "out.h5.tmp-old",
                                         fmt::format(".a.h5.merge-{}", dead)};
  for (const auto& name : stale) std::ofstream(dir / name) << "left by a killed merge\n";
  for (const auto& name : kept) std::ofstream(dir / name) << "not a leftover of a gone pacer process\n";
  merge_into(dir / "out.h5", {dir / "a.h5"});
  for (const auto& name : stale) EXPECT_FALSE(fs::exists(dir / name)) << name;
  for (const auto& name : kept) EXPECT_TRUE(fs::exists(dir / name)) << name;
  EXPECT_EQ(Store::open(dir / "out.h5").read<RelationSet>("proxy"), serial_relation());
}

// `pacer merge s.h5 other.h5` dropped everything s.h5 held (issue 22, item 4): an output that
// exists and is not among the inputs is refused before anything is read, unless it is kept
// (merged into) or replaced on purpose.
TEST(Merge, AnExistingOutputNotAmongTheInputsIsRefusedUnlessKeptOrReplaced) {
  TempDir dir;
  const RelationSet serial = serial_relation();
  write_store(dir / "s0.h5", shard_of(serial, 0, 2));
  write_store(dir / "s1.h5", shard_of(serial, 1, 2));
  merge_stores(dir / "out.h5", {dir / "s0.h5"}, ExistingOutput::refuse);  // not there yet: written
  const std::string before = bytes_of(dir / "out.h5");
  EXPECT_THROW(merge_stores(dir / "out.h5", {dir / "s1.h5"}, ExistingOutput::refuse), OutputExistsError);
  EXPECT_EQ(bytes_of(dir / "out.h5"), before);
  // Among the inputs, by another path to it: merged.
  fs::create_symlink(dir / "out.h5", dir / "link.h5");
  merge_stores(dir / "out.h5", {dir / "link.h5", dir / "s1.h5"}, ExistingOutput::refuse);
  EXPECT_EQ(Store::open(dir / "out.h5").read<RelationSet>("proxy"), serial);
  merge_stores(dir / "out.h5", {dir / "s1.h5"}, ExistingOutput::replace);
  EXPECT_EQ(Store::open(dir / "out.h5").read<RelationSet>("proxy"), shard_of(serial, 1, 2));
  merge_stores(dir / "out.h5", {dir / "s0.h5"}, ExistingOutput::keep);
  EXPECT_EQ(Store::open(dir / "out.h5").read<RelationSet>("proxy"), serial);
}
