#include "traces/kinds.hpp"

#include <array>

#include "base/error.hpp"

namespace pacer::traces {
namespace {

template <typename Kind>
struct Named {
  Kind kind;
  std::string_view name;
};

// The one table of names of each vocabulary, in enum order.
constexpr std::array<Named<KnobKind>, 3> kKnobKinds{{
    {KnobKind::gpu_freq, "gpu_freq"},
    {KnobKind::power_limit, "power_limit"},
    {KnobKind::power_mode, "power_mode"},
}};

struct ModelKindRow {
  ModelKind kind;
  std::string_view name;
  bool calibrated;  // fitted by `pacer calibrate`, rebuilt by models::model_from_record
};

constexpr std::array<ModelKindRow, 6> kModelKinds{{
    {ModelKind::analytical, "analytical", true},
    {ModelKind::learned, "learned", true},
    {ModelKind::interpolating, "interpolating", true},
    {ModelKind::modes, "modes", true},
    {ModelKind::table, "table", false},
    {ModelKind::emulated_physics, "emulated-physics", false},
}};

template <typename Table, typename Kind>
const auto& row_of(const Table& table, Kind kind) {
  for (const auto& row : table)
    if (row.kind == kind) return row;
  throw Error("a kind outside its table");  // unreachable: every enum value has a row
}

template <typename Table>
auto find(const Table& table, std::string_view name) -> std::optional<decltype(table[0].kind)> {
  for (const auto& row : table)
    if (row.name == name) return row.kind;
  return std::nullopt;
}

template <typename Table, typename Keep>
std::string names(const Table& table, Keep keep, std::string_view separator = ", ") {
  std::string out;
  for (const auto& row : table)
    if (keep(row)) out += std::string(out.empty() ? "" : separator) + std::string(row.name);
  return out;
}

constexpr auto kAll = [](const auto&) { return true; };

}  // namespace

std::string_view to_string(KnobKind kind) {
  return row_of(kKnobKinds, kind).name;
}

std::optional<KnobKind> find_knob_kind(std::string_view name) {
  return find(kKnobKinds, name);
}

KnobKind knob_kind_from_string(std::string_view name) {
  if (const auto kind = find_knob_kind(name)) return *kind;
  throw Error(fmt::format("unknown knob kind '{}' (known: {})", name, knob_kind_names()));
}

std::string knob_kind_names() {
  return names(kKnobKinds, kAll);
}

std::string_view to_string(ModelKind kind) {
  return row_of(kModelKinds, kind).name;
}

std::optional<ModelKind> find_model_kind(std::string_view name) {
  return find(kModelKinds, name);
}

ModelKind model_kind_from_string(std::string_view name) {
  if (const auto kind = find_model_kind(name)) return *kind;
  throw Error(fmt::format("unknown model kind '{}' (known: {})", name, names(kModelKinds, kAll)));
}

bool is_calibrated(ModelKind kind) {
  return row_of(kModelKinds, kind).calibrated;
}

std::string calibrated_model_names(std::string_view separator) {
  return names(
      kModelKinds, [](const ModelKindRow& row) { return row.calibrated; }, separator);
}

}  // namespace pacer::traces
