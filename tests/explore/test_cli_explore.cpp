// End to end through the `pacer` binary: import a Zeus-format fixture, sweep, select, simulate;
// exit codes for an infeasible cap (1) and a bad option (2); nothing partial left behind.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <vector>

#include "explore/decide.hpp"
#include "models/analytical.hpp"
#include "tests/models/test_calib_fixtures.hpp"
#include "tests/support/choice_store.hpp"
#include "tests/support/json_lines.hpp"
#include "tests/support/run_pacer.hpp"
#include "traces/catalog/catalog.hpp"
#include "traces/store/store.hpp"

namespace {

namespace fs = std::filesystem;

struct Result {
  int code = -1;
  std::string out;
};

// Runs `pacer ARGS` in the working directory `cwd` (default: the current one); output in `dir`.
Result run(const std::string& args, const fs::path& cwd, const fs::path& dir) {
  const fs::path out = dir / "out.txt";
  const std::string cmd =
      "cd " + cwd.string() + " && " + std::string(PACER_BINARY) + " " + args + " > " + out.string() + " 2>&1";
  const int status = std::system(cmd.c_str());
  Result r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(out);
  std::stringstream ss;
  ss << in.rdbuf();
  r.out = ss.str();
  return r;
}

Result run(const std::string& args, const fs::path& dir) {
  return run(args, fs::current_path(), dir);
}

void write(const fs::path& p, const std::string& text) {
  std::ofstream(p) << text;
}

// The value of `key` in the first JSON line of `policy` ("" when absent).
std::string json_field(const std::string& lines, const std::string& policy, const std::string& key) {
  std::istringstream in(lines);
  for (std::string line; std::getline(in, line);) {
    if (line.find("\"policy\":\"" + policy + "\"") == std::string::npos) continue;
    const auto at = line.find("\"" + key + "\":");
    if (at == std::string::npos) return std::string();
    const auto from = at + key.size() + 3;
    return line.substr(from, line.find_first_of(",}", from) - from);
  }
  return std::string();
}

class CliExplore : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("pacer-cli-explore-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    // Two batch sizes, three power limits; b=32 needs fewer epochs but draws more.
    write(dir_ / "summary_power_v100.csv",
          "dataset,network,batch_size,optimizer,power_limit,time_per_epoch,average_power\n"
          "toy,net,16,adam,100,10,90\ntoy,net,16,adam,150,8,120\ntoy,net,16,adam,200,7,150\n"
          "toy,net,32,adam,100,8,95\ntoy,net,32,adam,150,6,140\ntoy,net,32,adam,200,5,190\n");
    std::string train = "dataset,network,batch_size,optimizer,learning_rate,run,target_metric,target_epoch\n";
    for (int run = 1; run <= 4; ++run) {
      train += "toy,net,16,adam,1e-3," + std::to_string(run) + ",0.8," + std::to_string(4 + run % 2) + "\n";
      train += "toy,net,32,adam,1e-3," + std::to_string(run) + ",0.8," + std::to_string(5 + run % 2) + "\n";
    }
    write(dir_ / "summary_train.csv", train);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(CliExplore, ImportSweepSelectSimulate) {
  const std::string store = (dir_ / "z.h5").string();
  auto r = run("import zeus --gpu v100 --data-dir " + dir_.string() + " --out " + store, dir_);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("toy.net.adam"), std::string::npos) << r.out;

  r = run("sweep " + store + " --csv " + (dir_ / "s.csv").string() + " --bootstrap 20", dir_);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("speed-up of ours over baseline1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("mean regret"), std::string::npos);
  EXPECT_TRUE(fs::exists(dir_ / "s.csv"));
  // Every policy's mean and max regret also in <stem>-summary.csv, with the bootstrap intervals.
  EXPECT_NE(r.out.find("90% intervals over 20 resamples"), std::string::npos) << r.out;
  ASSERT_TRUE(fs::exists(dir_ / "s-summary.csv"));
  std::ifstream summary(dir_ / "s-summary.csv");
  const std::string summary_text((std::istreambuf_iterator<char>(summary)), std::istreambuf_iterator<char>());
  EXPECT_NE(summary_text.find("policy,rows,feasible,mean_regret[1],max_regret[1]"), std::string::npos) << summary_text;
  EXPECT_NE(summary_text.find("\npacer,10,10,"), std::string::npos) << summary_text;

  // At 150 W: b=16 at 200 W (7 s x 4.5 epochs = 31.5 s) beats b=32 at 150 W (6 s x 5.5 = 33 s).
  r = run("select " + store + " --power-limit 150W", dir_);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("choice (pacer, front): 200 W, b=16"), std::string::npos) << r.out;  // the default policy
  EXPECT_NE(r.out.find("90% interval of the target's TT_acc at this configuration"), std::string::npos) << r.out;
  // The label says what it covers: Zeus's proxy and target are runs of one data set (no transfer term).
  EXPECT_NE(r.out.find("no transfer term: the target is runs of the proxy's own data set"), std::string::npos) << r.out;
  // Proxy and target times in two labelled columns, each against the choice's time of its kind.
  EXPECT_NE(r.out.find("proxy TT     proxy vs       energy    target TT    target vs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("runner-up: 150 W, b=32"), std::string::npos) << r.out;
  r = run("select " + store + " --power-limit 150W --policy ours", dir_);
  EXPECT_NE(r.out.find("choice (ours, binary search): 200 W, b=16"), std::string::npos) << r.out;

  r = run("select " + store + " --power-limit 50W", dir_);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("no configuration draws at most 50 W"), std::string::npos) << r.out;
  r = run("select " + store + " --power-limit 150W --policy fastest", dir_);
  EXPECT_EQ(r.code, 2) << r.out;  // a usage error names the option
  EXPECT_NE(r.out.find("--policy"), std::string::npos) << r.out;

  write(dir_ / "caps.csv", "time_s,cap_w\n0,200\n10,120\n");
  r = run("simulate " + store + " --cap-schedule " + (dir_ / "caps.csv").string() + " --run-name varying", dir_);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("never above P_max"), std::string::npos) << r.out;
  const auto st = pacer::traces::Store::open(store);
  EXPECT_TRUE(st.has<pacer::traces::PowerSeries>("varying"));
  // No cap (-P none, the paper's N/A column): the segment's cap reads "none", never "inf GW".
  r = run("simulate " + store + " -P none --run-name uncapped", dir_);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("  none  "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("inf"), std::string::npos) << r.out;
  EXPECT_EQ(pacer::explore::feasibility_basis(st.read<pacer::traces::SweepResult>("sweep").feasibility),
            pacer::explore::PowerBasis::Mean);
  EXPECT_EQ(st.read<pacer::traces::SweepResult>("sweep").rows.size(), 10u * 9u);  // 10 protocol caps x 9 policies

  // A bad schedule is an error and leaves the store as it was.
  write(dir_ / "bad.csv", "time_s,cap_w\n5,100\n");
  const auto size = fs::file_size(store);
  r = run("simulate " + store + " --cap-schedule " + (dir_ / "bad.csv").string() + " --run-name bad", dir_);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_EQ(fs::file_size(store), size);
}

// A sweep cap below every configuration is refused as select refuses it (one line naming the option,
// exit 1, no record); before, the sweep wrote a record of "infeasible" rows and exited 0. A cap that
// some configuration fits under is swept.
TEST_F(CliExplore, ASweepCapBelowEveryConfigurationIsRefusedAsSelectRefusesIt) {
  const std::string store = (dir_ / "z.h5").string();
  ASSERT_EQ(run("import zeus --gpu v100 --data-dir " + dir_.string() + " --out " + store, dir_).code, 0);
  auto r = pacer::testing::run_pacer("sweep " + store + " --power-limits 150W,50W --name low", dir_);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.err,
            "pacer sweep: error: --power-limits: 50 W is below the lowest mean power of every configuration swept "
            "(90 W, toy.net.adam): nothing runs under it; raise the cap or leave it out\n");
  EXPECT_FALSE(pacer::traces::Store::open(store).has<pacer::traces::SweepResult>("low"));
  r = pacer::testing::run_pacer("sweep " + store + " --power-limits 150W,90W --name low", dir_);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(pacer::traces::Store::open(store).read<pacer::traces::SweepResult>("low").rows.size(), 2u * 9u);
}

