#pragma once
// The trace store: one HDF5 file per campaign. Root attribute `pacer_schema` holds kSchemaVersion.
//   /device                 DeviceSpec
//   /profiles/<name>        ProfileTable  (name defaults to the workload)
//   /relations/<name>       RelationSet
//   /models/<name>          ModelRecord
//   /sweeps/<name>          SweepResult
//   /runs/<name>            PowerSeries
//   /validations/<name>     ValidationResult
// Every write is atomic: the file is copied to a temporary sibling, modified, flushed, fsync'ed and
// renamed over the original, so a crash leaves either the old or the new file, never a torn one.
#include <filesystem>
#include <string>
#include <vector>

#include "traces/records.hpp"

namespace pacer::traces {

class Store {
 public:
  // Opens an existing store; validates that it is HDF5 and carries a supported schema version.
  static Store open(const std::filesystem::path& path);
  // Opens `path` if it exists, otherwise creates an empty store there.
  static Store open_or_create(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return path_; }

  bool has_device() const;
  DeviceSpec read_device() const;
  void write_device(const DeviceSpec& device);

  std::vector<std::string> list(const std::string& group) const;  // "profiles", "relations", ...
  bool has(const std::string& group, const std::string& name) const;

  ProfileTable read_profile(const std::string& name) const;
  void write_profile(const ProfileTable& table, const std::string& name = "");  // "" -> workload

  RelationSet read_relation(const std::string& name) const;
  void write_relation(const RelationSet& set);  // under set.name

  ModelRecord read_model(const std::string& name) const;
  void write_model(const ModelRecord& model);  // under model.name

  SweepResult read_sweep(const std::string& name) const;
  void write_sweep(const SweepResult& sweep);

  PowerSeries read_series(const std::string& name) const;
  void write_series(const PowerSeries& series);

  ValidationResult read_validation(const std::string& name) const;
  void write_validation(const ValidationResult& result);

 private:
  explicit Store(std::filesystem::path path) : path_(std::move(path)) {}
  std::filesystem::path path_;
};

// Recomputes the whole-file checksum header of a store that another HDF5 writer (h5py, HDF5 tools,
// a test) edited in place; without it the next open reports the file as damaged
// (docs/reliability.md). A store without the header is left as it is.
void reseal_store(const std::filesystem::path& path);

// Writes `content` to `path` atomically (temp file, fsync, rename). For text outputs (CSV, tables).
void write_file_atomic(const std::filesystem::path& path, const std::string& content);

}  // namespace pacer::traces
