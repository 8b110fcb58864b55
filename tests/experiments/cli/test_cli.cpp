// End-to-end checks of the pacer executable: exit codes, help, usage errors, devices, export.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/support/run_pacer.hpp"
#include "traces/store/store.hpp"

namespace fs = std::filesystem;

namespace {

using Result = pacer::testing::RunResult;

Result run_pacer(const std::string& args) { return pacer::testing::run_pacer(args, fs::temp_directory_path()); }

int lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

}  // namespace

TEST(Cli, HelpListsCommands) {
  const auto r = run_pacer("--help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("devices"), std::string::npos);
  EXPECT_NE(r.out.find("export"), std::string::npos);
}

TEST(Cli, NoArgumentsIsAUsageError) { EXPECT_EQ(run_pacer("").code, 2); }

TEST(Cli, UnknownCommandIsAUsageErrorOnOneLine) {
  const auto r = run_pacer("frobnicate");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(lines(r.err), 1);
  EXPECT_NE(r.err.find("unknown command 'frobnicate'"), std::string::npos);
}

TEST(Cli, UnknownOptionIsAUsageErrorOnOneLine) {
  const auto r = run_pacer("devices --no-such-option");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(lines(r.err), 1);
  EXPECT_NE(r.err.find("no-such-option"), std::string::npos);
}

TEST(Cli, MissingRequiredOptionIsAUsageError) {
  const auto r = run_pacer("export");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("store"), std::string::npos);
}

TEST(Cli, CommandHelpDocumentsOptionsAndDefaults) {
  const auto r = run_pacer("devices --help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("--format"), std::string::npos);
  EXPECT_NE(r.out.find("(=text)"), std::string::npos);
  EXPECT_NE(r.out.find("--config"), std::string::npos);
}

TEST(Cli, DevicesShowNanoPrintsTheTwelveFrequencies) {
  const auto r = run_pacer("devices show jetson-nano");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("GPU frequencies (12): 76.8, 153.6, 230.4, 307.2, 384, 460.8, 537.6, 614.4, 691.2, 768, "
                       "844.8, 921.6 MHz"),
            std::string::npos)
      << r.out;
}

TEST(Cli, DevicesListShowsEveryBoard) {
  const auto r = run_pacer("devices");
  EXPECT_EQ(r.code, 0);
  for (const char* n : {"jetson-nano", "jetson-tx2-nx", "jetson-agx-orin", "jetson-orin-nano"})
    EXPECT_NE(r.out.find(n), std::string::npos) << n;
}

TEST(Cli, UnknownDeviceIsARuntimeErrorOnOneLine) {
  const auto r = run_pacer("devices show jetson-banana");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(lines(r.err), 1);
  EXPECT_NE(r.err.find("unknown device"), std::string::npos);
}

TEST(Cli, ExportOfAMissingStoreIsOneLineAndExitOne) {
  const auto r = run_pacer("export /nonexistent/x.h5 profiles/a");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(lines(r.err), 1);
}

TEST(Cli, ExportWritesCsvWithUnitsAndNoPartialFileOnError) {
  const fs::path dir = fs::temp_directory_path() / ("pacer-cli-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  {
    auto store = pacer::traces::Store::open_or_create(dir / "c.h5");
    pacer::traces::ProfileTable t;
    t.workload = "w";
    pacer::traces::ProfilePoint p;
    p.knob = {921.6e6};
    p.batch_size = 32;
    p.time_per_batch_mean_s = 0.5;
    t.points = {p};
    store.write(t);
  }
  auto r = run_pacer("export " + (dir / "c.h5").string() + " profiles/w --out " + (dir / "w.csv").string());
  EXPECT_EQ(r.code, 0) << r.err;
  const auto csv = pacer::testing::slurp(dir / "w.csv");
  EXPECT_NE(csv.find("gpu_freq[Hz],batch_size[samples]"), std::string::npos);
  EXPECT_NE(csv.find("921600000,32,0.5"), std::string::npos);
  r = run_pacer("export " + (dir / "c.h5").string() + " profiles/missing --out " + (dir / "m.csv").string());
  EXPECT_EQ(r.code, 1);
  EXPECT_FALSE(fs::exists(dir / "m.csv"));
  r = run_pacer("export " + (dir / "c.h5").string());
  EXPECT_NE(r.out.find("profiles/w"), std::string::npos);
  fs::remove_all(dir);
}

