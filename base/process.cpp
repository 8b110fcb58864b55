#include "base/process.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "base/error.hpp"
#include "base/shell.hpp"

extern char** environ;

namespace pacer::base {
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

Clock::time_point after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// Where a child's stdout and stderr go.
enum class Sink { Pipe, Null, MergeIntoStdout, Inherit };

struct SpawnSpec {
  Sink out = Sink::Pipe;
  Sink err = Sink::Inherit;
  // The child gets SIGTERM when pacer dies (a reader such as tegrastats must not outlive it); a
  // setter such as nvpmodel is left to finish what it started.
  bool die_with_parent = false;
  pid_t parent = 0;        // with die_with_parent: this process's pid (the child checks it is still there)
  bool own_group = false;  // the child joins process group `group` (0: a new one, its own pid)
  pid_t group = 0;
  const RunOptions* run = nullptr;  // cwd and environment; null: this process's
};

struct Spawned {
  pid_t pid = -1;
  int out_fd = -1;  // read ends of the pipes (-1: none)
  int err_fd = -1;
};

// NAME=VALUE strings of this process's environment with `o`'s changes.
std::vector<std::string> child_environment(const RunOptions& o) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    const bool changed =
        std::find(o.unset_env.begin(), o.unset_env.end(), name) != o.unset_env.end() ||
        std::any_of(o.set_env.begin(), o.set_env.end(), [&](const auto& s) { return s.first == name; });
    if (!changed) env.push_back(entry);
  }
  for (const auto& [name, value] : o.set_env) env.push_back(name + "=" + value);
  return env;
}

std::vector<char*> pointers(std::vector<std::string>& words) {
  std::vector<char*> out;
  for (auto& w : words) out.push_back(w.data());
  out.push_back(nullptr);
  return out;
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// In the child, between fork and exec: only async-signal-safe calls. On failure the errno goes
// to the parent through `report_fd` (closed on a successful exec).
[[noreturn]] void exec_child(const SpawnSpec& spec, const int out[2], const int err[2], int report_fd, const char* path,
                             char* const* argv, char* const* envp, const char* cwd) {
  const int null_fd = ::open("/dev/null", O_RDWR);
  if (null_fd >= 0) ::dup2(null_fd, 0);
  if (spec.out == Sink::Pipe) ::dup2(out[1], 1);
  if (spec.out == Sink::Null && null_fd >= 0) ::dup2(null_fd, 1);
  if (spec.err == Sink::Pipe) ::dup2(err[1], 2);
  if (spec.err == Sink::MergeIntoStdout) ::dup2(1, 2);
  if (spec.err == Sink::Null && null_fd >= 0) ::dup2(null_fd, 2);
  if (spec.own_group) ::setpgid(0, spec.group);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);  // a parent's held stop signals (StopSignals) are not the child's
  if (spec.die_with_parent) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    // The parent may have died between fork and prctl: then no signal comes, and the child must not run.
    if (::getppid() != spec.parent) ::_exit(127);
  }
  if (cwd == nullptr || ::chdir(cwd) == 0) ::execve(path, argv, envp);
  const int e = errno;
  [[maybe_unused]] const ssize_t w = ::write(report_fd, &e, sizeof e);
  ::_exit(127);
}

