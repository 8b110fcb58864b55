// `pacer bench train`'s library half (experiments/bench/train_bench.hpp): the throughput table and its
// CSV hold one measured row per (workload, batch size, threads), in that order; a wait policy it
// does not know stops it before it measures anything, naming the option.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "base/units.hpp"
#include "experiments/bench/train_bench.hpp"
#include "traces/csv.hpp"

namespace {

namespace fs = std::filesystem;
using pacer::experiments::run_train_bench;
using pacer::experiments::TrainBenchOptions;

TEST(TrainBench, TheThroughputTableAndItsCsvHoldEveryPoint) {
  const fs::path csv = fs::temp_directory_path() / ("pacer-train-bench-" + std::to_string(::getpid()) + ".csv");
  TrainBenchOptions o;
  o.workloads = {"cnn"};
  o.batch_sizes = {4, 8};
  o.threads = {1};
  o.min_time_s = 0.01;
  o.csv = csv;
  std::ostringstream out;
  run_train_bench(o, out);
  std::stringstream text;
  text << std::ifstream(csv).rdbuf();
  const auto table = pacer::traces::parse_csv(text.str(), csv.string());
  ASSERT_EQ(table.rows.size(), 2u) << text.str();
  const std::vector<std::string> header = {"workload", "batch_size", "threads", "samples_per_s[1/s]"};
  EXPECT_EQ(table.header, header);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(table.rows[i][0], "cnn");
    EXPECT_EQ(table.rows[i][1], i == 0 ? "4" : "8");
    EXPECT_EQ(table.rows[i][2], "1");
    EXPECT_GT(pacer::units::to_number(table.rows[i][3]).value_or(0), 0) << table.rows[i][3];
  }
  // The printed table: a header and a row per point, the first point its own baseline (ratio 1).
  EXPECT_NE(out.str().find("WORKLOAD"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find(" 1.00           1.00\n"), std::string::npos) << out.str();
  fs::remove(csv);
}

TEST(TrainBench, AnUnknownWaitPolicyStopsItBeforeAnyRun) {
  TrainBenchOptions o;
  o.workloads = {"cnn"};
  o.batch_sizes = {4};
  o.threads = {1};
  o.contention = true;
  o.wait_policies = {"default", "sometimes"};
  std::ostringstream out;
  try {
    run_train_bench(o, out);
    ADD_FAILURE() << "an unknown wait policy was accepted";
  } catch (const pacer::OptionError& e) {
    EXPECT_EQ(e.option, "wait-policies");
    EXPECT_NE(std::string(e.what()).find("'sometimes'"), std::string::npos) << e.what();
  }
  EXPECT_EQ(out.str(), "");
}

}  // namespace
