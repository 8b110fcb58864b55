// tegrastats importer: the three real logs in shared/ with marks written here, and synthetic lines
// of the generations the real logs do not cover (Orin, TX2, JetPack 7).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "base/error.hpp"
#include "traces/import/common.hpp"
#include "traces/import/tegrastats.hpp"

namespace pacer::traces {
namespace {

const std::filesystem::path kLogs =
    std::filesystem::path(PACER_SOURCE_DIR) / "data" / "jetson" / "loudva" / "tegrastats";

tegrastats::ImportOptions options_for(const std::string& log) {
  tegrastats::ImportOptions o;
  o.log = kLogs / log;
  return o;
}

TEST(ImportTegrastats, RealNanoLogTotalRailWithoutDate) {
  ASSERT_TRUE(std::filesystem::exists(kLogs / "nano.log")) << "no tegrastats logs under " << kLogs;
  // No date prefix: sample k is at k x interval; lines 1-10 are 0..9 s.
  const std::string marks =
      "start_s,end_s,b,gpu_freq[MHz],batches\n"
      "0,9,4,921.6,3\n"
      "10,19,8,76.8,\n";
  const auto o = options_for("nano.log");
  const auto t = tegrastats::import_text(import::read_text(o.log), marks, o);
  ASSERT_EQ(t.points.size(), 2u);
  const auto& p = t.points[0];
  EXPECT_EQ(t.knob.kind, KnobKind::gpu_freq);
  EXPECT_DOUBLE_EQ(p.knob[0], 921.6e6);
  EXPECT_EQ(p.power_samples, 10);
  EXPECT_NEAR(p.power_mean_w, 1.1865, 1e-9);  // POM_5V_IN "cur" of lines 1-10
  EXPECT_DOUBLE_EQ(p.power_peak_w, 1.863);
  EXPECT_DOUBLE_EQ(p.time_per_batch_mean_s, 3.0);  // 9 s / 3 mini-batches
  EXPECT_EQ(p.status, "ok");
  EXPECT_NE(t.points[1].status.find("power only"), std::string::npos);
  EXPECT_NE(t.source.find("module-total rail"), std::string::npos);
}

TEST(ImportTegrastats, RealXavierNxLogSpreadsLinesWithinASecond) {
  ASSERT_TRUE(std::filesystem::exists(kLogs / "xavier-nx.log")) << "no tegrastats logs under " << kLogs;
  const auto o = options_for("xavier-nx.log");
  const auto samples = tegrastats::parse_log(import::read_text(o.log), "xavier-nx.log", 1.0);
  // The first 4 lines are stamped 15:53:23: 0, 0.25, 0.5, 0.75 s.
  ASSERT_GT(samples.size(), 5u);
  EXPECT_DOUBLE_EQ(samples[1].time_s, 0.25);
  EXPECT_DOUBLE_EQ(samples[4].time_s, 1.0);
  EXPECT_DOUBLE_EQ(samples[0].module_power_w, 3.791);  // VDD_IN, not the sum of the three rails
  EXPECT_FALSE(samples[0].summed);
  EXPECT_EQ(samples[0].cpus, 6);
  EXPECT_EQ(samples[0].cpus_online, 2);  // "off" cores
  EXPECT_DOUBLE_EQ(samples[0].gpu_freq_hz, 114e6);
  EXPECT_DOUBLE_EQ(samples[0].emc_freq_hz, 204e6);
  EXPECT_DOUBLE_EQ(samples[0].temperatures_c.at("GPU"), 41);
  const auto t =
      tegrastats::import_text(import::read_text(o.log), "start_s,end_s,b,gpu_freq,batches\n0,0.9,1,114000000,\n", o);
  EXPECT_EQ(t.points[0].power_samples, 4);
  EXPECT_NEAR(t.points[0].power_mean_w, (3.791 + 3.179 + 3.506 + 3.669) / 4, 1e-12);
}

TEST(ImportTegrastats, RealAgxXavierLogSumsRails) {
  ASSERT_TRUE(std::filesystem::exists(kLogs / "agx-xavier.log")) << "no tegrastats logs under " << kLogs;
  const auto o = options_for("agx-xavier.log");
  const auto samples = tegrastats::parse_log(import::read_text(o.log), "agx-xavier.log", 1.0);
  // GPU 0 + CPU 2022 + SOC 2178 + CV 0 + VDDRQ 311 + SYS5V 2243 mW: the board has no total rail.
  EXPECT_TRUE(samples[0].summed);
  EXPECT_DOUBLE_EQ(samples[0].module_power_w, 6.754);
  EXPECT_EQ(samples[0].rails_w.size(), 6u);
  EXPECT_DOUBLE_EQ(samples[0].gpu_freq_hz, 114e6);
}

TEST(ImportTegrastats, SyntheticOrinTx2AndJetPack7Lines) {
  // AGX Orin (JS emulator line): no total rail, NC channels left out of the sum.
  const auto orin = tegrastats::parse_line(
      "01-03-2023 16:07:54 RAM 2257/30536MB (lfb 5392x4MB) SWAP 0/15268MB (cached 0MB) CPU [1%@729,off,3%@729] "
      "EMC_FREQ 0%@204 GR3D_FREQ 0%@0 tj@41.656C VDD_GPU_SOC 2390mW/2390mW VDD_CPU_CV 796mW/796mW "
      "VIN_SYS_5V0 3522mW/3522mW NC 0mW/0mW VDDQ_VDD2_1V8AO 301mW/301mW NC 0mW/0mW",
      "orin", 1);
  EXPECT_TRUE(orin.summed);
  EXPECT_DOUBLE_EQ(orin.module_power_w, 2.390 + 0.796 + 3.522 + 0.301);
  EXPECT_EQ(orin.cpus_online, 2);
  EXPECT_DOUBLE_EQ(orin.temperatures_c.at("tj"), 41.656);
  // TX2 (no units, VDD_IN is the total).
  const auto tx2 = tegrastats::parse_line(
      "RAM 1/7854MB CPU [50%@2035,off,off,50%@2034] EMC_FREQ 2%@1866 GR3D_FREQ 99%@1300 VDD_IN 14025/14416 "
      "VDD_CPU 2209/2538 VDD_GPU 6854/6903 VDD_SOC 1371/1370 VDD_WIFI 19/19 VDD_DDR 2702/2702",
      "tx2", 1);
  EXPECT_FALSE(tx2.summed);
  EXPECT_DOUBLE_EQ(tx2.module_power_w, 14.025);
  EXPECT_DOUBLE_EQ(tx2.gpu_freq_hz, 1300e6);
  EXPECT_DOUBLE_EQ(tx2.gpu_load, 0.99);
  EXPECT_DOUBLE_EQ(tx2.emc_freq_hz, 1866e6);
  // JetPack 7: per-GPC frequency list and three values per rail.
  const auto jp7 = tegrastats::parse_line(
      "07-25-2026 09:08:28 RAM 20642/62817MB (lfb 1x2MB) CPU [23%@2201] EMC_FREQ 3%@3199 GR3D_FREQ 12%@[1300,1300] "
      "cpu@52.968C/52.968C VDD_GPU_SOC 5139mW/5139mW/5139mW VDD_CPU_CV 3268mW/3268mW/3268mW "
      "VIN_SYS_5V0 5500mW/5500mW/5500mW",
      "jp7", 1);
  EXPECT_DOUBLE_EQ(jp7.module_power_w, 5.139 + 3.268 + 5.5);
  EXPECT_DOUBLE_EQ(jp7.gpu_freq_hz, 1300e6);
  EXPECT_DOUBLE_EQ(jp7.temperatures_c.at("cpu"), 52.968);
}

TEST(ImportTegrastats, PowerModeMarksAndBadInput) {
  const std::string log =
      "RAM 1/2MB POM_5V_IN 5000/5000 POM_5V_GPU 1/1\nRAM 1/2MB POM_5V_IN 7000/6000 POM_5V_GPU 1/1\n";
  tegrastats::ImportOptions o;
  o.interval_s = 0.5;
  const auto t = tegrastats::import_text(log,
                                         "start_s,end_s,b,cpu_cores,cpu_freq[MHz],gpu_freq[MHz],mem_freq[MHz],time_per_"
                                         "batch[ms]\n0,0.5,2,4,1479,921.6,1600,250\n",
                                         o);
  EXPECT_EQ(t.knob.kind, KnobKind::power_mode);
  EXPECT_EQ(t.points[0].knob, (std::vector<double>{4, 1479e6, 921.6e6, 1600e6}));
  EXPECT_DOUBLE_EQ(t.points[0].time_per_batch_mean_s, 0.25);
  EXPECT_DOUBLE_EQ(t.points[0].power_mean_w, 6.0);
  EXPECT_DOUBLE_EQ(t.points[0].power_peak_w, 7.0);
  const auto expect_error = [&](const std::string& lg, const std::string& marks, const std::string& fragment) {
    try {
      tegrastats::import_text(lg, marks, o);
      ADD_FAILURE() << "expected an error with '" << fragment << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  expect_error("RAM 1/2MB CPU [1%@2]\n", "start_s,end_s,b,gpu_freq,batches\n0,1,1,1,\n",
               "tegrastats log:1: no power rail");
  expect_error(log, "start_s,end_s,b,gpu_freq,batches\n0.1,0.4,1,1,\n", "no tegrastats sample between 0.1 s and 0.4 s");
  expect_error(log, "start_s,end_s,b,batches\n0,1,1,\n", "no knob columns");
  expect_error(log, "start_s,end_s,b,gpu_freq[furlongs],batches\n0,1,1,1,\n", "unit [furlongs]");
  expect_error(log, "start_s,end_s,b,gpu_freq,batches\n1,0,1,1,\n", "end_s must be after start_s");
  expect_error(log, "start_s,end_s,b,gpu_freq,batches\n0,1,x,1,\n", "marks:2: b holds 'x'");
  expect_error("RAM 1/2MB GR3D_FREQ abc POM_5V_IN 1/1\n", "start_s,end_s,b,gpu_freq,batches\n0,1,1,1,\n", "not load%");
}

}  // namespace
// A number too large for a double or an int is one error naming the line, the field and the value,
// never the bare "stod"/"stoul" of the C++ library, which names none of them.
TEST(ImportTegrastats, NumbersOutOfRangeNameTheLineAndTheValue) {
  const std::string huge(400, '9');
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"RAM 1/2MB POM_5V_IN " + huge + "/1", "POM_5V_IN"},
      {"RAM 1/2MB GR3D_FREQ 5%@" + huge + " POM_5V_IN 1/1", "GR3D_FREQ"},
      {"RAM 1/2MB gpu@" + huge + "C POM_5V_IN 1/1", "gpu"},
  };
  for (const auto& [line, field] : cases) {
    try {
      tegrastats::parse_line(line, "big.log", 7);
      ADD_FAILURE() << "accepted: " << line;
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("big.log:7"), std::string::npos) << what;
      EXPECT_NE(what.find(field), std::string::npos) << what;
      EXPECT_NE(what.find("9999"), std::string::npos) << what;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not a pacer::Error: " << e.what();
    }
  }
}

