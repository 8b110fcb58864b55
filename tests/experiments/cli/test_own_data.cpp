// A researcher's own data through `pacer`: a profile (import csv) and a relation with its learning
// curve (import relation) from hand-made CSV files, then select, sweep and report on them; every
// record carries its provenance (export, report's provenance.md); a relation of another workload
// is refused unless allowed; the data sets shipped in data/ import from any folder; the Python
// examples of docs/trace-store.md run on the store and its export.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/run_pacer.hpp"

namespace fs = std::filesystem;
using pacer::testing::RunResult;
using pacer::testing::slurp;

namespace {

int lines(const std::string& s) {
  return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

class OwnData : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("pacer-own-data-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    // Three GPU frequencies x two batch sizes, units in the headings.
    write("profile.csv",
          "gpu_freq[MHz],b,time_per_batch[ms],power_mean[W],power_peak[W]\n"
          "300,8,60,3.0,3.3\n600,8,35,4.5,4.9\n900,8,25,6.5,7.0\n"
          "300,32,200,3.5,3.8\n600,32,110,5.5,6.0\n900,32,80,8.0,8.6\n");
    // Samples to 85 % per (b, seed); one censored run.
    write("proxy.csv",
          "b,seed,reached,samples,wall_time[min],final_metric\n"
          "8,0,1,40000,3,0.86\n8,1,1,44000,3.2,0.851\n32,0,1,60000,2,0.855\n32,1,1,64000,2.1,0.86\n"
          "32,2,0,100000,3.5,0.82\n");
    write("curve.csv", "b,seed,samples,metric\n8,0,20000,0.7\n8,0,40000,0.86\n32,0,30000,0.72\n32,0,60000,0.855\n");
    write("target.csv", "b,seed,reached,epochs\n8,0,1,5\n8,1,1,5.2\n32,0,1,6.4\n32,1,1,7\n");
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  RunResult pacer(const std::string& args) const { return pacer::testing::run_pacer(args, dir_); }

  // The store of the researcher's own profile, proxy relation (with its curve) and target relation.
  void import_own() {
    auto r = pacer("import csv " + path("profile.csv") + " -o " + path("own.h5") + " --workload resnet18-mine");
    ASSERT_EQ(r.code, 0) << r.err;
    r = pacer("import relation " + path("proxy.csv") + " -o " + path("own.h5") +
              " --name resnet18-mine.proxy --workload resnet18-mine --target 0.85 --curve " + path("curve.csv"));
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("5 runs, 4 reached, 1 censored; batch sizes 8,32"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("/curves/resnet18-mine.proxy (4 points)"), std::string::npos) << r.out;
    r = pacer("import relation " + path("target.csv") + " -o " + path("own.h5") +
              " --name resnet18-mine.target --workload resnet18-mine --target 0.85 --samples-per-epoch 10000");
    ASSERT_EQ(r.code, 0) << r.err;
  }

  fs::path dir_;
};

TEST_F(OwnData, ImportedProfileAndRelationGiveSelectSweepAndReport) {
  import_own();
  auto r = pacer("select " + path("own.h5") + " -P 6W");
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("resnet18-mine.proxy"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| target resnet18-mine.target"), std::string::npos) << r.out;  // the oracle's relation
  r = pacer("sweep " + path("own.h5") + " --power-limits 4W:9W:1W");
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_EQ(r.out.find("nan"), std::string::npos) << r.out;
  r = pacer("report " + path("own.h5") + " -o " + path("rep"));
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_TRUE(fs::exists(dir_ / "rep/table-simulated.md"));
  // The report lists where each record came from.
  const std::string prov = slurp(dir_ / "rep/provenance.md");
  EXPECT_NE(prov.find("| relations/resnet18-mine.proxy | "), std::string::npos) << prov;
  EXPECT_NE(prov.find("`pacer import relation " + path("proxy.csv")), std::string::npos) << prov;
  EXPECT_NE(prov.find("`pacer sweep " + path("own.h5") + " --power-limits 4W:9W:1W`"), std::string::npos) << prov;
  EXPECT_EQ(prov.find("| unknown |"), std::string::npos) << prov;
  EXPECT_NE(prov.find("| CPU kernels |"), std::string::npos) << prov;  // what each record's training ran on
  // Every option's value as given, caps included (a type the provenance cannot print reads "(set)").
  EXPECT_NE(prov.find("power-limits=4W,5W,6W,7W,8W,9W"), std::string::npos) << prov;
  EXPECT_EQ(prov.find("(set)"), std::string::npos) << prov;

  // The export shows the provenance as comment lines, and the relation's export imports back.
  r = pacer("export " + path("own.h5") + " relations/resnet18-mine.proxy -o " + path("proxy-export.csv"));
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string csv = slurp(dir_ / "proxy-export.csv");
  EXPECT_EQ(csv.rfind("# pacer_version: ", 0), 0u) << csv;
  EXPECT_NE(csv.find("# command_line: pacer import relation "), std::string::npos) << csv;
  EXPECT_NE(csv.find("# options: "), std::string::npos) << csv;
  EXPECT_NE(csv.find("# seeds: none\n"), std::string::npos) << csv;
  r = pacer("export " + path("own.h5"));
  EXPECT_NE(r.out.find("  relations/resnet18-mine.proxy\n      pacer "), std::string::npos) << r.out;
  r = pacer("import relation " + path("proxy-export.csv") + " -o " + path("again.h5") +
            " --name back --workload resnet18-mine --target 0.85");
  EXPECT_EQ(r.code, 0) << r.err;
}

TEST_F(OwnData, ARelationOfAnotherWorkloadNeedsTheFlagAndGetsAWarning) {
  import_own();
  auto r = pacer("import relation " + path("proxy.csv") + " -o " + path("own.h5") +
                 " --name fmnist-proxy --workload cnn@1x28x28 --target 0.85");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const std::string cmd : {"select " + path("own.h5") + " -P 6W --relation fmnist-proxy",
                                "sweep " + path("own.h5") + " --power-limits 5W --relation fmnist-proxy"}) {
    r = pacer(cmd);
    EXPECT_EQ(r.code, 1) << cmd << "\n" << r.out;
    EXPECT_EQ(lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("--allow-workload-mismatch: relation 'fmnist-proxy' was measured on workload cnn@1x28x28 "
                         "but profile 'resnet18-mine' is workload resnet18-mine"),
              std::string::npos)
        << r.err;
    r = pacer(cmd + " --allow-workload-mismatch");
    EXPECT_EQ(r.code, 0) << cmd << "\n" << r.err;
    EXPECT_NE(r.err.find("warning: relation 'fmnist-proxy' was measured on workload cnn@1x28x28"), std::string::npos)
        << r.err;
  }
}

TEST_F(OwnData, BadRelationFilesAreOneLineAndWriteNothing) {
  write("bad.csv", "b,seed,reached,samples\n8,0,1,4000\n8,1,1,-3\n");
  auto r =
      pacer("import relation " + path("bad.csv") + " -o " + path("new.h5") + " --name x --workload w --target 0.85");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("bad.csv:3: samples holds '-3', not a positive whole number of samples"), std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "new.h5"));
  write("unit.csv", "b,seed,reached,samples,wall_time[kg]\n8,0,1,4000,3\n");
  r = pacer("import relation " + path("unit.csv") + " -o " + path("new.h5") + " --name x --workload w --target 0.85");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("unit.csv: column wall_time has unit [kg]"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "new.h5"));
  r = pacer("import relation " + path("proxy.csv") + " -o " + path("new.h5") + " --name x --workload w");
  EXPECT_EQ(r.code, 2);  // --target is required
  EXPECT_FALSE(fs::exists(dir_ / "new.h5"));
}

