#pragma once
// Outside programs that pacer drives on a board (nvpmodel, tegrastats): started with fork/exec from
// an explicit path (a parameter everywhere, so tests point it at a script of their own), stopped by
// pid, never by name.
#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace pacer::hw {

struct ProgramResult {
  int exit_code = -1;  // -1: killed by a signal or timed out
  bool timed_out = false;
  std::string output;  // stdout and stderr together
};

// Runs `program args...` to its end (at most `timeout_s`, then SIGKILL), stdout and stderr captured.
// Throws Error when the program cannot be started (missing, not executable).
ProgramResult run_program(const std::filesystem::path& program, const std::vector<std::string>& args, double timeout_s);

// A long-running child whose stdout is read line by line (tegrastats). stop() sends SIGTERM to its
// pid, waits up to `grace_s`, then SIGKILL; the destructor stops it.
class ChildProcess {
 public:
  ChildProcess(const std::filesystem::path& program, const std::vector<std::string>& args);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // The next line of stdout (without its newline), waiting at most `timeout_s`. Returns false at
  // end of output (the child closed stdout or exited) or on timeout (`timed_out` says which).
  bool read_line(std::string& line, double timeout_s, bool* timed_out = nullptr);
  // Whether the child has exited; `status` receives its exit code (128 + signal when killed).
  bool exited(int* status = nullptr);
  void stop(double grace_s = 2.0);

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
  std::string buffer_;
  bool reaped_ = false;
  int status_ = 0;
};

// A program path is one pacer may run on a restore (from a state file, possibly as root): an
// absolute path to a regular file that is executable and writable by nobody but its owner, owned by
// root or by this user. Returns the reason when it is not ("" when it is).
std::string unsafe_program_reason(const std::filesystem::path& program);

}  // namespace pacer::hw