// Select times nothing (the benchmark does), an ours-only sweep prints no NaN speed-up, the import
// help names no fixed GPU list, and the Zeus cost's MAXPOWER is Zeus's (the highest power limit,
// 200 W here, not the highest average power, 190 W) and is printed.
TEST_F(CliExplore, SelectSweepAndImportSayWhatTheyUse) {
  const std::string store = (dir_ / "z.h5").string();
  auto r = run("import zeus --gpu v100 --data-dir " + dir_.string() + " --out " + store, dir_);
  ASSERT_EQ(r.code, 0) << r.out;
  r = run("select " + store + " --power-limit 150W", dir_);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find("time to decide"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Zeus cost MAXPOWER 200 W (the highest power limit"), std::string::npos) << r.out;
  r = run("select " + store + " --power-limit 150W --max-power 300W", dir_);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("Zeus cost MAXPOWER 300 W (given)"), std::string::npos) << r.out;

  r = run("sweep " + store + " --policies ours", dir_);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find("nan"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("over 0"), std::string::npos) << r.out;
  r = run("sweep " + store + " --policies ours,baseline1,zeus-cost", dir_);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("speed-up of ours over baseline1"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("speed-up of ours over baseline2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Zeus cost MAXPOWER 200 W"), std::string::npos) << r.out;

  r = run("import zeus --help", dir_);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find("v100 | a40"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("summary_power_<gpu>.csv"), std::string::npos) << r.out;
}

// `pacer budget` sweeps the cuts of the proxy's runs, writes one tagged sweep per cut and the CSV,
// `pacer report` draws them; a bad cut is a usage error, a relation without a learning curve a
// runtime error, and neither writes anything.
TEST_F(CliExplore, BudgetSweepsCutsAndReportDrawsThem) {
  const std::string store = (dir_ / "z.h5").string();
  auto r = run("import zeus --gpu v100 --data-dir " + dir_.string() + " --out " + store, dir_);
  ASSERT_EQ(r.code, 0) << r.out;
  r = run("budget " + store + " --cuts full,full@1 --csv " + (dir_ / "b.csv").string(), dir_);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("full x 1 seed"), std::string::npos) << r.out;
  const auto st = pacer::traces::Store::open(store);
  ASSERT_TRUE(st.has<pacer::traces::SweepResult>("budget@1"));
  const auto one_seed = st.read<pacer::traces::SweepResult>("budget@1");
  EXPECT_EQ(one_seed.budget, "budget");
  EXPECT_EQ(one_seed.proxy_cut, "full x 1 seed");
  // Run 1 of each b: 5 + 6 epochs of the proxy's 5 + 4 + 6 + 5 (runs 1 and 2 of b = 16 and 32).
  EXPECT_NEAR(one_seed.proxy_share, 11.0 / 20.0, 1e-12);
  EXPECT_DOUBLE_EQ(st.read<pacer::traces::SweepResult>("budget@0").proxy_share, 1.0);
  EXPECT_TRUE(fs::exists(dir_ / "b.csv"));
  r = run("report " + store + " -o " + (dir_ / "rep").string(), dir_);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(fs::exists(dir_ / "rep" / "z-budget-compute-vs-regret.csv")) << r.out;
  EXPECT_TRUE(fs::exists(dir_ / "rep" / "z-budget-compute-vs-regret.gp")) << r.out;

  const auto size = fs::file_size(store);
  r = run("budget " + store + " --cuts level:x --name bad", dir_);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--cuts"), std::string::npos) << r.out;
  r = run("budget " + store + " --csv " + (dir_ / "no" / "b.csv").string() + " --name bad", dir_);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("does not exist"), std::string::npos) << r.out;
  EXPECT_EQ(fs::file_size(store), size);
}

