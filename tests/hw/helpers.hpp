#pragma once
// Shared fixtures for the hw tests: temporary directories and a SysfsIo that behaves like the
// devfreq and INA3221 drivers of a Jetson kernel (fault injection included).
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "hw/jetson/sysfs_io.hpp"

namespace pacer::hw::test {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "pacer-hw-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline std::string slurp(const std::filesystem::path& p) { return pacer::hw::real_sysfs_io().read(p); }

// Kernel semantics on a fake tree: min_freq above max_freq is EINVAL (L4T 4.9 devfreq), cur_freq
// follows the range, and writes to `denied` paths fail with EACCES as for an unprivileged user.
class KernelSimIo : public SysfsIo {
 public:
  std::set<std::string> denied;
  std::vector<std::pair<std::string, std::string>> log;  // successful writes, in order

  void write(const std::filesystem::path& path, const std::string& value) override {
    if (denied.count(path.filename().string()) || denied.count(path.string()))
      throw IoError("cannot write " + path.string() + ": Permission denied", EACCES);
    const auto dir = path.parent_path();
    const std::string file = path.filename().string();
    if (file == "min_freq" || file == "max_freq") {
      const long long v = std::stoll(value);
      const long long other = std::stoll(SysfsIo::read(dir / (file == "min_freq" ? "max_freq" : "min_freq")));
      if ((file == "min_freq" && v > other) || (file == "max_freq" && v < other))
        throw IoError("cannot write " + path.string() + ": Invalid argument", EINVAL);
    }
    SysfsIo::write(path, value);
    log.emplace_back(file, value);
    if (file == "min_freq" || file == "max_freq") {
      // The GPU runs at the top of the allowed range under load.
      SysfsIo::write(dir / "cur_freq", SysfsIo::read(dir / "max_freq"));
    }
  }
};

}  // namespace pacer::hw::test
