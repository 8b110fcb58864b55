#include "hw/jetson/restore_guard.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>

#include "base/error.hpp"
#include "base/files.hpp"
#include "base/hash.hpp"
#include "base/units.hpp"
#include "hw/jetson/nvpmodel.hpp"
#include "hw/jetson/sysfs_io.hpp"
#include "traces/store/store.hpp"

namespace pacer::hw {
namespace fs = std::filesystem;

fs::path default_state_dir() {
  if (const char* d = std::getenv("PACER_STATE_DIR"); d && *d) return d;
  if (const char* d = std::getenv("XDG_STATE_HOME"); d && *d) return fs::path(d) / "pacer";
  if (const char* d = std::getenv("HOME"); d && *d) return fs::path(d) / ".local/state/pacer";
  return fs::path(fmt::format("/tmp/pacer-state-{}", ::getuid()));
}

fs::path default_state_file(const fs::path& sysfs_root) {
  std::error_code ec;
  fs::path canon = fs::weakly_canonical(sysfs_root, ec);
  if (ec) canon = fs::absolute(sysfs_root);
  std::string key = canon.string();
  if (key == "/") return default_state_dir() / "jetson-sysfs.state";
  // A hash keeps file names short and stable for deep test roots.
  return default_state_dir() / fmt::format("jetson-sysfs-{:016x}.state", base::text_hash(key));
}

void check_state_dir(const fs::path& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return;  // nothing there yet: nothing planted either
  if (!S_ISDIR(st.st_mode)) throw Error(fmt::format("state folder {} is not a folder: remove it", dir.string()));
  if (st.st_uid != ::getuid())
    throw Error(
        fmt::format("state folder {} belongs to user {}, not to you ({}): another user could choose what a "
                    "restore writes; remove it or point PACER_STATE_DIR at a folder of yours",
                    dir.string(), st.st_uid, ::getuid()));
  if (st.st_mode & S_IWOTH)
    throw Error(
        fmt::format("state folder {} is writable by other users (mode {:o}): another user could choose what a "
                    "restore writes; chmod o-w it or point PACER_STATE_DIR at a private folder",
                    dir.string(), st.st_mode & 07777));
}

void write_state_file(const fs::path& file, const RestoreState& state) {
  std::ostringstream os;
  os << "# pacer restore state, version 1: `pacer restore` replays the write= lines in order\n";
  os << "pid=" << state.pid << "\n";
  os << "device=" << state.device << "\n";
  if (!state.sysfs_root.empty()) os << "root=" << state.sysfs_root.string() << "\n";
  for (const auto& w : state.writes) os << "write=" << w.path.string() << "\t" << w.value << "\n";
  if (state.mode)
    os << "nvpmodel=" << state.mode->nvpmodel.string() << "\t" << state.mode->mode_id << "\t" << state.mode->mode_name
       << "\n";
  const fs::path dir = file.parent_path().empty() ? fs::path(".") : file.parent_path();
  std::error_code ec;
  if (!fs::exists(dir, ec) && fs::create_directories(dir, ec))
    fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace, ec);
  check_state_dir(dir);
  traces::write_file_atomic(file, os.str());
}

