#pragma once
// A small tmpfs of a test's own (a full disk on demand), unmounted and removed in all cases. Mounting
// needs root: mounted() says whether it worked, and a test skips with one line when it did not.
#include <fcntl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace pacer::testing {

class SmallTmpfs {
 public:
  SmallTmpfs(const std::filesystem::path& dir, const std::string& size) : dir_(dir) {
    std::filesystem::create_directories(dir_);
    mounted_ = ::mount("tmpfs", dir_.c_str(), "tmpfs", 0, ("size=" + size).c_str()) == 0;
  }
  ~SmallTmpfs() {
    if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  SmallTmpfs(const SmallTmpfs&) = delete;
  SmallTmpfs& operator=(const SmallTmpfs&) = delete;
  bool mounted() const { return mounted_; }

  // Fills the file system until only about `left` bytes are free; returns the filler's path.
  std::filesystem::path fill_leaving(size_t left) const {
    const auto filler = dir_ / "filler";
    const int fd = ::open(filler.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const std::string block(4096, 'x');
    const auto space = std::filesystem::space(dir_);
    size_t to_write = space.available > left ? space.available - left : 0;
    while (to_write >= block.size() && ::write(fd, block.data(), block.size()) > 0) to_write -= block.size();
    ::close(fd);
    return filler;
  }

 private:
  std::filesystem::path dir_;
  bool mounted_ = false;
};

}  // namespace pacer::testing