Spawned spawn(const std::string& program, const std::vector<std::string>& args, const SpawnSpec& spec) {
  const RunOptions defaults;
  const RunOptions& o = spec.run ? *spec.run : defaults;
  // Absolute, so that a relative path still names the same file after the child's chdir.
  std::string path = fs::absolute(find_program(program, o.missing_hint)).string();
  std::vector<std::string> words = {path};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv = pointers(words);
  std::vector<std::string> env_words;
  std::vector<char*> envp;
  if (!o.unset_env.empty() || !o.set_env.empty()) {
    env_words = child_environment(o);
    envp = pointers(env_words);
  }
  const std::string cwd = o.cwd.string();
  int out[2] = {-1, -1}, err[2] = {-1, -1}, report[2] = {-1, -1};
  const auto close_all = [&] {
    for (int* fd : {&out[0], &out[1], &err[0], &err[1], &report[0], &report[1]}) close_fd(*fd);
  };
  if ((spec.out == Sink::Pipe && ::pipe2(out, O_CLOEXEC) != 0) ||
      (spec.err == Sink::Pipe && ::pipe2(err, O_CLOEXEC) != 0) || ::pipe2(report, O_CLOEXEC) != 0) {
    const int e = errno;
    close_all();
    throw Error(fmt::format("cannot start {}: pipe: {}", path, std::strerror(e)));
  }
  const pid_t pid = ::fork();
  if (pid > 0 && spec.own_group) ::setpgid(pid, spec.group == 0 ? pid : spec.group);  // as the child does: no race
  if (pid == 0)
    exec_child(spec, out, err, report[1], path.c_str(), argv.data(), envp.empty() ? environ : envp.data(),
               cwd.empty() ? nullptr : cwd.c_str());
  const int fork_errno = errno;
  close_fd(out[1]);
  close_fd(err[1]);
  close_fd(report[1]);
  if (pid < 0) {
    close_all();
    throw Error(fmt::format("cannot start {}: {}", path, std::strerror(fork_errno)));
  }
  int exec_errno = 0;
  ssize_t got = 0;
  while ((got = ::read(report[0], &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR) {
  }
  close_fd(report[0]);
  if (got > 0) {  // exec failed: the child has exited with 127
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    close_all();
    throw Error(fmt::format("cannot start {}{}: {}", path, cwd.empty() ? "" : " in " + cwd, std::strerror(exec_errno)));
  }
  return {pid, out[0], err[0]};
}

int decode_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// Milliseconds to the deadline for poll (at most 100, so a clock jump cannot stall it), -1 without
// one, 0 once it has passed.
int poll_ms(bool has_deadline, Clock::time_point deadline) {
  if (!has_deadline) return -1;
  const auto left_ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<long long>(left_ms, 0, 100));
}

}  // namespace

fs::path find_program(const std::string& name, const std::string& missing_hint) {
  if (name.empty()) throw Error(fmt::format("no program given: {}", missing_hint));
  if (name.find('/') != std::string::npos) {
    std::error_code ec;
    if (!fs::exists(name, ec)) throw Error(fmt::format("{} does not exist: {}", name, missing_hint));
    if (fs::is_directory(name, ec)) throw Error(fmt::format("{} is a folder, not a program: {}", name, missing_hint));
    if (::access(name.c_str(), X_OK) != 0)
      throw Error(fmt::format("{} is not executable: {}", name, std::strerror(errno)));
    return name;
  }
  const char* env_path = std::getenv("PATH");
  const std::string dirs = env_path ? env_path : "/usr/local/bin:/usr/bin:/bin";
  for (size_t begin = 0; begin <= dirs.size();) {
    const size_t end = std::min(dirs.find(':', begin), dirs.size());
    const fs::path candidate = fs::path(end == begin ? "." : dirs.substr(begin, end - begin)) / name;
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec) && ::access(candidate.c_str(), X_OK) == 0) return candidate;
    begin = end + 1;
  }
  throw Error(fmt::format("{} not found on PATH: {}", name, missing_hint));
}

std::string command_line(const std::string& program, const std::vector<std::string>& args) {
  std::string line = shell_quote(program);
  for (const auto& a : args) {
    line += ' ';
    line += shell_quote(a);
  }
  return line;
}

