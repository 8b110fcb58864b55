// Writers of one trace store: several processes at once (none may lose another's record), a writer
// that must wait (it says so), and a full file system (one error, the store as it was, no
// temporary file left). docs/reliability.md, "Concurrent writers" and "Disk full".
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/error.hpp"
#include "tests/support/sample_records.hpp"
#include "tests/support/small_tmpfs.hpp"
#include "traces/store/merge.hpp"
#include "traces/store/store.hpp"
#include "traces/store/store_file.hpp"

namespace {
namespace fs = std::filesystem;
using pacer::traces::Store;

fs::path fresh_dir(const std::string& tag) {
  const fs::path dir = fs::temp_directory_path() / ("pacer-writers-" + std::to_string(::getpid()) + "-" + tag);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Starts `store_writer ARGS` with stderr to `err`; returns its pid.
pid_t spawn_writer(const std::vector<std::string>& args, const fs::path& err) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 2);
    std::vector<std::string> copy = args;
    static std::string bin = STORE_WRITER;
    std::vector<char*> argv{bin.data()};
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(bin.c_str(), argv.data());
    ::_exit(127);
  }
  return pid;
}

int exit_code(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

class ConcurrentWriters : public ::testing::TestWithParam<int> {};

// Each writer grows 3 profiles of its own to 6 points, one whole-store rewrite per point, all at
// once into one store that none of them has created yet. Without the writers' lock a rewrite
// copies the store as it was before another writer's rename and drops that writer's record.
TEST_P(ConcurrentWriters, EveryRecordOfEveryWriterIsThereEveryTime) {
  const int writers = GetParam();
  constexpr int kRecords = 3, kPoints = 6, kTrials = 3;
  const fs::path dir = fresh_dir("concurrent-" + std::to_string(writers));
  for (int trial = 0; trial < kTrials; ++trial) {
    const fs::path store = dir / ("s" + std::to_string(trial) + ".h5");
    std::vector<pid_t> pids;
    for (int w = 0; w < writers; ++w)
      pids.push_back(
          spawn_writer({store.string(), "w" + std::to_string(w), std::to_string(kRecords), std::to_string(kPoints)},
                       dir / ("err" + std::to_string(w))));
    for (int w = 0; w < writers; ++w)
      EXPECT_EQ(exit_code(pids[static_cast<size_t>(w)]), 0) << slurp(dir / ("err" + std::to_string(w)));
    std::set<std::string> expected;
    for (int w = 0; w < writers; ++w)
      for (int r = 0; r < kRecords; ++r) expected.insert(fmt::format("w{}-{}", w, r));
    const Store s = Store::open(store);
    const auto names = s.list<pacer::traces::ProfileTable>();
    EXPECT_EQ(std::set<std::string>(names.begin(), names.end()), expected) << "trial " << trial;
    for (const auto& n : names) EXPECT_EQ(s.read<pacer::traces::ProfileTable>(n).points.size(), size_t{kPoints}) << n;
    for (const auto& e : fs::directory_iterator(dir))
      EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
  }
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Writers, ConcurrentWriters, ::testing::Values(2, 4));

TEST(StoreWriters, AWriterThatMustWaitSaysSoOnStderrOnceAndThenWrites) {
  const fs::path dir = fresh_dir("wait");
  const fs::path store = dir / "s.h5";
  Store::open_or_create(store).write(pacer::testing::sample_relation());
  pid_t pid = -1;
  {
    pacer::traces::file::WriteLock held(store);  // another writer in the middle of its rewrite
    pid = spawn_writer({store.string(), "late", "1", "1"}, dir / "err");
    std::string err;
    for (int i = 0; i < 600 && err.find("waiting") == std::string::npos; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      err = slurp(dir / "err");
    }
    EXPECT_NE(err.find("another process is writing this trace store; waiting for it to finish"), std::string::npos)
        << err;
    EXPECT_FALSE(
        Store::open(store).has<pacer::traces::ProfileTable>("late-0"));  // it waits, it does not write past the lock
  }
  EXPECT_EQ(exit_code(pid), 0) << slurp(dir / "err");
  const std::string err = slurp(dir / "err");
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  const Store s = Store::open(store);
  EXPECT_TRUE(s.has<pacer::traces::ProfileTable>("late-0"));
  EXPECT_EQ(s.read<pacer::traces::RelationSet>("fmnist-proxy"), pacer::testing::sample_relation());
  fs::remove_all(dir);
}

// A store of one profile `name` of `points` points, for the merges below.
void write_shard(const fs::path& path, const std::string& name, int points) {
  pacer::traces::ProfileTable t = pacer::testing::sample_profile();
  t.workload = name;
  t.points.resize(static_cast<size_t>(points));
  Store::open_or_create(path).write(t);
}

// Whether process `pid` is still running (not waited for yet).
bool running(pid_t pid) {
  int status = 0;
  return ::waitpid(pid, &status, WNOHANG) == 0;
}

// `pacer merge` took no lock: merges into one store at once, or beside a writer of it, each wrote
// the store it had read, and the others' records were gone, exit 0 (issue 22, item 3). A merge now
// waits for the writers' lock of its output and reads the output under it.
TEST(StoreWriters, AMergeWaitsForTheWritersLockOfItsOutput) {
  const fs::path dir = fresh_dir("merge-wait");
  const fs::path out = dir / "out.h5";
  write_shard(out, "campaign", 6);
  write_shard(dir / "shard.h5", "shard", 2);
  pid_t pid = -1;
  {
    pacer::traces::file::WriteLock held(out);  // a writer of out.h5 in the middle of its rewrite
    pid = spawn_writer({"--merge", out.string(), (dir / "shard.h5").string()}, dir / "err");
    std::string err;
    for (int i = 0; i < 600 && err.find("waiting") == std::string::npos && running(pid); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      err = slurp(dir / "err");
    }
    EXPECT_NE(err.find("another process is writing this trace store; waiting for it to finish"), std::string::npos)
        << err;
    ASSERT_TRUE(running(pid)) << "the merge did not wait for the lock: " << slurp(dir / "err");
    EXPECT_FALSE(Store::open(out).has<pacer::traces::ProfileTable>("shard"));
  }
  EXPECT_EQ(exit_code(pid), 0) << slurp(dir / "err");
  const Store s = Store::open(out);
  EXPECT_EQ(s.read<pacer::traces::ProfileTable>("campaign").points.size(), 6u);
  EXPECT_EQ(s.read<pacer::traces::ProfileTable>("shard").points.size(), 2u);
  fs::remove_all(dir);
}

// Four `merge --update out.h5 shard_i.h5` at once, beside a writer growing a record of out.h5 point
// by point: every shard's record and every point of the writer are in out.h5 afterwards.
TEST(StoreWriters, ConcurrentMergesAndAWriterOfOneOutputLoseNothing) {
  constexpr int kShards = 4, kPoints = 6, kTrials = 3;
  const fs::path dir = fresh_dir("merge-concurrent");
  for (int i = 0; i < kShards; ++i) write_shard(dir / fmt::format("shard{}.h5", i), fmt::format("shard{}", i), 3);
  for (int trial = 0; trial < kTrials; ++trial) {
    const fs::path out = dir / fmt::format("out{}.h5", trial);
    write_shard(out, "campaign", 2);
    std::vector<pid_t> pids;
    pids.push_back(spawn_writer({out.string(), "w", "1", std::to_string(kPoints)}, dir / "err-w"));
    for (int i = 0; i < kShards; ++i)
      pids.push_back(spawn_writer({"--merge", out.string(), (dir / fmt::format("shard{}.h5", i)).string()},
                                  dir / fmt::format("err{}", i)));
    for (size_t k = 0; k < pids.size(); ++k)
      EXPECT_EQ(exit_code(pids[k]), 0) << slurp(dir / (k == 0 ? std::string("err-w") : fmt::format("err{}", k - 1)));
    const Store s = Store::open(out);
    EXPECT_EQ(s.read<pacer::traces::ProfileTable>("campaign").points.size(), 2u) << "trial " << trial;
    EXPECT_EQ(s.read<pacer::traces::ProfileTable>("w-0").points.size(), size_t{kPoints}) << "trial " << trial;
    for (int i = 0; i < kShards; ++i)
      EXPECT_TRUE(s.has<pacer::traces::ProfileTable>(fmt::format("shard{}", i))) << "trial " << trial << " shard " << i;
  }
  fs::remove_all(dir);
}

using pacer::testing::SmallTmpfs;

// Fills the file system holding `dir` to the last byte; returns the filler's path.
fs::path fill_up(const fs::path& dir) {
  const fs::path filler = dir / "filler";
  const int fd = ::open(filler.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const std::string block(4096, 'x');
  while (::write(fd, block.data(), block.size()) > 0) {
  }
  while (::write(fd, block.data(), 1) > 0) {
  }
  ::close(fd);
  return filler;
}

TEST(StoreDiskFull, ARewriteOnAFullFileSystemIsOneErrorAndLeavesTheStoreAsItWas) {
  const fs::path mnt = fs::temp_directory_path() / ("pacer-tmpfs-" + std::to_string(::getpid()));
  SmallTmpfs fs_small(mnt, "1m");
  if (!fs_small.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here (needs root): disk-full test skipped";
  const fs::path store = mnt / "s.h5";
  Store s = Store::open_or_create(store);
  s.write(pacer::testing::sample_profile());
  const fs::path filler = fill_up(mnt);
  const std::string before = slurp(store);
  try {
    s.write(pacer::testing::sample_validation());
    FAIL() << "writing on a full file system succeeded";
  } catch (const pacer::Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("not enough space"), std::string::npos) << what;
    EXPECT_NE(what.find(store.string()), std::string::npos) << what;
  }
  EXPECT_EQ(slurp(store), before);
  for (const auto& e : fs::directory_iterator(mnt))
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
  EXPECT_EQ(Store::open(store).read<pacer::traces::ProfileTable>(pacer::testing::sample_profile().workload),
            pacer::testing::sample_profile());
  fs::remove(filler);  // with room again, the same write succeeds
  s.write(pacer::testing::sample_validation());
  EXPECT_EQ(Store::open(store).read<pacer::traces::ValidationResult>("val"), pacer::testing::sample_validation());
}

// A text output (a CSV, a table) on a full file system: the same one line, which speaks of the file
// it was asked to write, not of a store (it said "write the store elsewhere (the store was left as
// it was)" of `pacer sweep --csv FULL/s.csv`), and the file as it was.
TEST(StoreDiskFull, ATextFileOnAFullFileSystemIsOneErrorAboutThatFile) {
  const fs::path mnt = fs::temp_directory_path() / ("pacer-tmpfs-text-" + std::to_string(::getpid()));
  SmallTmpfs fs_small(mnt, "1m");
  if (!fs_small.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here (needs root): disk-full test skipped";
  const fs::path csv = mnt / "s.csv";
  pacer::traces::write_file_atomic(csv, "cap_w\n5\n");
  const fs::path filler = fill_up(mnt);
  try {
    pacer::traces::write_file_atomic(csv, std::string(200000, 'x'));
    FAIL() << "writing on a full file system succeeded";
  } catch (const pacer::Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind(csv.string() + ": not enough space to write it: ", 0), 0u) << what;
    EXPECT_NE(what.find("free some space or write it elsewhere (the file was left as it was)"), std::string::npos)
        << what;
    EXPECT_EQ(what.find("store"), std::string::npos) << what;
  }
  std::ifstream in(csv);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "cap_w\n5\n");
  for (const auto& e : fs::directory_iterator(mnt))
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
  fs::remove(filler);
}

// `pacer merge OUT.h5 …` on a full disk named the merge's hidden temporary
// (".OUT.h5.merge-PID: not enough space …"), a file the user never asked for: now OUT.h5.
TEST(StoreDiskFull, AMergeOnAFullFileSystemNamesTheStoreAskedFor) {
  const fs::path mnt = fs::temp_directory_path() / ("pacer-tmpfs-merge-" + std::to_string(::getpid()));
  SmallTmpfs fs_small(mnt, "1m");
  if (!fs_small.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here (needs root): disk-full test skipped";
  const fs::path in = fs::temp_directory_path() / ("pacer-merge-in-" + std::to_string(::getpid()) + ".h5");
  fs::remove(in);
  Store::open_or_create(in).write(pacer::testing::sample_profile());
  const fs::path out = mnt / "m.h5";
  const fs::path filler = fill_up(mnt);
  try {
    pacer::traces::merge_into(out, {in});
    FAIL() << "a merge on a full file system succeeded";
  } catch (const pacer::Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind(out.string() + ": not enough space to write it", 0), 0u) << what;
    EXPECT_EQ(what.find(".merge-"), std::string::npos) << what;
  }
  EXPECT_FALSE(fs::exists(out));
  fs::remove(filler);
  fs::remove(in);
  fs::remove(fs::path(in.string() + ".lock"));
}

}  // namespace
