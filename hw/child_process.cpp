#include "hw/child_process.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "traces/error.hpp"

namespace pacer::hw {
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

// fork + exec with stdout (and stderr when `merge_stderr`) into a pipe; stdin from /dev/null.
// `die_with_parent`: the child gets SIGTERM when pacer dies (a reader such as tegrastats must not
// outlive it); a setter such as nvpmodel is left to finish what it started.
pid_t spawn(const fs::path& program, const std::vector<std::string>& args, bool merge_stderr, bool die_with_parent,
            int& read_fd) {
  std::error_code ec;
  if (!fs::exists(program, ec))
    throw Error(fmt::format("{} does not exist: give the path of the program", program.string()));
  if (::access(program.c_str(), X_OK) != 0)
    throw Error(fmt::format("{} is not executable: {}", program.string(), std::strerror(errno)));
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw Error(fmt::format("pipe: {}", std::strerror(errno)));
  std::vector<std::string> copy = args;
  std::string path = program.string();
  std::vector<char*> argv{path.data()};
  for (auto& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw Error(fmt::format("cannot start {}: {}", path, std::strerror(errno)));
  }
  if (pid == 0) {
    const int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd >= 0) ::dup2(null_fd, 0);
    ::dup2(fds[1], 1);
    if (merge_stderr) ::dup2(fds[1], 2);
    if (die_with_parent) ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    ::execv(path.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  read_fd = fds[0];
  return pid;
}

int decode_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

ProgramResult run_program(const fs::path& program, const std::vector<std::string>& args, double timeout_s) {
  int fd = -1;
  const pid_t pid = spawn(program, args, true, false, fd);
  ProgramResult r;
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  char buf[4096];
  for (;;) {
    const auto left_ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left_ms <= 0) {
      r.timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    pollfd p{fd, POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left_ms, 100)));
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    const ssize_t got = ::read(fd, buf, sizeof buf);
    if (got <= 0) break;  // EOF: the program closed its output (it is exiting)
    r.output.append(buf, static_cast<size_t>(got));
  }
  ::close(fd);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.exit_code = r.timed_out ? -1 : decode_status(status);
  return r;
}

ChildProcess::ChildProcess(const fs::path& program, const std::vector<std::string>& args) {
  pid_ = spawn(program, args, false, true, fd_);
}

ChildProcess::~ChildProcess() {
  stop();
}

bool ChildProcess::read_line(std::string& line, double timeout_s, bool* timed_out) {
  if (timed_out) *timed_out = false;
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    const auto nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return true;
    }
    if (fd_ < 0) return false;
    const auto left_ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left_ms <= 0) {
      if (timed_out) *timed_out = true;
      return false;
    }
    pollfd p{fd_, POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left_ms, 100)));
    if (n < 0 && errno != EINTR) return false;
    if (n <= 0) continue;
    char buf[4096];
    const ssize_t got = ::read(fd_, buf, sizeof buf);
    if (got <= 0) {
      ::close(fd_);
      fd_ = -1;
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
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  if (pid_ <= 0 || exited()) return;
  ::kill(pid_, SIGTERM);
  const auto deadline = Clock::now() + std::chrono::duration<double>(grace_s);
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

std::string unsafe_program_reason(const fs::path& program) {
  if (!program.is_absolute()) return "it is not an absolute path";
  struct stat st {};
  if (::stat(program.c_str(), &st) != 0) return fmt::format("it cannot be found ({})", std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return "it is not a regular file";
  if (!(st.st_mode & S_IXUSR)) return "it is not executable";
  if (st.st_mode & (S_IWGRP | S_IWOTH)) return fmt::format("other users may write it (mode {:o})", st.st_mode & 07777);
  if (st.st_uid != 0 && st.st_uid != ::getuid())
    return fmt::format("it belongs to user {}, neither root nor you", st.st_uid);
  return "";
}

}  // namespace pacer::hw
