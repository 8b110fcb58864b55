// The Zeus importer and the replay protocol (docs/explore.md) on a fixture in the
// Zeus format written here, then on the real traces in data/zeus.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <vector>

#include "base/error.hpp"
#include "traces/import/zeus.hpp"

namespace pacer::traces::zeus {
namespace {

const char* kPower =
    "dataset,network,batch_size,optimizer,power_limit,time_per_epoch,average_power\n"
    "toy,net,8,adam,100,10,90\n"
    "toy,net,8,adam,150,8,120\n"
    "toy,net,16,adam,100,7,95\n"
    "toy,net,16,adam,150,5,140\n"
    "toy,net,32,adam,100,6,98\n"
    "toy,net,32,adam,150,4.5,149\n"
    "toy,net,64,adam,100,3,99\n"  // not in the train trace: dropped
    "speech,ds,8,adamw,100,20,80\n"
    "speech,ds,16,adamw,100,15,85\n"
    "other,net,8,sgd,100,1,50\n";  // no runs: skipped

// toy: b=8 runs 1-4 reach 0.6 (epochs 3 5 4 6), only runs 1-2 reach 0.7; b=16 runs 1-3 reach 0.7;
// b=32 runs 1-4 reach 0.6 (8 6 10 9), run 5 never does. Strictest metric every b reaches in >= 3
// runs: 0.6. b=4 has runs but no power rows: dropped.
// speech (lower is better): every run reaches 50, only two runs of b=8 reach 40: target 50.
const char* kTrain =
    "dataset,network,batch_size,optimizer,learning_rate,run,target_metric,target_epoch\n"
    "toy,net,8,Adam,1e-3,1,0.5,1\ntoy,net,8,Adam,1e-3,1,0.6,3\ntoy,net,8,Adam,1e-3,1,0.7,5\n"
    "toy,net,8,Adam,1e-3,2,0.6,5\ntoy,net,8,Adam,1e-3,2,0.7,9\n"
    "toy,net,8,Adam,1e-3,3,0.6,4\n"
    "toy,net,8,Adam,1e-3,4,0.6,6\n"
    "toy,net,16,Adam,1.4e-3,1,0.6,4\ntoy,net,16,Adam,1.4e-3,1,0.7,6\n"
    "toy,net,16,Adam,1.4e-3,2,0.6,4\ntoy,net,16,Adam,1.4e-3,2,0.7,6\n"
    "toy,net,16,Adam,1.4e-3,3,0.6,7\ntoy,net,16,Adam,1.4e-3,3,0.7,9\n"
    "toy,net,32,Adam,2e-3,1,0.6,8\ntoy,net,32,Adam,2e-3,2,0.6,6\n"
    "toy,net,32,Adam,2e-3,3,0.6,10\ntoy,net,32,Adam,2e-3,4,0.6,9\n"
    "toy,net,32,Adam,2e-3,5,0.5,7\n"
    "toy,net,4,Adam,7e-4,1,0.6,2\ntoy,net,4,Adam,7e-4,2,0.6,2\ntoy,net,4,Adam,7e-4,3,0.6,2\n"
    "speech,ds,8,adamw,1e-4,1,50,3\nspeech,ds,8,adamw,1e-4,1,40,6\n"
    "speech,ds,8,adamw,1e-4,2,50,4\nspeech,ds,8,adamw,1e-4,2,40,7\n"
    "speech,ds,8,adamw,1e-4,3,50,5\n"
    "speech,ds,16,adamw,1e-4,1,50,2\nspeech,ds,16,adamw,1e-4,2,50,2\nspeech,ds,16,adamw,1e-4,3,50,3\n";

const Workload& find(const ImportResult& r, const std::string& name) {
  for (const auto& w : r.workloads)
    if (w.name == name) return w;
  throw std::runtime_error("workload not imported: " + name);
}

double mean_epochs(const RelationSet& s, int b) { return s.mean_samples(b) / static_cast<double>(s.samples_per_epoch); }

TEST(Zeus, ReplayProtocolOnFixture) {
  ImportOptions o;
  o.gpu = "v100";
  const auto r = import_text(kPower, kTrain, o);
  ASSERT_EQ(r.workloads.size(), 2u);
  ASSERT_EQ(r.skipped.size(), 1u);
  EXPECT_NE(r.skipped[0].find("other.net.sgd"), std::string::npos);

  const auto& w = find(r, "toy.net.adam");  // optimizer names are case-folded across the files
  EXPECT_EQ(w.dropped_batch_sizes, (std::vector<int>{4, 64}));
  EXPECT_EQ(w.profile.batch_sizes(), (std::vector<int>{8, 16, 32}));
  EXPECT_EQ(w.profile.knob, KnobSpace::power_limit());
  EXPECT_EQ(w.profile.device, "v100");
  EXPECT_DOUBLE_EQ(w.target.target, 0.6);
  EXPECT_TRUE(w.target.higher_is_better);

  // Profile: time per mini-batch so that one epoch of samples_per_epoch samples takes the epoch time.
  const auto* p = w.profile.find({150}, 16);
  ASSERT_NE(p, nullptr);
  EXPECT_DOUBLE_EQ(p->time_per_batch_mean_s * w.profile.samples_per_epoch / 16, 5.0);
  EXPECT_DOUBLE_EQ(p->power_mean_w, 140);
  EXPECT_TRUE(std::isnan(p->power_peak_w));  // Zeus has average power only

  // Proxy: first half of the runs by run index (at least one); target: all runs.
  EXPECT_DOUBLE_EQ(mean_epochs(w.proxy, 8), 4.0);    // runs 1, 2
  EXPECT_DOUBLE_EQ(mean_epochs(w.target, 8), 4.5);   // runs 1-4
  EXPECT_DOUBLE_EQ(mean_epochs(w.proxy, 16), 4.0);   // run 1 of 3
  EXPECT_DOUBLE_EQ(mean_epochs(w.target, 16), 5.0);
  EXPECT_DOUBLE_EQ(mean_epochs(w.proxy, 32), 7.0);   // runs 1, 2 of 5
  EXPECT_DOUBLE_EQ(mean_epochs(w.target, 32), 8.25); // run 5 never reached 0.6
  int reached32 = 0, runs32 = 0;
  for (const auto& run : w.target.runs)
    if (run.batch_size == 32) {
      ++runs32;
      reached32 += run.reached;
    }
  EXPECT_EQ(runs32, 5);
  EXPECT_EQ(reached32, 4);
  EXPECT_EQ(w.proxy.name, "toy.net.adam.proxy");
  EXPECT_EQ(w.target.name, "toy.net.adam.target");

  // Caps: 10 evenly spaced from the lowest to the highest average power.
  const auto caps = protocol_caps_w(w.profile);
  ASSERT_EQ(caps.size(), 10u);
  EXPECT_DOUBLE_EQ(caps.front(), 90);
  EXPECT_DOUBLE_EQ(caps.back(), 149);
  EXPECT_NEAR(caps[1], 90 + 59.0 / 9, 1e-12);

  const auto& s = find(r, "speech.ds.adamw");
  EXPECT_FALSE(s.target.higher_is_better);
  EXPECT_DOUBLE_EQ(s.target.target, 50);
  EXPECT_DOUBLE_EQ(mean_epochs(s.target, 8), 4.0);
}

// A split seed re-draws the proxy as a random half of each batch size's runs: as many runs as the
// protocol's first half, the same draw for a seed, other draws for other seeds, the looser level
// and the learning curve over the same runs, and the target untouched.
TEST(Zeus, SplitSeedDrawsAReproducibleRandomHalf) {
  ImportOptions o;
  const auto protocol = find(import_text(kPower, kTrain, o), "toy.net.adam");
  const auto proxy_seeds = [](const RelationSet& s, int b) {
    std::vector<int> seeds;
    for (const auto& r : s.runs)
      if (r.batch_size == b) seeds.push_back(r.seed);
    return seeds;
  };
  std::set<std::vector<int>> draws32;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    o.split_seed = seed;
    const auto w = find(import_text(kPower, kTrain, o), "toy.net.adam");
    const auto again = find(import_text(kPower, kTrain, o), "toy.net.adam");
    for (int b : {8, 16, 32}) {
      const auto seeds = proxy_seeds(w.proxy, b);
      EXPECT_EQ(seeds.size(), proxy_seeds(protocol.proxy, b).size()) << b;
      EXPECT_EQ(seeds, proxy_seeds(again.proxy, b)) << "seed " << seed << " is not reproducible";
      EXPECT_TRUE(std::is_sorted(seeds.begin(), seeds.end()));
      EXPECT_EQ(std::set<int>(seeds.begin(), seeds.end()).size(), seeds.size()) << "a run drawn twice";
      EXPECT_EQ(proxy_seeds(w.target, b), proxy_seeds(protocol.target, b));
    }
    draws32.insert(proxy_seeds(w.proxy, 32));
    EXPECT_EQ(proxy_seeds(w.proxy_looser, 8), proxy_seeds(w.proxy, 8));
    for (const auto& p : w.proxy_curve.points) {
      const auto seeds = proxy_seeds(w.proxy, p.batch_size);
      EXPECT_NE(std::find(seeds.begin(), seeds.end(), p.seed), seeds.end()) << "curve of a run not in the proxy";
    }
    EXPECT_NE(w.proxy.dataset.find("split seed"), std::string::npos);
  }
  // Two of five runs: ten possible draws; twenty seeds find several of them.
  EXPECT_GE(draws32.size(), 5u);
}

// Every workload the import leaves out is listed with its reason, in the power trace's order, then
// the train trace's workloads without power rows. With 4 runs required, speech (3 runs per batch
// size) has no batch size left and toy keeps b=8 and b=32; in "gap", b=8 has two runs but only one
// reaches any level, so no level is reached by 2 runs at every batch size.
TEST(Zeus, SkippedWorkloadsSayWhyInOrder) {
  ImportOptions o;
  o.gpu = "v100";
  o.min_runs = 4;
  auto r = import_text(kPower, kTrain, o);
  ASSERT_EQ(r.workloads.size(), 1u);
  EXPECT_EQ(r.workloads[0].dropped_batch_sizes, (std::vector<int>{4, 16, 64}));
  EXPECT_EQ(r.workloads[0].profile.batch_sizes(), (std::vector<int>{8, 32}));
  EXPECT_EQ(r.skipped, (std::vector<std::string>{"other.net.sgd: no runs in summary_train.csv",
                                                  "speech.ds.adamw: no batch size is in both traces with >= 4 runs"}));
  o.min_runs = 2;
  r = import_text(
      "dataset,network,batch_size,optimizer,power_limit,time_per_epoch,average_power\n"
      "gap,n,8,adam,100,10,90\ngap,n,16,adam,100,7,95\n",
      "dataset,network,batch_size,optimizer,learning_rate,run,target_metric,target_epoch\n"
      "gap,n,8,adam,1e-3,1,0.5,3\ngap,n,8,adam,1e-3,2,0.5,\n"
      "gap,n,16,adam,1e-3,1,0.5,2\ngap,n,16,adam,1e-3,2,0.5,2\n"
      "lone,n,8,adam,1e-3,1,0.5,2\n",
      o);
  EXPECT_TRUE(r.workloads.empty());
  EXPECT_EQ(r.skipped,
            (std::vector<std::string>{"gap.n.adam: no target metric is reached by every batch size in >= 2 runs",
                                      "lone.n.adam: not in summary_power_v100.csv"}));
}

TEST(Zeus, BadInputIsAClearError) {
  ImportOptions o;
  EXPECT_THROW(import_text("dataset,network\nx,y\n", kTrain, o), Error);
  const std::string bad = std::string(kPower).replace(std::string(kPower).find("10,90"), 5, "ten,90");
  EXPECT_THROW(import_text(bad, kTrain, o), Error);
  o.data_dir = "/nonexistent";
  o.gpu = "h100";
  try {
    import_traces(o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("h100"), std::string::npos);
  }
}

// Issue 22 item 14: a value no GPU gives, or a repeated (power_limit, batch_size) row, is refused
// with one line naming the file, the row and the column. No catalog entry for a V100: the physics
// bound (1500 W) applies, and the message says so.
TEST(Zeus, ImplausibleRowsAreRefusedNamingTheRowAndColumn) {
  ImportOptions o;
  const auto expect_error = [&](const std::string& from, const std::string& to, const std::string& fragment,
                                bool in_train = false) {
    std::string power = kPower, train = kTrain;
    std::string& text = in_train ? train : power;
    const auto at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    try {
      import_text(power, train, o);
      ADD_FAILURE() << "expected an error with '" << fragment << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
  };
  const std::string file = "summary_power_v100.csv:";
  expect_error("toy,net,8,adam,150,8,120", "toy,net,8,adam,-100,8,120",
               file + "3: column power_limit holds -100 W: a power must be positive");
  expect_error("toy,net,8,adam,150,8,120", "toy,net,8,adam,0,8,120", "column power_limit holds 0 W");
  expect_error("toy,net,8,adam,150,8,120", "toy,net,8,adam,150,8,1e300",
               file + "3: column average_power holds 1e+300 W, above 1500 W (the physics bound");
  expect_error("toy,net,8,adam,150,8,120", "toy,net,8,adam,150,8,39000", "column average_power holds 39000 W");
  expect_error("toy,net,8,adam,150,8,120", "toy,net,8,adam,150,1e308,120",
               file + "3: column time_per_epoch holds 1e+308 s");
  expect_error(
      "toy,net,8,adam,150,8,120", "toy,net,8,adam,100,8,120",
      file +
          "3: columns power_limit, batch_size: toy.net.adam at 100 W and batch size 8 is already on line 2 with "
          "other values");
  expect_error("toy,net,8,adam,150,8,120", "toy,net,8,adam,100,10,90", "is already on line 2 (the same values)");
  expect_error("toy,net,8,Adam,1e-3,1,0.6,3", "toy,net,8,Adam,1e-3,1,0.6,-3",
               "summary_train.csv:3: column target_epoch holds '-3'", true);
  expect_error("toy,net,8,Adam,1e-3,1,0.6,3", "toy,net,8,Adam,1e-3,1,0.6,0", "column target_epoch holds '0'", true);
}

// The data sets ship in the checkout's data/ folder, which is the default data folder: nothing
// beside the checkout is needed. PACER_DATA_DIR still names another one.
TEST(Zeus, TheDefaultDataFolderIsTheCheckoutsDataFolder) {
  const char* saved = std::getenv("PACER_DATA_DIR");
  const std::string keep = saved ? saved : "";
  ::unsetenv("PACER_DATA_DIR");
  const auto data = std::filesystem::path(PACER_SOURCE_DIR) / "data";
  EXPECT_EQ(std::filesystem::weakly_canonical(default_data_dir()), std::filesystem::weakly_canonical(data / "zeus"));
  EXPECT_TRUE(std::filesystem::exists(default_data_dir() / "summary_power_a40.csv"));
  EXPECT_TRUE(std::filesystem::exists(data / "zeus/LICENSE"));
  EXPECT_TRUE(std::filesystem::exists(data / "zeus/PROVENANCE.md"));
  EXPECT_TRUE(std::filesystem::exists(data / "jetson/loudva/LICENSE"));
  EXPECT_TRUE(std::filesystem::exists(data / "jetson/loudva/PROVENANCE.md"));
  const auto elsewhere = std::filesystem::temp_directory_path();
  ::setenv("PACER_DATA_DIR", elsewhere.c_str(), 1);
  EXPECT_EQ(default_data_dir(), elsewhere / "zeus");
  if (saved)
    ::setenv("PACER_DATA_DIR", keep.c_str(), 1);
  else
    ::unsetenv("PACER_DATA_DIR");
}

TEST(Zeus, RealTracesV100) {
  const std::filesystem::path dir = std::filesystem::path(PACER_SOURCE_DIR) / "data" / "zeus";
  ASSERT_TRUE(std::filesystem::exists(dir / "summary_train.csv")) << "no Zeus traces under " << dir;
  ImportOptions o;
  o.data_dir = dir;
  o.gpu = "v100";
  const auto r = import_traces(o);
  // Six (dataset, network) pairs; cifar100 with Adam has power rows but no training runs.
  EXPECT_EQ(r.workloads.size(), 6u);
  const auto& ls = find(r, "librispeech.deepspeech2.adamw");
  EXPECT_FALSE(ls.target.higher_is_better);  // word error rate
  EXPECT_EQ(std::count(ls.dropped_batch_sizes.begin(), ls.dropped_batch_sizes.end(), 2), 1);  // 2 runs only
  for (const auto& w : r.workloads) {
    EXPECT_GE(w.profile.batch_sizes().size(), 4u) << w.name;
    for (int b : w.profile.batch_sizes()) {
      int reached = 0;
      for (const auto& run : w.target.runs) reached += run.batch_size == b && run.reached;
      EXPECT_GE(reached, 3) << w.name << " b=" << b;
    }
  }
}

}  // namespace
}  // namespace pacer::traces::zeus
