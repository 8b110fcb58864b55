// Issue 22 through `pacer`: outputs that are not regular files (item 5), config files that are
// devices or FIFOs (item 11), emulator roots (items 6, 7) and the raw library text that reached the
// user (item 19). Each refusal is one line and a non-zero exit; nothing hangs (each run is bounded
// by `timeout`, whose 124 would fail the test) and nothing is made outside the paths given.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "tests/support/run_pacer.hpp"
#include "tests/support/sample_records.hpp"
#include "traces/store/store.hpp"

namespace fs = std::filesystem;
using namespace pacer;

namespace {

int lines(const std::string& s) {
  return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

class SpecialFilesCli : public ::testing::Test {
 protected:
  fs::path dir, store;
  void SetUp() override {
    dir = fs::temp_directory_path() / ("pacer-test-special-" + std::to_string(::getpid()) + "-" +
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
    store = dir / "s.h5";
    traces::Store::open_or_create(store).write(pacer::testing::sample_relation());
  }
  void TearDown() override { fs::remove_all(dir); }
  // `pacer ARGS`, stopped after 60 s (exit 124: it hung).
  pacer::testing::RunResult pacer(const std::string& args) const {
    const auto out = dir / "pacer-out", err = dir / "pacer-err";
    const std::string cmd = "timeout 60 " + std::string(PACER_BINARY) + " " + args + " >" + out.string() + " 2>" +
                            err.string() + " </dev/null";
    const int status = std::system(cmd.c_str());
    pacer::testing::RunResult r{WIFEXITED(status) ? WEXITSTATUS(status) : -1, pacer::testing::slurp(out), pacer::testing::slurp(err)};
    fs::remove(out);
    fs::remove(err);
    return r;
  }
  std::string record() const { return "relations/" + pacer::testing::sample_relation().name; }
};

TEST_F(SpecialFilesCli, ExportIntoAFifoDevNullOrStdoutAndNotIntoAFolder) {
  const fs::path fifo = dir / "out.csv";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] { got = pacer::testing::slurp(fifo); });
  auto r = pacer("export " + store.string() + " " + record() + " -o " + fifo.string());
  reader.join();
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(got.find(','), std::string::npos) << got;
  EXPECT_TRUE(fs::is_fifo(fifo));
  r = pacer("export " + store.string() + " " + record() + " -o /dev/null");
  EXPECT_EQ(r.code, 0) << r.err;
  struct stat st {};
  ASSERT_EQ(::lstat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  r = pacer("export " + store.string() + " " + record() + " -o -");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find(','), std::string::npos);
  fs::create_directories(dir / "folder");
  r = pacer("export " + store.string() + " " + record() + " -o " + (dir / "folder").string());
  EXPECT_NE(r.code, 0);
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("is a folder"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::is_empty(dir / "folder"));
}

TEST_F(SpecialFilesCli, AConfigFileThatIsADeviceOrAFifoIsOneLineNotAHang) {
  auto r = pacer("devices --config /dev/zero");
  EXPECT_EQ(r.code, 1) << r.err;  // was: read /dev/zero forever
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("is a character device, not a regular file"), std::string::npos) << r.err;
  ASSERT_EQ(::mkfifo((dir / "spec.ini").c_str(), 0600), 0);
  r = pacer("devices --config " + (dir / "spec.ini").string());  // was: waited for a writer forever
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("is a FIFO, not a regular file"), std::string::npos) << r.err;
}

TEST_F(SpecialFilesCli, EmulateRefusesAnEmptyRootAFolderOfOtherFilesAndASecondEmulator) {
  auto r = pacer("emulate --device jetson-nano --root ''");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("no folder given"), std::string::npos) << r.err;  // was: "cannot make absolute path"
  fs::create_directories(dir / "home");
  std::ofstream(dir / "home" / "notes.txt") << "mine";
  r = pacer("emulate --device jetson-nano --root " + (dir / "home").string() + " --duration 0.1s");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("folder of other files"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "home" / "pacer-emulator"));
  EXPECT_FALSE(fs::exists(dir / "home" / "sys"));
  // Two --detach on one root: the second is refused while the first serves.
  const fs::path root = dir / "board";
  // 600 s: the first still serves when the second starts, however busy the machine (it is stopped below).
  r = pacer("emulate --device jetson-nano --root " + root.string() + " --detach --duration 600s");
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string pid = std::to_string(std::stol(pacer::testing::slurp(root / "pacer-emulator" / "pid")));
  r = pacer("emulate --device jetson-nano --root " + root.string() + " --detach --duration 60s");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("served by a running emulator (pid " + pid + ")"), std::string::npos) << r.err;
  EXPECT_EQ(std::to_string(std::stol(pacer::testing::slurp(root / "pacer-emulator" / "pid"))), pid);  // the documented kill still reaches it
  ::kill(std::stoi(pid), SIGTERM);
  for (int i = 0; i < 6000 && ::kill(std::stoi(pid), 0) == 0; ++i) ::usleep(10000);  // a hang guard (60 s)
  EXPECT_NE(::kill(std::stoi(pid), 0), 0) << "the first emulator did not stop";
}

}  // namespace
