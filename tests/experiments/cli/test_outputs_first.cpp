// Every command checks every output it will write (record names, store, CSV and report paths,
// policies) before it measures, trains or writes anything. A bad output is one error line naming
// the option, nothing on stdout (no work was reported), the store byte for byte as it was and no
// new file: a typo in an output must not cost a measurement or a training run.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tests/support/run_pacer.hpp"
#include "traces/store/store.hpp"

namespace fs = std::filesystem;
using namespace pacer;

namespace {

int lines(const std::string& s) {
  return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

std::set<std::string> listing(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::recursive_directory_iterator(dir)) names.insert(fs::relative(e.path(), dir).string());
  return names;
}

class OutputsFirst : public ::testing::Test {
 protected:
  fs::path dir, store;
  std::string data, cap;
  void SetUp() override {
    dir = fs::temp_directory_path() / ("pacer-test-outputs-" + std::to_string(::getpid()));
    fs::create_directories(dir / "idx");
    pacer::testing::write_quadrant_idx(dir / "idx", 480, 11);
    data = "idx:" + (dir / "idx").string();
    store = dir / "s.h5";
    auto r = pacer(
        "profile --device emulated:jetson-nano --workload cnn@1x12x12 --batch-sizes 8,32 --freqs "
        "230.4,460.8,921.6 --sensor-rate 100Hz --min-power-samples 30 --measured-batches 50 --store " +
        store.string());
    ASSERT_EQ(r.code, 0) << r.err;
    auto s = traces::Store::open(store);
    traces::RelationSet proxy;
    proxy.name = "proxy";
    proxy.workload = "cnn@1x12x12";
    proxy.dataset = data;
    proxy.metric = "accuracy";
    proxy.target = 0.9;
    proxy.lr_rule = "lr = 0.002 * sqrt(b / 32)";
    proxy.base_lr = 0.002;
    proxy.base_batch = 32;
    proxy.optimizer = "adam";
    for (auto [b, n] : std::vector<std::pair<int, int64_t>>{{8, 600}, {32, 1200}}) {
      traces::RelationRun run;
      run.batch_size = b;
      run.reached = true;
      run.samples = n;
      proxy.runs.push_back(run);
    }
    s.write(proxy);
    // A validation record of 16 rows that a smaller validation must not replace unasked.
    traces::ValidationResult v;
    v.name = "v16";
    v.workload = "cnn@1x12x12";
    v.dataset = data;
    for (int i = 0; i < 16; ++i) {
      traces::ValidationRow row;
      row.cap_w = 6;
      row.policy = "ours";
      row.seed = i;
      v.rows.push_back(row);
    }
    s.write(v);
    const auto profile = s.read<traces::ProfileTable>("cnn@1x12x12");
    double hi = 0;
    for (const auto& p : profile.points) hi = std::max(hi, p.power_peak_w);
    cap = fmt::format("{:.2f}W", hi + 1);
    fs::create_directories(dir / "folder");
    std::ofstream(dir / "plain.txt") << "a file, not a folder\n";
    std::ofstream(dir / "m.csv") << "gpu_freq[MHz],b,time_per_batch[s],power_mean[W]\n921.6,8,0.01,5\n";
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  pacer::testing::RunResult pacer(const std::string& args) const { return pacer::testing::run_pacer(args, dir); }

  // Runs `args`, which name one bad output: the command must stop before any work, with one error
  // line naming `option`, exit `code`, and leave every file as it was.
  void expect_refused_before_work(const std::string& args, int code, const std::string& option,
                                  const std::string& also = "") const {
    const std::string before = pacer::testing::slurp(store);
    const auto files = listing(dir);
    const auto r = pacer(args);
    EXPECT_EQ(r.code, code) << args << "\n" << r.err;
    EXPECT_EQ(lines(r.err), 1) << args << ": the error, and no line of work before it\n" << r.err;
    EXPECT_NE(r.err.find(option), std::string::npos) << args << "\n" << r.err;
    if (!also.empty()) {
      EXPECT_NE(r.err.find(also), std::string::npos) << args << "\n" << r.err;
    }
    EXPECT_EQ(r.out, "") << args << ": nothing was computed, so nothing is printed";
    EXPECT_TRUE(pacer::testing::slurp(store) == before) << args << ": the store was written";
    EXPECT_EQ(listing(dir), files) << args << ": a file was created or removed";
  }
};

}  // namespace

TEST_F(OutputsFirst, ValidateChecksPoliciesNameAndTheRecordItWouldShrinkBeforeTraining) {
  const std::string common = " --target-dataset " + data +
                             " --checkpoint none --threads 1 --eval-every 64 --lr 0.002 --target 0.9 --budget 2048 "
                             "--seeds 0 --sensor-rate 100Hz --power-limits " +
                             cap;
  const std::string v = "validate --store " + store.string() + common;
  expect_refused_before_work(v + " --policies ''", 2, "--policies");
  expect_refused_before_work(v + " --policies ours,fastest", 2, "--policies", "fastest");
  expect_refused_before_work(v + " --name ..", 2, "--name");
  expect_refused_before_work(v + " --name a/b", 2, "--name");
  // 1 cap x 5 policies x 1 seed = 5 rows would replace 16.
  expect_refused_before_work(v + " --name v16", 1, "--replace", "16 rows");
  expect_refused_before_work("validate --store " + (dir / "none" / "s.h5").string() + common, 1, "no such trace store");
  expect_refused_before_work("validate --store " + (dir / "folder").string() + common, 1, "--store", "folder");
}

TEST_F(OutputsFirst, SweepSimulateAndSelectCheckTheirFilesAndNamesBeforeWritingTheStore) {
  const std::string s = store.string() + " --relation proxy";
  expect_refused_before_work("sweep " + s + " --csv " + (dir / "none" / "s.csv").string(), 1, "--csv");
  expect_refused_before_work("sweep " + s + " --csv " + (dir / "folder").string(), 1, "--csv", "folder");
  expect_refused_before_work("sweep " + s + " --name a/b", 2, "--name");
  expect_refused_before_work("sweep " + s + " --policies ''", 2, "--policies");
  expect_refused_before_work("simulate " + s + " -P " + cap + " --csv " + (dir / "plain.txt" / "t.csv").string(), 1,
                             "--csv");
  expect_refused_before_work("simulate " + s + " -P " + cap + " --run-name ..", 2, "--run-name");
  expect_refused_before_work("select " + s + " -P " + cap + " --save a/b", 2, "--save");
}

TEST_F(OutputsFirst, CalibrateChecksItsCsvAndModelNameBeforeFitting) {
  const std::string c = "calibrate --store " + store.string();
  expect_refused_before_work(c + " --predictions-csv " + (dir / "none" / "p.csv").string(), 1, "--predictions-csv");
  expect_refused_before_work(c + " --model-name a/b", 2, "--model-name");
}

TEST_F(OutputsFirst, ProfileAndRelationCheckTheirStoreAndNamesBeforeMeasuring) {
  const std::string p = "profile --device emulated:jetson-nano --workload cnn@1x12x12 --batch-sizes 8 --freqs 921.6 ";
  expect_refused_before_work(p + "--store " + (dir / "none" / "p.h5").string(), 1, "--store");
  expect_refused_before_work(p + "--store " + (dir / "folder").string(), 1, "--store", "folder");
  expect_refused_before_work(p + "--store " + store.string() + " --profile-name a/b", 2, "--profile-name");
  const std::string r = "relation --dataset " + data + " --checkpoint none --threads 1 --batch-sizes 8 --seeds 0 ";
  expect_refused_before_work(r + "--out " + store.string() + " --name a/b", 2, "--name");
  expect_refused_before_work(r + "--out " + (dir / "plain.txt" / "r.h5").string(), 1, "--out");
}

TEST_F(OutputsFirst, ReportExportImportAndTheDemoCheckTheirOutputsFirst) {
  expect_refused_before_work("report " + store.string() + " -o " + (dir / "plain.txt" / "r").string(), 1, "--out");
  expect_refused_before_work("export " + store.string() + " profiles/cnn@1x12x12 --out " + (dir / "folder").string(), 1,
                             "--out", "folder");
  expect_refused_before_work(
      "import csv " + (dir / "m.csv").string() + " --out " + (dir / "plain.txt" / "i.h5").string(), 1, "--out");
  expect_refused_before_work("demo --quick --out " + (dir / "plain.txt" / "d").string(), 1, "--out");
  expect_refused_before_work("experiment --quick --name a/b --out " + (dir / "e").string(), 2, "--name");
}

// `cp demo.h5 s.h5; pacer sweep s.h5 --csv s.h5` exited 0 with the store replaced by CSV text; so did
// `simulate --csv`, `export -o` and `calibrate --predictions-csv` (issue 22, item 1). Every output of
// every command is compared with its inputs and its other outputs, by identity (another path, a
// link), before any work: one line naming both options, the store as it was.
TEST_F(OutputsFirst, AnOutputThatIsTheStoreOrAnInputOrAnotherOutputIsRefusedBeforeAnyWork) {
  fs::create_symlink(store, dir / "link.h5");
  std::ofstream(dir / "c.ini") << "[sweep]\nrelation = proxy\n";
  const std::string s = store.string(), other_path = (dir / "folder" / ".." / "s.h5").string();
  const std::string link = (dir / "link.h5").string(), csv = (dir / "m.csv").string();
  expect_refused_before_work("sweep " + s + " --relation proxy --csv " + s, 1, "--csv", "--store");
  expect_refused_before_work("sweep " + s + " --relation proxy --csv " + other_path, 1, "--csv", "same file");
  expect_refused_before_work("sweep " + link + " --relation proxy --csv " + s, 1, "--csv", "same file");
  expect_refused_before_work("sweep " + s + " --config " + (dir / "c.ini").string() + " --csv " +
                                 (dir / "c.ini").string(),
                             1, "--csv", "--config");
  expect_refused_before_work("simulate " + s + " --relation proxy -P " + cap + " --csv " + link, 1, "--csv", "--store");
  expect_refused_before_work("budget " + s + " --csv " + s, 1, "--csv", "--store");
  expect_refused_before_work("export " + s + " profiles/cnn@1x12x12 -o " + s, 1, "--out", "--store");
  expect_refused_before_work("calibrate --profile " + s + " --predictions-csv " + s, 1, "--predictions-csv",
                             "--profile");
  expect_refused_before_work("import csv " + csv + " -o " + csv, 1, "--out", "--file");
  expect_refused_before_work("import tegrastats " + csv + " --marks " + s + " -o " + s, 1, "--out", "--marks");
  expect_refused_before_work("bench train --baseline " + csv + " --csv " + csv, 1, "--csv", "--baseline");
  expect_refused_before_work(
      "profile --device emulated:jetson-nano --workload cnn@1x12x12 --batch-sizes 8 --freqs 921.6 --store " + s +
          " --state-file " + link,
      1, "--state-file", "--store");
  expect_refused_before_work("relation --dataset " + data + " --batch-sizes 8 --seeds 0 --out " + s +
                                 " --checkpoint " + s,
                             1, "--checkpoint", "--out");
}
