#pragma once
// The closed vocabularies of the trace store: the kind of a knob and the kind of a device model.
// Each is an enum with one table of names (kinds.cpp); the name is what the store, the CSV export,
// the help texts and the messages show, so a misspelt kind is a compile error, not a silent miss.
#include <fmt/format.h>

#include <optional>
#include <string>
#include <string_view>

namespace pacer::traces {

// The system setting a KnobSpace varies (records.hpp): a GPU clock (Jetson devfreq, NVML locked
// clocks), a GPU power limit (NVML, Zeus traces) or a Jetson nvpmodel power mode.
enum class KnobKind { gpu_freq, power_limit, power_mode };

std::string_view to_string(KnobKind kind);  // "gpu_freq", "power_limit", "power_mode"
// The kind named `name`; std::nullopt for any other text.
std::optional<KnobKind> find_knob_kind(std::string_view name);
// The kind named `name`; throws Error naming the accepted kinds for any other text.
KnobKind knob_kind_from_string(std::string_view name);
std::string knob_kind_names();  // "gpu_freq, power_limit, power_mode"

// The kind of a DeviceModel (models/device_model.hpp), stored as ModelRecord::kind. The first four
// are fitted by `pacer calibrate` and rebuilt from their records; `table` answers what a profile
// measured (sim/replay.hpp) and `emulated_physics` is the emulated Jetson's default cost model.
enum class ModelKind { analytical, learned, interpolating, modes, table, emulated_physics };

std::string_view to_string(ModelKind kind);  // "analytical", ..., "table", "emulated-physics"
std::optional<ModelKind> find_model_kind(std::string_view name);
// Throws Error naming the accepted kinds for any other text.
ModelKind model_kind_from_string(std::string_view name);
// Whether `pacer calibrate` fits this kind (and models::model_from_record rebuilds it).
bool is_calibrated(ModelKind kind);
// "analytical, learned, interpolating, modes" (with separator ", ").
std::string calibrated_model_names(std::string_view separator = ", ");

}  // namespace pacer::traces

// fmt::format("{}", kind) writes the kind's name.
template <>
struct fmt::formatter<pacer::traces::KnobKind> : fmt::formatter<std::string_view> {
  template <typename Context>
  auto format(pacer::traces::KnobKind kind, Context& ctx) const {
    return fmt::formatter<std::string_view>::format(pacer::traces::to_string(kind), ctx);
  }
};
template <>
struct fmt::formatter<pacer::traces::ModelKind> : fmt::formatter<std::string_view> {
  template <typename Context>
  auto format(pacer::traces::ModelKind kind, Context& ctx) const {
    return fmt::formatter<std::string_view>::format(pacer::traces::to_string(kind), ctx);
  }
};
