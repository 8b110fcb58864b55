// The on-disk format and what follows from the field tables (traces/columns.hpp): a store written
// by pacer before the codecs were generated from the tables reads back identically, the CSV export
// names every column with its unit, and docs/trace-store.md lists exactly the declared columns.
#include <H5Cpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include <fmt/format.h>

#include "base/error.hpp"
#include "tests/support/sample_records.hpp"
#include "traces/catalog/catalog.hpp"
#include "traces/columns.hpp"
#include "traces/csv.hpp"
#include "traces/store/export.hpp"
#include "traces/store/store.hpp"

using namespace pacer::traces;
namespace fs = std::filesystem;

namespace {

const fs::path kGolden = fs::path(PACER_SOURCE_DIR) / "tests/support/store-v1.h5";

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

ProfileTable modes_profile() {
  ProfileTable t;
  t.workload = "modes";
  t.knob = KnobSpace::power_mode();
  ProfilePoint p;
  p.knob = {4, 1.2e9, 6e8, 3.2e9};
  p.batch_size = 16;
  t.points = {p};
  return t;
}

// The AGX Orin catalog entry as it was when the golden store was written: one mode, MAXN (its
// four nvpmodel modes came later, with the optional gpu_tpcs column).
DeviceSpec golden_agx_orin() {
  DeviceSpec d = find_device("jetson-agx-orin");
  PowerModeSpec maxn;
  maxn.id = 0;
  maxn.name = "MAXN";
  maxn.gpu_max_hz = 1300e6;
  maxn.cpu_cores = 12;
  maxn.cpu_max_hz = 2201e6;
  maxn.mem_hz = 3200e6;
  d.power_modes = {maxn};
  d.sources["modes"] = "facts/jetson.md s2 (AGX Orin 64GB MAXN)";
  return d;
}

// The markdown lines docs/trace-store.md must hold for one row table: "`name` [unit]" per column.
template <typename Row, size_t N>
std::string column_list(const std::array<Field<Row>, N>& table) {
  std::string s;
  for (const auto& f : table) {
    s += s.empty() ? "" : ", ";
    s += fmt::format("`{}`", f.name);
    if (f.unit == kKnobUnit)
      s += " [knob units]";
    else if (f.unit == kMetricUnit)
      s += " [the metric]";
    else if (!f.unit.empty())
      s += fmt::format(" [{}]", f.unit);
  }
  return s;
}

}  // namespace

// A store written before records carried provenance reads back, every field "unknown", and its
// export says so.
TEST(StoreFormat, AStoreWithoutProvenanceReadsAsUnknown) {
  const Store s = Store::open(kGolden);
  const auto profiles = s.list<ProfileTable>();
  ASSERT_FALSE(profiles.empty());
  EXPECT_EQ(s.read_provenance("profiles", profiles.front()), Provenance{});
  EXPECT_EQ(s.read_provenance("device", ""), Provenance{});
  EXPECT_EQ(Provenance{}.command_line, "unknown");
  const std::string csv = export_csv(s, "profiles/" + profiles.front());
  EXPECT_EQ(csv.rfind("# pacer_version: unknown\n# git_commit: unknown\n# command_line: unknown\n", 0), 0u) << csv;
  EXPECT_NE(format_store_contents(s).find("pacer unknown (commit unknown), unknown on unknown: unknown"),
            std::string::npos);
}

// tests/support/store-v1.h5 was written by the hand-written codecs of commit 71e9403 (the sample
// records of tests/support/sample_records.hpp, the AGX Orin catalog entry, a power-mode profile).
TEST(StoreFormat, AStoreWrittenBeforeTheColumnTablesReadsBackIdentically) {
  const Store s = Store::open(kGolden);
  EXPECT_EQ(s.read_device(), golden_agx_orin());
  EXPECT_EQ(s.read<ProfileTable>("resnet8-w0.25@1x28x28"), pacer::testing::sample_profile());
  EXPECT_EQ(s.read<ProfileTable>("modes"), modes_profile());
  EXPECT_EQ(s.read<RelationSet>("fmnist-proxy"), pacer::testing::sample_relation());
  EXPECT_EQ(s.read<ModelRecord>("resnet8@jetson-nano:analytical"), pacer::testing::sample_model());
  EXPECT_EQ(s.read<SweepResult>("nano-sweep"), pacer::testing::sample_sweep());
  EXPECT_EQ(s.read<PowerSeries>("validate-ours-5W"), pacer::testing::sample_series());
  EXPECT_EQ(s.read<ValidationResult>("val"), pacer::testing::sample_validation());
}

