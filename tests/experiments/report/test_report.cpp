#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <tuple>

#include "base/error.hpp"
#include "experiments/report/plot.hpp"
#include "experiments/report/report.hpp"
#include "experiments/report/tables.hpp"
#include "tests/support/small_tmpfs.hpp"
#include "traces/store/store.hpp"

using namespace pacer;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir(const std::string& tag) {
  auto p = fs::temp_directory_path() / ("pacer-report-" + tag + "-" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

traces::ValidationResult fixture_validation() {
  traces::ValidationResult v;
  v.name = "val-a";
  v.workload = "cnn";
  v.device = "jetson-nano";
  v.dataset = "fmnist-target-a";
  v.metric = "accuracy";
  v.target = 0.8;
  v.emulated = true;
  v.feasibility = "peak";
  auto row = [](double cap, const std::string& pol, int seed, double t, double e, bool reached = true) {
    traces::ValidationRow r;
    r.cap_w = cap;
    r.policy = pol;
    r.knob = {614.4e6};
    r.batch_size = 32;
    r.seed = seed;
    r.reached = reached;
    r.device_time_s = t;
    r.energy_j = e;
    return r;
  };
  v.rows = {row(5, "ours", 0, 10, 40),      row(5, "ours", 1, 12, 44),           row(5, "baseline1", 0, 20, 70),
            row(5, "baseline1", 1, 22, 80), row(5, "oracle", 0, 10, 40),         row(5, "oracle", 1, 12, 44),
            row(5, "baseline2", 0, 15, 50), row(5, "baseline2", 1, 0, 0, false), row(8, "ours", 0, 6, 41),
            row(8, "baseline1", 0, 9, 60),  row(8, "oracle", 0, 5.5, 39),        row(8, "baseline2", 0, 7, 45)};
  v.rows[0].series = "val-a-ours-5W-s0";
  return v;
}

}  // namespace

TEST(Tables, TimeTableMatchesGoldenMarkdown) {
  const auto t = experiments::time_table({fixture_validation()});
  const std::string golden =
      "time to accuracy [s]\n\n"
      "| Policy | fmnist-target-a 5 W | fmnist-target-a 8 W |\n"
      "|---|---|---|\n"
      "| Baseline 1 | 21.0 ± 1.41 | 9.00 ± 0.00 |\n"
      "| Baseline 2 | 15.0 ± 0.00 (1 censored) | 7.00 ± 0.00 |\n"
      "| Ours | 11.0 ± 1.41 | 6.00 ± 0.00 |\n"
      "| Fastest configuration | 11.0 ± 1.41 | 5.50 ± 0.00 |\n"
      "\nMeasured time to accuracy (mean ± std over seeds); emulated device: virtual device time.\n";
  EXPECT_EQ(experiments::to_markdown(t), golden);
}

TEST(Tables, CsvAndLatexCarryEveryCell) {
  const auto t = experiments::time_table({fixture_validation()});
  const std::string csv = experiments::to_csv(t);
  EXPECT_NE(csv.find("dataset,cap,policy,mean[s],std[s],runs,censored,infeasible\n"), std::string::npos);
  EXPECT_NE(csv.find("fmnist-target-a,5 W,Baseline 1,21,1.41421,2,0,0\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("fmnist-target-a,5 W,Baseline 2,15,0,2,1,0\n"), std::string::npos) << csv;
  const std::string tex = experiments::to_latex(t);
  EXPECT_NE(tex.find("\\toprule"), std::string::npos);
  EXPECT_NE(tex.find("\\multicolumn{2}{c}{fmnist-target-a}"), std::string::npos);
  EXPECT_NE(tex.find("Fastest configuration & 11.0 $\\pm$ 1.41 & 5.50 $\\pm$ 0.00 \\\\"), std::string::npos) << tex;
}

TEST(Report, RegeneratesTablesAndNonEmptyFiguresFromAStore) {
  const auto dir = temp_dir("store");
  auto store = traces::Store::open_or_create(dir / "c.h5");
  store.write(fixture_validation());
  traces::PowerSeries s;
  s.name = "val-a-ours-5W-s0";
  s.emulated = true;
  s.cap_w = 5;
  for (int i = 0; i < 50; ++i) {
    s.time_s.push_back(i * 0.1);
    s.power_w.push_back(4 + 0.5 * std::sin(i * 0.3));
  }
  store.write(s);
  traces::ProfileTable prof;
  prof.workload = "cnn";
  prof.device = "jetson-nano";
  prof.emulated = true;
  for (double f : {307.2e6, 614.4e6, 921.6e6})
    for (int b : {8, 32}) {
      traces::ProfilePoint p;
      p.knob = {f};
      p.batch_size = b;
      p.time_per_batch_mean_s = b * 1e-3 * 921.6e6 / f;
      p.power_peak_w = 2 + f / 921.6e6 * (b == 32 ? 6 : 4);
      p.power_mean_w = p.power_peak_w - 0.3;
      prof.points.push_back(p);
    }
  store.write(prof, "cnn");
  // Proxy p favours b=8 (1000 vs 4000 samples), target t favours b=32 (3000 vs 2000).
  auto relation = [&](const std::string& name, int64_t n8, int64_t n32) {
    traces::RelationSet r;
    r.name = name;
    r.workload = "cnn";
    r.dataset = name;
    r.metric = "accuracy";
    r.target = 0.8;
    for (auto [b, n] : {std::pair<int, int64_t>{8, n8}, {32, n32}}) {
      traces::RelationRun run;
      run.batch_size = b;
      run.reached = true;
      run.samples = n;
      r.runs.push_back(run);
    }
    store.write(r);
  };
  relation("p", 1000, 4000);
  relation("t", 3000, 2000);
  traces::SweepResult sw;
  sw.name = "sweep-a";
  sw.profile = "cnn";
  sw.relation = "p";
  sw.target = "t";
  sw.feasibility = "peak";
  for (double cap : {4.0, 6.0, 8.0}) {
    traces::SweepRow r;
    r.cap_w = cap;
    r.workload = "cnn";
    r.policy = "ours";
    r.feasible = true;
    r.knob = {614.4e6};
    r.batch_size = 8;
    r.replayed_time_mean_s = 10 / cap;
    sw.rows.push_back(r);
  }
  store.write(sw);

  experiments::ReportOptions opt;
  opt.stores = {dir / "c.h5"};
  opt.out_dir = dir / "out";
  const auto out = experiments::make_report(opt);
  EXPECT_EQ(slurp(dir / "out" / "table-time-to-accuracy.md"),
            experiments::to_markdown(experiments::time_table({fixture_validation()})));
  EXPECT_TRUE(fs::exists(dir / "out" / "table-time-to-accuracy.tex"));
  EXPECT_TRUE(fs::exists(dir / "out" / "table-simulated.csv"));
  if (experiments::gnuplot_path().empty()) GTEST_SKIP() << "gnuplot not installed: figures not rendered";
  int pngs = 0, svgs = 0;
  for (const auto& f : out.files) {
    ASSERT_TRUE(fs::exists(f)) << f;
    const auto ext = f.extension().string();
    EXPECT_GT(fs::file_size(f), ext == ".dat" ? 10u : 100u) << f;
    pngs += ext == ".png";
    svgs += ext == ".svg";
    if (ext == ".png") {
      std::ifstream in(f, std::ios::binary);
      char magic[4] = {};
      in.read(magic, 4);
      EXPECT_EQ(std::string(magic + 1, 3), "PNG") << f;
    }
  }
  // Figures at the sweep cap nearest a validated cap (8 W; 5 W has no sweep cap within 2%): fig1,
  // fig2, fig5 at 8 W, plus fig4 and the power trace.
  EXPECT_EQ(pngs, 5);
  EXPECT_EQ(pngs, svgs);
  EXPECT_TRUE(fs::exists(dir / "out" / "c-sweep-a-fig2-tta-per-batch.png"));
  // Figure 5 at 8 W: every configuration is feasible and 921.6 MHz is fastest for both b (1 ms per
  // sample), so choosing with p (b=8) costs t 3 s instead of 2 s: +50%; choosing with t (b=32) costs
  // p 4 s instead of 1 s: +300%; the diagonal is 0.
  std::ifstream m(dir / "out" / "c-sweep-a-fig5-proxy-x-target-8W.dat");
  ASSERT_TRUE(m.good());
  std::map<std::pair<int, int>, double> cell;
  for (int col, y; m >> col >> y;) m >> cell[{1 - y, col}];  // row 0 is drawn at the top (y = 1)
  ASSERT_EQ(cell.size(), 4u);
  EXPECT_NEAR(cell.at({0, 0}), 0, 1e-9);
  EXPECT_NEAR(cell.at({1, 1}), 0, 1e-9);
  EXPECT_NEAR(cell.at({0, 1}), 50, 1e-6);   // proxy p (row 0), target t (column 1)
  EXPECT_NEAR(cell.at({1, 0}), 300, 1e-6);  // proxy t, target p
  EXPECT_TRUE(fs::exists(dir / "out" / "val-a-fig4-energy.gp"));
  EXPECT_TRUE(fs::exists(dir / "out" / "val-a-fig4-energy.dat"));
  if (!std::getenv("PACER_TEST_KEEP")) fs::remove_all(dir);  // set it to look at the figures
}

// The explorer's policy ids get their labels in the tables, so that a reader sees the paper's names
// ("zeus-cost" was shown raw).
TEST(Tables, SweepTableLabelsEveryPolicyOfTheExplorer) {
  traces::SweepResult sw;
  sw.name = "s";
  for (const char* p : {"ours", "zeus-cost", "energy-opt", "baseline1"}) {
    traces::SweepRow r;
    r.cap_w = 5;
    r.workload = "w";
    r.policy = p;
    r.feasible = true;
    r.replayed_time_mean_s = 1;
    sw.rows.push_back(r);
  }
  const auto t = experiments::sweep_table({sw});
  EXPECT_EQ(t.rows, (std::vector<std::string>{"Baseline 1", "Ours", "Energy-optimal", "Zeus cost"}));
}

// Figure 1 marks what the explorer chooses with the sweep's basis and guard band (the
// validation's), not a per-point peak-else-mean rule, so that the figure and the validation table
// mark the same choices: at 6 W with a 25% guard Ours chooses under 4.5 W (b=8 at 307.2 MHz, peak
// 3.33 W), where the unguarded choice was b=8 at 921.6 MHz (6 W).
TEST(Report, FigureOneMarksTheExplorersChoiceUnderTheGuard) {
  const auto dir = temp_dir("guard");
  auto store = traces::Store::open_or_create(dir / "g.h5");
  traces::ProfileTable prof;
  prof.workload = "cnn";
  prof.device = "jetson-nano";
  for (double f : {307.2e6, 614.4e6, 921.6e6})
    for (int b : {8, 32}) {
      traces::ProfilePoint p;
      p.knob = {f};
      p.batch_size = b;
      p.time_per_batch_mean_s = b * 1e-3 * 921.6e6 / f;
      p.power_peak_w = 2 + f / 921.6e6 * (b == 32 ? 6 : 4);
      p.power_mean_w = p.power_peak_w - 0.3;
      prof.points.push_back(p);
    }
  store.write(prof, "cnn");
  for (auto [name, n8, n32] : {std::tuple<std::string, int64_t, int64_t>{"p", 1000, 4000}, {"t", 3000, 2000}}) {
    traces::RelationSet r;
    r.name = name;
    r.workload = "cnn";
    r.dataset = name;
    for (auto [b, n] : {std::pair<int, int64_t>{8, n8}, {32, n32}}) {
      traces::RelationRun run;
      run.batch_size = b;
      run.reached = true;
      run.samples = n;
      r.runs.push_back(run);
    }
    store.write(r);
  }
  traces::SweepResult sw;
  sw.name = "sw";
  sw.profile = "cnn";
  sw.relation = "p";
  sw.target = "t";
  sw.feasibility = "peak";
  sw.guard = 0.25;
  traces::SweepRow row;
  row.cap_w = 6;
  row.workload = "cnn";
  row.policy = "ours";
  row.feasible = true;
  row.knob = {921.6e6};  // what an unguarded sweep chose
  row.batch_size = 8;
  sw.rows.push_back(row);
  store.write(sw);
  EXPECT_DOUBLE_EQ(traces::Store::open(dir / "g.h5").read<traces::SweepResult>("sw").guard, 0.25);

  experiments::ReportOptions opt;
  opt.stores = {dir / "g.h5"};
  opt.out_dir = dir / "out";
  experiments::make_report(opt);
  const std::string fig1 = slurp(dir / "out" / "g-sw-fig1-time-vs-power-6W.dat");
  EXPECT_NE(fig1.find("# Ours: b=8, 307.2 MHz"), std::string::npos) << fig1;
  EXPECT_EQ(fig1.find("921.6 MHz"), std::string::npos) << fig1;
  fs::remove_all(dir);
}

TEST(Report, MissingStoreIsAnErrorAndWritesNothing) {
  const auto dir = temp_dir("missing");
  experiments::ReportOptions opt;
  opt.stores = {dir / "nope.h5"};
  opt.out_dir = dir / "out";
  EXPECT_THROW(experiments::make_report(opt), std::exception);
  EXPECT_FALSE(fs::exists(dir / "out"));
  fs::remove_all(dir);
}

// gnuplot runs inside the output folder (its working folder, no sh): a folder named with a quote, a
// space and a $ still renders.
TEST(Report, RendersIntoAFolderWithQuotesAndSpacesInItsName) {
  if (experiments::gnuplot_path().empty()) GTEST_SKIP() << "gnuplot not installed: nothing to render";
  const auto dir = temp_dir("quote") / "it's a $HOME";
  experiments::Plot plot;
  plot.name = "line";
  plot.series.push_back({"y = x", "linespoints", {1, 2, 3}, {1, 2, 3}, {}});
  const auto out = experiments::render(plot, dir);
  EXPECT_TRUE(out.rendered);
  EXPECT_GT(fs::file_size(dir / "line.png"), 100u);
  EXPECT_GT(fs::file_size(dir / "line.svg"), 100u);
  fs::remove_all(dir.parent_path());
}

// A script gnuplot rejects: the error names the script and quotes gnuplot's own output (captured,
// not through a log file), and no image and no log is left behind.
TEST(Report, AGnuplotErrorQuotesGnuplotAndLeavesNoImage) {
  if (experiments::gnuplot_path().empty()) GTEST_SKIP() << "gnuplot not installed: nothing to render";
  const auto dir = temp_dir("gnuplot-error");
  experiments::Plot plot;
  plot.name = "bad";
  plot.series.push_back({"y = x", "linespoints", {1, 2, 3}, {1, 2, 3}, {}});
  plot.extra = "set pacer_no_such_setting";
  try {
    experiments::render(plot, dir);
    ADD_FAILURE() << "gnuplot accepted an unknown setting";
  } catch (const std::exception& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("gnuplot failed on " + (dir / "bad.gp").string() + ": ", 0), 0u) << what;
    EXPECT_NE(what.find("pacer_no_such_setting"), std::string::npos) << what;
  }
  std::vector<std::string> left;
  for (const auto& f : fs::directory_iterator(dir)) left.push_back(f.path().filename().string());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"bad.dat", "bad.gp"}));
  fs::remove_all(dir);
}

