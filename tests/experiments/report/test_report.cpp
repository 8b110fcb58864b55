#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "base/error.hpp"
#include "base/units.hpp"
#include "experiments/report/html.hpp"
#include "experiments/report/plot.hpp"
#include "experiments/report/report.hpp"
#include "experiments/report/tables.hpp"
#include "explore/policy.hpp"
#include "tests/support/sample_records.hpp"
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

// The power trace of fixture_validation()'s first row (Ours at 5 W, seed 0).
traces::PowerSeries fixture_series() {
  traces::PowerSeries s;
  s.name = "val-a-ours-5W-s0";
  s.emulated = true;
  s.cap_w = 5;
  for (int i = 0; i < 50; ++i) {
    s.time_s.push_back(i * 0.1);
    s.power_w.push_back(4 + 0.5 * std::sin(i * 0.3));
  }
  return s;
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
      "| Ours | **11.0 ± 1.41** | **6.00 ± 0.00** |\n"
      "| Fastest configuration | 11.0 ± 1.41 | 5.50 ± 0.00 |\n"
      "\nMeasured time to accuracy (mean ± std over seeds); emulated device: virtual device time.\n"
      "\n**bold**: the best at its cap (the fastest configuration is the oracle, not ranked).\n";
  EXPECT_EQ(experiments::to_markdown(t), golden);
}

