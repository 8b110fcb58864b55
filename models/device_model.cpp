#include "models/device_model.hpp"

#include <fmt/format.h>

#include "base/error.hpp"
#include "models/analytical.hpp"
#include "models/interpolating.hpp"
#include "models/learned.hpp"
#include "models/mode_model.hpp"

namespace pacer::models {

std::unique_ptr<DeviceModel> model_from_record(const traces::ModelRecord& record) {
  using traces::ModelKind;
  const auto kind = traces::find_model_kind(record.kind);
  if (kind == ModelKind::analytical) return analytical_from_record(record);
  if (kind == ModelKind::learned) return learned_from_record(record);
  if (kind == ModelKind::interpolating) return interpolating_from_record(record);
  if (kind == ModelKind::modes) return modes_from_record(record);
  throw Error(fmt::format("model record '{}' has kind '{}', which this pacer cannot rebuild (known: {})", record.name,
                          record.kind, traces::calibrated_model_names()));
}

}  // namespace pacer::models
