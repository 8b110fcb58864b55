#pragma once
// Guaranteed restore of device settings on every exit path:
//  - normal exit and exceptions: the owning backend's destructor calls restore();
//  - SIGINT/SIGTERM/SIGHUP/SIGQUIT: an async-signal-safe handler replays pre-computed writes with
//    open/write/close only (no allocation, no locks), then re-raises the signal;
//  - a crash or SIGKILL: a state file records the writes; `pacer restore` (or the next pacer run
//    on the same tree) replays it.
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace pacer::hw {

class SysfsIo;

// One write that puts a setting back. Replayed in order; a write may fail harmlessly (e.g. the
// kernel refusing min_freq above max_freq) as long as the final state is right, so sequences are
// written to be order-robust (min, max, min).
struct RestoreWrite {
  std::filesystem::path path;
  std::string value;
};

// A power mode to put back with `nvpmodel -m ID` (hw/jetson/nvpmodel.hpp), after the writes.
struct ModeRestore {
  std::filesystem::path nvpmodel;  // the binary that set the modes, absolute
  int mode_id = -1;
  std::string mode_name;  // for messages
};

// What a state file holds.
struct RestoreState {
  long pid = 0;
  std::string device;  // free text: which device, for messages
  std::vector<RestoreWrite> writes;
  std::filesystem::path sysfs_root;  // the root the device was found under (empty in old files)
  std::optional<ModeRestore> mode;   // the power mode in force before the run changed it
};

// Default directory of state files: $PACER_STATE_DIR, else $XDG_STATE_HOME/pacer, else
// $HOME/.local/state/pacer, else /tmp/pacer-state-<uid>.
std::filesystem::path default_state_dir();
// One state file per sysfs root, so a test tree never touches the real board's file.
std::filesystem::path default_state_file(const std::filesystem::path& sysfs_root);

// Both refuse (Error) a state folder that is not owned by this user or that others may write to:
// anyone who can put a file there chooses what the next restore writes. write_state_file creates
// a missing folder with mode 0700. read_state_file also refuses a state file that is a symbolic
// link, not a regular file, not yours or writable by group or others (nothing of it is echoed).
void write_state_file(const std::filesystem::path& file, const RestoreState& state);
RestoreState read_state_file(const std::filesystem::path& file);
void check_state_dir(const std::filesystem::path& dir);

// Whether a restore may write `path`: only the frequency limits (min_freq, max_freq) of a devfreq
// node (a folder with available_frequencies) under `sysfs_root`'s sys/ tree, symbolic links resolved.
bool restorable_path(const std::filesystem::path& path, const std::filesystem::path& sysfs_root);
// True when `pid` names a live pacer process other than this one: one that runs this program or a
// program named pacer* (/proc/PID/exe, else its argv[0]); pid 1 or a reused pid of another program
// is not.
bool process_alive(long pid);

// Replays the writes (each retried while the driver answers EBUSY, see BusyRetry); then checks each
// path holds its last written value. Returns the paths that do not (empty: success). Never throws
// for a single failed write.
std::vector<std::string> replay_restore(const std::vector<RestoreWrite>& writes, SysfsIo& io);

// A program path is one pacer may run on a restore (from a state file, possibly as root): an
// absolute path to a regular file that is executable and writable by nobody but its owner, owned by
// root or by this user. Returns the reason when it is not ("" when it is).
std::string unsafe_program_reason(const std::filesystem::path& program);

// Puts a saved power mode back: `nvpmodel -m ID`, then checks `nvpmodel -q` reports it. Throws
// Error when it fails or when the saved program is not one pacer may run (unsafe_program_reason: a
// state file must not choose what runs as root).
void replay_mode_restore(const ModeRestore& mode);

// Registers writes to replay from a signal handler. At most a few guards may be armed at once
// (one per pinned device); arming more throws Error.
class SignalRestoreGuard {
 public:
  SignalRestoreGuard() = default;
  ~SignalRestoreGuard() { disarm(); }
  SignalRestoreGuard(const SignalRestoreGuard&) = delete;
  SignalRestoreGuard& operator=(const SignalRestoreGuard&) = delete;

  // Installs the handlers (once per process) and arms this guard with `writes`; `state_file` is
  // unlinked by the handler after replaying them. `exec_argv` (program path first, at most 4
  // words), when given, is run after the writes (fork/exec, waited for): `nvpmodel -m ID`.
  // Re-arming replaces all of it.
  void arm(const std::vector<RestoreWrite>& writes, const std::filesystem::path& state_file,
           const std::vector<std::string>& exec_argv = {});
  void disarm();
  bool armed() const { return slot_ >= 0; }

 private:
  int slot_ = -1;
};

}  // namespace pacer::hw
