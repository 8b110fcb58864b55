// LoudVA importer: the real files in data/jetson/loudva (shipped with pacer) and malformed
// files written here.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "base/error.hpp"
#include "traces/catalog/catalog.hpp"
#include "traces/catalog/power_modes.hpp"
#include "traces/import/loudva.hpp"

namespace pacer::traces {
namespace {

const std::filesystem::path kLoudva = std::filesystem::path(PACER_SOURCE_DIR) / "data" / "jetson" / "loudva";

void write(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

std::filesystem::path fresh_dir(const std::string& name) {
  const auto d = std::filesystem::temp_directory_path() / ("pacer_loudva_" + name);
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

const char* kHeader = "Concurrency, Mean Power (W), Avg Latency (s), Throughput (Inference/sec), Energy (J)\n";

TEST(ImportLoudva, RealNanoSweep) {
  ASSERT_TRUE(std::filesystem::exists(kLoudva / "nano")) << "no LoudVA data under " << kLoudva;
  loudva::ImportOptions o;
  o.dir = kLoudva / "nano";
  o.device = find_device("jetson-nano");
  const auto r = loudva::import_dir(o);
  ASSERT_EQ(r.profiles.size(), 1u);
  const auto& t = r.profiles[0].table;
  EXPECT_EQ(t.knob.kind, KnobKind::gpu_freq);
  EXPECT_EQ(t.device, "jetson-nano");
  EXPECT_NE(t.source.find("inference"), std::string::npos);
  EXPECT_NE(t.source.find("Loudaros"), std::string::npos);
  EXPECT_NE(t.source.find("POM_5V_IN"), std::string::npos);
  EXPECT_EQ(r.profiles[0].files.size(), 11u);
  EXPECT_EQ(t.points.size(), 11u * 13u);
  // First row of energy_calculated_freq_153600000.csv: 1, 2.26538 W, throughput 1.0886/s.
  const auto* p = t.find({153.6e6}, 1);
  ASSERT_NE(p, nullptr);
  EXPECT_DOUBLE_EQ(p->power_mean_w, 2.26538);
  EXPECT_DOUBLE_EQ(p->time_per_batch_mean_s, 1 / 1.0886);
  const auto* q = t.find({153.6e6}, 4);
  ASSERT_NE(q, nullptr);
  EXPECT_DOUBLE_EQ(q->time_per_batch_mean_s, 4 / 1.45428);
}

TEST(ImportLoudva, RealAgxXavierSweepSumsRails) {
  ASSERT_TRUE(std::filesystem::exists(kLoudva / "agx-xavier")) << "no LoudVA data under " << kLoudva;
  loudva::ImportOptions o;
  o.dir = kLoudva / "agx-xavier";
  o.device = find_device("jetson-agx-xavier");
  const auto r = loudva::import_dir(o);
  ASSERT_EQ(r.profiles.size(), 1u);
  const auto& t = r.profiles[0].table;
  EXPECT_EQ(t.batch_sizes().size(), 128u);
  EXPECT_GT(t.points.size(), 14u * 120u);
  EXPECT_LE(t.points.size(), 14u * 128u);
  EXPECT_NE(t.source.find("sum of"), std::string::npos);  // the board has no module-total rail
  const auto* p = t.find({114.75e6}, 1);
  ASSERT_NE(p, nullptr);
  EXPECT_DOUBLE_EQ(p->power_mean_w, 5.64039);
}

TEST(ImportLoudva, RealNanoModesWithNvpmodelCaps) {
  ASSERT_TRUE(std::filesystem::exists(kLoudva / "nano-modes")) << "no LoudVA data under " << kLoudva;
  loudva::ImportOptions o;
  o.dir = kLoudva / "nano-modes";
  o.device = find_device("jetson-nano");
  const auto r = loudva::import_dir(o);
  ASSERT_EQ(r.profiles.size(), 1u);
  const auto& t = r.profiles[0].table;
  EXPECT_EQ(r.profiles[0].name, "inceptionv3-triton.modes");
  EXPECT_EQ(t.knob.kind, KnobKind::power_mode);
  ASSERT_EQ(r.modes.size(), 2u);
  // MAXN: 4 cores, CPU -1 -> catalog 1479 MHz, GPU -1 -> 921.6 MHz, EMC 0 -> catalog 1600 MHz.
  EXPECT_EQ(mode_knob(r.modes[0], o.device), (std::vector<double>{4, 1479e6, 921.6e6, 1600e6}));
  // 5W: 2 cores, 918000 kHz, GPU 640 MHz snapped to the 614.4 MHz table entry, EMC 1.6 GHz.
  EXPECT_EQ(mode_knob(r.modes[1], o.device), (std::vector<double>{2, 918e6, 614.4e6, 1600e6}));
  EXPECT_EQ(t.points.size(), 4u + 13u);
  const auto* p = t.find(mode_knob(r.modes[1], o.device), 1);
  ASSERT_NE(p, nullptr);
  EXPECT_DOUBLE_EQ(p->power_mean_w, 4.35472);
  EXPECT_DOUBLE_EQ(p->time_per_batch_mean_s, 1 / 4.16632);
}

TEST(ImportLoudva, MalformedSweepRowIsAClearError) {
  const auto d = fresh_dir("bad_row");
  write(d / "energy_calculated_freq_153600000.csv", std::string(kHeader) + "1,2.2,0.9,1.08,2.0\n2,abc,1.5,1.2,4\n");
  loudva::ImportOptions o;
  o.dir = d;
  o.device = find_device("jetson-nano");
  try {
    loudva::import_dir(o);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("energy_calculated_freq_153600000.csv:3"), std::string::npos) << m;
    EXPECT_NE(m.find("'abc'"), std::string::npos) << m;
  }
}

TEST(ImportLoudva, BadInputsAreRejected) {
  loudva::ImportOptions o;
  o.device = find_device("jetson-nano");
  const auto expect_error = [&](const std::string& name, const std::string& file, const std::string& text,
                                const std::string& fragment) {
    const auto d = fresh_dir(name);
    write(d / file, text);
    o.dir = d;
    try {
      loudva::import_dir(o);
      ADD_FAILURE() << name << ": expected an error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << name << ": " << e.what();
    }
  };
  expect_error("freq", "energy_calculated_freq_100000000.csv", std::string(kHeader) + "1,2,1,1,2\n",
               "not in jetson-nano's GPU frequency table");
  expect_error("column", "energy_calculated_freq_153600000.csv", "Concurrency, Power\n1,2\n",
               "missing column 'Mean Power (W)'");
  expect_error("zero", "energy_calculated_freq_153600000.csv", std::string(kHeader) + "1,2,1,0,2\n",
               "must be positive");
  expect_error("dup", "energy_calculated_freq_153600000.csv", std::string(kHeader) + "1,2,1,1,2\n1,2,1,1,2\n",
               "appears twice");
  expect_error("frac", "energy_calculated_freq_153600000.csv", std::string(kHeader) + "1.5,2,1,1,2\n", "whole number");
  expect_error("empty", "notes.txt", "x", "holds no LoudVA file");
  expect_error("partner", "performance_measurements_mode_0.csv", "Concurrency,Inferences/Second\n1,5\n",
               "no partner power_measurement_stats_mode_0.csv");
}

TEST(ImportLoudva, ModeFilesMustAgreeAndNameAConfMode) {
  const auto d = fresh_dir("modes");
  write(d / "performance_measurements_mode_1.csv", "Concurrency,Inferences/Second\n1,4\n2,4.5\n");
  write(d / "power_measurement_stats_mode_1.csv", "Mean: 4000\n");
  write(d / "my_nvpmodel.conf",
        "< PARAM TYPE=CLOCK NAME=GPU >\nMAX_FREQ /sys/devices/gpu.0/devfreq/57000000.gpu/max_freq\n"
        "< POWER_MODEL ID=1 NAME=5W >\nGPU MAX_FREQ 640000000\n");
  loudva::ImportOptions o;
  o.dir = d;
  o.device = find_device("jetson-nano");
  try {
    loudva::import_dir(o);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("2 performance rows but 1 power means"), std::string::npos) << e.what();
  }
  write(d / "power_measurement_stats_mode_1.csv", "Mean: 4000\nMean: 4100\n");
  const auto r = loudva::import_dir(o);
  ASSERT_EQ(r.profiles.size(), 1u);
  EXPECT_DOUBLE_EQ(r.profiles[0].table.points[1].power_mean_w, 4.1);
  EXPECT_DOUBLE_EQ(r.modes[0].gpu_max_hz, 614.4e6);
  EXPECT_EQ(r.modes[0].cpu_cores, 2);  // no CPU_ONLINE lines: the catalog's mode 1
  // A mode the conf lacks.
  std::filesystem::rename(d / "performance_measurements_mode_1.csv", d / "performance_measurements_mode_7.csv");
  std::filesystem::rename(d / "power_measurement_stats_mode_1.csv", d / "power_measurement_stats_mode_7.csv");
  EXPECT_THROW(loudva::import_dir(o), Error);
}

}  // namespace
}  // namespace pacer::traces