// Issue 22 item 17: a report on a full disk is one error with a reason (gnuplot prints nothing when
// it cannot write an image: the message says which image and how much room there was) and leaves no
// file of the report behind. On a 1 MiB tmpfs filled up to a few sizes of free room, each report
// either completes or fails that way.
TEST(Report, AFullDiskIsOneErrorWithAReasonAndLeavesNoPartialReport) {
  if (experiments::gnuplot_path().empty()) GTEST_SKIP() << "gnuplot not installed: nothing to render";
  const auto dir = temp_dir("full");
  {
    auto store = traces::Store::open_or_create(dir / "c.h5");
    store.write(fixture_validation());
    traces::PowerSeries s;
    s.name = "val-a-ours-5W-s0";
    s.emulated = true;
    s.cap_w = 5;
    for (int i = 0; i < 50; ++i) {
      s.time_s.push_back(i * 0.1);
      s.power_w.push_back(4 + 0.5 * std::sin(i * 0.3));
    }
    store.write(s);
  }
  const fs::path mnt = dir / "mnt";
  int failed = 0;
  for (const size_t left : {size_t{8} << 10, size_t{24} << 10, size_t{48} << 10, size_t{96} << 10}) {
    pacer::testing::SmallTmpfs small(mnt, "1m");
    if (!small.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here (needs root): disk-full report test skipped";
    small.fill_leaving(left);
    experiments::ReportOptions opt;
    opt.stores = {dir / "c.h5"};
    opt.out_dir = mnt / "report";
    try {
      experiments::make_report(opt);
      continue;  // it fitted
    } catch (const Error& e) {
      ++failed;
      const std::string what = e.what();
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
      EXPECT_EQ(what.find(".pacer-report-"), std::string::npos) << what;  // the folder the user named
      const auto colon = what.find(".gp: ");
      if (colon != std::string::npos) EXPECT_GT(what.size(), colon + 5 + 20) << "no reason: " << what;
      EXPECT_TRUE(what.find("free") != std::string::npos || what.find("space") != std::string::npos ||
                  what.find("full") != std::string::npos)
          << what;
    }
    std::vector<std::string> left_behind;
    for (const auto& f : fs::recursive_directory_iterator(mnt))
      if (f.path().filename() != "filler") left_behind.push_back(f.path().string());
    EXPECT_EQ(left_behind, std::vector<std::string>{}) << "with " << left << " bytes free";
  }
  EXPECT_GT(failed, 0) << "no report failed: the disk was never full enough";
  fs::remove_all(dir);
}

// Issue 22 item 17, gnuplot's side: when the .dat and .gp fit but an image does not, gnuplot
// prints nothing; the error names the image it did not write and the room left, and no image stays.
TEST(Report, AGnuplotThatCannotWriteItsImageSaysWhy) {
  if (experiments::gnuplot_path().empty()) GTEST_SKIP() << "gnuplot not installed: nothing to render";
  const auto dir = temp_dir("full-gnuplot");
  experiments::Plot plot;
  plot.name = "big";
  std::vector<double> x, y;
  for (int i = 0; i < 4000; ++i) {
    x.push_back(i);
    y.push_back(std::sin(i * 0.01) * 100 + i % 7);
  }
  plot.series.push_back({"y", "linespoints", x, y, {}});
  const fs::path mnt = dir / "mnt";
  int gnuplot_failures = 0;
  for (size_t left = size_t{64} << 10; left <= size_t{512} << 10; left += size_t{64} << 10) {
    pacer::testing::SmallTmpfs small(mnt, "1m");
    if (!small.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here (needs root): disk-full gnuplot test skipped";
    small.fill_leaving(left);
    try {
      experiments::render(plot, mnt / "fig");
    } catch (const Error& e) {
      const std::string what = e.what();
      if (what.find("gnuplot failed on") == std::string::npos) continue;  // the .dat or .gp did not fit
      ++gnuplot_failures;
      EXPECT_NE(what.find("it wrote no big."), std::string::npos) << what;
      EXPECT_NE(what.find("bytes free on"), std::string::npos) << what;
      for (const char* ext : {".png", ".svg", ".pdf"})
        EXPECT_FALSE(fs::exists(mnt / "fig" / (std::string("big") + ext)));
    }
  }
  // 4000 points make images of several 100 kB: some room fits the .dat and .gp but not them.
  EXPECT_GT(gnuplot_failures, 0) << "gnuplot never ran out of room: its message was not exercised";
  fs::remove_all(dir);
}