// `pacer sweep` of a store whose two workloads have different automatic guards (a model-predicted
// profile: 15%, a measured one: 3%) chooses each workload as `pacer select --profile` of it, the same
// configuration under the same guard at every cap; the feasibility line names each workload's guard.
// Before, the sweep chose both under the larger guard.
TEST_F(CliExplore, SweepOfTwoWorkloadsChoosesEachAsSelectOfIt) {
  std::mt19937_64 rng(11);
  const std::string store = (dir_ / "g.h5").string();
  pacer::testing::write_two_guard_store(store, rng);
  const auto sw =
      pacer::testing::run_pacer("sweep " + store + " --caps-per-workload 6 --policies ours,pacer,baseline2 -q", dir_);
  ASSERT_EQ(sw.code, 0) << sw.err;
  EXPECT_NE(sw.out.find("each workload chosen under its own guard"), std::string::npos) << sw.out;
  EXPECT_NE(sw.out.find("v: cap x (1 - 0.03): sensor noise"), std::string::npos) << sw.out;
  const auto rows = pacer::traces::Store::open(store).read<pacer::traces::SweepResult>("sweep").rows;
  ASSERT_EQ(rows.size(), 2u * 6u * 3u);
  for (const auto& row : rows) {
    const std::string profile = row.workload == "v" ? "v" : pacer::testing::kPredicted;
    const std::string what = fmt::format("{} at {} W, {}", row.workload, row.cap_w, row.policy);
    const auto sel = pacer::testing::run_pacer(
        fmt::format("select {} --profile {} -P {}W --policy {} --json", store, profile, row.cap_w, row.policy), dir_);
    if (!row.feasible) {
      EXPECT_EQ(sel.code, 1) << what << "\n" << sel.out << sel.err;
      continue;
    }
    ASSERT_EQ(sel.code, 0) << what << "\n" << sel.err;
    EXPECT_EQ(json_field(sel.out, row.policy, "batch_size"), std::to_string(row.batch_size)) << what;
    EXPECT_DOUBLE_EQ(std::stod(json_field(sel.out, row.policy, "gpu_freq_hz")), row.knob.at(0)) << what;
    EXPECT_NEAR(std::stod(json_field(sel.out, row.policy, "guard")), row.guard, 1e-9) << what;
  }
}

