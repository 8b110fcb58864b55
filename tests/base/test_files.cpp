// base::read_regular_file, the one reader of a user's text file: /dev/zero, a FIFO with nobody
// writing and a folder are one error line at once (they used to hang or read forever), a file over
// the bound is refused, a regular file is read byte for byte. path_too_long and non_regular_kind.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "base/error.hpp"
#include "base/files.hpp"

namespace {

namespace fs = std::filesystem;
using pacer::base::read_regular_file;

fs::path temp_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("pacer-files-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string error_of(const fs::path& p, size_t bound = pacer::base::kMaxConfigFileBytes) {
  try {
    (void)read_regular_file(p, bound, "config file");
  } catch (const pacer::Error& e) {
    return e.what();
  }
  return "";
}

TEST(ReadRegularFile, ReadsARegularFileByteForByte) {
  const fs::path dir = temp_dir("regular");
  const std::string text = std::string("a=1\r\n\0b=2\n", 11);
  std::ofstream(dir / "x.ini", std::ios::binary) << text;
  EXPECT_EQ(read_regular_file(dir / "x.ini", 100, "config file"), text);
  fs::remove_all(dir);
}

TEST(ReadRegularFile, DevZeroAFifoAndAFolderAreOneLineAtOnce) {
  const std::string zero = error_of("/dev/zero");
  EXPECT_NE(zero.find("character device, not a regular file"), std::string::npos) << zero;
  const fs::path dir = temp_dir("special");
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  const std::string fifo = error_of(dir / "fifo");  // no writer: a plain open would wait forever
  EXPECT_NE(fifo.find("a FIFO, not a regular file"), std::string::npos) << fifo;
  EXPECT_NE(error_of(dir).find("a folder, not a regular file"), std::string::npos);
  EXPECT_NE(error_of(dir / "missing").find("No such file"), std::string::npos);
  EXPECT_EQ(pacer::base::non_regular_kind(dir / "fifo"), "a FIFO");
  EXPECT_EQ(pacer::base::non_regular_kind("/dev/null"), "a character device");
  EXPECT_EQ(pacer::base::non_regular_kind(dir / "missing"), "");
  fs::remove_all(dir);
}

TEST(ReadRegularFile, AFileOverTheBoundIsRefused) {
  const fs::path dir = temp_dir("big");
  std::ofstream(dir / "big.csv") << std::string(2000, 'x');
  const std::string e = error_of(dir / "big.csv", 1024);
  EXPECT_NE(e.find("2000 bytes, more than"), std::string::npos) << e;
  EXPECT_EQ(read_regular_file(dir / "big.csv", 2000, "CSV file").size(), 2000u);
  fs::remove_all(dir);
}

TEST(PathTooLong, SaysSoInsteadOfMissingFolder) {
  EXPECT_EQ(pacer::base::path_too_long("/tmp/a/b.csv"), "");
  const std::string deep = "/tmp/" + std::string(5000, 'd') + "/x.csv";
  EXPECT_NE(pacer::base::path_too_long(deep).find("the path is too long (5011 characters"), std::string::npos);
  EXPECT_NE(pacer::base::path_too_long("/tmp/" + std::string(300, 'n')).find("a name of 300 characters"),
            std::string::npos);
  EXPECT_NE(error_of(deep).find("too long"), std::string::npos);
}

}  // namespace