// Every object of a store: its path, kind, type class and size, shape, and its attributes' names
// and type classes -- the layout, without the object timestamps HDF5 keeps.
std::map<std::string, std::string> layout(const fs::path& path) {
  std::map<std::string, std::string> out;
  H5::H5File f(path.string(), H5F_ACC_RDONLY);
  struct Ctx {
    hid_t file;
    std::map<std::string, std::string>* out;
  } ctx{f.getId(), &out};
  auto visit = [](hid_t, const char* name, const H5O_info_t* info, void* data) -> herr_t {
    auto* c = static_cast<Ctx*>(data);
    std::string d = info->type == H5O_TYPE_GROUP ? "group" : "dataset";
    const hid_t obj = H5Oopen(c->file, name, H5P_DEFAULT);
    if (info->type == H5O_TYPE_DATASET) {
      const hid_t type = H5Dget_type(obj), space = H5Dget_space(obj);
      hsize_t dims[4] = {0, 0, 0, 0};
      const int rank = H5Sget_simple_extent_dims(space, dims, nullptr);
      d += fmt::format(" class={} size={} rank={} dims={}x{}", static_cast<int>(H5Tget_class(type)), H5Tget_size(type),
                       rank, dims[0], dims[1]);
      H5Tclose(type);
      H5Sclose(space);
    }
    for (hsize_t i = 0; i < info->num_attrs; ++i) {
      const hid_t a = H5Aopen_by_idx(obj, ".", H5_INDEX_NAME, H5_ITER_INC, i, H5P_DEFAULT, H5P_DEFAULT);
      char an[256] = {0};
      H5Aget_name(a, sizeof an, an);
      const hid_t at = H5Aget_type(a);
      d += fmt::format(" @{}:{}", an, static_cast<int>(H5Tget_class(at)));
      H5Tclose(at);
      H5Aclose(a);
    }
    H5Oclose(obj);
    (*c->out)[name] = d;
    return 0;
  };
  H5Ovisit(f.getId(), H5_INDEX_NAME, H5_ITER_INC, visit, &ctx);
  return out;
}