// `pacer budget --guard G` chooses as `pacer select --guard G` (and without --guard as select's
// automatic guard) at every cap of its full cut: the same library rule (explore::choice_rule). Before,
// budget had no --guard ("unrecognised option '--guard'").
TEST_F(CliExplore, BudgetTakesTheGuardOfSelect) {
  const std::string store = (dir_ / "z.h5").string();
  auto r = run("import zeus --gpu v100 --data-dir " + dir_.string() + " --out " + store, dir_);
  ASSERT_EQ(r.code, 0) << r.out;
  std::map<std::string, std::vector<pacer::traces::SweepRow>> rows_by_guard;
  for (const std::string guard : {"0.1", "auto"}) {
    const auto b = pacer::testing::run_pacer("budget " + store + " --cuts full --caps-per-workload 6 --policies " +
                                                 "pacer,ours,baseline2 --name g --replace --guard " + guard,
                                             dir_);
    ASSERT_EQ(b.code, 0) << b.err;
    EXPECT_NE(b.out.find(guard == "auto" ? "chosen under cap x (1 - 0)" : "chosen under cap x (1 - 0.1): given"),
              std::string::npos)
        << b.out;
    const auto rows = pacer::traces::Store::open(store).read<pacer::traces::SweepResult>("g@0").rows;
    ASSERT_EQ(rows.size(), 6u * 4u);  // the oracle is added
    for (const auto& row : rows) {
      const std::string what = fmt::format("guard {}, {} at {} W", guard, row.policy, row.cap_w);
      EXPECT_DOUBLE_EQ(row.guard, guard == "auto" ? 0.0 : 0.1) << what;
      const auto sel = pacer::testing::run_pacer(
          fmt::format("select {} -P {}W --policy {} --guard {} --json", store, row.cap_w, row.policy, guard), dir_);
      if (!row.feasible) {
        EXPECT_EQ(sel.code, 1) << what << "\n" << sel.out << sel.err;
        continue;
      }
      ASSERT_EQ(sel.code, 0) << what << "\n" << sel.err;
      EXPECT_EQ(json_field(sel.out, row.policy, "batch_size"), std::to_string(row.batch_size)) << what;
      EXPECT_EQ(json_field(sel.out, row.policy, "power_limit_w"), fmt::format("{}", row.knob.at(0))) << what;
    }
    rows_by_guard[guard] = rows;
  }
  // The guard made a difference here: some choice under 0.1 is not the automatic guard's (0: Zeus means).
  int differ = 0;
  for (size_t i = 0; i < rows_by_guard["auto"].size(); ++i)
    differ += !(rows_by_guard["auto"][i].knob == rows_by_guard["0.1"][i].knob &&
                rows_by_guard["auto"][i].batch_size == rows_by_guard["0.1"][i].batch_size);
  EXPECT_GT(differ, 0);
}

