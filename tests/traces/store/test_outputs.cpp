// The output checks a command makes before any work (traces/store/outputs.hpp) and the batch memory
// check (traces/workload.hpp), on files and folders the test makes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "base/error.hpp"
#include "traces/store/outputs.hpp"
#include "traces/store/store.hpp"
#include "traces/workload.hpp"

using namespace pacer;
using namespace pacer::traces;
namespace fs = std::filesystem;

namespace {

struct Dir {
  fs::path path = fs::temp_directory_path() / ("pacer-outputs-" + std::to_string(::getpid()) + "-" +
                                               ::testing::UnitTest::GetInstance()->current_test_info()->name());
  Dir() {
    fs::remove_all(path);
    fs::create_directories(path / "folder");
    std::ofstream(path / "file.txt") << "x\n";
  }
  ~Dir() { fs::remove_all(path); }
  size_t entries() const { return static_cast<size_t>(std::distance(fs::recursive_directory_iterator(path), {})); }
};

// The message of the SettingError `fn` must throw for `option`.
template <typename Fn>
std::string setting_error(Fn fn, const std::string& option) {
  try {
    fn();
  } catch (const SettingError& e) {
    EXPECT_EQ(e.option, option) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no SettingError";
  return "";
}

}  // namespace

TEST(Outputs, AFileNeedsAFolderThatTakesItAndCreatesNothing) {
  Dir d;
  const size_t before = d.entries();
  EXPECT_NO_THROW(check_output_file(d.path / "new.csv", "csv"));
  EXPECT_NO_THROW(check_output_file(d.path / "file.txt", "csv"));  // replaced atomically later
  EXPECT_NE(setting_error([&] { check_output_file(d.path / "folder", "csv"); }, "csv").find("is a folder"),
            std::string::npos);
  EXPECT_NE(setting_error([&] { check_output_file(d.path / "none" / "a.csv", "csv"); }, "csv").find("does not exist"),
            std::string::npos);
  EXPECT_NE(setting_error([&] { check_output_file(d.path / "file.txt" / "a.csv", "csv"); }, "csv").find("not a folder"),
            std::string::npos);
  EXPECT_EQ(d.entries(), before) << "a check creates nothing";
}

TEST(Outputs, AFolderMayBeMadeBelowTheNearestExistingOne) {
  Dir d;
  EXPECT_NO_THROW(check_output_folder(d.path / "a" / "b", "out"));
  EXPECT_NO_THROW(check_output_folder(d.path / "folder", "out"));
  EXPECT_NE(setting_error([&] { check_output_folder(d.path / "file.txt", "out"); }, "out").find("is a file"),
            std::string::npos);
  setting_error([&] { check_output_folder(d.path / "file.txt" / "sub", "out"); }, "out");
  EXPECT_FALSE(fs::exists(d.path / "a"));
}

TEST(Outputs, AStoreReadsOrCanBeMadeAndARecordIsNotShrunkUnasked) {
  Dir d;
  const fs::path store = d.path / "s.h5";
  EXPECT_THROW(check_store_output(store, "store", StoreCreation::must_exist), Error);
  EXPECT_NO_THROW(check_store_output(store, "store", StoreCreation::file));
  setting_error([&] { check_store_output(d.path / "none" / "s.h5", "store", StoreCreation::file); }, "store");
  EXPECT_NO_THROW(check_store_output(d.path / "none" / "s.h5", "out", StoreCreation::file_and_folder));
  setting_error([&] { check_store_output(d.path / "folder", "store"); }, "store");
  std::ofstream(d.path / "junk.h5") << "not hdf5";
  EXPECT_THROW(check_store_output(d.path / "junk.h5", "store"), Error);  // unreadable: its own error
  EXPECT_FALSE(fs::exists(store));

  ValidationResult v;
  v.name = "v";
  v.rows.resize(4);
  Store::open_or_create(store).write(v);
  EXPECT_NO_THROW(check_record_output(store, {"validations", "v", "name", 4}));
  EXPECT_NO_THROW(check_record_output(store, {"validations", "v", "name", 0}));  // rows not known: the write checks
  EXPECT_NO_THROW(check_record_output(store, {"validations", "v", "name", 2, Replace::always}));
  EXPECT_NE(setting_error(
                [&] {
                  check_record_output(store, {"validations", "v", "name", 2});
                },
                "replace")
                .find("holds 4 rows and the new record only 2"),
            std::string::npos);
  try {
    check_record_output(store, {"validations", "..", "name", 1});
    ADD_FAILURE() << "'..' accepted";
  } catch (const OptionError& e) {
    EXPECT_EQ(e.option, "name");
  }
}

// cnn@1x28x28's estimate: 169 kB per sample, 328 kB of weights and optimizer state.
TEST(BatchMemory, TheLargestBatchThatFitsAndTheErrorThatNamesIt) {
  WorkloadInfo w;
  w.name = "cnn@1x28x28";
  w.memory_per_sample_bytes = 169e3;
  w.weight_bytes = 328e3;
  const double nano = 4.0 * 1024 * 1024 * 1024;
  EXPECT_DOUBLE_EQ(training_memory_bytes(w, 100), 328e3 + 100 * 169e3);
  const int64_t largest = largest_batch_in_memory(w, nano);
  EXPECT_EQ(largest, static_cast<int64_t>((nano - 328e3) / 169e3));
  EXPECT_LE(training_memory_bytes(w, largest), nano);
  EXPECT_GT(training_memory_bytes(w, largest + 1), nano);
  EXPECT_NO_THROW(check_batches_fit(w, {8, static_cast<int>(largest)}, nano, "jetson-nano", "batch-sizes"));
  try {
    check_batches_fit(w, {8, static_cast<int>(largest) + 1}, nano, "jetson-nano", "batch-sizes");
    ADD_FAILURE() << "a batch one over the memory accepted";
  } catch (const OptionError& e) {
    EXPECT_EQ(e.option, "batch-sizes");
    EXPECT_NE(std::string(e.what()).find(fmt::format("at most {}", largest)), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("4 GiB of jetson-nano"), std::string::npos) << e.what();
  }
  EXPECT_THROW(check_batches_fit(w, {1 << 30}, nano, "this computer"), Error);  // no option: an Error
  EXPECT_NO_THROW(check_batches_fit(w, {1 << 30}, 0, "unknown"));               // memory unknown: no check
  EXPECT_GT(host_memory_bytes(), 0);
}

// `pacer sweep s.h5 --csv s.h5` replaced the store with CSV text, exit 0 (issue 22, item 1): an
// output that is an input or another output, by whatever path, is refused naming both options.
TEST(DistinctOutputs, AnOutputThatIsAnInputOrAnotherOutputIsRefusedByIdentity) {
  Dir d;
  const fs::path store = d.path / "s.h5";
  std::ofstream(store) << "a store\n";
  fs::create_symlink(store, d.path / "link.h5");
  fs::create_hard_link(store, d.path / "hard.h5");
  const std::string message = setting_error(
      [&] { check_distinct_outputs({}, {{store, "store"}, {d.path / "folder" / ".." / "s.h5", "csv"}}); }, "csv");
  EXPECT_NE(message.find("--store"), std::string::npos) << message;
  EXPECT_NE(message.find("replace"), std::string::npos) << message;
  for (const fs::path& other : {d.path / "link.h5", d.path / "hard.h5", fs::path(store).lexically_relative(fs::current_path())})
    setting_error([&] { check_distinct_outputs({}, {{store, "store"}, {other, "out"}}); }, "out");
  // An input: the CSV an import reads, named as the store it writes.
  setting_error([&] { check_distinct_outputs({{d.path / "file.txt", "file"}}, {{d.path / "file.txt", "out"}}); },
                "out");
  // Two outputs that do not exist yet, one through a link to their folder.
  fs::create_directory_symlink(d.path / "folder", d.path / "linked");
  setting_error(
      [&] { check_distinct_outputs({}, {{d.path / "folder" / "a.csv", "csv"}, {d.path / "linked" / "a.csv", "out"}}); },
      "out");
  // Distinct files, stdout, an empty path and an input that is not a file (a catalog name) pass.
  EXPECT_NO_THROW(check_distinct_outputs({{"jetson-nano", "device"}, {d.path / "file.txt", "config"}},
                                         {{store, "store"}, {d.path / "s.csv", "csv"}, {"-", "out"}, {"", "csv"}}));
  EXPECT_TRUE(same_file(store, d.path / "hard.h5"));
  EXPECT_FALSE(same_file(store, d.path / "s.csv"));
}
