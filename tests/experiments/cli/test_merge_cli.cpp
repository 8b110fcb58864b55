// `pacer merge` on the stores pacer writes: every importer's store, a profile's and a relation's
// merge into an empty store, into themselves and with --update without a change (issue 22, item
// 23: a Zeus store was refused); an existing output that is not among the inputs is refused unless
// --update or --replace says what to do with it (item 4).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>

#include "tests/support/run_pacer.hpp"
#include "traces/store/store.hpp"

namespace fs = std::filesystem;
using namespace pacer;
using pacer::testing::slurp;

namespace {

int lines(const std::string& s) {
  return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

// Every record of a store by "group/name", and its device ("" when none).
struct Contents {
  std::map<std::string, traces::StoreRecord> records;
  std::optional<traces::DeviceSpec> device;
  bool operator==(const Contents&) const = default;
};

Contents contents(const fs::path& path) {
  const auto s = traces::Store::open(path);
  Contents c;
  for (const char* group : traces::kStoreGroups)
    for (const auto& name : s.list(group)) c.records.emplace(std::string(group) + "/" + name, s.read_record(group, name));
  if (s.has_device()) c.device = s.read_device();
  return c;
}

std::string names(const Contents& c) {
  std::string out;
  for (const auto& [name, r] : c.records) out += " " + name;
  return out;
}

class CliMerge : public ::testing::Test {
 protected:
  fs::path dir;
  void SetUp() override {
    dir = fs::temp_directory_path() / ("pacer-test-merge-" + std::to_string(::getpid()) + "-" +
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  pacer::testing::RunResult pacer(const std::string& args) const { return pacer::testing::run_pacer(args, dir); }
  void write(const std::string& name, const std::string& text) const { std::ofstream(dir / name) << text; }

  // The store pacer wrote at `store` merges into an empty store, into itself and with --update,
  // each time with the same records.
  void expect_merges_unchanged(const fs::path& store) const {
    const Contents before = contents(store);
    ASSERT_FALSE(before.records.empty());
    const fs::path m = dir / "m.h5";
    auto r = pacer("merge " + m.string() + " " + store.string());
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_TRUE(contents(m) == before) << "merged into an empty store:" << names(contents(m)) << " vs"
                                       << names(before);
    r = pacer("merge " + store.string() + " " + store.string());
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_TRUE(contents(store) == before) << "merged into itself";
    r = pacer("merge --update " + store.string() + " " + m.string());
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_TRUE(contents(store) == before) << "merged with --update";
    r = pacer("merge --update " + m.string() + " " + store.string() + " " + m.string());
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_TRUE(contents(m) == before) << "merged with --update, itself among the inputs";
  }
};

}  // namespace

TEST_F(CliMerge, AnExistingOutputNotAmongTheInputsIsRefusedUnlessUpdateOrReplaceIsGiven) {
  write("a.csv", "gpu_freq[MHz],b,time_per_batch[s],power_mean[W]\n921.6,8,0.01,5\n");
  write("b.csv", "gpu_freq[MHz],b,time_per_batch[s],power_mean[W]\n76.8,8,0.1,2\n");
  const fs::path s = dir / "s.h5", other = dir / "other.h5";
  ASSERT_EQ(pacer("import csv " + (dir / "a.csv").string() + " --workload a -o " + s.string()).code, 0);
  ASSERT_EQ(pacer("import csv " + (dir / "b.csv").string() + " --workload b -o " + other.string()).code, 0);
  const std::string before = slurp(s);
  auto r = pacer("merge " + s.string() + " " + other.string());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("is not among the inputs"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--update"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--replace"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(slurp(s) == before) << "the refused merge wrote the store";
  r = pacer("merge --update --replace " + s.string() + " " + other.string());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(slurp(s) == before);

  r = pacer("merge --update " + s.string() + " " + other.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(traces::Store::open(s).list("profiles"), (std::vector<std::string>{"a", "b"}));
  r = pacer("merge --replace " + s.string() + " " + other.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(traces::Store::open(s).list("profiles"), (std::vector<std::string>{"b"}));
  // Listed among the inputs (here by another path to it): merged without either option.
  r = pacer("merge " + s.string() + " " + (dir / "." / "s.h5").string() + " " + other.string());
  EXPECT_EQ(r.code, 0) << r.err;
}

// `pacer import zeus --gpu v100 -o s.h5 && pacer merge m.h5 s.h5` failed: "two different results for
// the same job" for two metric levels a run reached at one epoch.
TEST_F(CliMerge, AZeusStoreMerges) {
  write("summary_power_v100.csv",
        "dataset,network,batch_size,optimizer,power_limit,time_per_epoch,average_power\n"
        "toy,net,16,adam,100,10,90\ntoy,net,16,adam,150,8,120\ntoy,net,32,adam,100,8,95\ntoy,net,32,adam,150,6,140\n");
  std::string train = "dataset,network,batch_size,optimizer,learning_rate,run,target_metric,target_epoch\n";
  for (int run = 1; run <= 4; ++run)
    for (int b : {16, 32}) {
      // 0.05 and 0.1 first reached at the same epoch, as in the real traces.
      train += "toy,net," + std::to_string(b) + ",adam,1e-3," + std::to_string(run) + ",0.05,1\n";
      train += "toy,net," + std::to_string(b) + ",adam,1e-3," + std::to_string(run) + ",0.1,1\n";
      train += "toy,net," + std::to_string(b) + ",adam,1e-3," + std::to_string(run) + ",0.8," +
               std::to_string(4 + run % 2 + b / 16) + "\n";
    }
  write("summary_train.csv", train);
  const fs::path s = dir / "s.h5";
  const auto r = pacer("import zeus --gpu v100 --data-dir " + dir.string() + " -o " + s.string());
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_TRUE(traces::Store::open(s).has("curves", "toy.net.adam.proxy"));
  expect_merges_unchanged(s);
}

TEST_F(CliMerge, TheRealZeusV100StoreMerges) {
  const fs::path zeus = fs::path(PACER_SOURCE_DIR) / "data" / "zeus";
  ASSERT_TRUE(fs::exists(zeus / "summary_power_v100.csv")) << "no Zeus traces under " << zeus;
  const fs::path s = dir / "s.h5";
  const auto r = pacer("import zeus --gpu v100 --data-dir " + zeus.string() + " -o " + s.string());
  ASSERT_EQ(r.code, 0) << r.err;
  expect_merges_unchanged(s);
}

TEST_F(CliMerge, ACsvProfileStoreMerges) {
  write("p.csv",
        "gpu_freq[MHz],b,time_per_batch[ms],power_mean[W],power_peak[mW]\n921.6,8,250,7.5,8100\n76.8,8,2000,2.5,\n"
        "921.6,16,450,8,9000\n");
  const fs::path s = dir / "s.h5";
  const auto r = pacer("import csv " + (dir / "p.csv").string() + " --device jetson-nano -o " + s.string());
  ASSERT_EQ(r.code, 0) << r.err;
  expect_merges_unchanged(s);
}

TEST_F(CliMerge, ATegrastatsStoreMerges) {
  std::string log;
  for (int i = 0; i < 8; ++i)
    log += "RAM 1/2MB POM_5V_IN " + std::to_string(5000 + 100 * i) + "/5000 POM_5V_GPU 1/1\n";
  write("t.log", log);
  write("marks.csv", "start_s,end_s,b,gpu_freq[MHz],time_per_batch[ms]\n0,1.5,8,921.6,250\n2,3.5,16,921.6,400\n");
  const fs::path s = dir / "s.h5";
  const auto r = pacer("import tegrastats " + (dir / "t.log").string() + " --marks " + (dir / "marks.csv").string() +
                       " --interval 0.5 --device jetson-nano -o " + s.string());
  ASSERT_EQ(r.code, 0) << r.err;
  expect_merges_unchanged(s);
}

TEST_F(CliMerge, ALoudvaStoreMerges) {
  const fs::path loudva = fs::path(PACER_SOURCE_DIR) / "data" / "jetson" / "loudva";
  ASSERT_TRUE(fs::exists(loudva / "nano-modes")) << "no LoudVA data under " << loudva;
  const fs::path s = dir / "s.h5";
  auto r = pacer("import loudva --dir " + (loudva / "nano").string() + " --device jetson-nano -o " + s.string());
  ASSERT_EQ(r.code, 0) << r.err;
  r = pacer("import loudva --dir " + (loudva / "nano-modes").string() + " --device jetson-nano -o " + s.string());
  ASSERT_EQ(r.code, 0) << r.err;
  expect_merges_unchanged(s);
}

TEST_F(CliMerge, AProfileAndARelationStoreMerge) {
  const fs::path s = dir / "s.h5";
  auto r = pacer("profile --device emulated:jetson-nano --workload cnn@1x12x12 --batch-sizes 8,32 --freqs 230.4,921.6 "
                 "--store " +
                 s.string());
  ASSERT_EQ(r.code, 0) << r.err;
  fs::create_directories(dir / "idx");
  pacer::testing::write_quadrant_idx(dir / "idx", 480, 11);
  r = pacer("relation --workload cnn@1x12x12 --dataset idx:" + (dir / "idx").string() +
            " --checkpoint none --threads 1 --eval-every 64 --lr 0.002 --target 0.5 --budget 1024 --batch-sizes 8,16 "
            "--seeds 0,1 --name proxy --out " +
            s.string());
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_TRUE(traces::Store::open(s).has("curves", "proxy"));
  expect_merges_unchanged(s);
}