ProgramResult run_program(const std::string& program, const std::vector<std::string>& args, const RunOptions& o) {
  SpawnSpec spec;
  spec.out = o.keep_stdout ? Sink::Pipe : Sink::Null;
  spec.err = o.merge_stderr ? (o.keep_stdout ? Sink::MergeIntoStdout : Sink::Null) : Sink::Pipe;
  spec.run = &o;
  Spawned child = spawn(program, args, spec);
  ProgramResult r;
  const bool has_deadline = o.timeout_s > 0;
  const auto deadline = after(has_deadline ? o.timeout_s : 0);
  char buf[4096];
  while (child.out_fd >= 0 || child.err_fd >= 0) {
    if (has_deadline && Clock::now() >= deadline) {
      r.timed_out = true;
      ::kill(child.pid, SIGKILL);
      break;
    }
    pollfd p[2] = {{child.out_fd, POLLIN, 0}, {child.err_fd, POLLIN, 0}};  // poll skips a negative fd
    const int n = ::poll(p, 2, poll_ms(has_deadline, deadline));
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    for (int k = 0; k < 2; ++k) {
      int& fd = k == 0 ? child.out_fd : child.err_fd;
      if (fd < 0 || p[k].revents == 0) continue;
      const ssize_t got = ::read(fd, buf, sizeof buf);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0)
        close_fd(fd);  // EOF: the program closed that stream (it is exiting)
      else
        (k == 0 ? r.output : r.errors).append(buf, static_cast<size_t>(got));
    }
  }
  close_fd(child.out_fd);
  close_fd(child.err_fd);
  int status = 0;
  while (::waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.exit_code = r.timed_out ? -1 : decode_status(status);
  return r;
}

ChildProcess::ChildProcess(const std::string& program, const std::vector<std::string>& args) {
  SpawnSpec spec;
  spec.die_with_parent = true;
  spec.parent = ::getpid();
  const Spawned child = spawn(program, args, spec);
  pid_ = child.pid;
  fd_ = child.out_fd;
}

ChildProcess::~ChildProcess() {
  stop();
}

bool ChildProcess::read_line(std::string& line, double timeout_s, bool* timed_out) {
  if (timed_out) *timed_out = false;
  const auto deadline = after(timeout_s);
  for (;;) {
    const auto nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return true;
    }
    if (fd_ < 0) return false;
    if (Clock::now() >= deadline) {
      if (timed_out) *timed_out = true;
      return false;
    }
    pollfd p{fd_, POLLIN, 0};
    const int n = ::poll(&p, 1, poll_ms(true, deadline));
    if (n < 0 && errno != EINTR) return false;
    if (n <= 0) continue;
    char buf[4096];
    const ssize_t got = ::read(fd_, buf, sizeof buf);
    if (got <= 0) {
      close_fd(fd_);
      if (!buffer_.empty()) {  // a last line without its newline
        line = std::move(buffer_);
        buffer_.clear();
        return true;
      }
      return false;
    }
    buffer_.append(buf, static_cast<size_t>(got));
  }
}

bool ChildProcess::exited(int* status) {
  if (!reaped_ && pid_ > 0) {
    int st = 0;
    if (::waitpid(pid_, &st, WNOHANG) == pid_) {
      reaped_ = true;
      status_ = decode_status(st);
    }
  }
  if (status) *status = status_;
  return reaped_;
}

