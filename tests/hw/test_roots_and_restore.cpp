// Issue 22, items 6, 7 and 8: an emulated tree goes only into a missing or empty folder or one a
// pacer emulator served (never /etc, /dev or a folder of other files), one live emulator per root
// (a second one changes nothing; a dead one's pid file is taken over), and `pacer restore` writes
// only frequencies of the node's own table, from a state file that is a plain file only you may
// write, refusing nothing because of a pid that is not a pacer process.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <fstream>
#include <functional>

#include "base/error.hpp"
#include "hw/emulator/emulated.hpp"
#include "hw/emulator/emulated_tree.hpp"
#include "hw/jetson/jetson_sysfs.hpp"
#include "hw/jetson/restore_guard.hpp"
#include "hw/jetson/sysfs_io.hpp"
#include "tests/hw/helpers.hpp"
#include "tests/support/workloads.hpp"
#include "traces/catalog/catalog.hpp"

namespace pacer::hw {
namespace {
namespace fs = std::filesystem;
using test::TempDir;

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream out(p);
  out << text;
}

std::unique_ptr<LiveEmulatedTree> serve(const fs::path& root) {
  const auto spec = traces::find_device("jetson-nano");
  auto emu = std::make_unique<EmulatedJetson>(
      spec, std::make_shared<WorkloadPhysics>(spec, pacer::testing::resnet8_quarter_fmnist()), EmulatorOptions{});
  return std::make_unique<LiveEmulatedTree>(root, std::move(emu), nullptr, LiveTreeOptions{});
}

TEST(EmulationRoot, OnlyAnEmptyOrMissingFolderOrAPacerTree) {
  // /etc and /dev used to get sys/, proc/ and pacer-emulator/ written into them.
  for (const char* system : {"/etc", "/dev", "/usr"}) {
    const std::string e = error_of([&] { check_emulation_root(system); });
    EXPECT_NE(e.find("is a folder of other files"), std::string::npos) << system << ": " << e;
    EXPECT_FALSE(fs::exists(fs::path(system) / "pacer-emulator"));
  }
  TempDir tmp;
  EXPECT_NO_THROW(check_emulation_root(tmp.path() / "missing"));
  fs::create_directories(tmp.path() / "empty");
  EXPECT_NO_THROW(check_emulation_root(tmp.path() / "empty"));
  fs::create_directories(tmp.path() / "papers");
  write_text(tmp.path() / "papers" / "draft.tex", "x");
  EXPECT_THROW(check_emulation_root(tmp.path() / "papers"), OptionError);
  EXPECT_EQ(fs::directory_iterator(tmp.path() / "papers")->path().filename(), "draft.tex");  // nothing made
  write_text(tmp.path() / "file", "x");
  EXPECT_NE(error_of([&] { check_emulation_root(tmp.path() / "file"); }).find("not a folder"), std::string::npos);
  // Issue 22, item 19: `--root ''` said "cannot make absolute path: Invalid argument []".
  const std::string empty = error_of([&] { check_emulation_root(""); });
  EXPECT_NE(empty.find("no folder given"), std::string::npos) << empty;
  EXPECT_NE(error_of([&] { check_emulation_root(tmp.path() / std::string(5000, 'r')); }).find("too long"),
            std::string::npos);
  // A tree pacer served before is served again.
  { auto tree = serve(tmp.path() / "board"); }
  EXPECT_NO_THROW(check_emulation_root(tmp.path() / "board"));
}

TEST(EmulationRoot, ASecondEmulatorOnALiveRootIsRefusedAndChangesNothing) {
  TempDir tmp;
  const fs::path root = tmp.path() / "board";
  auto first = serve(root);
  const auto spec = traces::find_device("jetson-nano");
  const fs::path df = fake_devfreq_dir(root, spec);
  write_text(df / "max_freq", "460800000");  // the first one's client pinned the clock
  const std::string pid = std::to_string(std::stol(read_text(root / "pacer-emulator" / "pid")));
  try {
    check_emulation_root(root);
    ADD_FAILURE() << "a root a live emulator serves was accepted";
  } catch (const SettingError& e) {
    EXPECT_EQ(e.option, "root");
    EXPECT_NE(std::string(e.what()).find("served by a running emulator (pid " + pid + ")"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(serve(root), SettingError);
  EXPECT_EQ(read_text(df / "max_freq"), "460800000");
  EXPECT_EQ(std::to_string(std::stol(read_text(root / "pacer-emulator" / "pid"))), pid);
  // Once it is gone its pid file is stale: the root is taken over.
  first.reset();
  EXPECT_NO_THROW(check_emulation_root(root));
  EXPECT_NO_THROW(serve(root));
}

struct Board {
  TempDir tmp;
  traces::DeviceSpec spec = traces::find_device("jetson-nano");
  fs::path df, state;
  Board() {
    write_fake_tree(tmp.path(), spec);
    df = fake_devfreq_dir(tmp.path(), spec);
    fs::create_directories(tmp.path() / "state");
    ::chmod((tmp.path() / "state").c_str(), 0700);
    state = tmp.path() / "state" / "pacer.state";
  }
  std::string restore() const {
    return error_of([&] { restore_from_state_file(state, tmp.path(), real_sysfs_io()); });
  }
  void plant(const std::string& value) const {
    write_text(state, "pid=0\nwrite=" + (df / "max_freq").string() + "\t" + value + "\n");
    ::chmod(state.c_str(), 0600);
  }
};

TEST(RestoreGuard, OnlyFrequenciesOfTheNodesOwnTableAreWritten) {
  Board b;
  const std::string before = read_text(b.df / "max_freq");
  for (const std::string value : {"-1", "99999999999999999999", "$(reboot)", "500000000", "", "76800000 1"}) {
    b.plant(value);
    const std::string e = b.restore();
    EXPECT_NE(e.find("not one of the frequencies"), std::string::npos) << value << ": " << e;
    EXPECT_EQ(read_text(b.df / "max_freq"), before) << value;
  }
  b.plant("614400000");
  EXPECT_EQ(b.restore(), "");
  EXPECT_EQ(read_text(b.df / "max_freq"), "614400000");
}

TEST(RestoreGuard, AStateFileThatIsALinkOrWritableByOthersIsRefusedWithoutEchoingIt) {
  Board b;
  const fs::path secret = b.tmp.path() / "secret";
  write_text(secret, "root:SECRET-HASH:19000\n");
  fs::create_symlink(secret, b.state);
  std::string e = b.restore();
  EXPECT_NE(e.find("symbolic link"), std::string::npos) << e;
  EXPECT_EQ(e.find("SECRET"), std::string::npos) << e;
  fs::remove(b.state);
  b.plant("614400000");
  ::chmod(b.state.c_str(), 0662);
  e = b.restore();
  EXPECT_NE(e.find("writable by other users"), std::string::npos) << e;
  ::chmod(b.state.c_str(), 0620);
  EXPECT_NE(b.restore().find("writable by other users"), std::string::npos);
  // A malformed line is not echoed either.
  write_text(b.state, "pid=0\nSECRET-LINE\n");
  ::chmod(b.state.c_str(), 0600);
  e = b.restore();
  EXPECT_NE(e.find("malformed line"), std::string::npos) << e;
  EXPECT_EQ(e.find("SECRET"), std::string::npos) << e;
  // An empty file and one of other keys were "restored (0 writes)" and deleted (2026-11-28): not
  // a file pacer wrote (it always writes pid=), refused and kept; an unknown key is not echoed.
  for (const auto& [text, why] : {std::pair<std::string, std::string>{"", "no pid= line"},
                                  std::pair<std::string, std::string>{"pid=0\nSECRET=1\n", ":2: unknown key"},
                                  std::pair<std::string, std::string>{"min_freq=abc\n", ":1: unknown key"}}) {
    write_text(b.state, text);
    ::chmod(b.state.c_str(), 0600);
    e = b.restore();
    EXPECT_NE(e.find(why), std::string::npos) << e;
    EXPECT_NE(e.find("not a pacer state file"), std::string::npos) << e;
    EXPECT_EQ(e.find("SECRET"), std::string::npos) << e;
    EXPECT_TRUE(fs::exists(b.state)) << text;
  }
}

TEST(RestoreGuard, Pid1OrAnotherProgramIsNotAPacerProcess) {
  EXPECT_FALSE(process_alive(1));
  const pid_t sleeper = ::fork();
  ASSERT_GE(sleeper, 0);
  if (sleeper == 0) {
    ::execlp("sleep", "sleep", "30", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  for (int i = 0; i < 6000 && read_text(fmt::format("/proc/{}/cmdline", sleeper)).rfind("sleep", 0) != 0; ++i)
    ::usleep(10000);
  EXPECT_FALSE(process_alive(sleeper));  // alive, but not pacer
  ::kill(sleeper, SIGKILL);
  ::waitpid(sleeper, nullptr, 0);
  Board b;
  write_text(b.state, "pid=1\nwrite=" + (b.df / "max_freq").string() + "\t614400000\n");
  ::chmod(b.state.c_str(), 0600);
  EXPECT_EQ(b.restore(), "");  // was: "pacer process 1 still holds ..."
}

}  // namespace
}  // namespace pacer::hw
