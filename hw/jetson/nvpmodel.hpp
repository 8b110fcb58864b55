#pragma once
// NVIDIA's nvpmodel as pacer drives it: `nvpmodel -q` (the mode in force) and `nvpmodel -m ID` (set
// a mode), through the binary at a path the caller gives (/usr/sbin/nvpmodel on a board; tests and
// the emulated tree give a script of their own). One home for its command line and output format.
#include <filesystem>
#include <string>

namespace pacer::hw {

// The largest nvpmodel mode id pacer accepts (ids are small: 0 .. 15 on every board NVIDIA ships).
inline constexpr int kMaxPowerModeId = 9999;

inline constexpr const char* kDefaultNvpmodel = "/usr/sbin/nvpmodel";

struct NvpmodelMode {
  int id = -1;
  std::string name;
};

// The mode in `nvpmodel -q` output: a line "NV Power Mode: NAME" and the id on a line of its own
// after it (other lines, such as "NV Fan Mode:quiet", are ignored). Throws Error quoting the output
// when it has neither.
NvpmodelMode parse_nvpmodel_query(const std::string& output, const std::string& program);

class Nvpmodel {
 public:
  // `binary` must exist and be executable (Error otherwise, naming the option to fix it).
  explicit Nvpmodel(std::filesystem::path binary, double timeout_s = 30);
  const std::filesystem::path& binary() const { return binary_; }
  NvpmodelMode query() const;
  // Sets the mode; throws Error with nvpmodel's own output when it fails (not root, unknown id).
  void set(int mode_id) const;

 private:
  std::filesystem::path binary_;
  double timeout_s_;
};

}  // namespace pacer::hw