// Relative input paths in a spec are relative to the spec's folder, so that a spec finds its data
// from any working directory; its outputs (out, store, csv) go under the working directory, never
// into the spec's folder (a checkout).
TEST_F(CliExplore, SpecInputsAreRelativeToTheSpecFolderAndOutputsToTheWorkingDirectory) {
  fs::create_directories(dir_ / "specs");
  fs::create_directories(dir_ / "work" / "out");
  write(dir_ / "specs" / "s.ini",
        "[import-zeus]\ndata-dir = ..\nout = from-spec.h5\n[sweep]\nstore = from-spec.h5\ncsv = "
        "out/s.csv\nquiet = true\n");
  auto r = run("import zeus --config " + (dir_ / "specs" / "s.ini").string(), dir_ / "work", dir_);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(fs::exists(dir_ / "work" / "from-spec.h5"));
  EXPECT_FALSE(fs::exists(dir_ / "specs" / "from-spec.h5"));
  r = run("sweep --config " + (dir_ / "specs" / "s.ini").string(), dir_ / "work", dir_);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(fs::exists(dir_ / "work" / "out" / "s.csv"));
  EXPECT_FALSE(fs::exists(dir_ / "specs" / "out"));
}

}  // namespace

// The oracle without a target relation is not "infeasible under the cap": the error says what is
// missing (and a cap below every configuration still says to raise it).
TEST_F(CliExplore, SimulatingTheOracleWithoutATargetSaysWhatIsMissing) {
  const std::string store = (dir_ / "p.h5").string();
  {
    auto s = pacer::traces::Store::open_or_create(store);
    pacer::traces::ProfileTable t;
    t.workload = "w";
    t.device = "test";
    for (int b : {8, 16})
      for (double f : {400e6, 800e6}) {
        pacer::traces::ProfilePoint p;
        p.knob = {f};
        p.batch_size = b;
        p.time_per_batch_mean_s = 1e8 * b / f;
        p.power_peak_w = 2 + f / 1e8 + b / 8.0;
        p.power_mean_w = p.power_peak_w - 1;
        t.points.push_back(p);
      }
    s.write(t);
    pacer::traces::RelationSet proxy;
    proxy.name = "proxy";
    for (int b : {8, 16}) {
      pacer::traces::RelationRun r;
      r.batch_size = b;
      r.reached = true;
      r.samples = 100 * b;
      proxy.runs.push_back(r);
    }
    s.write(proxy);
  }
  auto r = run("simulate " + store + " --policy oracle -P 20W", dir_);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("no target relation"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("no configuration is feasible"), std::string::npos) << r.out;
  r = run("simulate " + store + " --policy ours -P 1W", dir_);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("raise the cap"), std::string::npos) << r.out;
}

