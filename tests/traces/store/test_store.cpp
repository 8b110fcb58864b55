#include <H5Cpp.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "base/error.hpp"
#include "tests/support/sample_records.hpp"
#include "tests/support/store_seal.hpp"
#include "traces/catalog/catalog.hpp"
#include "traces/csv.hpp"
#include "traces/store/export.hpp"
#include "traces/store/store.hpp"

using namespace pacer;
using namespace pacer::traces;
using namespace pacer::testing;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("pacer-store-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
}

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

template <typename Fn>
void expect_error(Fn fn, const std::vector<std::string>& needles) {
  try {
    fn();
    FAIL() << "no error";
  } catch (const Error& e) {
    for (const auto& n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(Store, ProfileRoundTripIsIdentical) {
  TempDir dir;
  auto store = Store::open_or_create(dir.path / "c.h5");
  const auto t = sample_profile();
  store.write(t);
  const auto back = Store::open(dir.path / "c.h5").read<ProfileTable>(t.workload);
  EXPECT_EQ(back, t);
  EXPECT_TRUE(std::isnan(back.points[0].temperature_c));
  EXPECT_EQ(back.points.back().status, "skipped: cap exceeded, watchdog");
}

// The commit a record names is the one the sources were at when this build was made, not the one
// CMake configured at (a rebuild after a commit once stamped records with the old one), "-dirty"
// when tracked files differed; the test binary is built in the same build as the library.
TEST(Store, ProvenanceNamesTheCommitTheSourcesAreAt) {
  auto git = [](const std::string& args) {
    const std::string cmd = fmt::format("git -C '{}' {} 2>/dev/null", PACER_SOURCE_DIR, args);
    std::string out;
    if (FILE* f = ::popen(cmd.c_str(), "r")) {
      char buf[512] = {};
      while (std::fgets(buf, sizeof buf, f)) out += buf;
      ::pclose(f);
    }
    while (!out.empty() && std::isspace(static_cast<unsigned char>(out.back()))) out.pop_back();
    return out;
  };
  // Sources unpacked inside another repository are not a checkout of pacer: "unknown".
  std::error_code ec;
  const std::string top = git("rev-parse --show-toplevel");
  const bool checkout = !top.empty() && std::filesystem::equivalent(top, PACER_SOURCE_DIR, ec);
  const std::string head = checkout ? git("rev-parse HEAD") : "";
  const Provenance p = this_process();
  if (head.size() != 40) {
    EXPECT_EQ(p.git_commit, "unknown");
    GTEST_SKIP() << "the sources are not a git checkout";
  }
  EXPECT_TRUE(p.git_commit == head || p.git_commit == head + "-dirty") << p.git_commit << " vs HEAD " << head;
  EXPECT_NE(p.cpu_kernels, "unknown");
}

// Provenances combine field by field: distinct values in the order met, the start times as a span;
// combining with what is already held changes nothing, whatever the order.
TEST(Provenance, CombinesDistinctValuesAndSpansTheStartTimes) {
  Provenance a = this_process(), b = a, c = a;
  a.start_time = "2026-11-27T10:00:00Z";
  b.start_time = "2026-11-26T09:00:00Z";
  c.start_time = "2026-11-28T08:00:00Z";
  a.host = "node-a";
  b.host = "node-b";
  c.host = "node-a";
  b.git_commit = "def456";
  const Provenance ab = combine_provenance(a, b);
  EXPECT_EQ(ab.host, "node-a | node-b");
  EXPECT_EQ(ab.git_commit, a.git_commit + " | def456");
  EXPECT_EQ(ab.start_time, "2026-11-26T09:00:00Z .. 2026-11-27T10:00:00Z");
  EXPECT_EQ(ab.command_line, a.command_line);
  EXPECT_EQ(combine_provenance(a, a), a);
  EXPECT_EQ(combine_provenance(ab, a), ab);
  EXPECT_EQ(combine_provenance(ab, b), ab);
  const Provenance abc = combine_provenance(ab, c);
  EXPECT_EQ(abc.host, "node-a | node-b");
  EXPECT_EQ(abc.start_time, "2026-11-26T09:00:00Z .. 2026-11-28T08:00:00Z");
  // A record written before provenance existed ("unknown") stays visible in the fields that name it.
  const Provenance old;
  const Provenance mixed = combine_provenance(old, a);
  EXPECT_EQ(mixed.git_commit, "unknown | " + a.git_commit);
  EXPECT_EQ(mixed.start_time, a.start_time);
}

// Rows added to a stored record by another run (a campaign resumed by another process, a second
// writer) add that run's provenance to the record's; the same run adding more changes nothing.
TEST(Store, AddedRowsCombineTheStoredProvenanceWithTheWritersOwn) {
  TempDir dir;
  const Provenance before = current_run();
  Provenance first = this_process();
  first.command_line = "pacer profile --board nano -o c.h5";
  first.start_time = "2026-11-27T10:00:00Z";
  Provenance resumed = first;
  resumed.start_time = "2026-11-27T12:30:00Z";
  resumed.host = "other-host";
  ProfileTable t = sample_profile();
  ProfileTable head = t, tail = t;
  head.points.resize(1);
  tail.points.erase(tail.points.begin());
  ASSERT_FALSE(tail.points.empty());
  set_current_run(first);
  auto store = Store::open_or_create(dir.path / "c.h5");
  store.add_rows(head, "p");
  store.add_rows(head, "p");
  const Provenance once = store.read_provenance("profiles", "p");
  set_current_run(resumed);
  store.add_rows(tail, "p");
  set_current_run(before);
  EXPECT_EQ(once, first);
  const Provenance p = store.read_provenance("profiles", "p");
  EXPECT_EQ(p.host, first.host + " | other-host");
  EXPECT_EQ(p.start_time, "2026-11-27T10:00:00Z .. 2026-11-27T12:30:00Z");
  EXPECT_EQ(p.command_line, first.command_line);
  EXPECT_EQ(store.read<ProfileTable>("p").points.size(), t.points.size());
}

// Every record carries the provenance of the run that wrote it, read back field by field and shown
// by the export and the listing; a later run's write stamps its own.
TEST(Store, ARecordCarriesTheProvenanceOfTheRunThatWroteIt) {
  TempDir dir;
  const Provenance before = current_run();
  Provenance run = this_process();
  run.command_line = "pacer relation --dataset fmnist-proxy --seeds 0,1";
  run.seeds = "seeds=0,1";
  run.options = "dataset=fmnist-proxy; seeds=0,1";
  run.threads = "2";
  set_current_run(run);
  auto store = Store::open_or_create(dir.path / "c.h5");
  store.write(sample_relation());
  store.write_device(find_device("jetson-nano"));
  Provenance other = run;
  other.command_line = "pacer import csv own.csv -o c.h5";
  set_current_run(other);
  store.write(sample_profile(), "p");
  set_current_run(before);

  const Store back = Store::open(dir.path / "c.h5");
  const Provenance p = back.read_provenance("relations", sample_relation().name);
  EXPECT_EQ(p, run);
  EXPECT_NE(p.pacer_version, "unknown");
  EXPECT_NE(p.git_commit, "");
  EXPECT_NE(p.host, "unknown");
  EXPECT_EQ(p.start_time.size(), 20u) << p.start_time;  // 2026-11-26T10:03:56Z
  EXPECT_EQ(p.start_time.back(), 'Z');
  EXPECT_EQ(back.read_provenance("device", ""), run);
  EXPECT_EQ(back.read_provenance("profiles", "p").command_line, other.command_line);
  const std::string csv = export_csv(back, "relations/" + sample_relation().name);
  EXPECT_EQ(csv.rfind("# pacer_version: " + run.pacer_version + "\n# git_commit: " + run.git_commit + "\n", 0), 0u)
      << csv;
  EXPECT_NE(csv.find("# command_line: pacer relation --dataset fmnist-proxy --seeds 0,1\n"), std::string::npos);
  EXPECT_NE(csv.find("# seeds: seeds=0,1\n# options: dataset=fmnist-proxy; seeds=0,1\n# relation name="),
            std::string::npos)
      << csv;
  const std::string listing = format_store_contents(back);
  EXPECT_NE(listing.find("  relations/" + sample_relation().name + "\n      pacer " + run.pacer_version),
            std::string::npos)
      << listing;
  EXPECT_NE(listing.find(": pacer import csv own.csv -o c.h5\n"), std::string::npos) << listing;
}

TEST(Store, MultiDimensionalKnobRoundTrip) {
  TempDir dir;
  auto store = Store::open_or_create(dir.path / "c.h5");
  ProfileTable t;
  t.workload = "w";
  t.knob = KnobSpace::power_mode();
  ProfilePoint p;
  p.knob = {4, 1.2e9, 6e8, 3.2e9};
  p.batch_size = 16;
  t.points = {p};
  store.write(t, "modes");
  EXPECT_EQ(store.read<ProfileTable>("modes"), t);
  ProfileTable bad = t;
  bad.points[0].knob = {1.0};
  EXPECT_THROW(store.write(bad, "bad"), Error);
  EXPECT_FALSE(store.has<ProfileTable>("bad"));
}

TEST(Store, EveryRecordTypeRoundTrips) {
  TempDir dir;
  auto store = Store::open_or_create(dir.path / "c.h5");
  const auto device = find_device("jetson-agx-orin");
  store.write_device(device);
  const auto rel = sample_relation();
  store.write(rel);
  const auto m = sample_model();
  store.write(m);
  const auto s = sample_sweep();
  store.write(s);
  const auto ps = sample_series();
  store.write(ps);
  const auto v = sample_validation();
  store.write(v);
  LearningCurve curve;
  curve.name = rel.name;
  curve.metric = "accuracy";
  curve.source = "evaluations";
  curve.points = {{8, 0, 1000, 0.4}, {8, 0, 2000, 0.61}, {8, 1, 1000, NAN}};
  store.write(curve);

  const auto again = Store::open(dir.path / "c.h5");
  EXPECT_EQ(again.read<LearningCurve>(rel.name), curve);
  EXPECT_EQ(again.read<ValidationResult>("val"), v);
  EXPECT_EQ(again.read_device(), device);
  EXPECT_EQ(again.read<RelationSet>(rel.name), rel);
  EXPECT_EQ(again.read<ModelRecord>(m.name), m);
  EXPECT_EQ(again.read<SweepResult>(s.name), s);
  EXPECT_EQ(again.read<PowerSeries>(ps.name), ps);
  EXPECT_EQ(again.list<RelationSet>(), std::vector<std::string>{"fmnist-proxy"});
}

// Every group of kStoreGroups reads back as its own record type (StoreRecord) and exports as that
// type's CSV: a group whose place in kStoreGroups and in StoreRecord differ fails here.
TEST(Store, EveryGroupReadsBackAsItsRecordTypeAndExportsAsItsCsv) {
  TempDir dir;
  auto store = Store::open_or_create(dir.path / "c.h5");
  LearningCurve curve;
  curve.name = "fmnist-proxy";
  curve.metric = "accuracy";
  curve.source = "evaluations";
  curve.points = {{8, 0, 1000, 0.4}, {8, 0, 2000, 0.61}};
  AdaptiveLog log;
  log.name = "fmnist-proxy";
  log.tolerance = 0.005;
  log.compute_budget = 50000;
  log.profile = "cnn@1x28x28";
  log.extrapolation = "power-law";
  log.first_round = 0.05;
  log.budget_first_share = 0.15;
  log.caps = 10;
  log.decisions = {{1, "train", 8, 0, 512, 0, NAN, "a new seed"},
                   {1, "stop", 8, -1, 0, 1536, NAN, "not a contender at any undecided cap"},
                   {2, "decided", 0, -1, 0, 4096, 0.001, "decided: expected regret <= 0.5 % at all 10 caps"}};
  const std::vector<StoreRecord> written = {
      sample_profile(), sample_relation(),   curve, sample_model(), sample_sweep(),
      sample_series(),  sample_validation(), log};
  store.write(std::get<ProfileTable>(written[0]), "p");
  store.write(std::get<RelationSet>(written[1]));
  store.write(std::get<LearningCurve>(written[2]));
  store.write(std::get<ModelRecord>(written[3]));
  store.write(std::get<SweepResult>(written[4]));
  store.write(std::get<PowerSeries>(written[5]));
  store.write(std::get<ValidationResult>(written[6]));
  store.write(std::get<AdaptiveLog>(written[7]));
  store.write_device(find_device("jetson-nano"));

  // Each record carries the provenance of the run that wrote it (this test's: no command line).
  const std::string stamp = provenance_summary(current_run());
  std::string listing =
      fmt::format("{} (schema {}):\n  device\n      {}\n", store.path().string(), kSchemaVersion, stamp);
  for (size_t i = 0; i < std::size(kStoreGroups); ++i) {
    const std::string group = kStoreGroups[i];
    ASSERT_EQ(find_store_group(group), i);
    const auto names = store.list(group);
    ASSERT_EQ(names.size(), 1u) << group;
    const StoreRecord back = store.read_record(group, names[0]);
    EXPECT_EQ(back.index(), i) << group;
    EXPECT_EQ(back, written[i]) << group;
    const std::string csv = std::visit([](const auto& r) { return to_csv(r); }, written[i]);
    EXPECT_EQ(export_csv(store, group + "/" + names[0]), provenance_lines(current_run()) + csv) << group;
    listing += fmt::format("  {}/{}\n      {}\n", group, names[0], stamp);
  }
  EXPECT_EQ(format_store_contents(store), listing);
  EXPECT_EQ(export_csv(store, "device"), provenance_lines(current_run()) + to_csv(find_device("jetson-nano")));
  EXPECT_EQ(export_record_forms(),
            "profiles/NAME, relations/NAME, curves/NAME, models/NAME, sweeps/NAME, runs/NAME, validations/NAME, "
            "decisions/NAME or device");

  EXPECT_FALSE(find_store_group("device"));
  EXPECT_THROW((void)store.read_record("device", "x"), Error);
  try {
    (void)export_csv(store, "traces/p");
    ADD_FAILURE() << "an unknown group was exported";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(),
                 "unknown group 'traces' (profiles, relations, curves, models, sweeps, runs, validations, decisions, "
                 "device)");
  }
  EXPECT_THROW((void)export_csv(store, "profiles"), UsageError);
  EXPECT_THROW((void)export_csv(store, "profiles/missing"), Error);
}

TEST(LearningCurve, FirstReachingFollowsTheMetricsDirection) {
  LearningCurve c;
  c.points = {{8, 0, 100, 0.3}, {8, 0, 200, 0.55}, {8, 0, 300, 0.5}, {8, 0, 400, 0.7}, {8, 1, 100, 0.9}};
  EXPECT_EQ(c.first_reaching(8, 0, 0.5), 200);  // the first point at or above the level
  EXPECT_EQ(c.first_reaching(8, 0, 0.6), 400);
  EXPECT_EQ(c.first_reaching(8, 0, 0.8), 0);   // never
  EXPECT_EQ(c.first_reaching(16, 0, 0.1), 0);  // no such run
  c.higher_is_better = false;                  // an error rate: lower is better
  EXPECT_EQ(c.first_reaching(8, 0, 0.5), 100);
  EXPECT_EQ(c.first_reaching(8, 0, 0.2), 0);
}

TEST(Store, RecordNamesWithSlashesAreRejected) {
  TempDir dir;
  auto store = Store::open_or_create(dir.path / "c.h5");
  ModelRecord m;
  m.name = "a/b";
  EXPECT_THROW(store.write(m), Error);
}

TEST(Store, RelationVectorNormalisesAtTheLargestReachedBatch) {
  const auto r = sample_relation().relation_vector();
  // b=64 has one reached run (12000); b=8 mean (4000+6000)/2 = 5000.
  ASSERT_EQ(r.size(), 2u);
  EXPECT_DOUBLE_EQ(r.at(64), 1.0);
  EXPECT_DOUBLE_EQ(r.at(8), 5000.0 / 12000.0);
  EXPECT_NEAR(sample_relation().std_samples(8), std::sqrt(2e6), 1e-9);
}

TEST(Store, AppendingKeepsEarlierRecordsAndReplacesSameName) {
  TempDir dir;
  auto store = Store::open_or_create(dir.path / "c.h5");
  auto t = sample_profile();
  store.write(t, "a");
  store.write(sample_relation());
  for (int i = 0; i < 20; ++i) {
    t.points[0].time_per_batch_mean_s = i;
    store.write(t, "b");
  }
  EXPECT_EQ(store.read<ProfileTable>("b").points[0].time_per_batch_mean_s, 19);
  EXPECT_EQ(store.read<ProfileTable>("a"), sample_profile());
  EXPECT_EQ(store.read<RelationSet>("fmnist-proxy"), sample_relation());
  // Rewriting reclaims space: 20 rewrites of "b" must not grow the file 20-fold.
  const auto size_after = fs::file_size(dir.path / "c.h5");
  store.write(t, "b");
  EXPECT_LE(fs::file_size(dir.path / "c.h5"), size_after + 1024);
  // No temporary files are left behind: the store and its writers' lock file only.
  std::set<std::string> files;
  for (auto& e : fs::directory_iterator(dir.path)) files.insert(e.path().filename().string());
  EXPECT_EQ(files, (std::set<std::string>{"c.h5", "c.h5.lock"}));
}

TEST(Store, NotHdf5FileIsAClearError) {
  TempDir dir;
  write_bytes(dir.path / "x.h5", "time,power\n1,2\n");
  expect_error([&] { Store::open(dir.path / "x.h5"); }, {"x.h5", "not an HDF5 file"});
}

TEST(Store, MissingFileIsAClearError) {
  TempDir dir;
  expect_error([&] { Store::open(dir.path / "nope.h5"); }, {"nope.h5", "no such trace store"});
}

TEST(Store, TruncatedFileIsAClearErrorAndWritesLeaveItUntouched) {
  TempDir dir;
  auto store = Store::open_or_create(dir.path / "c.h5");
  store.write(sample_profile());
  const std::string bytes = read_bytes(dir.path / "c.h5");
  write_bytes(dir.path / "t.h5", bytes.substr(0, bytes.size() / 2));
  expect_error([&] { Store::open(dir.path / "t.h5").read<ProfileTable>("x"); }, {"t.h5"});
  const std::string before = read_bytes(dir.path / "t.h5");
  Store s(Store::open_or_create(dir.path / "c.h5"));
  EXPECT_THROW(
      {
        // Opening succeeds only for valid stores: writing into a damaged one must fail cleanly.
        auto damaged = Store::open(dir.path / "t.h5");
        damaged.write(sample_relation());
      },
      Error);
  EXPECT_EQ(read_bytes(dir.path / "t.h5"), before);
}

TEST(Store, WrongSchemaVersionIsRejected) {
  TempDir dir;
  {
    H5::H5File f((dir.path / "v.h5").string(), H5F_ACC_TRUNC);
    int64_t v = 99;
    f.createAttribute("pacer_schema", H5::PredType::NATIVE_INT64, H5::DataSpace(H5S_SCALAR))
        .write(H5::PredType::NATIVE_INT64, &v);
  }
  expect_error([&] { Store::open(dir.path / "v.h5"); }, {"v.h5", "schema version 99"});
  { H5::H5File f((dir.path / "n.h5").string(), H5F_ACC_TRUNC); }
  expect_error([&] { Store::open(dir.path / "n.h5"); }, {"n.h5", "pacer_schema"});
}

TEST(Store, MissingRecordAndMissingColumnNameTheObject) {
  TempDir dir;
  auto store = Store::open_or_create(dir.path / "c.h5");
  store.write(sample_profile(), "p");
  expect_error([&] { store.read<ProfileTable>("q"); }, {"no profiles record named 'q'", "present: p"});
  {
    H5::H5File f((dir.path / "c.h5").string(), H5F_ACC_RDWR);
    H5Ldelete(f.getId(), "/profiles/p/power_peak", H5P_DEFAULT);
  }
  pacer::testing::reseal_store(dir.path / "c.h5");  // an in-place edit must update the checksum to reach the reader
  expect_error([&] { store.read<ProfileTable>("p"); }, {"c.h5", "/profiles/p/power_peak", "missing column"});
}

TEST(Store, WrongTypeOrLengthNamesTheColumn) {
  TempDir dir;
  auto store = Store::open_or_create(dir.path / "c.h5");
  store.write(sample_relation());
  {
    H5::H5File f((dir.path / "c.h5").string(), H5F_ACC_RDWR);
    H5Ldelete(f.getId(), "/relations/fmnist-proxy/wall_time", H5P_DEFAULT);
    hsize_t n = 4;
    std::vector<int64_t> ints(4, 1);
    f.openGroup("/relations/fmnist-proxy")
        .createDataSet("wall_time", H5::PredType::NATIVE_INT64, H5::DataSpace(1, &n))
        .write(ints.data(), H5::PredType::NATIVE_INT64);
    H5Ldelete(f.getId(), "/relations/fmnist-proxy/seed", H5P_DEFAULT);
    hsize_t m = 3;
    f.openGroup("/relations/fmnist-proxy")
        .createDataSet("seed", H5::PredType::NATIVE_INT64, H5::DataSpace(1, &m))
        .write(ints.data(), H5::PredType::NATIVE_INT64);
  }
  pacer::testing::reseal_store(dir.path / "c.h5");
  expect_error([&] { store.read<RelationSet>("fmnist-proxy"); },
               {"/relations/fmnist-proxy/seed", "3 rows, expected 4"});
  {
    H5::H5File f((dir.path / "c.h5").string(), H5F_ACC_RDWR);
    H5Ldelete(f.getId(), "/relations/fmnist-proxy/seed", H5P_DEFAULT);
    hsize_t n = 4;
    std::vector<int64_t> ints(4, 1);
    f.openGroup("/relations/fmnist-proxy")
        .createDataSet("seed", H5::PredType::NATIVE_INT64, H5::DataSpace(1, &n))
        .write(ints.data(), H5::PredType::NATIVE_INT64);
  }
  pacer::testing::reseal_store(dir.path / "c.h5");
  expect_error([&] { store.read<RelationSet>("fmnist-proxy"); }, {"/relations/fmnist-proxy/wall_time", "wrong type"});
}

TEST(Store, NumericColumnsCarryUnits) {
  TempDir dir;
  auto store = Store::open_or_create(dir.path / "c.h5");
  store.write(sample_profile(), "p");
  H5::H5File f((dir.path / "c.h5").string(), H5F_ACC_RDONLY);
  H5::Group g = f.openGroup("/profiles/p");
  for (hsize_t i = 0; i < g.getNumObjs(); ++i) {
    const std::string name = g.getObjnameByIdx(i);
    H5::DataSet ds = g.openDataSet(name);
    if (ds.getTypeClass() == H5T_STRING) continue;
    ASSERT_TRUE(ds.attrExists("unit")) << name;
  }
  std::string unit;
  g.openDataSet("power_peak").openAttribute("unit").read(H5::StrType(H5::PredType::C_S1, H5T_VARIABLE), unit);
  EXPECT_EQ(unit, "W");
}

TEST(Csv, ProfileExportHasUnitsAndOneRowPerPoint) {
  const auto csv = to_csv(sample_profile());
  EXPECT_NE(csv.find("gpu_freq[Hz],batch_size[samples],time_per_batch_mean[s]"), std::string::npos);
  const auto parsed = parse_csv(csv.substr(csv.find('\n') + 1), "export");
  EXPECT_EQ(parsed.rows.size(), 6u);
  EXPECT_EQ(parsed.rows[0][0], "76800000");
  EXPECT_EQ(parsed.rows.back()[parsed.column("status", "export")], "skipped: cap exceeded, watchdog");
  // Where each point was measured: not recorded in the sample (written before board fleets).
  EXPECT_EQ(parsed.rows.back()[parsed.column("node", "export")], "");
  EXPECT_EQ(parsed.rows.back().back(), "");  // board_model, the last column
}

TEST(Csv, ParserHandlesQuotesAndReportsBadRows) {
  const auto t = parse_csv("a,b\n\"x,1\",\"say \"\"hi\"\"\"\r\n3,4\n", "t.csv");
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0][0], "x,1");
  EXPECT_EQ(t.rows[0][1], "say \"hi\"");
  EXPECT_EQ(t.column("b", "t.csv"), 1);
  expect_error([] { parse_csv("a,b\n1,2,3\n", "t.csv"); }, {"t.csv:2", "3 fields"});
  expect_error([] { parse_csv("a,b\n\"1,2\n", "t.csv"); }, {"unterminated"});
  expect_error([] { parse_csv("a,b\n1,2\n", "t.csv").column("c", "t.csv"); }, {"missing column 'c'"});
  expect_error([] { parse_csv("", "t.csv"); }, {"empty"});
}