TEST(Tables, CsvAndLatexCarryEveryCell) {
  const auto t = experiments::time_table({fixture_validation()});
  const std::string csv = experiments::to_csv(t);
  // Caps as numbers in a column whose heading carries the unit (issue 24), not "5 W" strings.
  EXPECT_EQ(csv.rfind("dataset,cap[W],policy,mean[s],std[s],runs,censored,infeasible,over_cap,peak[W]\n", 0), 0u)
      << csv;
  EXPECT_NE(csv.find("fmnist-target-a,5,Baseline 1,21,1.41421,2,0,0,0,\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("fmnist-target-a,5,Baseline 2,15,0,2,1,0,0,\n"), std::string::npos) << csv;
  EXPECT_EQ(csv.find(" W,"), std::string::npos) << csv;
  const std::string tex = experiments::to_latex(t);
  EXPECT_NE(tex.find("\\toprule"), std::string::npos);
  EXPECT_NE(tex.find("\\multicolumn{2}{c}{fmnist-target-a}"), std::string::npos);
  EXPECT_NE(tex.find("Fastest configuration & 11.0 $\\pm$ 1.41 & 5.50 $\\pm$ 0.00 \\\\"), std::string::npos) << tex;
  EXPECT_NE(tex.find("Baseline 2 & 15.0 $\\pm$ 0.00$^\\ddagger$ & 7.00 $\\pm$ 0.00 \\\\"), std::string::npos) << tex;
  EXPECT_NE(tex.find("$^\\ddagger$ runs that missed the target within the budget are left out of the mean"),
            std::string::npos)
      << tex;
  EXPECT_NE(tex.find("Ours & \\textbf{11.0 $\\pm$ 1.41} & \\textbf{6.00 $\\pm$ 0.00} \\\\"), std::string::npos) << tex;
}

// A run whose measured peak went above the cap is marked in every table and format: the dagger in
// Markdown and LaTeX (also on a cell whose runs the watchdog stopped, so none reached the target),
// and in the CSV the count of such runs and the highest measured peak.
TEST(Tables, AnOverCapRunIsMarkedInEveryTableAndFormat) {
  traces::ValidationResult v = fixture_validation();
  for (auto& r : v.rows) r.power_peak_w = 0.9 * r.cap_w;
  v.rows[0].power_peak_w = 5.4;  // Ours at 5 W, seed 0
  v.rows[0].cap_exceeded = true;
  for (auto& r : v.rows)
    if (r.policy == "baseline1" && r.cap_w == 8) {  // stopped by the watchdog: not reached
      r.power_peak_w = 8.9;
      r.cap_exceeded = true;
      r.reached = false;
      r.status = "stopped: power watchdog";
    }
  for (const auto& t : {experiments::time_table({v}), experiments::energy_table({v})}) {
    const std::string md = experiments::to_markdown(t);
    EXPECT_NE(md.find("** †"), std::string::npos) << md;  // Ours at 5 W, the best value, marked
    EXPECT_NE(md.find("not reached (1/1) †"), std::string::npos) << md;
    EXPECT_NE(md.find("† measured peak power above the cap"), std::string::npos) << md;
    const std::string tex = experiments::to_latex(t);
    EXPECT_NE(tex.find("not reached (1/1)$^\\dagger$"), std::string::npos) << tex;
    EXPECT_NE(tex.find("}$^\\dagger$"), std::string::npos) << tex;  // after the bold best value
    const std::string csv = experiments::to_csv(t);
    // The CSV line of (cap, policy) without its mean and std: runs,censored,infeasible,over_cap,peak[W].
    auto counts = [&](const std::string& head) {
      const auto at = csv.find("fmnist-target-a," + head + ",");
      if (at == std::string::npos) return std::string("missing");
      const std::string line = csv.substr(at, csv.find('\n', at) - at);
      size_t cut = line.size();
      for (int k = 0; k < 5; ++k) cut = line.rfind(',', cut - 1);
      return line.substr(cut + 1);
    };
    EXPECT_EQ(counts("5,Ours"), "2,0,0,1,5.4") << csv;
    EXPECT_EQ(counts("8,Baseline 1"), "1,1,0,1,8.9") << csv;
    EXPECT_EQ(counts("8,Ours"), "1,0,0,0,7.2") << csv;  // under the cap: 0, and its peak
  }
}

TEST(Report, RegeneratesTablesAndNonEmptyFiguresFromAStore) {
  const auto dir = temp_dir("store");
  auto store = traces::Store::open_or_create(dir / "c.h5");
  store.write(fixture_validation());
  store.write(fixture_series());
  const traces::ProfileTable prof = pacer::testing::small_cnn_profile();
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
  // index.html: every table (as an HTML table) and every SVG figure on one page, nothing from the
  // network, and the report's provenance.md (the run that wrote each record of its stores).
  ASSERT_EQ(out.index, dir / "out" / "index.html");
  const std::string index = slurp(out.index);
  for (const char* table : {"table-time-to-accuracy", "table-energy", "table-simulated"}) {
    EXPECT_NE(index.find(std::string("<h3>") + table + "</h3>"), std::string::npos) << table;
    EXPECT_NE(index.find(std::string("href=\"") + table + ".csv\""), std::string::npos) << table;
  }
  EXPECT_NE(index.find("<td><b>"), std::string::npos);  // the best value, bold
  EXPECT_EQ(index.find("http://"), std::string::npos);
  EXPECT_EQ(index.find("https://"), std::string::npos);
  EXPECT_TRUE(fs::exists(dir / "out" / "provenance.md"));
  EXPECT_NE(index.find("validations/val-a"), std::string::npos) << index;
  for (const auto& f : out.files)
    if (f.extension() == ".svg")
      EXPECT_NE(index.find("<img src=\"" + f.filename().string() + "\""), std::string::npos) << f;
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
  int images = 0;
  for (size_t at = 0; (at = index.find("<img src=", at)) != std::string::npos; ++at) ++images;
  EXPECT_EQ(images, svgs);
  // Figure 4 has error bars (one std over the seeds: Baseline 1 at 5 W, 70 and 80 J).
  EXPECT_NE(slurp(dir / "out" / "val-a-fig4-energy.gp").find("with vectors nohead"), std::string::npos);
  EXPECT_NE(slurp(dir / "out" / "val-a-fig4-energy.dat").find(" 75 7.071067812\n"), std::string::npos)
      << slurp(dir / "out" / "val-a-fig4-energy.dat");
  // Figure 5: a light colour map from 0, no grid over the numbers, the data sets' names.
  const std::string fig5 = slurp(dir / "out" / "c-sweep-a-fig5-proxy-x-target-8W.gp");
  EXPECT_NE(fig5.find("unset grid"), std::string::npos);
  EXPECT_EQ(fig5.find("set grid front"), std::string::npos);
  EXPECT_NE(fig5.find("set cbrange [0:300]"), std::string::npos) << fig5;
  EXPECT_NE(fig5.find("set palette defined (0 '#ffffff'"), std::string::npos) << fig5;
  // Titles in words, not run ids; the legend outside the plot, where it cannot cover the cap label.
  const std::string trace = slurp(dir / "out" / "val-a-ours-5W-s0-power.gp");
  EXPECT_NE(trace.find("set title 'Power over time: Ours at b=32, 614.4 MHz, seed 0, cap 5 W (fmnist-target-a on "),
            std::string::npos)
      << trace;
  EXPECT_NE(trace.find("set key below"), std::string::npos);
  if (!std::getenv("PACER_TEST_KEEP")) fs::remove_all(dir);  // set it to look at the figures
}

// Figure 1 draws, beside the cap, the margin cap x (1 - guard) that the policies chose under and the
// measured peak of each validation run at that cap, the runs above the cap as a series of their own.
TEST(Report, FigureOneDrawsTheMarginAndTheMeasuredValidationPeaks) {
  const auto dir = temp_dir("fig1-peaks");
  auto store = traces::Store::open_or_create(dir / "c.h5");
  const traces::ProfileTable prof = pacer::testing::small_cnn_profile();
  store.write(prof, "cnn");
  for (const char* name : {"p", "t"}) {
    traces::RelationSet r;
    r.name = name;
    r.workload = "cnn";
    r.dataset = name;
    r.metric = "accuracy";
    r.target = 0.8;
    for (int b : {8, 32}) {
      traces::RelationRun run;
      run.batch_size = b;
      run.reached = true;
      run.samples = 1000;
      r.runs.push_back(run);
    }
    store.write(r);
  }
  traces::SweepResult sw;
  sw.name = "sweep-a";
  sw.profile = "cnn";
  sw.relation = "p";
  sw.target = "t";
  sw.feasibility = "peak";
  sw.guard = 0.05;
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
  traces::ValidationResult v = fixture_validation();
  v.rows.clear();
  auto run = [](const std::string& policy, double f, int b, double peak) {
    traces::ValidationRow r;
    r.cap_w = 8;
    r.policy = policy;
    r.knob = {f};
    r.batch_size = b;
    r.reached = true;
    r.device_time_s = 10;
    r.energy_j = 70;
    r.power_peak_w = peak;
    r.cap_exceeded = peak > 8;
    return r;
  };
  v.rows = {run("ours", 614.4e6, 8, 6.25), run("baseline1", 921.6e6, 32, 8.375)};
  store.write(v);

  experiments::ReportOptions opt;
  opt.stores = {dir / "c.h5"};
  opt.out_dir = dir / "out";
  experiments::make_report(opt);
  const std::string gp = slurp(dir / "out" / "c-sweep-a-fig1-time-vs-power-8W.gp");
  const std::string dat = slurp(dir / "out" / "c-sweep-a-fig1-time-vs-power-8W.dat");
  EXPECT_NE(gp.find("set arrow from 8,graph 0"), std::string::npos) << gp;    // the cap
  EXPECT_NE(gp.find("set arrow from 7.6,graph 0"), std::string::npos) << gp;  // the margin, 8 W x 0.95
  EXPECT_NE(gp.find("margin cap x (1 - 0.05) = 7.6 W"), std::string::npos) << gp;
  EXPECT_NE(gp.find("title 'validation runs at 8 W: measured peak'"), std::string::npos) << gp;
  EXPECT_NE(gp.find("title 'validation runs at 8 W: measured peak above the cap'"), std::string::npos) << gp;
  // Each peak at its measured power, in its own series: under the cap, above it.
  const auto under = dat.find("# validation runs at 8 W: measured peak\n");
  const auto over = dat.find("# validation runs at 8 W: measured peak above the cap\n");
  ASSERT_NE(under, std::string::npos) << dat;
  ASSERT_NE(over, std::string::npos) << dat;
  EXPECT_EQ(dat.compare(dat.find('\n', under) + 1, 5, "6.25 "), 0) << dat;
  EXPECT_EQ(dat.compare(dat.find('\n', over) + 1, 6, "8.375 "), 0) << dat;
  if (!std::getenv("PACER_TEST_KEEP")) fs::remove_all(dir);
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
  const traces::ProfileTable prof = pacer::testing::small_cnn_profile(/*emulated=*/false);
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

  // The report's options: Figure 1's caps and policies; policies that choose the same configuration
  // share one marker with a combined label (Ours and the time front both take b=8 at 307.2 MHz),
  // so that none hides another.
  opt.out_dir = dir / "options";
  opt.figure_caps_w = {5.5};
  opt.policies = {explore::Policy::Ours, explore::Policy::OursRobust, explore::Policy::Oracle};
  fs::create_directories(opt.out_dir);
  std::ofstream(opt.out_dir / "provenance.md") << "# Provenance\n\n- command: `an older report`\n";
  const auto out = experiments::make_report(opt);
  EXPECT_FALSE(fs::exists(opt.out_dir / "g-sw-fig1-time-vs-power-6W.dat"));
  const std::string fig1b = slurp(opt.out_dir / "g-sw-fig1-time-vs-power-5.5W.dat");
  EXPECT_NE(fig1b.find("# Ours, Alg. 1 (time front): b=8, 307.2 MHz\n"), std::string::npos) << fig1b;
  EXPECT_NE(fig1b.find("# Fastest configuration: b=32, 307.2 MHz\n"), std::string::npos) << fig1b;
  // The report's own provenance.md replaces an older one and is embedded in index.html.
  const std::string index = slurp(out.index);
  EXPECT_EQ(index.find("an older report"), std::string::npos) << index;
  EXPECT_NE(index.find("<td>sweeps/sw</td>"), std::string::npos) << index;

  // A power trace or a sweep that is not in the stores: an error before anything is written.
  for (const bool trace : {true, false}) {
    experiments::ReportOptions bad;
    bad.stores = {dir / "g.h5"};
    bad.out_dir = dir / "bad";
    (trace ? bad.power_traces : bad.sweeps) = {"no-such-run"};
    EXPECT_THROW(experiments::make_report(bad), OptionError);
    EXPECT_FALSE(fs::exists(dir / "bad"));
  }
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

// A report killed mid-way (SIGKILL or SIGINT: `pacer report s.h5 -o out`, then kill) left its staging
// folder out/.pacer-report-PID with the files written so far, and every later report kept it. The
// next report removes the staging folders of processes that no longer run; a live report's stays,
// and so does a folder the user named alike.
TEST(Report, TheStagingFolderOfAKilledReportIsRemovedByTheNextOne) {
  const auto dir = temp_dir("killed");
  traces::Store::open_or_create(dir / "c.h5").write(fixture_validation());
  const pid_t dead = ::fork();
  ASSERT_GE(dead, 0);
  if (dead == 0) ::_exit(0);
  ASSERT_EQ(::waitpid(dead, nullptr, 0), dead);  // its pid now names no process
  const fs::path out = dir / "out";
  const fs::path killed = out / (".pacer-report-" + std::to_string(dead));
  const fs::path live = out / (".pacer-report-" + std::to_string(::getppid()));
  const fs::path users = out / ".pacer-report-notes";
  for (const auto& d : {killed, live, users}) {
    fs::create_directories(d);
    std::ofstream(d / "time-table.md") << "half";
  }
  experiments::ReportOptions opt;
  opt.stores = {dir / "c.h5"};
  opt.out_dir = out;
  experiments::make_report(opt);
  EXPECT_FALSE(fs::exists(killed));
  EXPECT_TRUE(fs::exists(live / "time-table.md"));
  EXPECT_TRUE(fs::exists(users / "time-table.md"));
  EXPECT_FALSE(fs::exists(out / (".pacer-report-" + std::to_string(::getpid()))));
  EXPECT_TRUE(fs::exists(out / "index.html"));
  fs::remove_all(dir);
}

// The files of a report folder, relative to it, without the report's own dot-files.
std::set<std::string> report_files(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().filename().string().front() != '.')
      out.insert(e.path().lexically_relative(dir).generic_string());
  return out;
}

// A folder holds one report, never a mix: a report replaces the files the folder's earlier report
// wrote (a user's own file stays), and two reports into one folder at once take turns, so the folder
// ends as one of them alone (`pacer report a.h5 -o rep & pacer report b.h5 -o rep` left 237 files of
// both, with one index.html).
TEST(Report, AFolderHoldsOneReportNeverAMixOfTwo) {
  const auto dir = temp_dir("one-report");
  traces::Store::open_or_create(dir / "a.h5").write(fixture_validation());
  {
    auto b = traces::Store::open_or_create(dir / "b.h5");
    b.write(fixture_validation());
    b.write(fixture_series());
  }
  const auto report = [&](const std::string& store, const fs::path& out) {
    experiments::ReportOptions opt;
    opt.stores = {dir / store};
    opt.out_dir = out;
    experiments::make_report(opt);
  };
  report("a.h5", dir / "a-alone");
  report("b.h5", dir / "b-alone");
  const auto a_files = report_files(dir / "a-alone"), b_files = report_files(dir / "b-alone");
  ASSERT_NE(a_files, b_files);
  ASSERT_TRUE(std::includes(b_files.begin(), b_files.end(), a_files.begin(), a_files.end()));

  const fs::path seq = dir / "seq";
  report("b.h5", seq);
  std::ofstream(seq / "notes.txt") << "mine";
  report("a.h5", seq);
  std::set<std::string> expected = a_files;
  expected.insert("notes.txt");
  EXPECT_EQ(report_files(seq), expected);

  const fs::path both = dir / "both";
  for (int trial = 0; trial < 3; ++trial) {
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      try {
        report("b.h5", both);
      } catch (...) {
        ::_exit(1);
      }
      ::_exit(0);
    }
    report("a.h5", both);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    const auto got = report_files(both);
    EXPECT_TRUE(got == a_files || got == b_files) << "trial " << trial << ": " << got.size() << " files";
  }
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
    store.write(fixture_series());
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

// --- issue 24: tables and figures a paper can use -------------------------------------------------

namespace {

// A validation with an over-cap run, an infeasible cap and an uncapped column.
traces::ValidationResult marked_validation() {
  traces::ValidationResult v = fixture_validation();
  auto row = [](double cap, const std::string& pol, double t, int b = 32) {
    traces::ValidationRow r;
    r.cap_w = cap;
    r.policy = pol;
    r.batch_size = b;
    r.reached = b > 0;
    r.device_time_s = t;
    r.energy_j = 10 * t;
    return r;
  };
  v.rows[10].cap_exceeded = true;  // the oracle at 8 W went above its cap
  for (const char* p : {"ours", "baseline1", "oracle"}) v.rows.push_back(row(2, p, 0, 0));  // nothing feasible
  v.rows.push_back(row(pacer::units::kNoCap, "ours", 4));
  v.rows.push_back(row(pacer::units::kNoCap, "baseline1", 4.5));
  return v;
}

// Visible characters of a LaTeX cell as pacer writes it ($\pm$, $^\dagger$ one each, \textbf{} none).
size_t latex_chars(std::string s) {
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{{"$\\pm$", "+"},
                                                                                 {"$^\\dagger$", "+"},
                                                                                 {"$^\\ddagger$", "+"},
                                                                                 {"\\textbf{", ""},
                                                                                 {"}", ""},
                                                                                 {"---", "-"},
                                                                                 {"\\", ""}})
    for (size_t at; (at = s.find(from)) != std::string::npos;) s.replace(at, from.size(), to);
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

}  // namespace

TEST(Tables, OverCapAndInfeasibleCellsAreMarkedWithALegendAndNoCapIsTheLastColumn) {
  const auto t = experiments::time_table({marked_validation()});
  ASSERT_EQ(t.columns, (std::vector<std::string>{"2 W", "5 W", "8 W", "N/A"}));
  const std::string md = experiments::to_markdown(t);
  EXPECT_NE(md.find("| Fastest configuration | — | 11.0 ± 1.41 | 5.50 ± 0.00 † |  |"), std::string::npos) << md;
  EXPECT_NE(md.find("| Ours | — | **11.0 ± 1.41** | **6.00 ± 0.00** | **4.00 ± 0.00** |"), std::string::npos) << md;
  EXPECT_NE(md.find("† measured peak power above the cap in at least one run"), std::string::npos) << md;
  EXPECT_NE(md.find("— no feasible configuration at this cap"), std::string::npos) << md;
  const std::string tex = experiments::to_latex(t);
  EXPECT_NE(tex.find("5.50 $\\pm$ 0.00$^\\dagger$"), std::string::npos) << tex;
  EXPECT_NE(tex.find("Ours & --- &"), std::string::npos) << tex;
  EXPECT_NE(tex.find("{\\footnotesize \\textbf{bold}: the best at its cap"), std::string::npos) << tex;
  // The uncapped column: "N/A" in the headings, inf in the CSV's cap[W] column (a number to a reader).
  EXPECT_NE(tex.find("& N/A"), std::string::npos) << tex;
  const std::string csv = experiments::to_csv(t);
  EXPECT_NE(csv.find("fmnist-target-a,inf,Ours,4,0,1,0,0,0,\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("fmnist-target-a,8,Fastest configuration,5.5,0,1,0,0,1,\n"), std::string::npos) << csv;
}

TEST(Tables, LatexHasALabelAUnitInTheHeadingsAndACaptionWithoutOne) {
  for (const auto& [t, label] : {std::pair{experiments::time_table({fixture_validation()}), "tab:time-to-accuracy"},
                                 std::pair{experiments::energy_table({fixture_validation()}), "tab:energy"}}) {
    const std::string tex = experiments::to_latex(t);
    EXPECT_NE(tex.find(std::string("\\label{") + label + "}"), std::string::npos) << tex;
    const auto cap = tex.find("\\caption{");
    ASSERT_NE(cap, std::string::npos);
    const std::string caption = tex.substr(cap, tex.find('\n', cap) - cap);
    EXPECT_EQ(caption.find('['), std::string::npos) << caption;  // no trailing "[s]"
    EXPECT_EQ(caption.find("±"), std::string::npos) << caption;
    EXPECT_NE(caption.find("mean $\\pm$ std"), std::string::npos) << caption;
    EXPECT_NE(tex.find(t.unit == "J" ? "energy [J] &" : "time [s] &"), std::string::npos) << tex;
  }
}

TEST(Tables, DatasetLabelsComeFromTheSpecAndDefaultToTheName) {
  const auto labels = experiments::parse_labels({"fmnist-target-a=F-MNIST 5-9 (B)", " other = Other "});
  EXPECT_EQ(labels.at("other"), "Other");
  const auto t = experiments::time_table({fixture_validation()}, labels);
  EXPECT_EQ(t.groups.front(), "F-MNIST 5-9 (B)");
  EXPECT_EQ(experiments::time_table({fixture_validation()}).groups.front(), "fmnist-target-a");
  EXPECT_THROW(experiments::parse_labels({"fmnist-target-a"}), UsageError);
  EXPECT_THROW(experiments::parse_labels({"=x"}), UsageError);
}

// One row says "Ours" (Algorithm 1) and the pacer policy's row is named as more than the tool.
TEST(Tables, OneOursRowAndAPacerRowClearlyNamed) {
  traces::SweepResult sw;
  for (const auto& p : explore::all_policies()) {
    traces::SweepRow r;
    r.cap_w = 5;
    r.workload = "w";
    r.policy = std::string(explore::to_string(p));
    r.feasible = true;
    r.replayed_time_mean_s = 1;
    sw.rows.push_back(r);
  }
  const auto t = experiments::sweep_table({sw});
  EXPECT_EQ(std::count_if(t.rows.begin(), t.rows.end(), [](auto& r) { return r.find("Ours") != std::string::npos; }),
            1);
  EXPECT_NE(std::find(t.rows.begin(), t.rows.end(), "Ours"), t.rows.end());
  const std::string pacer_label = explore::policy_label("pacer");
  EXPECT_NE(pacer_label, "pacer");
  EXPECT_EQ(pacer_label.rfind("pacer", 0), 0u);
}

// table-simulated.tex of a sweep of every policy over 23 caps fits one column of a paper: every
// tabular line is at most kLatexColumnChars characters wide, the table split into parts.
TEST(Tables, SimulatedLatexFitsAColumn) {
  traces::SweepResult sw;
  sw.name = "s";
  for (int c = 0; c < 23; ++c)
    for (const auto& p : explore::all_policies()) {
      traces::SweepRow r;
      r.cap_w = 4.5 + 0.23 * c;
      r.workload = "cnn@1x28x28";
      r.policy = std::string(explore::to_string(p));
      r.feasible = c > 0;
      r.replayed_time_mean_s = 50.0 / (c + 1);
      r.replayed_time_std_s = 0.1 * c;
      sw.rows.push_back(r);
    }
  const std::string tex = experiments::to_latex(experiments::sweep_table({sw}));
  int parts = 0;
  for (size_t at = 0; (at = tex.find("\\begin{tabular}{", at)) != std::string::npos; ++at) ++parts;
  EXPECT_GT(parts, 1) << tex;
  // Per part: the widest cell of each column, summed with the column separation.
  std::istringstream in(tex);
  std::vector<size_t> width;
  bool body = false;
  auto check = [&] {
    size_t sum = 0;
    for (size_t w : width) sum += w + 2;
    EXPECT_LE(sum, experiments::kLatexColumnChars + 2) << tex;
    width.clear();
  };
  for (std::string line; std::getline(in, line);) {
    if (line == "\\midrule") body = true;
    if (line == "\\bottomrule") {
      body = false;
      check();
    }
    if (!body || line.size() < 3 || line.substr(line.size() - 3) != " \\\\") continue;
    line.resize(line.size() - 3);
    std::vector<std::string> cells;
    for (size_t start = 0;;) {
      const auto amp = line.find(" & ", start);
      cells.push_back(line.substr(start, amp == std::string::npos ? std::string::npos : amp - start));
      if (amp == std::string::npos) break;
      start = amp + 3;
    }
    width.resize(std::max(width.size(), cells.size()), 0);
    for (size_t c = 0; c < cells.size(); ++c) width[c] = std::max(width[c], latex_chars(cells[c]));
  }
  EXPECT_NE(tex.find("\\label{tab:simulated}"), std::string::npos);
}

TEST(Html, MarkdownTablesBecomeHtmlTables) {
  const std::string html =
      experiments::markdown_to_html(experiments::to_markdown(experiments::time_table({fixture_validation()})));
  EXPECT_NE(html.find("<table>"), std::string::npos) << html;
  EXPECT_NE(html.find("<th>fmnist-target-a 5 W</th>"), std::string::npos) << html;
  EXPECT_NE(html.find("<td><b>11.0 ± 1.41</b></td>"), std::string::npos) << html;
  EXPECT_EQ(html.find("|"), std::string::npos) << html;
  EXPECT_EQ(experiments::html_escape("<a & \"b\">"), "&lt;a &amp; &quot;b&quot;&gt;");
}

TEST(Report, HelpListsEveryFigure) {
  const std::string help = experiments::report_figures_help();
  for (const char* f : {"Figure 1", "Figure 2", "Figure 4", "Figure 5", "power trace", "compute-vs-regret"})
    EXPECT_NE(help.find(f), std::string::npos) << f;
}
