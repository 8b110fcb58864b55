#pragma once
// Outside programs that pacer runs (sbatch, gnuplot, nvpmodel, tegrastats, pacer itself): started
// with fork/exec from an argv list, never through sh, so an argument reaches the program exactly as
// written (no quoting); stdin from /dev/null; stopped by pid, never by name. The one home of how
// pacer starts a program, waits for it and reads what it printed; and of how pacer goes on in the
// background (DetachedChild) and waits for a stop signal (StopSignals).
#include <signal.h>
#include <sys/types.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace pacer::base {

struct RunOptions {
  double timeout_s = 0;                // > 0: SIGKILL after this long (ProgramResult::timed_out); 0: wait for its end
  bool merge_stderr = true;            // stderr into `output` (as sh's 2>&1); false: into `errors`
  bool keep_stdout = true;             // false: stdout to /dev/null (as sh's >/dev/null)
  std::filesystem::path cwd;           // the child's working folder; empty: this process's
  std::vector<std::string> unset_env;  // names removed from the child's environment
  std::vector<std::pair<std::string, std::string>> set_env;  // NAME, VALUE set in it
  // What to do when the program cannot be found, for the error ("apt-get install gnuplot-nox").
  std::string missing_hint = "install it or give the path of the program";
};

struct ProgramResult {
  int exit_code = -1;  // its exit status; 128 + the signal when a signal ended it; -1 when timed out
  bool timed_out = false;
  std::string output;  // stdout, and stderr with merge_stderr, byte for byte
  std::string errors;  // stderr without merge_stderr
};

// The program to start: `name` itself when it holds a '/', else the first executable `name` in a
// folder of $PATH. Throws Error "<name> not found on PATH: <missing_hint>" (or "<path> does not
// exist: ..." / "... is not executable: ...") when there is none.
std::filesystem::path find_program(const std::string& name, const std::string& missing_hint);

// Runs `program args...` to its end and returns what it printed and how it ended. `program` as for
// find_program. Throws Error when it cannot be started (missing, not executable, exec refused).
ProgramResult run_program(const std::string& program, const std::vector<std::string>& args, const RunOptions& o = {});

// `program args...` as a line a user can paste into sh (shell_quote on each word), for messages.
std::string command_line(const std::string& program, const std::vector<std::string>& args);

// A long-running child whose stdout is read line by line (tegrastats); its stderr is this process's.
// It gets SIGTERM when pacer dies (a reader must not outlive it). stop() sends SIGTERM to its pid,
// waits up to `grace_s`, then SIGKILL; the destructor stops it.
class ChildProcess {
 public:
  ChildProcess(const std::string& program, const std::vector<std::string>& args);
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

// A copy of this process that goes on in the background (`pacer emulate --detach`): forked into a
// session of its own, so a Ctrl-C in the caller's terminal does not reach it, it tells the caller
// through a pipe once it is ready; the caller waits for that, or for its end, with a timeout.
class DetachedChild {
 public:
  // Forks; both processes return, in_child() says which. `what` names the program in the errors
  // ("cannot start the detached <what> (fork failed)").
  explicit DetachedChild(const std::string& what);
  DetachedChild(const DetachedChild&) = delete;
  DetachedChild& operator=(const DetachedChild&) = delete;

  bool in_child() const { return pid_ == 0; }
  pid_t pid() const { return pid_; }  // the child's, in the caller

  struct Start {
    bool ready = false;      // the child called ready(): it goes on, unwaited
    bool timed_out = false;  // it did neither within the timeout and was stopped (SIGTERM, then reaped)
    int exit_code = 0;       // when not ready: its exit status when that is not 0, else 1
  };
  // In the caller: waits up to `timeout_s` for the child's ready() or its exit (which closes the
  // pipe; it printed why).
  Start wait_until_ready(double timeout_s);
  // In the child, once it is ready: tells the caller, then reads stdin from /dev/null and appends
  // its stdout and stderr to `log`.
  void ready(const std::filesystem::path& log);

 private:
  pid_t pid_ = -1;
  int fd_ = -1;  // the caller's read end, the child's write end of the ready pipe
};

// Children that must not outlive this process, however it ends (the local shard processes of
// `--jobs N`): started in one process group of their own (stdin from /dev/null, stdout and stderr
// this process's), each with a parent-death signal (SIGTERM once this process is gone, SIGKILL of it
// included); while the group lives, SIGINT, SIGTERM and SIGHUP to this process are passed on to the
// whole group (as SIGTERM) before this process ends of them as it would have. One group at a time.
// The destructor stops the children still running (SIGTERM, then SIGKILL) and reaps them.
class ChildGroup {
 public:
  ChildGroup();
  ~ChildGroup();
  ChildGroup(const ChildGroup&) = delete;
  ChildGroup& operator=(const ChildGroup&) = delete;

  // Starts `program args...` (as find_program) in the group; throws Error when it cannot be started.
  pid_t start(const std::string& program, const std::vector<std::string>& args);
  // Waits for every child started; their wait statuses (as waitpid's, for WIFEXITED...) in start order.
  std::vector<int> wait_all();
  // The process group's id (the first child's pid; 0 before one is started).
  pid_t group() const { return group_; }
  // SIGTERM to the group, up to `grace_s` for the children to end, then SIGKILL; reaps them.
  void stop(double grace_s = 2.0);

 private:
  pid_t group_ = 0;
  std::vector<pid_t> pids_;
  std::vector<int> statuses_;
  std::vector<bool> reaped_;
  struct sigaction old_[3]{};
};

// SIGINT, SIGTERM and SIGHUP held for wait(), in this thread and in every thread started after the
// constructor (construct it first), for the rest of the process: a server's threads never see them.
class StopSignals {
 public:
  StopSignals();
  // Waits for one of them, or at most `duration_s` when that is > 0 (0: until one comes). Returns
  // the signal, or 0 when the duration passed (or the wait failed).
  int wait(double duration_s) const;

 private:
  sigset_t set_{};
};

}  // namespace pacer::base
