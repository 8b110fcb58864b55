// Issue 22, items 5, 19 and 21: only a regular file is ever renamed over. A FIFO or a character
// device is written in place (the system's /dev nodes are never replaced), a store reached through a
// symbolic link is written at its target (the link stays), a folder or a socket is refused with one
// line; a too-long path says so; reseal names a FIFO for what it is; a record name with a control
// character is refused without echoing it.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

#include "base/error.hpp"
#include "tests/support/sample_records.hpp"
#include "traces/store/merge.hpp"
#include "traces/store/outputs.hpp"
#include "traces/store/store.hpp"
#include "traces/store/store_file.hpp"

namespace {

using namespace pacer;
using namespace pacer::traces;
namespace fs = std::filesystem;

struct Scratch {
  fs::path dir;
  Scratch() {
    dir = fs::temp_directory_path() /
          ("pacer-special-" + std::to_string(::getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~Scratch() { fs::remove_all(dir); }
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

bool no_temporaries(const fs::path& dir) {
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".tmp-") != std::string::npos) return false;
  return true;
}

// The old code renamed a temporary file over the FIFO: the reader never saw the bytes and the FIFO
// became a regular file.
TEST(SpecialOutputs, AFifoIsWrittenInPlaceAndStaysAFifo) {
  Scratch s;
  const fs::path fifo = s.dir / "out.csv";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] { got = slurp(fifo); });
  write_file_atomic(fifo, "a,b\n1,2\n");
  reader.join();
  EXPECT_EQ(got, "a,b\n1,2\n");
  EXPECT_TRUE(fs::is_fifo(fifo));
  EXPECT_TRUE(no_temporaries(s.dir));
  EXPECT_TRUE(companion_csv(fifo, "-summary").empty());  // nothing made beside a stream
  EXPECT_EQ(companion_csv(s.dir / "rows.csv", "-summary"), s.dir / "rows-summary.csv");
}

TEST(SpecialOutputs, DevNullStaysACharacterDevice) {
  EXPECT_NO_THROW(check_output_file("/dev/null", "csv"));
  EXPECT_NO_THROW(write_file_atomic("/dev/null", "rows\n"));
  struct stat st {};
  ASSERT_EQ(::lstat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_FALSE(fs::exists("/dev/null.tmp-" + std::to_string(::getpid())));
  EXPECT_TRUE(companion_csv("/dev/null", "-summary").empty());
  EXPECT_TRUE(companion_csv("-", "-summary").empty());
  EXPECT_NO_THROW(check_output_file("-", "csv"));
  // This process's own stdout is written where it is open (a pipe, a terminal or a redirected file),
  // never replaced.
  EXPECT_EQ(file::write_target("/dev/stdout").kind, file::WriteTarget::Kind::stream);
  EXPECT_EQ(file::write_target("/dev/fd/2").kind, file::WriteTarget::Kind::stream);
}

TEST(SpecialOutputs, ASymlinkedStoreIsWrittenAtItsTarget) {
  Scratch s;
  fs::create_directories(s.dir / "data");
  const fs::path target = s.dir / "data" / "campaign.h5";
  const fs::path link = s.dir / "campaign.h5";
  Store::open_or_create(target).write(pacer::testing::sample_relation());
  fs::create_symlink("data/campaign.h5", link);
  Store store = Store::open(link);
  store.write(pacer::testing::sample_sweep());
  EXPECT_TRUE(fs::is_symlink(link)) << "the link was replaced by a file";
  const Store direct = Store::open(target);
  EXPECT_TRUE(direct.has<SweepResult>(pacer::testing::sample_sweep().name));
  EXPECT_TRUE(direct.has<RelationSet>(pacer::testing::sample_relation().name));
  EXPECT_EQ(file::lock_path(link), s.dir / "data" / "campaign.h5.lock");  // one lock for both paths
  EXPECT_TRUE(no_temporaries(s.dir) && no_temporaries(s.dir / "data"));
  // A link to a file not there yet: the file is made where it points.
  fs::create_symlink("data/new.csv", s.dir / "new.csv");
  write_file_atomic(s.dir / "new.csv", "x\n");
  EXPECT_TRUE(fs::is_symlink(s.dir / "new.csv"));
  EXPECT_EQ(slurp(s.dir / "data" / "new.csv"), "x\n");
}

TEST(SpecialOutputs, AFolderOrASocketIsRefusedWithOneLine) {
  Scratch s;
  fs::create_directories(s.dir / "out.csv");
  const std::string folder = error_of([&] { write_file_atomic(s.dir / "out.csv", "x"); });
  EXPECT_NE(folder.find("is a folder: name a file in it"), std::string::npos) << folder;
  EXPECT_EQ(folder.find("filesystem error"), std::string::npos) << folder;
  EXPECT_THROW(check_output_file(s.dir / "out.csv", "csv"), SettingError);
  // A symbolic link to a folder is no way around it.
  fs::create_symlink(s.dir / "out.csv", s.dir / "link.csv");
  EXPECT_NE(error_of([&] { write_file_atomic(s.dir / "link.csv", "x"); }).find("is a folder"), std::string::npos);
  EXPECT_TRUE(fs::is_directory(s.dir / "out.csv"));
  const fs::path sock = s.dir / "sock";
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", sock.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const std::string socket = error_of([&] { write_file_atomic(sock, "x"); });
  ::close(fd);
  EXPECT_NE(socket.find("is a socket"), std::string::npos) << socket;
  EXPECT_TRUE(fs::is_socket(sock));
}

// Issue 22, item 19: merging onto a folder ended in "filesystem error: cannot rename: Is a directory".
TEST(SpecialOutputs, MergeOntoAFolderIsOnePacerLineBeforeAnyWork) {
  Scratch s;
  Store::open_or_create(s.dir / "in.h5").write(pacer::testing::sample_relation());
  fs::create_directories(s.dir / "out.h5");
  const std::string e = error_of([&] { merge_stores(s.dir / "out.h5", {s.dir / "in.h5"}); });
  EXPECT_NE(e.find("out.h5: is a folder: name a file in it"), std::string::npos) << e;
  EXPECT_EQ(e.find("filesystem error"), std::string::npos) << e;
  EXPECT_TRUE(fs::is_empty(s.dir / "out.h5"));
  EXPECT_TRUE(no_temporaries(s.dir));
}

// Issue 22, item 19: a 5,000-character path was reported as a folder that does not exist.
TEST(SpecialOutputs, ATooLongPathSaysSo) {
  const fs::path deep = fs::temp_directory_path() / std::string(5000, 'd') / "out.csv";
  EXPECT_NE(file::why_not_writable(deep).find("the path is too long"), std::string::npos);
  EXPECT_NE(error_of([&] { check_output_file(deep, "csv"); }).find("too long"), std::string::npos);
  EXPECT_NE(error_of([&] { (void)Store::open(deep); }).find("too long"), std::string::npos);
}

// Issue 22, item 19: `pacer export --reseal FIFO` said "no such trace store".
TEST(SpecialOutputs, ResealNamesAFifoForWhatItIs) {
  Scratch s;
  ASSERT_EQ(::mkfifo((s.dir / "s.h5").c_str(), 0600), 0);
  const std::string e = error_of([&] { reseal_store(s.dir / "s.h5"); });
  EXPECT_NE(e.find("is a FIFO, not a trace store"), std::string::npos) << e;
  const std::string open = error_of([&] { (void)Store::open(s.dir / "s.h5"); });
  EXPECT_NE(open.find("is a FIFO, not a trace store"), std::string::npos) << open;
}

// Issue 22, item 21: a name with an escape sequence or a newline broke `pacer export` listings.
TEST(SpecialOutputs, ARecordNameWithAControlCharacterIsRefusedWithoutEchoingIt) {
  for (const std::string name : {std::string("a\033[31mb"), std::string("two\nlines"), std::string("tab\there"),
                                 std::string("del\x7f")}) {
    const std::string e = error_of([&] { check_record_name("profiles", name); });
    EXPECT_NE(e.find("control character"), std::string::npos) << e;
    EXPECT_EQ(e.find(name), std::string::npos) << "the name was echoed";
    EXPECT_THROW(check_record_name_option("profiles", name, "profile-name"), OptionError);
  }
  Scratch s;
  Store store = Store::open_or_create(s.dir / "s.h5");
  auto relation = pacer::testing::sample_relation();
  EXPECT_THROW(store.write(relation, "bad\nname"), Error);  // every writer checks it
  EXPECT_NO_THROW(check_record_name("profiles", "résumé-1 (b=8)"));
}

}  // namespace