TEST(Cli, ConfigFileSuppliesOptionsAndRejectsUnknownKeys) {
  const fs::path dir = fs::temp_directory_path() / ("pacer-cfg-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "ok.ini") << "[devices]\nformat = ini\n[sweep]\nwhatever = 1\n";
  auto r = run_pacer("devices show jetson-nano --config " + (dir / "ok.ini").string());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("[sensors]"), std::string::npos);
  std::ofstream(dir / "bad.ini") << "colour = blue\n";
  r = run_pacer("devices show jetson-nano --config " + (dir / "bad.ini").string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("colour"), std::string::npos);
  std::ofstream(dir / "typo.ini") << "formt = ini\n";  // misspelt: the closest option is named
  r = run_pacer("devices show jetson-nano --config " + (dir / "typo.ini").string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("did you mean 'format'?"), std::string::npos) << r.err;
  r = run_pacer("devices show jetson-nano --config " + (dir / "missing.ini").string());
  EXPECT_EQ(r.code, 1);
  fs::remove_all(dir);
}

// A folder given as the config file is an error: it was read as an empty file and ignored, so the
// run silently used the defaults.
TEST(Cli, ConfigThatIsAFolderIsAnErrorNotIgnored) {
  const fs::path dir = fs::temp_directory_path() / ("pacer-cfgdir-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const auto r = run_pacer("devices show jetson-nano --config " + dir.string());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("is a folder"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
  fs::remove_all(dir);
}

// Issue 22 item 18: a UTF-8 byte-order mark at the start of a config file or an imported CSV is
// dropped (it gave "unknown option '\xEF\xBB\xBFformat'"); a file of CR-only line ends is one line
// saying so and what to do.
TEST(Cli, AByteOrderMarkIsDroppedAndCrOnlyLineEndsAreNamed) {
  const fs::path dir = fs::temp_directory_path() / ("pacer-bom-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "bom.ini") << "\xEF\xBB\xBF[devices]\nformat = ini\n";
  auto r = run_pacer("devices show jetson-nano --config " + (dir / "bom.ini").string());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("[sensors]"), std::string::npos) << r.out;
  std::ofstream(dir / "mac.ini") << "[devices]\rformat = ini\r";
  r = run_pacer("devices show jetson-nano --config " + (dir / "mac.ini").string());
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("uses CR line ends"), std::string::npos) << r.err;
  std::ofstream(dir / "m.csv") << "\xEF\xBB\xBFgpu_freq[MHz],b,time_per_batch[s],power_mean[W]\r\n921.6,8,0.5,5\r\n";
  r = run_pacer("import csv " + (dir / "m.csv").string() + " --device jetson-nano -o " + (dir / "m.h5").string());
  EXPECT_EQ(r.code, 0) << r.err;
  fs::remove_all(dir);
}

// A count of one is singular: a marks file of one window imports "1 window", not "1 windows".
TEST(Cli, ImportTegrastatsCountsOneWindowInTheSingular) {
  const fs::path dir = fs::temp_directory_path() / ("pacer-cli-tegra-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string log;
  for (int i = 0; i < 10; ++i)
    log += "RAM 1/7854MB CPU [50%@2035,off,off,50%@2034] EMC_FREQ 2%@1866 GR3D_FREQ 99%@1300 VDD_IN 14025/14416 "
           "VDD_CPU 2209/2538 VDD_GPU 6854/6903 VDD_SOC 1371/1370\n";
  std::ofstream(dir / "t.log") << log;
  std::ofstream(dir / "marks.csv") << "start_s,end_s,b,gpu_freq[MHz],batches\n0,9,4,1300.5,3\n";
  const auto r = run_pacer("import tegrastats " + (dir / "t.log").string() + " --marks " + (dir / "marks.csv").string() +
                           " --device jetson-tx2 -o " + (dir / "t.h5").string());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("(1 window, 1 with timing"), std::string::npos) << r.out;
  fs::remove_all(dir);
}

// A misspelt command or option gets one line with the closest name.
TEST(Cli, MisspeltCommandsAndOptionsSuggestTheClosestName) {
  auto r = run_pacer("swep");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(lines(r.err), 1);
  EXPECT_NE(r.err.find("unknown command 'swep'; did you mean 'sweep'?"), std::string::npos) << r.err;
  r = run_pacer("devices --formt json");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(lines(r.err), 1);
  EXPECT_NE(r.err.find("did you mean '--format'?"), std::string::npos) << r.err;
  r = run_pacer("frobnicate");
  EXPECT_EQ(r.err.find("did you mean"), std::string::npos) << r.err;
}

// `import loudva --help` names the README's command line.
TEST(Cli, ImportLoudvaHelpNamesTheReadmesCommandLine) {
  std::ifstream in(std::string(PACER_SOURCE_DIR) + "/README.md");
  std::string line, readme;
  while (readme.empty() && std::getline(in, line))  // the first one: the help's example
    if (line.rfind("pacer import loudva ", 0) == 0) readme = line.substr(0, line.find('#'));
  while (!readme.empty() && readme.back() == ' ') readme.pop_back();
  ASSERT_FALSE(readme.empty()) << "README.md has no `pacer import loudva` line";
  const auto r = run_pacer("import loudva --help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find(readme), std::string::npos) << readme << "\n" << r.out;
}
