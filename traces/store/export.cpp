#include "traces/store/export.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <variant>
#include <vector>

#include "base/error.hpp"
#include "traces/csv.hpp"

namespace pacer::traces {

std::string export_record_forms() {
  std::vector<std::string> forms;
  for (const char* g : kStoreGroups) forms.push_back(std::string(g) + "/NAME");
  return fmt::format("{} or device", fmt::join(forms, ", "));
}

std::string export_csv(const Store& store, const std::string& record) {
  if (record == "device" && !store.has_device())  // an import of traces records none
    throw Error(fmt::format("{}: no device record in this store (pacer export {} lists what it holds)",
                            store.path().string(), store.path().string()));
  if (record == "device") return provenance_lines(store.read_provenance("device", "")) + to_csv(store.read_device());
  const auto slash = record.find('/');
  if (slash == std::string::npos)
    throw UsageError(fmt::format("record '{}' must be GROUP/NAME (e.g. profiles/resnet8) or 'device'", record));
  const std::string group = record.substr(0, slash), name = record.substr(slash + 1);
  if (!find_store_group(group))
    throw UsageError(fmt::format("unknown group '{}' ({}, device)", group, fmt::join(kStoreGroups, ", ")));
  if (name.empty())  // it read as a damaged store ("cannot read 'profiles/'")
    throw UsageError(
        fmt::format("record '{}' names no record after '{}/': write GROUP/NAME (pacer export STORE lists "
                    "them)",
                    record, group));
  const std::string csv = std::visit([](const auto& r) { return to_csv(r); }, store.read_record(group, name));
  return provenance_lines(store.read_provenance(group, name)) + csv;
}

std::string format_store_contents(const Store& store) {
  std::string out = fmt::format("{} (schema {}):\n", store.path().string(), kSchemaVersion);
  if (store.has_device())
    out += fmt::format("  device\n      {}\n", provenance_summary(store.read_provenance("device", "")));
  for (const char* g : kStoreGroups)
    for (const auto& n : store.list(g))
      out += fmt::format("  {}/{}\n      {}\n", g, n, provenance_summary(store.read_provenance(g, n)));
  return out;
}

}  // namespace pacer::traces
