// base::run_program and ChildProcess with real programs (sh, printf, sleep): arguments reach the
// program unchanged, output comes back byte for byte, exit statuses and signals are reported, a
// timeout kills the child, a missing program is one clear line. DetachedChild and StopSignals with
// forks of this test program.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <cerrno>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "base/error.hpp"
#include "base/process.hpp"
#include "base/progress.hpp"

namespace {

namespace fs = std::filesystem;
using pacer::base::ChildProcess;
using pacer::base::run_program;
using pacer::base::RunOptions;

fs::path temp_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("pacer-process-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string error_of(const std::string& program, const RunOptions& o = {}) {
  try {
    run_program(program, {}, o);
  } catch (const pacer::Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Process, AMissingProgramIsOneLineSayingWhatToInstall) {
  RunOptions o;
  o.missing_hint = "apt-get install pacer-nothing";
  EXPECT_EQ(error_of("pacer-no-such-program", o),
            "pacer-no-such-program not found on PATH: apt-get install pacer-nothing");
  EXPECT_EQ(error_of("/nonexistent/pacer-no-such-program", o),
            "/nonexistent/pacer-no-such-program does not exist: apt-get install pacer-nothing");
  EXPECT_EQ(error_of("/tmp", o), "/tmp is a folder, not a program: apt-get install pacer-nothing");
}

TEST(Process, AFileTheKernelCannotExecIsAnErrorNotExit127) {
  const fs::path dir = temp_dir("noexec");
  const fs::path script = dir / "no-shebang";
  std::ofstream(script) << "\x7f"
                           "ELF not really\n";
  fs::permissions(script, fs::perms::owner_all);
  const std::string e = error_of(script.string());
  EXPECT_EQ(e.rfind("cannot start " + script.string(), 0), 0u) << e;
  EXPECT_NE(e.find("format"), std::string::npos) << e;  // ENOEXEC: "Exec format error"
  fs::permissions(script, fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(error_of(script.string()).rfind(script.string() + " is not executable", 0), 0u);
  fs::remove_all(dir);
}

TEST(Process, ReportsTheExitStatusAndTheSignalThatEndedIt) {
  EXPECT_EQ(run_program("sh", {"-c", "exit 0"}).exit_code, 0);
  EXPECT_EQ(run_program("sh", {"-c", "exit 7"}).exit_code, 7);
  EXPECT_EQ(run_program("false", {}).exit_code, 1);
  const auto killed = run_program("sh", {"-c", "kill -TERM $$"});
  EXPECT_EQ(killed.exit_code, 128 + SIGTERM);
  EXPECT_FALSE(killed.timed_out);
}

TEST(Process, CapturesStdoutExactly) {
  const std::string text = "first line\n  indented\ttab\n\n\xc3\xa9t\xc3\xa9 \\n $HOME\nlast line without newline";
  const auto r = run_program("printf", {"%s", text});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output, text);
  EXPECT_EQ(r.errors, "");
  // More than a pipe holds (64 KiB): read while the program writes, nothing lost.
  const auto big = run_program("sh", {"-c", "i=0; while [ $i -lt 20000 ]; do echo line-$i; i=$((i+1)); done"});
  EXPECT_EQ(big.output.size(), 208890u);  // 10*7 + 90*8 + 900*9 + 9000*10 + 10000*11 bytes
  EXPECT_EQ(big.output.substr(big.output.size() - 11), "line-19999\n");
}

TEST(Process, StderrMergedSeparateOrDiscarded) {
  const std::vector<std::string> args = {"-c", "echo out; echo err >&2; echo out2"};
  EXPECT_EQ(run_program("sh", args).output, "out\nerr\nout2\n");  // as 2>&1: one stream, in order
  RunOptions separate;
  separate.merge_stderr = false;
  const auto r = run_program("sh", args, separate);
  EXPECT_EQ(r.output, "out\nout2\n");
  EXPECT_EQ(r.errors, "err\n");
  separate.keep_stdout = false;
  const auto quiet = run_program("sh", args, separate);
  EXPECT_EQ(quiet.output, "");
  EXPECT_EQ(quiet.errors, "err\n");
}

TEST(Process, ArgumentsReachTheProgramUnchanged) {
  const std::vector<std::string> words = {"a b",          "it's", "\"dq\"", "$HOME",       "${PATH}x", "`id`",
                                          "$(id)",        "*",    "~",      "back\\slash", "",         "line\nbreak",
                                          "semi;colon&|", "a=b",  "-n",     "%s %d"};
  std::vector<std::string> args = {"[%s]"};
  std::string expected;
  for (const auto& w : words) {
    args.push_back(w);
    expected += "[" + w + "]";
  }
  EXPECT_EQ(run_program("printf", args).output, expected);
  // command_line writes the same call for sh: pasted into sh, it prints the same.
  EXPECT_EQ(run_program("sh", {"-c", pacer::base::command_line("printf", args)}).output, expected);
}

TEST(Process, RunsInTheGivenFolderWithTheGivenEnvironment) {
  const fs::path dir = temp_dir("cwd dollar$ 'q'");
  ::setenv("PACER_TEST_UNSET_ME", "still here", 1);
  ::setenv("PACER_TEST_REPLACED", "old", 1);
  RunOptions o;
  o.cwd = dir;
  o.unset_env = {"PACER_TEST_UNSET_ME"};
  o.set_env = {{"PACER_TEST_REPLACED", "new value"}, {"PACER_TEST_ADDED", "a $b"}};
  const auto r =
      run_program("sh", {"-c", "pwd; echo \"${PACER_TEST_UNSET_ME-unset}|$PACER_TEST_REPLACED|$PACER_TEST_ADDED\""}, o);
  EXPECT_EQ(r.output, fs::canonical(dir).string() + "\nunset|new value|a $b\n");
  EXPECT_EQ(run_program("sh", {"-c", "echo \"$PACER_TEST_UNSET_ME\""}).output, "still here\n");  // ours unchanged
  ::unsetenv("PACER_TEST_UNSET_ME");
  ::unsetenv("PACER_TEST_REPLACED");
  fs::remove_all(dir);
}

TEST(Process, ATimeoutKillsTheChildAndReturns) {
  RunOptions o;
  // Long enough for sh to start and print on a busy machine (the test needs its pid); the child
  // never ends by itself, so the timeout is always what ends it.
  o.timeout_s = 3;
  // sh prints its pid, then becomes sleep 30 (exec: same pid).
  const auto r = run_program("sh", {"-c", "echo $$; exec sleep 30"}, o);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.exit_code, -1);
  const pid_t pid = std::stoi(r.output);
  ASSERT_GT(pid, 0);
  EXPECT_EQ(::kill(pid, 0), -1);  // killed and reaped: no such process
  EXPECT_EQ(errno, ESRCH);
}

TEST(ChildProcess, ReadsLinesThenEndOfOutput) {
  ChildProcess child("sh", {"-c", "printf 'one\\ntwo\\nlast'"});
  std::string line;
  bool timed_out = true;
  ASSERT_TRUE(child.read_line(line, 10, &timed_out));
  EXPECT_EQ(line, "one");
  EXPECT_FALSE(timed_out);
  ASSERT_TRUE(child.read_line(line, 10));
  EXPECT_EQ(line, "two");
  ASSERT_TRUE(child.read_line(line, 10));
  EXPECT_EQ(line, "last");  // a last line without its newline
  EXPECT_FALSE(child.read_line(line, 10, &timed_out));
  EXPECT_FALSE(timed_out);
}

TEST(ChildProcess, StopEndsASilentChildByItsPid) {
  ChildProcess child("sleep", {"30"});
  std::string line;
  bool timed_out = false;
  EXPECT_FALSE(child.read_line(line, 0.05, &timed_out));
  EXPECT_TRUE(timed_out);
  EXPECT_FALSE(child.exited());
  const pid_t pid = child.pid();
  child.stop();
  int status = 0;
  EXPECT_TRUE(child.exited(&status));
  EXPECT_EQ(status, 128 + SIGTERM);
  EXPECT_EQ(::kill(pid, 0), -1);
}

// DetachedChild forks this test program: the child part of each test only calls async-safe things
// and ends with _exit, never returning into GoogleTest.
std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(DetachedChild, TheCallerReturnsOnceTheChildIsReadyAndItsOutputGoesToTheLog) {
  const fs::path dir = temp_dir("detach-ready");
  const fs::path log = dir / "log";
  pacer::base::DetachedChild child("test server");
  if (child.in_child()) {
    child.ready(log);
    char c = 'x';
    const bool stdin_empty = ::read(STDIN_FILENO, &c, 1) == 0;  // /dev/null
    const std::string line = ::getsid(0) == ::getpid() && stdin_empty ? "serving alone\n" : "still attached\n";
    [[maybe_unused]] const auto w = ::write(STDOUT_FILENO, line.data(), line.size());
    ::_exit(0);
  }
  const auto start = child.wait_until_ready(10);
  EXPECT_TRUE(start.ready);
  EXPECT_FALSE(start.timed_out);
  int status = -1;
  ASSERT_EQ(::waitpid(child.pid(), &status, 0), child.pid());  // left to the caller once ready
  EXPECT_EQ(read_file(log), "serving alone\n");
  fs::remove_all(dir);
}

TEST(DetachedChild, AChildThatEndsBeforeItIsReadyGivesItsExitStatusOr1) {
  pacer::base::DetachedChild failing("test server");
  if (failing.in_child()) ::_exit(3);
  auto start = failing.wait_until_ready(10);
  EXPECT_FALSE(start.ready);
  EXPECT_FALSE(start.timed_out);
  EXPECT_EQ(start.exit_code, 3);
  pacer::base::DetachedChild quiet("test server");
  if (quiet.in_child()) ::_exit(0);
  start = quiet.wait_until_ready(10);
  EXPECT_FALSE(start.ready);
  EXPECT_EQ(start.exit_code, 1);  // ended without serving: a failure even with status 0
}

TEST(DetachedChild, AChildThatNeitherServesNorEndsIsStoppedAtTheTimeout) {
  pacer::base::DetachedChild child("test server");
  if (child.in_child()) {
    ::pause();
    ::_exit(0);
  }
  const auto begin = std::chrono::steady_clock::now();
  const auto start = child.wait_until_ready(0.2);
  // A hang guard: it did not wait forever.
  EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(60));
  EXPECT_FALSE(start.ready);
  EXPECT_TRUE(start.timed_out);
  EXPECT_EQ(start.exit_code, 1);          // ended by SIGTERM
  EXPECT_EQ(::kill(child.pid(), 0), -1);  // stopped and reaped
  EXPECT_EQ(errno, ESRCH);
}