// `pacer validate --policies ""` trained nothing and replaced a 16-row validation record with an
// empty one: a smaller record replaces a stored one only when the caller asks for it.
TEST(Store, ARecordIsNotReplacedByOneWithFewerRowsUnlessAsked) {
  TempDir dir;
  auto store = Store::open_or_create(dir.path / "c.h5");
  store.write(sample_validation_rows(16));
  expect_error([&] { store.write(sample_validation_rows(0)); },
               {"c.h5", "'validations/val' holds 16 rows and the new record only 0"});
  EXPECT_EQ(store.read<ValidationResult>("val"), sample_validation_rows(16));
  store.write(sample_validation_rows(17));  // more rows: a resumed or extended run
  EXPECT_EQ(store.read<ValidationResult>("val").rows.size(), 17u);
  store.write(sample_validation_rows(3), Replace::always);
  EXPECT_EQ(store.read<ValidationResult>("val"), sample_validation_rows(3));

  auto fewer = sample_profile();
  store.write(fewer);
  fewer.points.pop_back();
  expect_error([&] { store.write(fewer); }, {"holds 6 rows and the new record only 5"});
  auto runs = sample_relation();
  store.write(runs);
  runs.runs.clear();
  expect_error([&] { store.write(runs); }, {"relations/fmnist-proxy"});
  auto sweep = sample_sweep();
  store.write(sweep);
  sweep.rows.resize(1);
  expect_error([&] { store.write(sweep); }, {"sweeps/nano-sweep"});
  store.write(sweep, Replace::always);
  EXPECT_EQ(store.read<SweepResult>("nano-sweep").rows.size(), 1u);
}

