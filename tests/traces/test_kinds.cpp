// Knob and model kinds are enums with one table of names. Every kind round-trips through
// its name, a misspelt name is refused with the accepted ones listed, and the names the store
// writes are the ones stores have always held.
#include <H5Cpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "base/error.hpp"
#include "traces/kinds.hpp"
#include "traces/records.hpp"
#include "traces/store/store.hpp"

namespace pacer::traces {
namespace {

namespace fs = std::filesystem;

// The names as stored: fixed by the files written so far, so spelled out here, not taken from the table.
const std::vector<std::pair<KnobKind, std::string>> kKnobNames = {
    {KnobKind::gpu_freq, "gpu_freq"}, {KnobKind::power_limit, "power_limit"}, {KnobKind::power_mode, "power_mode"}};
const std::vector<std::pair<ModelKind, std::string>> kModelNames = {{ModelKind::analytical, "analytical"},
                                                                    {ModelKind::learned, "learned"},
                                                                    {ModelKind::interpolating, "interpolating"},
                                                                    {ModelKind::modes, "modes"},
                                                                    {ModelKind::table, "table"},
                                                                    {ModelKind::emulated_physics, "emulated-physics"}};

std::string error_of(void (*fn)()) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Kinds, EveryKnobKindRoundTripsThroughItsName) {
  for (const auto& [kind, name] : kKnobNames) {
    EXPECT_EQ(to_string(kind), name);
    EXPECT_EQ(knob_kind_from_string(name), kind) << name;
    EXPECT_EQ(find_knob_kind(name), kind) << name;
    EXPECT_EQ(fmt::format("{}", kind), name);
  }
  EXPECT_EQ(knob_kind_names(), "gpu_freq, power_limit, power_mode");
}

TEST(Kinds, AMisspeltKnobKindIsRefusedWithTheAcceptedOnes) {
  for (const char* bad : {"gpu-freq", "GPU_FREQ", "gpu_frequency", "power_modes", "", "gpu_freq "})
    EXPECT_FALSE(find_knob_kind(bad)) << bad;
  const std::string message = error_of([] { knob_kind_from_string("gpu-freq"); });
  EXPECT_NE(message.find("'gpu-freq'"), std::string::npos) << message;
  EXPECT_NE(message.find("gpu_freq, power_limit, power_mode"), std::string::npos) << message;
}

TEST(Kinds, EveryModelKindRoundTripsThroughItsName) {
  for (const auto& [kind, name] : kModelNames) {
    EXPECT_EQ(to_string(kind), name);
    EXPECT_EQ(model_kind_from_string(name), kind) << name;
    EXPECT_EQ(fmt::format("{}", kind), name);
  }
  // What calibrate fits and model_from_record rebuilds; the measured table and the emulator's
  // physics are models too, but never calibrated.
  EXPECT_EQ(calibrated_model_names(), "analytical, learned, interpolating, modes");
  EXPECT_EQ(calibrated_model_names(" | "), "analytical | learned | interpolating | modes");
  EXPECT_FALSE(is_calibrated(ModelKind::table));
  EXPECT_FALSE(is_calibrated(ModelKind::emulated_physics));
  EXPECT_TRUE(is_calibrated(ModelKind::modes));
}

TEST(Kinds, AMisspeltModelKindIsRefusedWithTheAcceptedOnes) {
  for (const char* bad : {"analytic", "Analytical", "mode", "emulated_physics", "quantum", ""})
    EXPECT_FALSE(find_model_kind(bad)) << bad;
  const std::string message = error_of([] { model_kind_from_string("analytic"); });
  EXPECT_NE(message.find("'analytic'"), std::string::npos) << message;
  EXPECT_NE(message.find("analytical, learned, interpolating, modes, table, emulated-physics"), std::string::npos)
      << message;
}

// The store writes each knob kind under its old name (attribute knob_kind of the profile group) and
// reads it back as the same enum value.
TEST(Kinds, TheStoreKeepsEachKnobKindsName) {
  const fs::path dir = fs::temp_directory_path() / ("pacer_kinds_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path path = dir / "k.h5";
  const std::vector<KnobSpace> spaces = {KnobSpace::gpu_frequency(), KnobSpace::power_limit(), KnobSpace::power_mode()};
  {
    auto store = Store::open_or_create(path);
    for (const auto& space : spaces) {
      ProfileTable t;
      t.workload = std::string(to_string(space.kind));
      t.knob = space;
      ProfilePoint p;
      p.knob.assign(space.dims.size(), 1.0);
      p.batch_size = 8;
      t.points = {p};
      store.write(t);
    }
    for (const auto& space : spaces)
      EXPECT_EQ(store.read<ProfileTable>(std::string(to_string(space.kind))).knob, space);
  }
  H5::H5File file(path.string(), H5F_ACC_RDONLY);
  for (const auto& [kind, name] : kKnobNames) {
    const H5::Attribute attr = file.openGroup("/profiles/" + name).openAttribute("knob_kind");
    std::string stored;
    attr.read(attr.getStrType(), stored);
    EXPECT_EQ(stored, name);
  }
  file.close();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace pacer::traces