// The same records written now give a store with the same objects, types, shapes and attributes
// as the old one: the generated writer lays out exactly what the hand-written one did.
TEST(StoreFormat, WritingTheSameRecordsGivesTheSameLayout) {
  const fs::path dir = fs::temp_directory_path() / ("pacer-format-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  Store s = Store::open_or_create(dir / "s.h5");
  s.write_device(golden_agx_orin());
  s.write(pacer::testing::sample_profile());
  s.write(modes_profile());
  s.write(pacer::testing::sample_relation());
  s.write(pacer::testing::sample_model());
  s.write(pacer::testing::sample_sweep());
  s.write(pacer::testing::sample_series());
  s.write(pacer::testing::sample_validation());
  auto now = layout(dir / "s.h5");
  const auto before = layout(kGolden);
  // Optional columns declared after the golden store was written (node and board_model of profile
  // points and validation rows, docs/cluster.md; the threads of relation runs and validation rows,
  // docs/reliability.md; probe of validation rows,
  // docs/explore.md; the guard of sweep rows, each workload's own, docs/explore.md): each must be
  // there now, and is left out below.
  const std::pair<std::string, std::vector<std::string>> added_columns[] = {
      {"profiles/", {"/node", "/board_model"}},
      {"validations/", {"/node", "/board_model", "/threads", "/probe"}},
      {"relations/", {"/threads"}},
      {"sweeps/", {"/guard"}},
  };
  for (const auto& [record, columns] : added_columns) {
    int groups = 0;
    for (const auto& [name, description] : before)
      if (name.rfind(record, 0) == 0 && name.find('/', record.size()) == std::string::npos &&
          description.rfind("group", 0) == 0)
        ++groups;
    int added = 0;
    for (const std::string& column : columns)
      for (auto it = now.begin(); it != now.end();)
        if (it->first.rfind(record, 0) == 0 && it->first.size() > column.size() &&
            it->first.compare(it->first.size() - column.size(), column.size(), column) == 0 &&
            it->first.find('/', record.size()) == it->first.size() - column.size()) {
          ++added;
          it = now.erase(it);
        } else {
          ++it;
        }
    EXPECT_EQ(added, static_cast<int>(columns.size()) * groups) << record;
    EXPECT_GT(groups, 0) << record;
  }
  // Optional attributes declared after the golden store was written (read as their default from
  // older stores) and the group of the learning curves, added since: each must be there now, and
  // apart from them the layout is the old one.
  ASSERT_EQ(now.count("curves"), 1u);
  now.erase("curves");
  // The adaptive campaigns' decision logs, added since (a store without the group reads as none).
  ASSERT_EQ(now.count("decisions"), 1u);
  now.erase("decisions");
  const std::pair<std::string, std::vector<std::string>> added_attributes[] = {
      {" @guard:1", {"sweeps/", "validations/"}},
      {" @budget:3", {"sweeps/"}},
      {" @proxy_cut:3", {"sweeps/"}},
      {" @proxy_share:1", {"sweeps/"}},
      {" @floating_clocks:3", {"profiles/"}},
      {" @transfer_gate:0", {"models/"}},
      {" @transfer_choice:3", {"models/"}},
      // How a relation's runs were trained (docs/trace-store.md).
      {" @train_samples:0", {"relations/"}},
      {" @eval_samples:0", {"relations/"}},
      {" @split_seed:0", {"relations/"}},
      {" @eval_every:0", {"relations/"}},
      {" @eval_stop:3", {"relations/"}},
      {" @checkpoint:3", {"relations/"}},
  };
  // Every record's provenance (traces/provenance.hpp), added since: strings on each record group.
  for (const auto& [field, value] : Provenance{}.fields()) {
    const std::string added = " @provenance_" + field + ":3";
    for (const std::string record :
         {"device", "profiles/", "relations/", "models/", "sweeps/", "runs/", "validations/"})
      for (auto& [name, description] : now)
        if (name.rfind(record, 0) == 0 && name.find('/', record.size()) == std::string::npos &&
            (record != "device" || name == "device")) {
          const auto at = description.find(added);
          ASSERT_NE(at, std::string::npos) << name << ": " << description;
          description.erase(at, added.size());
        }
  }
  for (const auto& [added, records] : added_attributes)
    for (const std::string& record : records)
      for (auto& [name, description] : now)
        if (name.rfind(record, 0) == 0 && name.find('/', record.size()) == std::string::npos) {
          const auto at = description.find(added);
          ASSERT_NE(at, std::string::npos) << name << ": " << description;
          description.erase(at, added.size());
        }
  // Optional columns declared after it: present now, absent there.
  for (const std::string added : {"device/power_modes/gpu_tpcs"}) {
    ASSERT_TRUE(now.count(added)) << added;
    now.erase(added);
  }
  EXPECT_GT(before.size(), 100u);
  EXPECT_EQ(now, before);
  fs::remove_all(dir);
}

TEST(StoreFormat, CsvHeadersFollowTheColumnTables) {
  const auto v = to_csv(pacer::testing::sample_validation());
  EXPECT_NE(v.find("\ncap[W],policy,gpu_freq[Hz],batch_size[samples],seed[1],reached[bool],samples[samples],"
                   "device_time[s],wall_time[s],energy[J],power_peak[W],power_mean[W],cap_exceeded[bool],"
                   "time_over_cap[s],predicted_time[s],predicted_energy[J],final_metric[accuracy],series,status,node,"
                   "board_model,threads[1],probe\n"),
            std::string::npos)
      << v;
  EXPECT_NE(v.find("\n5,oracle,614400000,32,2,0,4096,31.5,,,,,1,0.2,,,,val-ours-5W-s2,\"stopped: power watchdog, "
                   "\"\"test\"\"\",,,0,\n"),
            std::string::npos)
      << v;
  const auto sw = to_csv(pacer::testing::sample_sweep());
  EXPECT_NE(sw.find("\n1,w,ours,0,,0,,,,,,,\n"), std::string::npos) << sw;  // infeasible: empty knob and costs
  const auto r = to_csv(pacer::testing::sample_relation());
  EXPECT_NE(r.find("\n64,1,0,100000,100000,20,0.8,0.001,0\n"), std::string::npos) << r;
  const auto p = to_csv(modes_profile());
  EXPECT_NE(p.find("cpu_cores[1],cpu_freq[Hz],gpu_freq[Hz],mem_freq[Hz],batch_size[samples]"), std::string::npos) << p;
}

TEST(StoreFormat, TheSchemaDocumentListsEveryDeclaredColumnWithItsUnit) {
  const std::string doc = slurp(fs::path(PACER_SOURCE_DIR) / "docs/trace-store.md");
  const std::pair<std::string, std::string> lists[] = {
      {"ProfilePoint", column_list(kProfilePointColumns)},
      {"RelationRun", column_list(kRelationRunColumns)},
      {"SweepRow", column_list(kSweepRowColumns)},
      {"ValidationRow", column_list(kValidationRowColumns)},
      {"PowerModeSpec", column_list(kPowerModeColumns)},
      {"RailSpec", column_list(kRailColumns)},
      {"VoltagePoint", column_list(kVoltageColumns)},
      {"CurvePoint", column_list(kCurvePointColumns)},
      {"AdaptiveLogRow", column_list(kAdaptiveLogRowColumns)},
  };
  const std::pair<std::string, std::string> attributes[] = {
      {"ProfileTable", column_list(kProfileTableAttributes)},
      {"RelationSet", column_list(kRelationSetAttributes)},
      {"LearningCurve", column_list(kLearningCurveAttributes)},
      {"ModelRecord", column_list(kModelRecordAttributes)},
      {"SweepResult", column_list(kSweepResultAttributes)},
      {"PowerSeries", column_list(kPowerSeriesAttributes)},
      {"ValidationResult", column_list(kValidationResultAttributes)},
      {"DeviceSpec", column_list(kDeviceSpecAttributes)},
      {"AdaptiveLog", column_list(kAdaptiveLogAttributes)},
  };
  for (const auto& [record, list] : attributes)
    EXPECT_NE(doc.find("Attributes (" + record + "): " + list + "\n"), std::string::npos)
        << "docs/trace-store.md is out of date: it must hold the line\nAttributes (" << record << "): " << list;
  for (const auto& [row, list] : lists)
    EXPECT_NE(doc.find("Columns (" + row + "): " + list + "\n"), std::string::npos)
        << "docs/trace-store.md is out of date: it must hold the line\nColumns (" << row << "): " << list;
}
