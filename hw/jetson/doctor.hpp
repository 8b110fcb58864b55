#pragma once
// `pacer doctor`: whether this machine can run each part of pacer, one check per line (ok, warn,
// missing) with what to do where it cannot. Every path is taken under a root, so the checks run
// unchanged on the emulated trees of hw/emulator (tests) and on a board (root "/").
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hw/jetson/sysfs_io.hpp"

namespace pacer::hw {

enum class CheckStatus {
  ok,
  warn,     // a part of pacer that a validation does not need is unavailable (tegrastats, L4T file)
  missing,  // a validation on this machine needs it
};
const char* check_status_name(CheckStatus status);  // "ok", "warn", "missing"

struct DoctorCheck {
  std::string name;  // "gpu devfreq", "power rails", ...
  CheckStatus status = CheckStatus::ok;
  std::string detail;  // what was found
  std::string fix;     // what to do ("" when ok)
};

// The libtorch a training program links: what pacer-train answers to `pacer doctor --torch-line`.
struct TorchInfo {
  bool linked = false;  // false: not linked in this front, or pacer-train did not answer
  std::string version;  // "1.13.1"
  bool cuda = false;    // torch::cuda::is_available()
  int cuda_devices = 0;
  std::string blas_kernels = "unknown";  // OpenBLAS's kernel set ("Haswell"), base::cpu_kernel_pins
  std::string note;                      // why it is not known, when not linked
};
// The one-line form of TorchInfo between the two programs: "libtorch 1.13.1 cuda=no devices=0 blas=Haswell".
std::string torch_line(const TorchInfo& info);
// Parses torch_line's output (the last line of `text` that starts with "libtorch "); linked = false
// with a note quoting the text when there is none.
TorchInfo parse_torch_line(const std::string& text);

// The L4T release from the first line of /etc/nv_tegra_release ("# R35 (release), REVISION: 4.1,
// ..." -> "R35.4.1"); "" when the text is not in that form.
std::string parse_l4t_release(const std::string& text);

struct DoctorOptions {
  std::filesystem::path root = "/";       // the board's file system (a tree of `pacer emulate` in tests)
  std::filesystem::path store_dir = ".";  // where the trace store will be written
  std::filesystem::path state_file;       // empty: default_state_file(root)
  std::filesystem::path nvpmodel;         // empty: ROOT/usr/sbin/nvpmodel, else an emulated tree's own
  std::filesystem::path tegrastats;       // empty: ROOT/usr/bin/tegrastats
  double min_free_bytes = 1e9;            // less free space under store_dir is a missing check
  std::optional<TorchInfo> torch;         // nullopt: the libtorch line is skipped
  std::shared_ptr<SysfsIo> io;            // null: the real files
};

struct DoctorReport {
  bool jetson = false;  // a GPU devfreq node was found under the root
  std::vector<DoctorCheck> checks;
  // Everything a validation on this machine needs is there (no check is missing).
  bool ready() const;
};

// Runs every check; never throws for what it finds (a failing check is a line of the report).
DoctorReport run_doctor(const DoctorOptions& options);

// One line per check, "ok      NAME: DETAIL" / "missing NAME: DETAIL -> FIX", then a verdict line.
std::string format_doctor(const DoctorReport& report);

}  // namespace pacer::hw