// In a child process, so that the signals stay deliverable to this test program.
TEST(StopSignals, WaitReturnsAPendingStopSignalOr0AfterTheDuration) {
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const pacer::base::StopSignals stop;
    const bool timed = stop.wait(0.05) == 0;
    ::kill(::getpid(), SIGHUP);  // held: pending, not fatal
    const bool hup = stop.wait(0) == SIGHUP;
    ::kill(::getpid(), SIGTERM);
    const bool term = stop.wait(30) == SIGTERM;
    ::_exit(timed && hup && term ? 0 : 1);
  }
  int status = -1;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// Issue 22 item 9: a front (a fork of this test program) starts two `sleep` children in a
// ChildGroup and is then killed; the children must be gone within a bounded number of polls.
namespace child_group {

// Alive: /proc/PID exists and is not a zombie (an orphan's zombie waits for whoever adopts it).
bool alive(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return false;
  const auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z';
}

// Starts the front; returns its pid and fills `children` with the two children's pids.
pid_t start_front(std::vector<pid_t>& children) {
  int fds[2];
  if (::pipe(fds) != 0) return -1;
  const pid_t front = ::fork();
  if (front == 0) {
    ::close(fds[0]);
    pacer::base::ChildGroup group;
    pid_t pids[2] = {group.start("sleep", {"300"}), group.start("sleep", {"300"})};
    [[maybe_unused]] const auto w = ::write(fds[1], pids, sizeof pids);
    group.wait_all();
    ::_exit(0);
  }
  ::close(fds[1]);
  pid_t pids[2] = {0, 0};
  const auto got = ::read(fds[0], pids, sizeof pids);
  ::close(fds[0]);
  if (got == static_cast<ssize_t>(sizeof pids)) children = {pids[0], pids[1]};
  return front;
}

// Polls (at most 2000 times, 5 ms apart) until no child is alive; returns whether they all went.
bool gone(const std::vector<pid_t>& children) {
  for (int poll = 0; poll < 2000; ++poll) {
    bool any = false;
    for (const pid_t c : children) any = any || alive(c);
    if (!any) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

void check_children_die_with_front(int signal) {
  std::vector<pid_t> children;
  const pid_t front = start_front(children);
  ASSERT_GT(front, 0);
  ASSERT_EQ(children.size(), 2u);
  for (const pid_t c : children) {
    EXPECT_TRUE(alive(c));
    EXPECT_EQ(::getpgid(c), children[0]);  // a process group of their own, led by the first child
  }
  ::kill(front, signal);
  int status = 0;
  ASSERT_EQ(::waitpid(front, &status, 0), front);
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), signal);  // the front still ends of the signal it got
  const bool all_gone = gone(children);
  if (!all_gone)
    for (const pid_t c : children) ::kill(c, SIGKILL);  // no orphan left behind by a failing test
  EXPECT_TRUE(all_gone) << "the children outlived their front (signal " << signal << ")";
}

}  // namespace child_group