RestoreState read_state_file(const fs::path& file) {
  check_state_dir(file.parent_path().empty() ? fs::path(".") : file.parent_path());
  // The file itself as its folder: pacer writes it as a plain file of yours that only you may write.
  // A link (to /etc/shadow, say) is refused before anything of it is read.
  struct stat st {};
  if (::lstat(file.c_str(), &st) != 0)
    throw Error(fmt::format("state file {} cannot be read: nothing to restore", file.string()));
  if (S_ISLNK(st.st_mode))
    throw Error(
        fmt::format("state file {} is a symbolic link, not a file pacer wrote: refused, nothing was written; "
                    "delete it after checking it",
                    file.string()));
  if (!S_ISREG(st.st_mode))
    throw Error(
        fmt::format("state file {} is not a regular file: refused, nothing was written; delete it", file.string()));
  if (st.st_uid != ::getuid())
    throw Error(
        fmt::format("state file {} belongs to user {}, not to you ({}): refused, nothing was written; delete "
                    "it after checking it",
                    file.string(), st.st_uid, ::getuid()));
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    throw Error(
        fmt::format("state file {} is writable by other users (mode {:o}): another user could choose what a "
                    "restore writes; refused, nothing was written; delete it after checking it",
                    file.string(), st.st_mode & 07777));
  std::istringstream in(base::read_regular_file(file, base::kMaxConfigFileBytes, "state file"));
  RestoreState s;
  std::string line;
  int lineno = 0;
  bool has_pid = false;  // every state file pacer writes has one (write_state)
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty() || line[0] == '#') continue;
    const auto eq = line.find('=');
    if (eq == std::string::npos)
      throw Error(fmt::format("{}:{}: malformed line (not KEY=VALUE); delete the file after restoring by hand",
                              file.string(), lineno));
    const std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    if (key == "pid") {
      const auto pid = units::to_integer(value, 0, INT32_MAX);
      if (!pid)
        throw Error(fmt::format("{}:{}: '{}' is not a process id; delete the file after restoring by hand",
                                file.string(), lineno, value));
      s.pid = static_cast<decltype(s.pid)>(*pid);
      has_pid = true;
    } else if (key == "device")
      s.device = value;
    else if (key == "root")
      s.sysfs_root = value;
    else if (key == "write") {
      const auto tab = value.rfind('\t');
      if (tab == std::string::npos)
        throw Error(
            fmt::format("{}:{}: malformed write line; delete the file after restoring by hand", file.string(), lineno));
      s.writes.push_back({value.substr(0, tab), value.substr(tab + 1)});
    } else if (key == "nvpmodel") {
      // PATH<TAB>ID<TAB>NAME
      const auto t1 = value.find('\t');
      const auto t2 = t1 == std::string::npos ? std::string::npos : value.find('\t', t1 + 1);
      const std::string id =
          t1 == std::string::npos ? "" : value.substr(t1 + 1, t2 == std::string::npos ? t2 : t2 - t1 - 1);
      const auto parsed = units::to_integer(id, 0, kMaxPowerModeId);
      const long mode_id = parsed ? static_cast<long>(*parsed) : -1;
      if (t1 == std::string::npos || !parsed)
        throw Error(
            fmt::format("{}:{}: malformed nvpmodel line; delete the file after restoring the power mode by hand "
                        "(nvpmodel -m ID)",
                        file.string(), lineno));
      s.mode = ModeRestore{value.substr(0, t1), static_cast<int>(mode_id),
                           t2 == std::string::npos ? "" : value.substr(t2 + 1)};
    } else {  // an empty file or one of other keys read as "restored (0 writes)", and was deleted
      // The line is not echoed, as a malformed one is not.
      throw Error(fmt::format("{}:{}: unknown key (not a pacer state file); delete the file after restoring by hand",
                              file.string(), lineno));
    }
  }
  if (!has_pid)
    throw Error(fmt::format("{}: not a pacer state file (no pid= line); delete the file after restoring by hand",
                            file.string()));
  return s;
}

bool restorable_path(const fs::path& path, const fs::path& sysfs_root) {
  const std::string name = path.filename().string();
  if (name != "min_freq" && name != "max_freq") return false;
  std::error_code ec;
  const fs::path dir = fs::canonical(path.parent_path(), ec);
  if (ec) return false;
  const fs::path sys = fs::weakly_canonical(sysfs_root / "sys", ec);
  if (ec) return false;
  // Inside sys/ of the root, component by component ("/sys" does not contain "/sysfoo").
  auto d = dir.begin();
  for (auto r = sys.begin(); r != sys.end(); ++r, ++d)
    if (d == dir.end() || *d != *r) return false;
  if (d == dir.end()) return false;
  return fs::is_regular_file(dir / "available_frequencies", ec) && !fs::is_symlink(path, ec);
}

namespace {

// The program a process runs: /proc/PID/exe, else (another user's process) its argv[0].
std::string program_of(long pid) {
  std::error_code ec;
  const fs::path exe = fs::read_symlink(fmt::format("/proc/{}/exe", pid), ec);
  if (!ec) return exe.string();
  std::ifstream cmdline(fmt::format("/proc/{}/cmdline", pid), std::ios::binary);
  std::string argv0;
  std::getline(cmdline, argv0, '\0');
  return argv0;
}

}  // namespace