// A sweep's lowest cap is a point's own power (its grid starts there); read back from the export it is
// the same double, so `select -P` of it finds that point as the record did (the Zeus V100 movielens
// sweep: 34.75158532315594 W exported as 34.75158532, under the point: select answered infeasible).
TEST(Store, AnExportedNumberReadsBackAsTheSameDouble) {
  auto s = pacer::testing::sample_sweep();
  s.rows[0].cap_w = 34.75158532315594;
  s.rows[0].predicted_time_s = 1.0 / 3.0;
  const std::string csv = to_csv(s);
  const auto header = csv.find("cap[W],");
  ASSERT_NE(header, std::string::npos) << csv;
  const auto line = csv.substr(csv.find('\n', header) + 1);
  EXPECT_EQ(std::stod(line.substr(0, line.find(','))), 34.75158532315594) << line;
  EXPECT_NE(line.find(fmt::format(",{},", 1.0 / 3.0)), std::string::npos) << line;
  EXPECT_EQ(csv_number(614.4e6), "614400000");  // whole numbers without an exponent, as before
  EXPECT_EQ(csv_number(traces::kNaN), "");
}

// `pacer profile --store ""` printed "written to " and saved nothing.
TEST(Store, AnEmptyStorePathIsAClearError) {
  expect_error([] { Store::open_or_create(""); }, {"no trace store given", "empty"});
  expect_error([] { Store::open(""); }, {"no trace store given"});
}

