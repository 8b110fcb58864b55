#include "models/device_model.hpp"

#include <fmt/format.h>

#include "base/error.hpp"
#include "models/analytical.hpp"
#include "models/interpolating.hpp"
#include "models/learned.hpp"
#include "models/mode_model.hpp"

namespace pacer::models {

std::unique_ptr<DeviceModel> model_from_record(const traces::ModelRecord& record) {
  if (record.kind == "analytical") return analytical_from_record(record);
  if (record.kind == "learned") return learned_from_record(record);
  if (record.kind == "interpolating") return interpolating_from_record(record);
  if (record.kind == "modes") return modes_from_record(record);
  throw Error(
      fmt::format("model record '{}' has kind '{}', which this pacer cannot rebuild (known: analytical, "
                  "learned, interpolating, modes)",
                  record.name, record.kind));
}

}  // namespace pacer::models
