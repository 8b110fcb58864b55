// Generic CSV importer: units from headings or from the column mapping, power-mode knobs, bad input.
#include <gtest/gtest.h>

#include "base/error.hpp"
#include "traces/catalog/catalog.hpp"
#include "traces/import/csv_profiles.hpp"

namespace pacer::traces {
namespace {

TEST(ImportCsv, UnitsFromTheHeaderAndFromTheMapping) {
  csv_import::ImportOptions o;
  const auto t = csv_import::import_text(
      "gpu_freq[MHz],b,time_per_batch[ms],power_mean[W],power_peak[mW]\n921.6,8,250,7.5,8100\n76.8,8,2000,2.5,\n", o);
  EXPECT_EQ(t.knob.kind, KnobKind::gpu_freq);
  ASSERT_EQ(t.points.size(), 2u);
  EXPECT_DOUBLE_EQ(t.points[0].knob[0], 921.6e6);
  EXPECT_DOUBLE_EQ(t.points[0].time_per_batch_mean_s, 0.25);
  EXPECT_DOUBLE_EQ(t.points[0].power_peak_w, 8.1);
  EXPECT_TRUE(std::isnan(t.points[1].power_peak_w));
  // Someone else's headings, mapped with units.
  o.columns = csv_import::parse_column_map("b=batch,time_per_batch=latency[s],power_mean=watts,power_limit=cap[W]");
  const auto u = csv_import::import_text("cap,batch,latency,watts\n150,32,0.5,140\n", o);
  EXPECT_EQ(u.knob.kind, KnobKind::power_limit);
  EXPECT_DOUBLE_EQ(u.points[0].knob[0], 150);
  EXPECT_EQ(u.points[0].batch_size, 32);
}

TEST(ImportCsv, PowerModeColumnsAndBadInput) {
  csv_import::ImportOptions o;
  const auto t = csv_import::import_text(
      "cpu_cores,cpu_freq[MHz],gpu_freq[MHz],mem_freq[MHz],b,time_per_batch,power_mean\n2,918,614.4,1600,4,0.5,4.4\n",
      o);
  EXPECT_EQ(t.knob.kind, KnobKind::power_mode);
  EXPECT_EQ(t.points[0].knob, (std::vector<double>{2, 918e6, 614.4e6, 1600e6}));
  const auto expect_error = [&](const std::string& csv, const std::string& fragment) {
    try {
      csv_import::import_text(csv, o);
      ADD_FAILURE() << "expected an error with '" << fragment << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  expect_error("gpu_freq[MHz],b,power_mean\n1,1,1\n", "no 'time_per_batch' column");
  expect_error("b,time_per_batch,power_mean\n1,1,1\n", "no knob columns");
  expect_error("gpu_freq[MHz],b,time_per_batch,power_mean\n1,1,-1,1\n", "csv:2: time per batch and mean power must be");
  expect_error("gpu_freq[MHz],b,time_per_batch,power_mean\n1,1,1,1\n1,1,2,2\n", "csv:3: the same knob setting");
  expect_error("gpu_freq[MHz],b[ms],time_per_batch,power_mean\n1,1,1,1\n", "is a count and takes no unit");
  expect_error("gpu_freq[MHz],b,time_per_batch,power_mean\n1,two,1,1\n", "csv:2: b holds 'two'");
  EXPECT_THROW(csv_import::parse_column_map("speed=col"), Error);
  EXPECT_THROW(csv_import::parse_column_map("b"), Error);
}

// Issue 22 item 15: values no device gives are refused with one line naming the row and column;
// --force keeps a plausible GPU frequency that is not in the named device's table.
TEST(ImportCsv, ImplausibleValuesAreRefusedNamingTheRowAndColumn) {
  const DeviceSpec nano = find_device("jetson-nano");
  csv_import::ImportOptions o;
  o.catalog = &nano;
  const auto expect_error = [&](const std::string& csv, const std::string& fragment) {
    try {
      csv_import::import_text(csv, o);
      ADD_FAILURE() << "expected an error with '" << fragment << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
  };
  const std::string head = "gpu_freq[MHz],b,time_per_batch[s],power_mean[W],power_peak[W]\n";
  expect_error(head + "921.6,8,0.5,5,6\n1e308,8,0.5,5,6\n", "csv:3: column gpu_freq holds inf Hz");
  expect_error(head + "921.6,8,0.5,5,4\n", "csv:2: column power_peak holds 4 W, below the mean power 5 W");
  expect_error(head + "921.6,8,0.5,1e300,\n", "csv:2: column power_mean holds 1e+300 W, above 15 W");
  expect_error(head + "921.6,8,0.5,5000,6100\n", "csv:2: column power_mean holds 5000 W, above 15 W (10 x 1.5");
  expect_error(head + "921.6,8,1e308,5,6\n", "csv:2: column time_per_batch holds 1e+308 s");
  expect_error(head + "500,8,0.5,5,6\n",
               "csv:2: column gpu_freq holds 500 MHz, which is not a GPU frequency of "
               "jetson-nano");
  expect_error("gpu_freq,b,time_per_batch,power_mean\n460.8,8,0.5,5\n", "csv: column gpu_freq has no unit");
  // Without a device: the physics bound (1500 W).
  o.catalog = nullptr;
  expect_error("power_limit[W],b,time_per_batch,power_mean\n-100,8,0.5,5\n", "csv:2: power_limit is negative");
  expect_error("power_limit[W],b,time_per_batch,power_mean\n250,8,0.5,39000\n",
               "csv:2: column power_mean holds 39000 W, above 1500 W");
  EXPECT_NO_THROW(csv_import::import_text(head + "500,8,0.5,5,6\n", o));
  // --force keeps a plausible off-table frequency (with a warning), never an implausible one.
  o.catalog = &nano;
  o.force = true;
  EXPECT_DOUBLE_EQ(csv_import::import_text(head + "500,8,0.5,5,6\n", o).points.at(0).knob.at(0), 500e6);
  expect_error(head + "1e308,8,0.5,5,6\n", "column gpu_freq holds inf Hz");
}

}  // namespace
}  // namespace pacer::traces
