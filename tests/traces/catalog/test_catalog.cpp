#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "base/error.hpp"
#include "traces/catalog/catalog.hpp"

using namespace pacer;

TEST(Catalog, HasEveryBoardOfTheFactsFile) {
  const auto names = traces::builtin_device_names();
  for (const char* n : {"jetson-nano", "jetson-tx2", "jetson-tx2-nx", "jetson-xavier-nx", "jetson-agx-xavier",
                        "jetson-agx-orin", "jetson-orin-nano"})
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
}

TEST(Catalog, NanoEntryMatchesTheFacts) {
  const auto d = traces::find_device("jetson-nano");
  ASSERT_EQ(d.gpu_freqs_hz.size(), 12u);
  EXPECT_DOUBLE_EQ(d.gpu_freqs_hz.front(), 76.8e6);
  EXPECT_DOUBLE_EQ(d.gpu_freqs_hz.back(), 921.6e6);
  EXPECT_DOUBLE_EQ(d.gpu_freqs_hz[7], 614.4e6);
  EXPECT_EQ(d.total_rail, "POM_5V_IN");
  EXPECT_EQ(d.gpu_rail, "POM_5V_GPU");
  EXPECT_EQ(d.sensor_layout, "iio");
  ASSERT_EQ(d.voltage_table.size(), 12u);
  EXPECT_DOUBLE_EQ(d.voltage_table.back().volt_v, 1.057);
  EXPECT_DOUBLE_EQ(d.voltage_table[0].volt_v, 0.81875);
  ASSERT_EQ(d.power_modes.size(), 2u);
  EXPECT_DOUBLE_EQ(d.power_modes[1].gpu_max_hz, 614.4e6);
  EXPECT_DOUBLE_EQ(d.peak_flops(921.6e6), 2.0 * 128 * 921.6e6);
}

TEST(Catalog, BoardsWithoutTotalRailSumRails) {
  EXPECT_TRUE(traces::find_device("jetson-agx-xavier").total_rail.empty());
  const auto orin = traces::find_device("jetson-agx-orin");
  EXPECT_TRUE(orin.total_rail.empty());
  EXPECT_EQ(orin.sensor_layout, "hwmon");
  EXPECT_EQ(std::count_if(orin.rails.begin(), orin.rails.end(), [](auto& r) { return r.role == "nc"; }), 2);
}

TEST(Catalog, IniRoundTripIsExact) {
  for (const auto& d : traces::all_devices()) {
    const auto again = traces::parse_device_ini(traces::to_device_ini(d), "roundtrip");
    EXPECT_EQ(again, d) << d.name;
  }
}

TEST(Catalog, UnknownDeviceListsKnownOnes) {
  try {
    traces::find_device("jetson-banana");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("jetson-nano"), std::string::npos);
  }
}

TEST(Catalog, UserDeviceFileAddsADevice) {
  auto d = traces::find_device("jetson-nano");
  d.name = "my-nano";
  d.gpu_freqs_hz = {100e6, 200e6};
  d.voltage_table.clear();
  const auto dir = std::filesystem::temp_directory_path() / "pacer-test-devices";
  std::filesystem::create_directories(dir);
  { std::ofstream(dir / "my-nano.ini") << traces::to_device_ini(d); }
  ::setenv("PACER_DEVICE_PATH", dir.c_str(), 1);
  const auto found = traces::find_device("my-nano");
  ::unsetenv("PACER_DEVICE_PATH");
  EXPECT_EQ(found.gpu_freqs_hz.size(), 2u);
  const auto by_path = traces::find_device((dir / "my-nano.ini").string());
  EXPECT_EQ(by_path.name, "my-nano");
  std::filesystem::remove_all(dir);
}

TEST(Catalog, BadDeviceFilesAreRejectedWithTheKey) {
  const auto good = traces::to_device_ini(traces::find_device("jetson-nano"));
  auto expect_error = [](const std::string& text, const std::string& needle) {
    try {
      traces::parse_device_ini(text, "bad.ini");
      FAIL() << "accepted: " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error("[sensors]\nlayout = iio\n", "[device]");
  std::string s = good;
  s.replace(s.find("cuda_cores = 128"), 16, "cuda_cores = lots");
  expect_error(s, "cuda_cores");
  s = good;
  s.replace(s.find("layout = iio"), 12, "layout = i2c");
  expect_error(s, "layout");
  s = good;
  s.replace(s.find("76.8, 153.6"), 11, "153.6, 76.8");
  expect_error(s, "ascending");
  s = good;  // a maximum below the idle power was taken (2026-11-28)
  s.replace(s.find("max_power_w = 10"), 16, "max_power_w = 1");
  expect_error(s, "max_power_w (1 W) must be above idle_power_w (2 W)");
  expect_error("[device]\nname = x\n", "gpu_arch");
}
