// Generic CSV importer: units from headings or from the column mapping, power-mode knobs, bad input.
#include <gtest/gtest.h>

#include "base/error.hpp"
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
  expect_error("gpu_freq,b,power_mean\n1,1,1\n", "no 'time_per_batch' column");
  expect_error("b,time_per_batch,power_mean\n1,1,1\n", "no knob columns");
  expect_error("gpu_freq,b,time_per_batch,power_mean\n1,1,-1,1\n", "csv:2: time per batch and mean power must be");
  expect_error("gpu_freq,b,time_per_batch,power_mean\n1,1,1,1\n1,1,2,2\n", "csv:3: the same knob setting");
  expect_error("gpu_freq,b[ms],time_per_batch,power_mean\n1,1,1,1\n", "is a count and takes no unit");
  expect_error("gpu_freq,b,time_per_batch,power_mean\n1,two,1,1\n", "csv:2: b holds 'two'");
  EXPECT_THROW(csv_import::parse_column_map("speed=col"), Error);
  EXPECT_THROW(csv_import::parse_column_map("b"), Error);
}

}  // namespace
}  // namespace pacer::traces