// A text output that cannot be written says why, from the errno of the failing call, and what to
// do; never "cannot replace file: Success", the errno of a later call that did not fail.
TEST(WriteFileAtomic, AFolderOrAMissingFolderIsNamedWithWhatToDo) {
  TempDir dir;
  fs::create_directories(dir.path / "taken");
  const std::vector<std::pair<fs::path, std::string>> cases = {
      {dir.path / "taken", "is a folder"},
      {dir.path / "none" / "x.csv", "does not exist"},
  };
  for (const auto& [path, why] : cases) {
    try {
      write_file_atomic(path, "a,b\n1,2\n");
      ADD_FAILURE() << path << " written";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(why), std::string::npos) << what;
      EXPECT_EQ(what.find("Success"), std::string::npos) << what;
    }
  }
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()), 1) << "no temporary file left";
}

// A text output killed between its temporary file and the rename (`pacer export s.h5 R -o k.csv`
// killed in its fsync) left k.csv.tmp-PID, and every later write of k.csv kept it. The next write
// of the file removes the temporaries of processes that no longer run; a live one's stays.
TEST(WriteFileAtomic, TheTemporaryOfAKilledWriteIsRemovedByTheNextWrite) {
  TempDir dir;
  const pid_t dead = ::fork();
  ASSERT_GE(dead, 0);
  if (dead == 0) ::_exit(0);
  ASSERT_EQ(::waitpid(dead, nullptr, 0), dead);  // its pid now names no process
  const fs::path out = dir.path / "k.csv";
  const fs::path killed = fmt::format("{}.tmp-{}", out.string(), dead);
  const fs::path live = fmt::format("{}.tmp-{}", out.string(), ::getppid());
  const fs::path other = fmt::format("{}/j.csv.tmp-{}", dir.path.string(), dead);
  for (const auto& p : {killed, live, other}) std::ofstream(p) << "a,b\n1,";
  write_file_atomic(out, "a,b\n1,2\n");
  EXPECT_FALSE(fs::exists(killed));
  EXPECT_TRUE(fs::exists(live));
  EXPECT_TRUE(fs::exists(other));  // another file's: removed when that file is written
  write_file_atomic(dir.path / "j.csv", "a\n");
  EXPECT_FALSE(fs::exists(other));
}

