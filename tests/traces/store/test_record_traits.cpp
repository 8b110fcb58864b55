// A record type is its struct plus one entry (traces/record_traits.hpp): the test-only Logbook below
// gets the store's writer and reader, the replace guard, the CSV export and the merge from its entry
// alone, without a line anywhere else.
#include <H5Cpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "tests/support/sample_records.hpp"
#include "traces/record_traits.hpp"
#include "traces/store/export.hpp"
#include "traces/store/record_merge.hpp"
#include "traces/store/store.hpp"

namespace logbook {

struct Reading {
  int channel = 0;
  double value_v = pacer::traces::kNaN;
  std::string label;
  bool operator==(const Reading& o) const {
    return channel == o.channel && pacer::traces::same(value_v, o.value_v) && label == o.label;
  }
};

struct Logbook {
  std::string name;
  std::string sensor;
  double gain = 1;
  std::vector<Reading> readings;
  bool operator==(const Logbook& o) const {
    return name == o.name && sensor == o.sensor && gain == o.gain && readings == o.readings;
  }
};

}  // namespace logbook

// The one entry.
template <>
struct pacer::traces::RecordTraits<logbook::Logbook> {
  using Logbook = logbook::Logbook;
  using Reading = logbook::Reading;
  static constexpr std::string_view group = "logbooks";
  static constexpr std::string_view what = "logbook";
  static std::string name(const Logbook& b) { return b.name; }
  static constexpr auto rows = &Logbook::readings;

  static constexpr std::string_view type = "Logbook";
  static constexpr std::array<Field<Logbook>, 3> attributes{{
      {"name", "", &Logbook::name},
      {"sensor", "", &Logbook::sensor},
      {"gain", "", &Logbook::gain},
  }};
  static constexpr std::array<Field<Reading>, 3> columns{{
      {"channel", "1", &Reading::channel},
      {"value", "V", &Reading::value_v},
      {"label", "", &Reading::label},
  }};
  static std::string csv_title(const Logbook& b) {
    return fmt::format("# logbook name={} sensor={}\n", b.name, b.sensor);
  }

  static int merge_key(const Reading& r) { return r.channel; }
  static std::string row_text(const Reading& r) { return fmt::format("channel {} at {:g} V", r.channel, r.value_v); }
  static std::string header_text(const Logbook& b) { return fmt::format("sensor {}", b.sensor); }
};

using namespace pacer;
using namespace pacer::traces;
using logbook::Logbook;
using logbook::Reading;
namespace fs = std::filesystem;

static_assert(StoredRecord<Logbook> && RecordWithRows<Logbook> && TableLayout<Logbook> && KeyedMerge<Logbook>);
static_assert(!InStoreGroups<Logbook>, "a test's record is not one of the store's own groups");

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("pacer-traits-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  fs::path operator/(const std::string& name) const { return path / name; }
};

Logbook bench() {
  return {"bench", "probe-7", 2.5, {{3, 1.5, "a,b"}, {7, kNaN, "x"}, {9, -0.25, ""}}};
}

// The unit attribute of a dataset of the store at `path`.
std::string unit_of(const fs::path& path, const std::string& dataset) {
  H5::H5File f(path.string(), H5F_ACC_RDONLY);
  std::string unit;
  f.openDataSet(dataset).openAttribute("unit").read(H5::StrType(H5::PredType::C_S1, H5T_VARIABLE), unit);
  return unit;
}

}  // namespace

TEST(RecordTraits, ATestRecordWritesAndReadsBackThroughItsEntry) {
  TempDir dir;
  Store store = Store::open_or_create(dir / "s.h5");
  store.write(bench());
  Logbook shelf = bench();
  shelf.name = "shelf";
  shelf.readings.resize(1);
  store.write(shelf);
  store.write(pacer::testing::sample_profile());  // a rewrite for a record of the store's own groups

  const Store again = Store::open(dir / "s.h5");
  EXPECT_EQ(again.read<Logbook>("bench"), bench());
  EXPECT_EQ(again.read<Logbook>("shelf"), shelf);
  EXPECT_EQ(again.list<Logbook>(), (std::vector<std::string>{"bench", "shelf"}));
  EXPECT_TRUE(again.has<Logbook>("bench"));
  EXPECT_EQ(again.rows<Logbook>("bench"), 3u);
  EXPECT_EQ(again.read<ProfileTable>(pacer::testing::sample_profile().workload), pacer::testing::sample_profile());
  // Its columns as its entry declares them: one dataset each, numeric ones with their unit.
  EXPECT_EQ(unit_of(dir / "s.h5", "logbooks/bench/value"), "V");
  EXPECT_EQ(unit_of(dir / "s.h5", "logbooks/bench/channel"), "1");
  // The store's own listing is the store's groups only; a full read-back accepts the extra group.
  EXPECT_EQ(format_store_contents(again).find("logbooks"), std::string::npos);
  EXPECT_NO_THROW(reseal_store(dir / "s.h5"));
  try {
    (void)again.read<Logbook>("attic");
    ADD_FAILURE() << "a missing record was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no logbooks record named 'attic' (present: bench, shelf)"), std::string::npos)
        << e.what();
  }
}