bool process_alive(long pid) {
  if (pid <= 0 || pid == static_cast<long>(::getpid())) return false;
  if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno != EPERM) return false;
  // Alive, but a pacer process? It runs this program, or one named pacer* (pacer, pacer-train).
  const std::string program = program_of(pid);
  if (program.empty()) return false;
  std::error_code ec;
  if (program == fs::read_symlink("/proc/self/exe", ec).string()) return true;
  return fs::path(program).filename().string().rfind("pacer", 0) == 0;
}

std::vector<std::string> replay_restore(const std::vector<RestoreWrite>& writes, SysfsIo& io) {
  for (const auto& w : writes) {
    try {
      write_retrying_busy(io, w.path, w.value);  // a busy devfreq node is retried, as when pinning
    } catch (const IoError& e) {
      spdlog::debug("restore: {} (a later write in the sequence may fix it)", e.what());
    }
  }
  std::vector<std::string> wrong;
  for (size_t i = 0; i < writes.size(); ++i) {
    bool last = true;
    for (size_t j = i + 1; j < writes.size(); ++j)
      if (writes[j].path == writes[i].path) last = false;
    if (!last) continue;
    try {
      if (io.read(writes[i].path) != writes[i].value)
        wrong.push_back(fmt::format("{} (holds {}, should be {})", writes[i].path.string(), io.read(writes[i].path),
                                    writes[i].value));
    } catch (const IoError& e) {
      wrong.push_back(e.what());
    }
  }
  return wrong;
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

void replay_mode_restore(const ModeRestore& mode) {
  if (const auto why = unsafe_program_reason(mode.nvpmodel); !why.empty())
    throw Error(
        fmt::format("the saved power-mode restore names {} as nvpmodel, but {}: refused; put the mode back by "
                    "hand (sudo nvpmodel -m {})",
                    mode.nvpmodel.string(), why, mode.mode_id));
  const Nvpmodel tool(mode.nvpmodel);
  tool.set(mode.mode_id);
  const auto now = tool.query();
  if (now.id != mode.mode_id)
    throw Error(
        fmt::format("`{} -m {}` left mode {} ({}) in force", mode.nvpmodel.string(), mode.mode_id, now.id, now.name));
}

// ---------------------------------------------------------------------------------------------
// Signal side. Everything the handler touches is preallocated, fixed-size and lock-free.
namespace {

constexpr int kSlots = 4;
constexpr int kMaxWrites = 8;
constexpr size_t kPathMax = 1024;
constexpr size_t kValueMax = 64;
constexpr int kExecArgs = 4;

struct SignalWrite {
  char path[kPathMax];
  char value[kValueMax];
  size_t value_len;
};

struct Slot {
  std::atomic<int> state{0};  // 0 free, 1 being filled, 2 armed
  int count = 0;
  SignalWrite writes[kMaxWrites];
  char state_file[kPathMax];
  int exec_argc = 0;  // > 0: run exec_args after the writes (nvpmodel -m ID)
  char exec_args[kExecArgs][kPathMax];
};

Slot g_slots[kSlots];
constexpr std::array<int, 4> kSignals = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
struct sigaction g_previous[kSignals.size()];
std::once_flag g_install_once;

// _Fork (unlike fork) runs no atfork handlers and takes no locks: async-signal-safe, like execve
// and waitpid.
void run_exec_signal_safe(Slot& slot) {
  char* argv[kExecArgs + 1];
  for (int i = 0; i < slot.exec_argc; ++i) argv[i] = slot.exec_args[i];
  argv[slot.exec_argc] = nullptr;
  const pid_t pid = ::_Fork();
  if (pid == 0) {
    ::execve(argv[0], argv, environ);
    ::_exit(127);
  }
  if (pid < 0) return;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

void replay_slots_signal_safe() {
  for (auto& slot : g_slots) {
    int expected = 2;
    // Claim the slot so two signals on two threads never replay it twice.
    if (!slot.state.compare_exchange_strong(expected, 1)) continue;
    for (int i = 0; i < slot.count; ++i) {
      const int fd = ::open(slot.writes[i].path, O_WRONLY | O_TRUNC | O_CLOEXEC);
      if (fd < 0) continue;
      ssize_t n = ::write(fd, slot.writes[i].value, slot.writes[i].value_len);
      (void)n;
      ::close(fd);
    }
    if (slot.exec_argc > 0) run_exec_signal_safe(slot);
    if (slot.state_file[0] != '\0') ::unlink(slot.state_file);
    slot.state.store(0);
  }
}

void on_signal(int sig) {
  const int saved_errno = errno;
  replay_slots_signal_safe();
  // Hand the signal to whoever had it before us (default: terminate with the signal's status).
  for (size_t i = 0; i < kSignals.size(); ++i)
    if (kSignals[i] == sig) ::sigaction(sig, &g_previous[i], nullptr);
  errno = saved_errno;
  ::raise(sig);
}

void install_handlers() {
  for (size_t i = 0; i < kSignals.size(); ++i) {
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (int s : kSignals) sigaddset(&sa.sa_mask, s);
    sa.sa_flags = 0;
    ::sigaction(kSignals[i], &sa, &g_previous[i]);
  }
}

void copy_bounded(char* dst, size_t cap, const std::string& src, const char* what) {
  if (src.size() + 1 > cap)
    throw Error(fmt::format("{} '{}' is too long for the signal-restore table ({} bytes at most)", what, src, cap - 1));
  std::memcpy(dst, src.c_str(), src.size() + 1);
}

// Blocks the restore signals in this thread while a slot changes, so our own handler never sees
// half a slot; handlers on other threads skip slots that are not in state 2.
class BlockSignals {
 public:
  BlockSignals() {
    sigset_t set;
    sigemptyset(&set);
    for (int s : kSignals) sigaddset(&set, s);
    ::pthread_sigmask(SIG_BLOCK, &set, &old_);
  }
  ~BlockSignals() { ::pthread_sigmask(SIG_SETMASK, &old_, nullptr); }

 private:
  sigset_t old_;
};

}  // namespace

void SignalRestoreGuard::arm(const std::vector<RestoreWrite>& writes, const fs::path& state_file,
                             const std::vector<std::string>& exec_argv) {
  if (writes.size() > static_cast<size_t>(kMaxWrites))
    throw Error(fmt::format("{} restore writes exceed the signal-restore table ({})", writes.size(), kMaxWrites));
  if (exec_argv.size() > static_cast<size_t>(kExecArgs))
    throw Error(fmt::format("a restore command of {} words exceeds the signal-restore table ({})", exec_argv.size(),
                            kExecArgs));
  for (const auto& a : exec_argv)
    if (a.size() + 1 > kPathMax) throw Error(fmt::format("restore command word '{}' is too long", a));
  // Validate before claiming a slot so a too-long path never leaks one.
  for (const auto& w : writes) {
    if (w.path.string().size() + 1 > kPathMax || w.value.size() + 1 > kValueMax)
      throw Error(fmt::format("restore write '{}' is too long for the signal-restore table", w.path.string()));
  }
  if (state_file.string().size() + 1 > kPathMax)
    throw Error(fmt::format("state file path '{}' is too long for the signal-restore table", state_file.string()));
  std::call_once(g_install_once, install_handlers);
  BlockSignals block;
  if (slot_ < 0) {
    for (int i = 0; i < kSlots; ++i) {
      int expected = 0;
      if (g_slots[i].state.compare_exchange_strong(expected, 1)) {
        slot_ = i;
        break;
      }
    }
    if (slot_ < 0) throw Error("too many devices pinned at once: the signal-restore table is full");
  } else {
    g_slots[slot_].state.store(1);
  }
  Slot& s = g_slots[slot_];
  for (size_t i = 0; i < writes.size(); ++i) {
    copy_bounded(s.writes[i].path, kPathMax, writes[i].path.string(), "path");
    copy_bounded(s.writes[i].value, kValueMax, writes[i].value, "value");
    s.writes[i].value_len = writes[i].value.size();
  }
  s.count = static_cast<int>(writes.size());
  for (size_t i = 0; i < exec_argv.size(); ++i) copy_bounded(s.exec_args[i], kPathMax, exec_argv[i], "command word");
  s.exec_argc = static_cast<int>(exec_argv.size());
  copy_bounded(s.state_file, kPathMax, state_file.string(), "state file");
  s.state.store(2);
}

void SignalRestoreGuard::disarm() {
  if (slot_ < 0) return;
  BlockSignals block;
  int expected = 2;
  // A handler that already claimed the slot (state 1) replays it and frees it itself.
  if (g_slots[slot_].state.compare_exchange_strong(expected, 1)) {
    g_slots[slot_].count = 0;
    g_slots[slot_].exec_argc = 0;
    g_slots[slot_].state.store(0);
  }
  slot_ = -1;
}

}  // namespace pacer::hw
