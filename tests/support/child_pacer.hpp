#pragma once
// Test support for crash and fault tests: the built `pacer` binary (PACER_BINARY) as a child
// process, started in the background (spawn_pacer) or watched line by line and killed on cue
// (run_pacer_until).
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace pacer::testing {

// Starts `pacer ARGS` in the background with stdout to `out` and stderr to `err` (the same file
// when equal); returns its pid.
inline pid_t spawn_pacer(const std::vector<std::string>& args, const std::string& out, const std::string& err) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = err == out ? o : ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(o, 1);
    ::dup2(e, 2);
    std::vector<std::string> copy = args;
    static std::string bin = PACER_BINARY;
    std::vector<char*> argv{bin.data()};
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(bin.c_str(), argv.data());
    ::_exit(127);
  }
  return pid;
}

// A small file's content without trailing newlines and spaces ("" when missing): sysfs values, logs.
inline std::string read_trimmed(const std::string& path) {
  std::ifstream in(path);
  std::string s((std::istreambuf_iterator<char>(in)), {});
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// The raw wait status of a child.
inline int wait_status(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

struct KilledRun {
  int exit_status = -1;  // raw wait status
  bool killed = false;   // SIGKILL was sent
};

// stdout goes to /dev/null. `kill_now` sees every stderr line (with its newline); empty: never kill.
inline KilledRun run_pacer_until(const std::vector<std::string>& args,
                                 const std::function<bool(const std::string&)>& kill_now, int delay_ms) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], STDERR_FILENO);
    const int devnull = ::open("/dev/null", O_WRONLY);
    ::dup2(devnull, STDOUT_FILENO);
    ::close(fds[0]);
    std::vector<char*> argv;
    static std::string bin = PACER_BINARY;
    argv.push_back(bin.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(bin.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  KilledRun r;
  FILE* err = ::fdopen(fds[0], "r");
  char line[4096];
  while (std::fgets(line, sizeof line, err)) {
    if (!kill_now || !kill_now(line)) continue;
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    ::kill(pid, SIGKILL);
    r.killed = true;
    break;
  }
  std::fclose(err);
  ::waitpid(pid, &r.exit_status, 0);
  return r;
}

}  // namespace pacer::testing