TEST(ChildGroup, ChildrenDieWithTheirFrontOnKill) {
  child_group::check_children_die_with_front(SIGKILL);
}

TEST(ChildGroup, ChildrenDieWithTheirFrontOnTermIntAndHup) {
  for (const int sig : {SIGTERM, SIGINT, SIGHUP}) child_group::check_children_die_with_front(sig);
}

TEST(ChildGroup, WaitAllGivesEachChildsStatusInStartOrder) {
  pacer::base::ChildGroup group;
  group.start("sh", {"-c", "exit 3"});
  group.start("sh", {"-c", "kill -TERM $$"});
  const auto statuses = group.wait_all();
  ASSERT_EQ(statuses.size(), 2u);
  EXPECT_TRUE(WIFEXITED(statuses[0]));
  EXPECT_EQ(WEXITSTATUS(statuses[0]), 3);
  EXPECT_TRUE(WIFSIGNALED(statuses[1]));
  EXPECT_EQ(WTERMSIG(statuses[1]), SIGTERM);
}

}  // namespace

// line_buffer_stdout: a line written to std::cout reaches a file at once, not at exit. The child
// ends with _exit, which flushes nothing: a fully buffered stdout would lose the line.
TEST(LineBuffer, EveryLineReachesAFileBeforeExit) {
  const auto file = std::filesystem::temp_directory_path() / ("pacer-linebuf-" + std::to_string(::getpid()));
  std::fflush(stdout);  // nothing of this process's own output pending in the child's copy
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, STDOUT_FILENO);
    pacer::base::line_buffer_stdout();
    std::cout << "[1/2] a progress line\n";
    std::cout << "[2/2] and another\n";
    std::cout << "a partial line";
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str().rfind("[1/2] a progress line\n[2/2] and another\n", 0), 0u) << text.str();
  std::filesystem::remove(file);
}