// The real data sets ship in the checkout's data/ folder: pacer finds them with no PACER_DATA_DIR
// and no folder beside the checkout; PACER_DATA_DIR still overrides.
TEST_F(OwnData, TheShippedDataSetsImportFromAnyFolder) {
  const char* saved = std::getenv("PACER_DATA_DIR");
  const std::string keep = saved ? saved : "";
  ::unsetenv("PACER_DATA_DIR");
  auto r = pacer("import zeus --gpu v100 -o " + path("z.h5"));
  EXPECT_EQ(r.code, 0) << r.err;
  r = pacer("import loudva --device jetson-nano -o " + path("nano.h5"));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find(std::string("LoudVA ") + PACER_SOURCE_DIR + "/data/jetson/loudva/nano -> "), std::string::npos)
      << r.out;
  ::setenv("PACER_DATA_DIR", path("nowhere").c_str(), 1);
  r = pacer("import zeus --gpu v100 -o " + path("z2.h5"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("PACER_DATA_DIR is " + path("nowhere") + ", which is not a folder"), std::string::npos) << r.err;
  if (saved)
    ::setenv("PACER_DATA_DIR", keep.c_str(), 1);
  else
    ::unsetenv("PACER_DATA_DIR");
}

// docs/trace-store.md's Python examples (docs/examples/*.py, included verbatim there) on a store
// and on its export.
TEST_F(OwnData, TheDocumentedPythonExamplesRun) {
  const std::string examples = std::string(PACER_SOURCE_DIR) + "/docs/examples/";
  const std::string doc = slurp(fs::path(PACER_SOURCE_DIR) / "docs/trace-store.md");
  for (const std::string example : {"read_store.py", "read_export.py"})
    EXPECT_NE(doc.find("```python\n" + slurp(examples + example) + "```\n"), std::string::npos)
        << "docs/trace-store.md must hold docs/examples/" << example << " verbatim";
  if (std::system("python3 -c 'import csv' >/dev/null 2>&1") != 0) GTEST_SKIP() << "python3 not installed";
  import_own();
  auto r = pacer("export " + path("own.h5") + " relations/resnet18-mine.proxy -o " + path("proxy.csv.out"));
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string out = path("py.txt");
  ASSERT_EQ(
      std::system(("python3 " + examples + "read_export.py " + path("proxy.csv.out") + " > " + out + " 2>&1").c_str()),
      0)
      << slurp(out);
  EXPECT_NE(slurp(out).find("5 rows, columns: batch_size [samples], seed [1], reached [bool]"), std::string::npos)
      << slurp(out);
  EXPECT_NE(slurp(out).find("command: pacer import relation "), std::string::npos) << slurp(out);
  // Debian's python3-h5py serves /usr/bin/python3, which another python3 on the PATH may hide.
  std::string python;
  for (const std::string p : {"python3", "/usr/bin/python3"})
    if (python.empty() && std::system((p + " -c 'import h5py' >/dev/null 2>&1").c_str()) == 0) python = p;
  if (python.empty()) GTEST_SKIP() << "python3-h5py not installed: the h5py example not run";
  ASSERT_EQ(std::system((python + " " + examples + "read_store.py " + path("own.h5") + " > " + out + " 2>&1").c_str()),
            0)
      << slurp(out);
  const std::string text = slurp(out);
  EXPECT_NE(
      text.find("profile resnet18-mine: 6 points of resnet18-mine, knob ['gpu_freq'], time per batch 0.025-0.2 s"),
      std::string::npos)
      << text;
  // r(8) = mean(40000, 44000) / mean(60000, 64000): the censored run does not count.
  EXPECT_NE(text.find("relation resnet18-mine.proxy: r(b) = 8:0.677, 32:1"), std::string::npos) << text;
  EXPECT_NE(text.find("  written by: pacer import relation "), std::string::npos) << text;
}

}  // namespace