TEST(RecordTraits, ATestRecordWithFewerRowsReplacesOnlyWhenAsked) {
  TempDir dir;
  Store store = Store::open_or_create(dir / "s.h5");
  store.write(bench());
  Logbook fewer = bench();
  fewer.readings.pop_back();
  EXPECT_THROW(store.write(fewer), Error);
  EXPECT_EQ(store.rows<Logbook>("bench"), 3u);
  store.write(fewer, Replace::always);
  EXPECT_EQ(store.read<Logbook>("bench"), fewer);
  store.write(fewer, "copy");  // under another name than its own
  EXPECT_EQ(store.read<Logbook>("copy"), fewer);
}

TEST(RecordTraits, ATestRecordExportsAsCsvFromItsEntry) {
  TempDir dir;
  Store store = Store::open_or_create(dir / "s.h5");
  store.write(bench());
  EXPECT_EQ(to_csv(store.read<Logbook>("bench")),
            "# logbook name=bench sensor=probe-7\n"
            "channel[1],value[V],label\n"
            "3,1.5,\"a,b\"\n"
            "7,,x\n"
            "9,-0.25,\n");
}

TEST(RecordTraits, ATestRecordMergesByItsKey) {
  TempDir dir;
  Logbook a = bench(), b = bench();
  a.readings = {bench().readings[0], bench().readings[1]};
  b.readings = {bench().readings[1], bench().readings[2]};
  Store::open_or_create(dir / "a.h5").write(a);
  Store::open_or_create(dir / "b.h5").write(b);

  RecordMerge<Logbook> merge;
  MergeReport report;
  merge.add(Store::open(dir / "a.h5"), report);
  merge.add(Store::open(dir / "b.h5"), report);
  Store out = Store::open_or_create(dir / "out.h5");
  merge.write(out, report);
  EXPECT_EQ(out.read<Logbook>("bench"), bench());  // rows in key order, each once
  EXPECT_EQ(report.duplicates, 1);
  EXPECT_EQ(report.entries, 3);
  EXPECT_EQ(report.records, (std::map<std::string, int>{{"logbooks", 1}}));

  // The same key with another value, and another header, are errors naming both files.
  b.readings[0].value_v = 4;
  Store::open(dir / "b.h5").write(b);
  RecordMerge<Logbook> conflicting;
  conflicting.add(Store::open(dir / "a.h5"), report);
  try {
    conflicting.add(Store::open(dir / "b.h5"), report);
    ADD_FAILURE() << "two values of one key were merged";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("logbook 'bench': channel 7 at nan V in " + (dir / "a.h5").string() +
                       " but channel 7 at 4 V in " + (dir / "b.h5").string()),
              std::string::npos)
        << msg;
  }
  b = bench();
  b.sensor = "probe-8";
  Store::open(dir / "b.h5").write(b);
  RecordMerge<Logbook> other_sensor;
  other_sensor.add(Store::open(dir / "a.h5"), report);
  try {
    other_sensor.add(Store::open(dir / "b.h5"), report);
    ADD_FAILURE() << "records of two sensors were merged";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("(sensor probe-7) and " + (dir / "b.h5").string() + " (sensor probe-8)"),
              std::string::npos)
        << e.what();
  }
}

// Only groups the store made for a record type are kept by a rewrite: a group another tool added
// at the root is left out, as before record types outside the store's own groups existed.
TEST(RecordTraits, ARewriteKeepsRecordGroupsAndDropsForeignOnes) {
  TempDir dir;
  Store store = Store::open_or_create(dir / "s.h5");
  store.write(bench());
  {
    H5::H5File f((dir / "s.h5").string(), H5F_ACC_RDWR);
    f.createGroup("notes");
  }
  reseal_store(dir / "s.h5");
  store.write(pacer::testing::sample_relation());
  H5::H5File f((dir / "s.h5").string(), H5F_ACC_RDONLY);
  EXPECT_FALSE(f.nameExists("notes"));
  EXPECT_TRUE(f.nameExists("logbooks/bench"));
}