// Two writers of one record (two `pacer profile` into one profile, two relation campaigns into one
// relation) each held a copy read at their start and wrote it whole: writer A reads, writer B
// writes, writer A writes, and B's rows were gone (issue 22, item 2). add_rows reads the record
// again under the writers' lock and adds its rows to what is there now.
TEST(Store, AddRowsKeepsWhatAnotherWriterAddedSinceTheRecordWasRead) {
  TempDir dir;
  const fs::path path = dir.path / "s.h5";
  const ProfileTable full = sample_profile();  // 6 points, cost 12.5 s
  ProfileTable first = full;
  first.points.resize(2);
  first.profiling_cost_s = 2;
  Store::open_or_create(path).add_rows(first);

  ProfileTable a = Store::open(path).read<ProfileTable>(full.workload);  // writer A reads
  ProfileTable b = a;                                                    // so does writer B
  b.points.push_back(full.points[2]);
  b.points.push_back(full.points[3]);
  b.profiling_cost_s = 3;         // what B adds
  Store::open(path).add_rows(b);  // writer B writes
  a.points.push_back(full.points[4]);
  a.points.push_back(full.points[5]);
  a.profiling_cost_s = 7.5;
  const ProfileTable stored = Store::open(path).add_rows(a);  // writer A writes its stale copy
  EXPECT_EQ(stored, Store::open(path).read<ProfileTable>(full.workload));
  ASSERT_EQ(stored.points.size(), 6u) << "a writer's points were dropped";
  for (const auto& p : full.points)
    EXPECT_NE(std::find(stored.points.begin(), stored.points.end(), p), stored.points.end())
        << "b=" << p.batch_size << " f=" << p.knob[0];
  EXPECT_DOUBLE_EQ(stored.profiling_cost_s, 12.5);

  // A writer's row of a key that is stored (a point measured again) replaces the stored one.
  ProfileTable again = first;
  again.points.resize(1);
  again.points[0].status = "ok";
  again.points[0].time_per_batch_mean_s = 1.25;
  again.profiling_cost_s = 0;
  const ProfileTable after = Store::open(path).add_rows(again);
  ASSERT_EQ(after.points.size(), 6u);
  EXPECT_EQ(after.points.back(), again.points[0]);

  // A relation: the runs of two campaigns with other seeds.
  RelationSet r0 = sample_relation(), r1 = sample_relation();
  r0.runs = {r0.runs[0], r0.runs[2]};
  r1.runs = {r1.runs[1], r1.runs[3]};
  Store::open(path).add_rows(r0);
  Store::open(path).add_rows(r1);
  EXPECT_EQ(Store::open(path).read<RelationSet>("fmnist-proxy").runs.size(), 4u);
}