namespace {

// Issue 22 item 16: windows outside the log, repeated or overlapping windows, a window with two
// batch sizes, a marks file without timing columns and a negative rail reading are refused with one
// line naming the file, the row and the column.
TEST(ImportTegrastats, ImplausibleMarksAndReadingsAreRefusedNamingTheRow) {
  // Four samples, 0.5 s apart: the log spans 0-1.5 s.
  const std::string log =
      "RAM 1/2MB POM_5V_IN 5000/5000\nRAM 1/2MB POM_5V_IN 6000/5000\n"
      "RAM 1/2MB POM_5V_IN 7000/5000\nRAM 1/2MB POM_5V_IN 6000/5000\n";
  tegrastats::ImportOptions o;
  o.interval_s = 0.5;
  const auto expect_error = [&](const std::string& lg, const std::string& marks, const std::string& fragment) {
    try {
      tegrastats::import_text(lg, marks, o);
      ADD_FAILURE() << "expected an error with '" << fragment << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
  };
  const std::string head = "start_s,end_s,b,gpu_freq[MHz],batches\n";
  expect_error(log, head + "-10,5,8,921.6,4\n",
               "marks:2: columns start_s, end_s: the window from -10 s to 5 s is partly outside");
  expect_error(log, head + "0,1e18,8,921.6,4\n",
               "marks:2: columns start_s, end_s: the window from 0 s to 1e+18 s is partly");
  expect_error(log, head + "20,30,8,921.6,4\n",
               "marks:2: columns start_s, end_s: the window from 20 s to 30 s is outside");
  expect_error(log, head + "0,1,8,921.6,4\n0,1,8,921.6,4\n",
               "marks:3: columns start_s, end_s: the window from 0 s to 1 s is "
               "already on line 2");
  expect_error(log, head + "0,1,8,921.6,4\n0,1,16,921.6,4\n", "with another batch size (b=8 and b=16)");
  expect_error(log, head + "0,1,8,921.6,4\n0.5,1.5,16,921.6,4\n",
               "marks:3: columns start_s, end_s: the window "
               "from 0.5 s to 1.5 s overlaps the window from 0 s to 1 s of line 2");
  expect_error(log, "start_s,end_s,b,gpu_freq[MHz]\n0,1,8,921.6\n", "marks: no 'batches' or 'time_per_batch' column");
  expect_error("RAM 1/2MB POM_5V_IN 5000/5000\nRAM 1/2MB POM_5V_IN -100/5000\n", head + "0,0.5,8,921.6,4\n",
               "tegrastats log:2: rail POM_5V_IN reads '-100/5000'");
  expect_error(log, head + "0,1,8,1e308,4\n", "marks:2: column gpu_freq holds");
  // Touching windows and a power-only window (an empty cell) are fine.
  const auto t = tegrastats::import_text(log, head + "0,0.5,8,921.6,4\n0.5,1.5,16,921.6,\n", o);
  ASSERT_EQ(t.points.size(), 2u);
  EXPECT_NE(t.points[1].status.find("power only"), std::string::npos);
}

// Issue 22 items 18 and 22: a log whose last line was cut off keeps its complete lines (a warning
// says so); a UTF-8 byte-order mark in the marks is dropped; a CR-only marks file is refused.
TEST(ImportTegrastats, ACutOffLastLineIsLeftOutAndTheRestKept) {
  tegrastats::ImportOptions o;
  o.interval_s = 0.5;
  const std::string full =
      "RAM 1/2MB POM_5V_IN 5000/5000 POM_5V_GPU 1/1\nRAM 1/2MB POM_5V_IN 7000/6000 POM_5V_GPU 1/1\n";
  const std::string marks = "\xEF\xBB\xBFstart_s,end_s,b,gpu_freq[MHz],batches\n0,0.5,8,921.6,2\n";
  for (const std::string& cut : {"RAM 1/2MB POM_5V_IN 70", "RAM 1/2MB POM_5V_IN 7000/6000 POM_5V_G", "RAM 1/2"}) {
    const auto t = tegrastats::import_text(full + cut, marks, o);
    ASSERT_EQ(t.points.size(), 1u) << cut;
    EXPECT_EQ(t.points[0].power_samples, 2) << cut;
    EXPECT_DOUBLE_EQ(t.points[0].power_mean_w, 6.0) << cut;
  }
  // A complete last line without its line end is kept.
  EXPECT_EQ(tegrastats::parse_log(full + "RAM 1/2MB POM_5V_IN 9000/6000 POM_5V_GPU 1/1", "log", 0.5).size(), 3u);
  // A damaged line that is not the last is still an error.
  EXPECT_THROW(tegrastats::parse_log("RAM 1/2MB POM_5V_IN 50\n" + full, "log", 0.5), Error);
  EXPECT_THROW(tegrastats::import_text(full, "start_s,end_s,b,gpu_freq[MHz],batches\r0,0.5,8,921.6,2\r", o), Error);
}

}  // namespace

}  // namespace pacer::traces
