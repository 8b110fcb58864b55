// NVML backend against a stand-in library (no GPU on CI machines) and without any library.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "base/error.hpp"
#include "hw/nvml/nvml.hpp"

namespace pacer::hw {
namespace {

// Keeps the stand-in loaded across device lifetimes so its state (locked clocks) persists.
void* const g_keep_loaded = ::dlopen(FAKE_NVML_LIBRARY, RTLD_NOW | RTLD_LOCAL);

int locked_mhz() {
  void* h = ::dlopen(FAKE_NVML_LIBRARY, RTLD_NOW | RTLD_NOLOAD);
  if (!h) return -1;
  auto fn = reinterpret_cast<int (*)()>(::dlsym(h, "fake_nvml_locked_mhz"));
  const int v = fn ? fn() : -1;
  ::dlclose(h);
  return v;
}

TEST(Nvml, MissingLibraryIsAClearErrorNotACrash) {
  ASSERT_NE(g_keep_loaded, nullptr);
  NvmlOptions o;
  o.library = "/nonexistent/libnvidia-ml.so.1";
  try {
    NvmlDevice dev(o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("NVML is not available"), std::string::npos) << e.what();
  }
  o.library = "libc.so.6";  // loads, but is not NVML
  EXPECT_THROW(NvmlDevice{o}, Error);
}

TEST(Nvml, ReadsPowerClocksEnergyAndSupportedClocks) {
  NvmlOptions o;
  o.library = FAKE_NVML_LIBRARY;
  NvmlDevice dev(o);
  EXPECT_EQ(dev.name(), "nvml:0 Fake GPU 80GB");
  EXPECT_DOUBLE_EQ(dev.read_power().total_w, 123.456);
  EXPECT_DOUBLE_EQ(dev.current()[0], 1980e6);
  EXPECT_DOUBLE_EQ(dev.energy_j(), 5000.0);
  const auto s = dev.snapshot();
  EXPECT_EQ(s.graphics_clocks_hz, (std::vector<double>{1005e6, 1500e6, 1980e6}));
  EXPECT_DOUBLE_EQ(s.mem_clock_hz, 2619e6);
  EXPECT_DOUBLE_EQ(s.power_limit_w, 300.0);
  EXPECT_DOUBLE_EQ(dev.temperature_c(), 41.0);
  o.index = 3;
  EXPECT_THROW(NvmlDevice{o}, Error);
}

TEST(Nvml, PinsOnlyWhenAllowedAndPermittedAndRestores) {
  NvmlOptions o;
  o.library = FAKE_NVML_LIBRARY;
  {
    NvmlDevice dev(o);
    try {
      dev.pin({1500e6});
      FAIL();
    } catch (const OptionError& e) {
      EXPECT_EQ(e.option, "allow-gpu-control") << e.what();  // the CLI names the flag, the library does not
    }
  }
  o.allow_control = true;
  ::unsetenv("FAKE_NVML_PRIVILEGED");
  {
    NvmlDevice dev(o);
    try {
      dev.pin({1500e6});
      FAIL();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("root"), std::string::npos) << e.what();
    }
  }
  ::setenv("FAKE_NVML_PRIVILEGED", "1", 1);
  {
    NvmlDevice dev(o);
    EXPECT_THROW(dev.pin({1600e6}), Error);  // not a supported clock
    dev.pin({1500e6});
    EXPECT_EQ(locked_mhz(), 1500);
    EXPECT_DOUBLE_EQ(dev.current()[0], 1500e6);
  }
  EXPECT_EQ(locked_mhz(), 0) << "the destructor resets locked clocks";
  ::unsetenv("FAKE_NVML_PRIVILEGED");
}

TEST(Nvml, PowerLimitKnob) {
  NvmlOptions o;
  o.library = FAKE_NVML_LIBRARY;
  o.knob = traces::KnobKind::power_limit;
  o.allow_control = true;
  ::setenv("FAKE_NVML_PRIVILEGED", "1", 1);
  {
    NvmlDevice dev(o);
    const auto s = dev.settings();
    ASSERT_EQ(s.size(), 9u);  // 100 W .. 300 W in 25 W steps
    EXPECT_DOUBLE_EQ(s.front()[0], 100.0);
    EXPECT_DOUBLE_EQ(s.back()[0], 300.0);
    dev.pin({150.0});
    EXPECT_DOUBLE_EQ(dev.current()[0], 150.0);
    EXPECT_THROW(dev.pin({350.0}), Error);
  }
  NvmlDevice after(o);
  EXPECT_DOUBLE_EQ(after.current()[0], 300.0);
  ::unsetenv("FAKE_NVML_PRIVILEGED");
}

}  // namespace
}  // namespace pacer::hw