// `select --json` and `sweep --json`: JSON Lines on stdout alone, units in the keys, values as in the text.
TEST_F(CliExplore, SelectAndSweepPrintJsonLines) {
  if (!pacer::testing::have_python3()) GTEST_SKIP() << "python3 is not installed";
  const std::string store = (dir_ / "z.h5").string();
  ASSERT_EQ(run("import zeus --gpu v100 --data-dir " + dir_.string() + " --out " + store, dir_).code, 0);
  auto r = pacer::testing::run_pacer("select " + store + " -P 160W --policy ours --json", dir_);
  ASSERT_EQ(r.code, 0) << r.err;
  // At 160 W ours picks b=16 at the 200 W limit (150 W): 10 s/epoch at 100 W ... 7 s at 200 W, 4.5 epochs.
  EXPECT_EQ(pacer::testing::python_checks(r.out, R"(
chosen = [o for o in rows if o["chosen"]]
assert len(chosen) == 1 and chosen[0]["policy"] == "ours", chosen
c = chosen[0]
assert c["cap_w"] == 160 and c["power_limit_w"] == 200 and c["batch_size"] == 16, c
assert c["power_w"] == 150 and abs(c["predicted_time_s"] - 31.5) < 1e-9, c
assert {o["policy"] for o in rows} >= {"ours", "baseline1", "oracle"}
pacer = [o for o in rows if o["policy"] == "pacer"][0]
assert pacer["target_time_lo_s"] < pacer["predicted_time_s"] < pacer["target_time_hi_s"], pacer
)"),
            0)
      << r.out;
  r = pacer::testing::run_pacer("sweep " + store + " --power-limits 90W,160W --policies ours,oracle --json", dir_);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("mean regret"), std::string::npos) << r.err;  // the summary, on stderr
  EXPECT_EQ(pacer::testing::python_checks(r.out, R"(
assert len(rows) == 4, rows
byc = {(o["cap_w"], o["policy"]): o for o in rows}
o = byc[(160, "ours")]
assert o["feasible"] and o["power_limit_w"] == 200 and o["batch_size"] == 16 and o["regret"] == 0, o
assert abs(o["replayed_time_mean_s"] - 31.5) < 1e-9, o
assert byc[(90, "ours")]["power_limit_w"] == 100
)"),
            0)
      << r.out;
}

// `pacer sweep --model` sweeps the model's space as `pacer select --model` chooses from it (docs/models.md:
// "select --model NAME and sweep"). Before, sweep's --profile default ("all") made every --model
// sweep a usage error: "--model and --profile exclude each other".
TEST_F(CliExplore, SweepOfAModelChoosesAsSelectOfIt) {
  const auto nano = pacer::traces::find_device("jetson-nano");
  pacer::traces::ModelRecord r;
  r.name = "w@jetson-nano:analytical";
  r.workload = "w";
  r.device = "jetson-nano";
  const auto record = pacer::models::AnalyticalModel(pacer::models::testing::nano_truth(nano), r).to_record();
  pacer::traces::RelationSet rel;
  rel.name = "w.proxy";
  rel.workload = "w";
  rel.metric = "accuracy";
  rel.target = 0.9;
  for (int b : {8, 32, 128}) rel.runs.push_back({b, 0, true, static_cast<int64_t>(20000 + 300 * b), 10000000});
  const std::string store = (dir_ / "m.h5").string();
  {
    auto s = pacer::traces::Store::open_or_create(store);
    s.write(record);
    s.write(rel);
  }
  const auto& field = json_field;
  const std::string model = " --model w@jetson-nano:analytical --device jetson-nano --guard 0";
  for (const std::string cap : {"6W", "8W"}) {
    const auto sel = pacer::testing::run_pacer("select " + store + model + " -P " + cap + " --json", dir_);
    ASSERT_EQ(sel.code, 0) << sel.err;
    const auto sw = pacer::testing::run_pacer("sweep " + store + model + " --power-limits " + cap + " --json", dir_);
    ASSERT_EQ(sw.code, 0) << sw.err;
    for (const std::string policy : {"ours", "pacer", "baseline2", "energy-opt"}) {
      ASSERT_NE(field(sel.out, policy, "batch_size"), "") << policy << "\n" << sel.out;
      EXPECT_EQ(field(sw.out, policy, "batch_size"), field(sel.out, policy, "batch_size")) << cap << " " << policy;
      EXPECT_EQ(field(sw.out, policy, "gpu_freq_hz"), field(sel.out, policy, "gpu_freq_hz")) << cap << " " << policy;
    }
  }
}
