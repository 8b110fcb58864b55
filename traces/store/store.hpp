#pragma once
// The trace store: one HDF5 file per campaign. Root attribute `pacer_schema` holds kSchemaVersion.
//   /device                 DeviceSpec
//   /profiles/<name>        ProfileTable  (name defaults to the workload)
//   /relations/<name>       RelationSet
//   /curves/<name>          LearningCurve (the runs of the relation of that name)
//   /models/<name>          ModelRecord
//   /sweeps/<name>          SweepResult
//   /runs/<name>            PowerSeries
//   /validations/<name>     ValidationResult
// Every write is atomic: the new file is built in memory, written to a temporary sibling after a
// check that the disk has room for it, fsync'ed and renamed over the original, so a crash or a full
// disk leaves either the old or the new file, never a torn one. Writers in different processes take
// turns through an advisory lock on "<store>.lock" held across the read-modify-write, so none loses
// another's record. A record is not replaced by one with fewer rows unless the caller asks for it.
// The file layer is traces/store/store_file.hpp, the record layouts traces/store/codecs.cpp and columns.hpp.
#include <filesystem>
#include <iterator>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "traces/records.hpp"

namespace pacer::traces {

// The record groups under the root (besides /device), in listing order.
inline constexpr const char* kStoreGroups[] = {"profiles", "relations", "curves", "models",
                                               "sweeps",   "runs",      "validations"};
// A record of any group as its own type: kStoreGroups[i] holds the records of alternative i. Code
// that handles every group (reading a whole store back, `pacer export`) dispatches on this type.
using StoreRecord =
    std::variant<ProfileTable, RelationSet, LearningCurve, ModelRecord, SweepResult, PowerSeries, ValidationResult>;
static_assert(std::size(kStoreGroups) == std::variant_size_v<StoreRecord>, "one record type per store group");
// The index of `group` in kStoreGroups; nothing when it is not a group of the store.
std::optional<size_t> find_store_group(const std::string& group);

// Whether a write may replace a stored record of the same name that has more rows (profile points,
// relation runs, sweep or validation rows) than the new one.
enum class Replace {
  if_not_smaller,  // refuse, with an error naming both row counts: nothing measured is lost by accident
  always,          // the caller asked to replace the record whatever it held
};

class Store {
 public:
  // Opens an existing store; validates that it is HDF5 and carries a supported schema version. An
  // empty path is an error. A file without pacer's checksum header is first read back in full in a
  // child process, so that a file that crashes libhdf5 is an error here, not a crash later.
  static Store open(const std::filesystem::path& path);
  // Opens `path` if it exists, otherwise creates an empty store there.
  static Store open_or_create(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return path_; }

  bool has_device() const;
  DeviceSpec read_device() const;
  void write_device(const DeviceSpec& device);

  std::vector<std::string> list(const std::string& group) const;  // "profiles", "relations", ...
  bool has(const std::string& group, const std::string& name) const;
  // Rows of the stored record group/name (profile points, relation runs, sweep or validation
  // rows); 0 for a record kind without rows or a record that is not there.
  size_t rows(const std::string& group, const std::string& name) const;

  ProfileTable read_profile(const std::string& name) const;
  void write_profile(const ProfileTable& table, const std::string& name = "",  // "" -> workload
                     Replace replace = Replace::if_not_smaller);

  RelationSet read_relation(const std::string& name) const;
  void write_relation(const RelationSet& set, Replace replace = Replace::if_not_smaller);  // under set.name

  LearningCurve read_curve(const std::string& name) const;
  void write_curve(const LearningCurve& curve, Replace replace = Replace::if_not_smaller);  // under curve.name

  ModelRecord read_model(const std::string& name) const;
  void write_model(const ModelRecord& model);  // under model.name

  SweepResult read_sweep(const std::string& name) const;
  void write_sweep(const SweepResult& sweep, Replace replace = Replace::if_not_smaller);

  PowerSeries read_series(const std::string& name) const;
  void write_series(const PowerSeries& series);

  ValidationResult read_validation(const std::string& name) const;
  void write_validation(const ValidationResult& result, Replace replace = Replace::if_not_smaller);

  // The record group/name as its group's type; Error for a group that is not one of kStoreGroups.
  StoreRecord read_record(const std::string& group, const std::string& name) const;

 private:
  explicit Store(std::filesystem::path path) : path_(std::move(path)) {}
  std::filesystem::path path_;
};

// A record name is non-empty, holds no '/' and is not "." or ".."; Error naming the group otherwise.
void check_record_name(const std::string& group, const std::string& name);

// The refusal to replace group/name of the store at `path`, which holds `stored` rows, by a record
// of `fresh` rows, when `replace` does not allow it; nothing when it does.
void check_replace(const std::filesystem::path& path, const std::string& group, const std::string& name, size_t stored,
                   size_t fresh, Replace replace);

// Recomputes the whole-file checksum header of a store that another HDF5 writer (h5py, HDF5 tools,
// a test) edited in place; without it the next open reports the file as damaged
// (docs/reliability.md). Only a store whose every record reads back (in a child process, so that a
// crash inside libhdf5 is a message) is resealed; otherwise an Error says what failed and the file
// is left as it is. A store without the header is left as it is.
void reseal_store(const std::filesystem::path& path);

// Writes `content` to `path` atomically (temp file, fsync, rename). For text outputs (CSV, tables).
void write_file_atomic(const std::filesystem::path& path, const std::string& content);

}  // namespace pacer::traces
