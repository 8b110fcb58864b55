// Damaged trace stores: each test edits a valid store with the HDF5 C++ API the way a crash, a
// foreign writer or a hostile file could, and checks that reading gives pacer::Error naming the
// file -- never another exception, a crash or an out-of-bounds write (run under ASan to see those).
// These pin the findings of tests/fuzz/fuzz_store_struct as deterministic regressions.
#include <H5Cpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "base/error.hpp"
#include "tests/support/store_seal.hpp"
#include "traces/catalog/catalog.hpp"
#include "traces/store/store.hpp"

namespace {
namespace fs = std::filesystem;
using pacer::traces::Store;

class CorruptStore : public ::testing::Test {
 protected:
  void SetUp() override {
    H5::Exception::dontPrint();
    dir_ = fs::temp_directory_path() /
           ("pacer-corrupt-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = dir_ / "store.h5";
    Store s = Store::open_or_create(path_);
    s.write_device(pacer::traces::find_device("jetson-nano"));
    pacer::traces::PowerSeries series;
    series.name = "run1";
    series.cap_w = 5;
    series.time_s = {0, 0.1, 0.2};
    series.power_w = {3, 4, 5};
    s.write(series);
    pacer::traces::ProfileTable t;
    t.workload = "w";
    t.device = "jetson-nano";
    pacer::traces::ProfilePoint p;
    p.knob = {76.8e6};
    p.batch_size = 8;
    t.points = {p, p};
    s.write(t);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Edits the store with the HDF5 API and recomputes its checksum header, so the damage reaches
  // the record readers (the checksum itself is tested separately below).
  void edit(const std::function<void(H5::H5File&)>& fn) {
    {
      H5::H5File f(path_.string(), H5F_ACC_RDWR);
      fn(f);
    }
    pacer::testing::reseal_store(path_.string());
  }
  std::string bytes() const {
    std::ifstream in(path_, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  void put_bytes(const std::string& b) const {
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out << b;
  }
  // Expects the read to throw pacer::Error mentioning the file.
  template <typename Fn>
  void expect_error(Fn read, const std::string& fragment = "") {
    try {
      read();
      FAIL() << "reading the damaged store succeeded";
    } catch (const pacer::Error& e) {
      EXPECT_NE(std::string(e.what()).find(path_.string()), std::string::npos) << e.what();
      if (!fragment.empty()) {
        EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
      }
    } catch (const std::exception& e) {
      FAIL() << "a damaged store must give pacer::Error, got another exception: " << e.what();
    }
  }

  fs::path dir_, path_;
};

const H5::StrType& vlen() {
  static const H5::StrType t(H5::PredType::C_S1, H5T_VARIABLE);
  return t;
}

TEST_F(CorruptStore, SchemaAttributeThatIsAnArrayIsRejectedWithoutOverflow) {
  // Reading a 64-element attribute into one int64 would write 504 bytes past it.
  edit([](H5::H5File& f) {
    f.removeAttr("pacer_schema");
    hsize_t n[1] = {64};
    std::vector<int64_t> v(64, 1);
    f.createAttribute("pacer_schema", H5::PredType::NATIVE_INT64, H5::DataSpace(1, n))
        .write(H5::PredType::NATIVE_INT64, v.data());
  });
  expect_error([&] { Store::open(path_); }, "pacer_schema");
}

TEST_F(CorruptStore, SchemaAttributeOfWrongVersionNamesBothVersions) {
  edit([](H5::H5File& f) {
    int64_t v = 99;
    f.openAttribute("pacer_schema").write(H5::PredType::NATIVE_INT64, &v);
  });
  expect_error([&] { Store::open(path_); }, "99");
}

TEST_F(CorruptStore, StringAttributeThatIsAnArrayIsRejected) {
  // A variable-length string array read as one string would write 3 pointers into one.
  edit([](H5::H5File& f) {
    H5::Group g = f.openGroup("/profiles/w");
    g.removeAttr("workload");
    hsize_t n[1] = {3};
    const char* v[3] = {"a", "b", "c"};
    g.createAttribute("workload", vlen(), H5::DataSpace(1, n)).write(vlen(), v);
  });
  expect_error([&] { Store::open(path_).read<pacer::traces::ProfileTable>("w"); }, "workload");
}

TEST_F(CorruptStore, UnwrittenVariableStringAttributeIsRejected) {
  // Never written: HDF5 hands back a null pointer where a string is expected.
  edit([](H5::H5File& f) {
    H5::Group g = f.openGroup("/profiles/w");
    g.removeAttr("device");
    g.createAttribute("device", vlen(), H5::DataSpace(H5S_SCALAR));
  });
  Store s = Store::open(path_);
  try {
    const auto t = s.read<pacer::traces::ProfileTable>("w");
    EXPECT_EQ(t.device, "");  // an empty string is an acceptable reading of a never-written string
  } catch (const pacer::Error& e) {
    EXPECT_NE(std::string(e.what()).find("device"), std::string::npos) << e.what();
  }
}

TEST_F(CorruptStore, FixedLengthStringAttributeIsRead) {
  // h5py writes fixed-length strings for numpy bytes: the reader must accept them.
  edit([](H5::H5File& f) {
    H5::Group g = f.openGroup("/profiles/w");
    g.removeAttr("source");
    H5::StrType fixed(H5::PredType::C_S1, 5);
    g.createAttribute("source", fixed, H5::DataSpace(H5S_SCALAR)).write(fixed, std::string("h5py!"));
  });
  EXPECT_EQ(Store::open(path_).read<pacer::traces::ProfileTable>("w").source, "h5py!");
}

TEST_F(CorruptStore, ColumnClaimingBillionsOfRowsWithoutDataIsRejected) {
  // A damaged header can declare any extent; the reader must not try to allocate it.
  edit([](H5::H5File& f) {
    H5Ldelete(f.getId(), "/runs/run1/time", H5P_DEFAULT);
    hsize_t n[1] = {hsize_t{1} << 36};
    f.createDataSet("/runs/run1/time", H5::PredType::NATIVE_DOUBLE, H5::DataSpace(1, n));
  });
  expect_error([&] { Store::open(path_).read<pacer::traces::PowerSeries>("run1"); }, "time");
}

TEST_F(CorruptStore, ColumnOfWrongTypeOrRankIsRejected) {
  edit([](H5::H5File& f) {
    H5Ldelete(f.getId(), "/runs/run1/power", H5P_DEFAULT);
    hsize_t n[2] = {3, 2};
    f.createDataSet("/runs/run1/power", H5::PredType::NATIVE_DOUBLE, H5::DataSpace(2, n));
    H5Ldelete(f.getId(), "/profiles/w/batch_size", H5P_DEFAULT);
    hsize_t m[1] = {2};
    f.createDataSet("/profiles/w/batch_size", H5::PredType::NATIVE_DOUBLE, H5::DataSpace(1, m));
  });
  Store s = Store::open(path_);
  expect_error([&] { s.read<pacer::traces::PowerSeries>("run1"); }, "power");
  expect_error([&] { s.read<pacer::traces::ProfileTable>("w"); }, "batch_size");
}

TEST_F(CorruptStore, ShortColumnIsRejected) {
  edit([](H5::H5File& f) {
    H5Ldelete(f.getId(), "/runs/run1/power", H5P_DEFAULT);
    hsize_t n[1] = {2};
    double v[2] = {1, 2};
    f.createDataSet("/runs/run1/power", H5::PredType::NATIVE_DOUBLE, H5::DataSpace(1, n))
        .write(v, H5::PredType::NATIVE_DOUBLE);
  });
  expect_error([&] { Store::open(path_).read<pacer::traces::PowerSeries>("run1"); }, "2 rows, expected 3");
}

TEST_F(CorruptStore, DanglingSoftAndExternalLinksAreErrors) {
  edit([](H5::H5File& f) {
    H5Ldelete(f.getId(), "/runs/run1", H5P_DEFAULT);
    H5Lcreate_soft("/nowhere", f.getId(), "/runs/run1", H5P_DEFAULT, H5P_DEFAULT);
    H5Ldelete(f.getId(), "/device", H5P_DEFAULT);
    H5Lcreate_external("/tmp/pacer-no-such-file.h5", "/device", f.getId(), "/device", H5P_DEFAULT, H5P_DEFAULT);
  });
  Store s = Store::open(path_);
  expect_error([&] { s.read<pacer::traces::PowerSeries>("run1"); });
  expect_error([&] {
    if (s.has_device()) s.read_device();
    else throw pacer::Error(path_.string() + ": no device");
  });
  // Listing must still work and name the broken record.
  EXPECT_EQ(s.list<pacer::traces::PowerSeries>(), std::vector<std::string>{"run1"});
}

TEST_F(CorruptStore, GroupReplacedByDatasetIsAnError) {
  edit([](H5::H5File& f) {
    H5Ldelete(f.getId(), "/runs", H5P_DEFAULT);
    hsize_t n[1] = {3};
    f.createDataSet("/runs", H5::PredType::NATIVE_DOUBLE, H5::DataSpace(1, n));
  });
  Store s = Store::open(path_);
  expect_error([&] { s.list<pacer::traces::PowerSeries>(); });
  expect_error([&] { s.read<pacer::traces::PowerSeries>("run1"); });
  EXPECT_EQ(s.read<pacer::traces::ProfileTable>("w").points.size(), 2u);  // the rest of the store is intact
}

TEST_F(CorruptStore, TruncatedFileIsAnErrorAtOpen) {
  const auto size = fs::file_size(path_);
  for (uintmax_t keep : {uintmax_t{0}, uintmax_t{7}, uintmax_t{512}, size / 2, size - 1}) {
    fs::resize_file(path_, keep);
    expect_error([&] { Store::open(path_).read<pacer::traces::PowerSeries>("run1"); });
  }
}

TEST_F(CorruptStore, EveryFlippedByteIsCaughtByTheChecksum) {
  // libhdf5 1.10 can crash or hang on a single damaged byte, so the checksum must see every one.
  const std::string good = bytes();
  for (size_t at = 512; at < good.size(); at += 97) {
    std::string damaged = good;
    damaged[at] = static_cast<char>(damaged[at] ^ 0x20);
    put_bytes(damaged);
    expect_error([&] { Store::open(path_); }, "checksum mismatch");
  }
  put_bytes(good);
  EXPECT_EQ(Store::open(path_).read<pacer::traces::PowerSeries>("run1").power_w, (std::vector<double>{3, 4, 5}));
}

TEST_F(CorruptStore, DamagedChecksumHeaderIsAnError) {
  std::string damaged = bytes();
  damaged[3] = 'X';  // "PACXRSUM": the superblock behind the user block says the header was there
  put_bytes(damaged);
  expect_error([&] { Store::open(path_); }, "checksum header");
}

TEST_F(CorruptStore, StoreWithoutUserBlockIsReadUnchecked) {
  // A store written by another tool (h5py) has no user block; stripping pacer's gives one
  // (h5unjam does the same).
  put_bytes(bytes().substr(512));
  Store s = Store::open(path_);
  EXPECT_EQ(s.read<pacer::traces::PowerSeries>("run1").power_w, (std::vector<double>{3, 4, 5}));
  EXPECT_EQ(s.read_device().name, "jetson-nano");
}

TEST_F(CorruptStore, ZeroedGlobalHeapBlockIsRejectedBeforeLibhdf5Loops) {
  // Unchecked store (no user block) with one 512-byte block zeroed at a time: libhdf5 1.10 loops
  // forever on a zeroed global-heap object; the reader must refuse those files instead.
  const std::string unchecked = bytes().substr(512);
  int errors = 0, intact = 0, heap = 0;
  for (size_t at = 0; at < unchecked.size(); at += 512) {
    std::string damaged = unchecked;
    std::fill(damaged.begin() + static_cast<long>(at),
              damaged.begin() + static_cast<long>(std::min(unchecked.size(), at + 512)), '\0');
    put_bytes(damaged);
    try {
      Store s = Store::open(path_);
      if (s.has_device()) (void)s.read_device();
      (void)s.read<pacer::traces::PowerSeries>("run1");
      (void)s.read<pacer::traces::ProfileTable>("w");
      ++intact;
    } catch (const pacer::Error& e) {
      ++errors;
      heap += std::string(e.what()).find("global heap") != std::string::npos;
    }
  }
  EXPECT_GT(heap, 0);  // the zeroed heap blocks were recognised (without the check, this test hangs)
  EXPECT_GT(errors + intact, 10);
}

}  // namespace
