// The table of device backends (hw/device_backends.hpp): a backend defined in this file alone, with
// one registered row, is opened by open_device through its spec, reports its training memory, and
// appears in the spec help and messages; the built-in rows keep the specs they always accepted.
#include <gtest/gtest.h>

#include <string>

#include "base/error.hpp"
#include "hw/device_backends.hpp"
#include "hw/open_device.hpp"

namespace pacer::hw {
namespace {

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// A bench supply with three settings whose power is the setting's index plus 2 W.
class BenchDevice final : public Device {
 public:
  explicit BenchDevice(std::string label) : label_(std::move(label)) {}
  std::string name() const override { return "bench " + label_; }
  bool emulated() const override { return true; }
  const traces::KnobSpace& knob() const override { return knob_; }
  std::vector<std::vector<double>> settings() const override { return {{100e6}, {200e6}, {300e6}}; }
  void pin(const std::vector<double>& setting) override { pinned_ = setting; }
  std::vector<double> current() const override { return pinned_; }
  PowerReading read_power() override { return {2.0 + pinned_.at(0) / 100e6, traces::kNaN}; }
  std::vector<std::string> power_rails() const override { return {"BENCH"}; }
  void restore() override { pinned_ = {100e6}; }

 private:
  std::string label_;
  traces::KnobSpace knob_ = traces::KnobSpace::gpu_frequency();
  std::vector<double> pinned_{100e6};
};

OpenedDevice open_bench(const DeviceRequest&, const std::string& label) {
  OpenedDevice out;
  out.device = std::make_unique<BenchDevice>(label.empty() ? "default" : label);
  out.spec.name = out.device->name();
  return out;
}

DeviceMemory bench_memory(const DeviceRequest&, const std::string& label) {
  return {label == "big" ? 64e9 : 1e9, "the bench"};
}

DeviceBackend bench_backend() {
  DeviceBackend b;
  b.name = "bench";
  b.argument = SpecArgument::Optional;
  b.syntax = "bench[:LABEL]";
  b.help = "a bench supply for the tests";
  b.options = {"knob"};
  b.open = open_bench;
  b.training_memory = bench_memory;
  return b;
}

PACER_REGISTER_DEVICE_BACKEND(bench_backend);

DeviceRequest request(const std::string& spec) {
  DeviceRequest r;
  r.spec = spec;
  return r;
}

TEST(DeviceBackends, ABackendRegisteredFromItsOwnFileOpensThroughItsSpec) {
  OpenedDevice opened = open_device(request("bench:lab-3"));
  ASSERT_NE(opened.device, nullptr);
  EXPECT_EQ(opened.device->name(), "bench lab-3");
  EXPECT_EQ(opened.spec.name, "bench lab-3");
  EXPECT_EQ(opened.emulated, nullptr);  // the typed pointers belong to the backends that set them
  EXPECT_EQ(opened.sysfs, nullptr);
  opened.device->pin({300e6});
  EXPECT_DOUBLE_EQ(opened.device->read_power().total_w, 5.0);
  EXPECT_EQ(open_device(request("bench")).device->name(), "bench default");
}

TEST(DeviceBackends, TrainingMemoryComesFromTheRow) {
  EXPECT_DOUBLE_EQ(training_memory(request("bench:big")).bytes, 64e9);
  EXPECT_EQ(training_memory(request("bench")).owner, "the bench");
  EXPECT_DOUBLE_EQ(training_memory(request("nvml:1")).bytes, 0);    // unknown before NVML opens the GPU
  EXPECT_DOUBLE_EQ(training_memory(request("benchtop")).bytes, 0);  // no backend: unknown
  const DeviceMemory nano = training_memory(request("emulated:jetson-nano"));
  EXPECT_DOUBLE_EQ(nano.bytes, 4.0 * (1ull << 30));
  EXPECT_EQ(nano.owner, "jetson-nano");
}

TEST(DeviceBackends, HelpAndMessagesListEveryRowInTableOrder) {
  EXPECT_EQ(device_spec_syntax(), "emulated:NAME | jetson | nvml[:INDEX] | bench[:LABEL]");
  EXPECT_EQ(device_spec_choices(), "emulated:NAME, jetson, nvml[:INDEX] or bench[:LABEL]");
  EXPECT_TRUE(contains(device_backend_help(), "  bench[:LABEL]: a bench supply for the tests (settings: knob)\n"));
  try {
    open_device(request("benchtop"));
    FAIL() << "an unknown spec opened";
  } catch (const OptionError& e) {
    EXPECT_EQ(e.option, "device");
    EXPECT_STREQ(e.what(), "'benchtop' is not emulated:NAME, jetson, nvml[:INDEX] or bench[:LABEL]");
  }
}

TEST(DeviceBackends, SpecsMatchByNameAndArgumentRule) {
  const auto emulated = match_device_backend("emulated:jetson-tx2");
  ASSERT_TRUE(emulated);
  EXPECT_EQ(emulated->backend->name, "emulated");
  EXPECT_EQ(emulated->argument, "jetson-tx2");
  EXPECT_FALSE(match_device_backend("emulated"));  // its argument is required
  EXPECT_TRUE(match_device_backend("emulated:"));  // ... and checked by its open ("needs a device name")
  EXPECT_FALSE(match_device_backend("jetson:0"));  // it takes none
  EXPECT_FALSE(match_device_backend("jetsonx"));
  const auto nvml = match_device_backend("nvml:3");
  ASSERT_TRUE(nvml);
  EXPECT_EQ(nvml->backend->name, "nvml");
  EXPECT_EQ(nvml->argument, "3");
  EXPECT_EQ(match_device_backend("nvml")->argument, "");
  EXPECT_FALSE(match_device_backend("nvmlx"));
}

TEST(DeviceBackends, TegrastatsPowerOnlyWhereTheRowAllowsIt) {
  DeviceRequest r = request("bench");
  r.power_source = "tegrastats";
  try {
    open_device(r);
    FAIL() << "tegrastats wrapped a bench device";
  } catch (const OptionError& e) {
    EXPECT_EQ(e.option, "power-source");
    EXPECT_TRUE(contains(e.what(), "applies to the jetson device")) << e.what();
  }
  r.power_source = "ina";
  try {
    open_device(r);
    FAIL() << "an unknown power source was accepted";
  } catch (const OptionError& e) {
    EXPECT_EQ(e.option, "power-source");
    EXPECT_STREQ(e.what(), "'ina' is not sysfs or tegrastats");
  }
  EXPECT_NO_THROW(check_power_source("tegrastats"));
  EXPECT_THROW(check_power_source("Sysfs"), OptionError);
}

TEST(DeviceBackends, ANameIsRegisteredOnce) {
  DeviceBackend again = bench_backend();
  EXPECT_THROW(register_device_backend(again), Error);
  again.name = "jetson";
  EXPECT_THROW(register_device_backend(again), Error);
  EXPECT_EQ(device_backends().size(), 4u);
}

}  // namespace
}  // namespace pacer::hw