void ChildProcess::stop(double grace_s) {
  close_fd(fd_);
  if (pid_ <= 0 || exited()) return;
  ::kill(pid_, SIGTERM);
  const auto deadline = after(grace_s);
  while (!exited() && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  if (!exited()) {
    ::kill(pid_, SIGKILL);
    int st = 0;
    while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
    status_ = decode_status(st);
  }
}

DetachedChild::DetachedChild(const std::string& what) {
  int fds[2];
  if (::pipe(fds) != 0) throw Error(fmt::format("cannot create a pipe to detach the {}", what));
  pid_ = ::fork();
  if (pid_ < 0) throw Error(fmt::format("cannot start the detached {} (fork failed)", what));
  if (pid_ == 0) {
    ::close(fds[0]);
    ::setsid();  // out of the caller's session: a Ctrl-C there does not reach it
    fd_ = fds[1];
    return;
  }
  ::close(fds[1]);
  fd_ = fds[0];
}

DetachedChild::Start DetachedChild::wait_until_ready(double timeout_s) {
  // The child writes one byte once it is ready, or closes the pipe by exiting first.
  pollfd p{fd_, POLLIN, 0};
  int polled = 0;
  while ((polled = ::poll(&p, 1, static_cast<int>(timeout_s * 1000))) < 0 && errno == EINTR) {
  }
  char ok = 0;
  Start start;
  start.ready = polled > 0 && ::read(fd_, &ok, 1) == 1;
  close_fd(fd_);
  if (start.ready) return start;
  if (polled == 0) {
    ::kill(pid_, SIGTERM);
    start.timed_out = true;
  }
  int status = 0;
  ::waitpid(pid_, &status, 0);
  start.exit_code = WIFEXITED(status) && WEXITSTATUS(status) != 0 ? WEXITSTATUS(status) : 1;
  return start;
}

void DetachedChild::ready(const fs::path& log) {
  const char ok = 1;
  [[maybe_unused]] const auto written = ::write(fd_, &ok, 1);
  close_fd(fd_);
  const int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  const int null = ::open("/dev/null", O_RDONLY);
  if (null >= 0) ::dup2(null, STDIN_FILENO);
  if (log_fd >= 0) {
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
  }
}

namespace {

// The process group of the live ChildGroup (0: none), for the stop-signal handler.
volatile sig_atomic_t g_child_group = 0;
constexpr int kForwarded[3] = {SIGINT, SIGTERM, SIGHUP};

extern "C" void forward_stop_signal(int sig) {
  const pid_t group = g_child_group;
  if (group > 0) ::kill(-group, SIGTERM);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  ::raise(sig);  // held until this handler returns, then ends the process as it would have
}

}  // namespace

ChildGroup::ChildGroup() {
  if (g_child_group != 0) throw Error("a second group of child processes while one runs (one at a time)");
  struct sigaction sa {};
  sa.sa_handler = forward_stop_signal;
  sigemptyset(&sa.sa_mask);
  for (int k = 0; k < 3; ++k) ::sigaction(kForwarded[k], &sa, &old_[k]);
}

ChildGroup::~ChildGroup() {
  stop();
  g_child_group = 0;
  for (int k = 0; k < 3; ++k) ::sigaction(kForwarded[k], &old_[k], nullptr);
}

pid_t ChildGroup::start(const std::string& program, const std::vector<std::string>& args) {
  SpawnSpec spec;
  spec.out = Sink::Inherit;
  spec.err = Sink::Inherit;
  spec.die_with_parent = true;
  spec.parent = ::getpid();
  spec.own_group = true;
  spec.group = group_;
  const Spawned child = spawn(program, args, spec);
  if (group_ == 0) {
    group_ = child.pid;
    g_child_group = group_;
  }
  pids_.push_back(child.pid);
  statuses_.push_back(0);
  reaped_.push_back(false);
  return child.pid;
}

std::vector<int> ChildGroup::wait_all() {
  for (size_t k = 0; k < pids_.size(); ++k) {
    if (reaped_[k]) continue;
    while (::waitpid(pids_[k], &statuses_[k], 0) < 0 && errno == EINTR) {
    }
    reaped_[k] = true;
  }
  g_child_group = 0;  // every child is reaped: the group's id may be another process's from now on
  return statuses_;
}

void ChildGroup::stop(double grace_s) {
  const auto running = [&] {
    bool any = false;
    for (size_t k = 0; k < pids_.size(); ++k) {
      if (!reaped_[k] && ::waitpid(pids_[k], &statuses_[k], WNOHANG) == pids_[k]) reaped_[k] = true;
      any = any || !reaped_[k];
    }
    return any;
  };
  if (group_ <= 0 || !running()) return;
  ::kill(-group_, SIGTERM);
  const auto deadline = after(grace_s);
  while (running() && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  if (running()) {
    ::kill(-group_, SIGKILL);
    wait_all();
  }
}

StopSignals::StopSignals() {
  sigemptyset(&set_);
  sigaddset(&set_, SIGINT);
  sigaddset(&set_, SIGTERM);
  sigaddset(&set_, SIGHUP);
  ::pthread_sigmask(SIG_BLOCK, &set_, nullptr);
}

int StopSignals::wait(double duration_s) const {
  for (;;) {
    const double wait_s = duration_s > 0 ? duration_s : 3600.0;
    timespec ts{};
    ts.tv_sec = static_cast<time_t>(wait_s);
    ts.tv_nsec = static_cast<long>((wait_s - std::floor(wait_s)) * 1e9);
    const int sig = ::sigtimedwait(&set_, nullptr, &ts);
    if (sig > 0) return sig;
    if (duration_s > 0) return 0;
    if (sig < 0 && errno != EAGAIN && errno != EINTR) return 0;
  }
}

}  // namespace pacer::base
