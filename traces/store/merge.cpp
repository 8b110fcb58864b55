#include "traces/store/merge.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <tuple>
#include <utility>

#include "base/error.hpp"
#include "traces/store/outputs.hpp"
#include "traces/store/record_merge.hpp"
#include "traces/store/store.hpp"
#include "traces/store/store_file.hpp"

namespace pacer::traces {
namespace {

namespace fs = std::filesystem;

// The merge of every group of the store, one RecordMerge per record type, in kStoreGroups order.
template <typename Indices>
struct GroupMerges;
template <size_t... I>
struct GroupMerges<std::index_sequence<I...>> {
  std::tuple<RecordMerge<typename StoreGroup<I>::Record>...> groups;

  void add(const Store& in, MergeReport& report) {
    std::apply([&](auto&... group) { (group.add(in, report), ...); }, groups);
  }
  void write(Store& out, MergeReport& report) const {
    std::apply([&](const auto&... group) { (group.write(out, report), ...); }, groups);
  }
};

struct Merged {
  std::optional<std::pair<DeviceSpec, fs::path>> device;
  Provenance device_from;  // of the input the device was taken from
  GroupMerges<StoreGroupIndices> groups;
};

void read_input(const fs::path& path, Merged& m, MergeReport& report) {
  const Store in = Store::open(path);
  if (in.has_device()) {
    DeviceSpec d = in.read_device();
    if (!m.device) {
      m.device.emplace(std::move(d), path);
      m.device_from = in.read_provenance("device", "");
    } else if (!(m.device->first == d)) {
      throw Error(
          fmt::format("{} describes device '{}' but {} describes '{}'{}: stores of different devices cannot be "
                      "merged into one",
                      m.device->second.string(), m.device->first.name, path.string(), d.name,
                      m.device->first.name == d.name ? " with other settings" : ""));
    }
  }
  m.groups.add(in, report);
}

void write_merged(const Merged& m, const fs::path& tmp, MergeReport& report) {
  Store out = Store::open_or_create(tmp);
  if (m.device) out.write_device_from(m.device->first, m.device_from);
  m.groups.write(out, report);
}

}  // namespace

MergeReport merge_stores(const fs::path& out, const std::vector<fs::path>& inputs, ExistingOutput existing) {
  if (inputs.empty()) throw Error("nothing to merge: name at least one input store");
  if (out.empty()) throw Error("no trace store given: the store's file name is empty");
  // The merged store replaces only a regular file (or the end of a symbolic link), never a folder
  // or a device; checked before any input is read.
  const file::WriteTarget target = file::write_target(out);
  if (target.kind != file::WriteTarget::Kind::file)
    throw Error(fmt::format("{}: {}", out.string(),
                            target.kind == file::WriteTarget::Kind::refused
                                ? target.why
                                : "is a device or FIFO: a merged store is a file; name a file"));
  const fs::path dir = out.has_parent_path() ? out.parent_path() : fs::path(".");
  fs::create_directories(dir);
  // Every read of `out` and its replacement under its lock: another merge or writer of `out`
  // neither loses its records to this one nor has them overwritten by a copy read before.
  const file::WriteLock lock(out);
  file::remove_stale_temporaries(out);
  std::error_code ec;
  std::vector<fs::path> all = inputs;
  if (fs::exists(out, ec)) {
    const bool among =
        std::any_of(inputs.begin(), inputs.end(), [&](const fs::path& in) { return same_file(in, out); });
    if (existing == ExistingOutput::keep && !among) all.insert(all.begin(), out);
    if (existing == ExistingOutput::refuse && !among)
      throw OutputExistsError(
          fmt::format("{} exists and is not among the inputs: the merge would replace what it holds", out.string()));
  }
  MergeReport report;
  Merged merged;
  for (const auto& in : all) read_input(in, merged, report);
  const fs::path tmp = file::merge_temporary(target.path);
  fs::remove(tmp, ec);
  try {
    try {
      write_merged(merged, tmp, report);
    } catch (const Error& e) {
      // Name the store asked for, not the hidden temporary the merge builds beside it.
      std::string what = e.what();
      for (size_t at = what.find(tmp.string()); at != std::string::npos; at = what.find(tmp.string(), at))
        what.replace(at, tmp.string().size(), out.string());
      throw Error(what);
    }
    std::error_code renamed;
    fs::rename(tmp, target.path, renamed);
    if (renamed)  // a folder made there meanwhile, say: one line, not the library's text
      throw Error(fmt::format("{}: cannot replace it with the merged store ({}); it was left as it was", out.string(),
                              renamed.message()));
    fs::remove(file::lock_path(tmp), ec);  // the temporary store's own writers' lock
  } catch (...) {
    fs::remove(tmp, ec);
    fs::remove(file::lock_path(tmp), ec);
    throw;
  }
  return report;
}

MergeReport merge_into(const fs::path& out, const std::vector<fs::path>& inputs) {
  return merge_stores(out, inputs, ExistingOutput::keep);
}

std::string format_merge_report(const MergeReport& report, const fs::path& out) {
  std::vector<std::string> parts;
  for (const auto& [group, n] : report.records) parts.push_back(fmt::format("{} {}", n, group));
  return fmt::format("merged into {}: {} ({} runs, points and rows; {} identical duplicates kept once)\n", out.string(),
                     parts.empty() ? std::string("nothing") : fmt::format("{}", fmt::join(parts, ", ")), report.entries,
                     report.duplicates);
}

}  // namespace pacer::traces
