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
// The file layer is traces/store/store_file.hpp. Each record type's group, name, rows and layout
// come from its entry (traces/record_traits.hpp; layouts: traces/store/codecs.hpp, columns.hpp). A
// record type outside the store's own groups (a test's) gets a group of its own on its first write,
// marked as a record group, which every rewrite keeps. Every record written is stamped with the
// provenance of the run writing it (traces/provenance.hpp: attributes provenance_<field>).
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "traces/provenance.hpp"
#include "traces/record_traits.hpp"
#include "traces/records.hpp"
#include "traces/store/codecs.hpp"
#include "traces/store/store_file.hpp"

namespace pacer::traces {

// The index of `group` in kStoreGroups (traces/record_traits.hpp); nothing when it is not a group
// of the store.
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
  template <StoredRecord R>
  std::vector<std::string> list() const {
    return list(std::string(RecordTraits<R>::group));
  }
  bool has(const std::string& group, const std::string& name) const;
  template <StoredRecord R>
  bool has(const std::string& name) const {
    return has(std::string(RecordTraits<R>::group), name);
  }
  // Rows of the stored record group/name (profile points, relation runs, curve points, sweep or
  // validation rows); 0 for a record kind without rows, a group that is not one of kStoreGroups, or
  // a record that is not there.
  size_t rows(const std::string& group, const std::string& name) const;
  template <StoredRecord R>
  size_t rows(const std::string& name) const {
    if constexpr (RecordWithRows<R>)
      return has<R>(name) ? record_rows(read<R>(name)) : 0;
    else
      return 0;
  }

  // The record <group>/<name> of R's group (RecordTraits<R>::group).
  template <StoredRecord R>
  R read(const std::string& name) const {
    R record;
    read_group(RecordTraits<R>::group, name, [&](const h5::GroupReader& g) { record = codec::read<R>(g); });
    return record;
  }
  // Writes `record` as <group>/<name>; "" names it by RecordTraits<R>::name (a profile by its
  // workload, every other record by its own name). A record with rows does not replace a stored one
  // of that name with more rows unless `replace` says so.
  template <StoredRecord R>
  void write(const R& record, const std::string& name, Replace replace = Replace::if_not_smaller);
  template <StoredRecord R>
  void write(const R& record, Replace replace = Replace::if_not_smaller) {
    write(record, "", replace);
  }
  // Writes `record` as `name` (as write does) stamped with `from` instead of this run's provenance:
  // a record merged from other stores (merge_stores), or one that holds rows an earlier run
  // measured (a resumed validation), keeps the provenance of the runs that measured it.
  template <StoredRecord R>
  void write_from(const R& record, const std::string& name, const Provenance& from,
                  Replace replace = Replace::if_not_smaller);
  void write_device_from(const DeviceSpec& device, const Provenance& from);

  // Where the record group/name (group "device": the store's /device) came from: the run that wrote
  // it (traces/provenance.hpp); every field "unknown" for a record written before provenance.
  Provenance read_provenance(const std::string& group, const std::string& name) const;
  // Adds the rows of `record` to the stored record of its name (`name`, or "" for
  // RecordTraits<R>::name), under the writers' lock: the stored record is read again there, its
  // rows of a key `record` holds are replaced by `record`'s, its other rows are kept, and the rest
  // of the record is `record`'s; a cost summed by merge (a profile's profiling cost) is the stored
  // one plus `record`'s, which holds only what this writer adds. For writers that share a record
  // with other processes (two `profile` runs into one profile, two relation campaigns into one
  // relation): a copy read before another writer's write never drops that writer's rows. The
  // record's provenance is the stored one combined with this run's (combine_provenance: a campaign
  // resumed by another process, or a second writer, adds its own). Returns the record as it is now
  // stored.
  template <KeyedMerge R>
  R add_rows(const R& record, const std::string& name = "");

  // The record group/name as its group's type; Error for a group that is not one of kStoreGroups.
  StoreRecord read_record(const std::string& group, const std::string& name) const;

 private:
  explicit Store(std::filesystem::path path) : path_(std::move(path)) {}

  // Reads the record group/name with `read`; Error naming the records present when it is not there.
  void read_group(std::string_view group, const std::string& name,
                  const std::function<void(const h5::GroupReader&)>& read) const;
  // What a write of a record with rows checks before replacing a stored one of the same name.
  struct RowsCheck {
    size_t fresh = 0;  // rows of the record being written
    Replace replace = Replace::if_not_smaller;
    std::function<size_t(const Store&)> stored;  // rows of the stored record
  };
  template <StoredRecord R>
  void write_stamped(const R& record, const std::string& name, Replace replace, const Provenance* stamp);
  // Writes group/name with `write` under the writers' lock, after `check` (null: none) and
  // `under_lock` (null: none), which may read the store as it is now, stamped with `*stamp` as it is
  // after `under_lock` (null: this run's provenance).
  void write_group(std::string_view group, const std::string& name, const std::function<void(h5::GroupWriter&)>& write,
                   const RowsCheck* check, const std::function<void()>& under_lock = {},
                   const Provenance* stamp = nullptr);

  std::filesystem::path path_;
};

template <StoredRecord R>
void Store::write_stamped(const R& record, const std::string& name, Replace replace, const Provenance* stamp) {
  const std::string as = name.empty() ? RecordTraits<R>::name(record) : name;
  const auto encode = [&](h5::GroupWriter& w) { codec::write(w, record); };
  if constexpr (RecordWithRows<R>) {
    const RowsCheck check{record_rows(record), replace, [&](const Store& s) { return record_rows(s.read<R>(as)); }};
    write_group(RecordTraits<R>::group, as, encode, &check, {}, stamp);
  } else {
    write_group(RecordTraits<R>::group, as, encode, nullptr, {}, stamp);
  }
}

template <StoredRecord R>
void Store::write(const R& record, const std::string& name, Replace replace) {
  write_stamped(record, name, replace, nullptr);
}

template <StoredRecord R>
void Store::write_from(const R& record, const std::string& name, const Provenance& from, Replace replace) {
  write_stamped(record, name, replace, &from);
}

template <KeyedMerge R>
R Store::add_rows(const R& record, const std::string& name) {
  using E = RecordTraits<R>;
  const std::string as = name.empty() ? E::name(record) : name;
  R merged = record;  // what is written when the store has no record of that name
  Provenance stamp = current_run();
  const auto merge = [&] {
    if (!has<R>(as)) return;
    const R stored = read<R>(as);
    stamp = combine_provenance(read_provenance(std::string(E::group), as), current_run());
    auto& rows = merged.*E::rows;
    std::set<decltype(row_merge_key(record, rows.front()))> mine;
    for (const auto& row : record.*E::rows) mine.insert(row_merge_key(record, row));
    rows.clear();
    // The stored rows first, in their order, each replaced by this writer's of its key; then the new ones.
    for (const auto& row : stored.*E::rows)
      if (!mine.count(row_merge_key(stored, row))) rows.push_back(row);
    for (const auto& row : record.*E::rows) rows.push_back(row);
    if constexpr (requires { E::merge_cost; }) merged.*E::merge_cost = stored.*E::merge_cost + record.*E::merge_cost;
  };
  write_group(
      E::group, as, [&](h5::GroupWriter& w) { codec::write(w, merged); }, nullptr, merge, &stamp);
  return merged;
}

// A record name is non-empty, holds no '/' and no control character (a newline, an escape) and is not
// "." or ".."; Error naming the group otherwise. Every writer of a record checks its name here.
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

// Writes `content` to `path` atomically (temp file, fsync, rename; file::write_atomic: a symbolic
// link's target is replaced, a device or FIFO written in place, anything else refused). For text
// outputs (CSV, tables); "-" is the standard output.
void write_file_atomic(const std::filesystem::path& path, const std::string& content);
// write_file_atomic up to its rename (file::StagedFile): commit() puts the file in place, or writes
// the standard output; uncommitted, nothing of it remains.
file::StagedFile stage_file_atomic(const std::filesystem::path& path, const std::string& content);
// Whether an output path names the standard output ("-").
bool is_stdout(const std::filesystem::path& path);

}  // namespace pacer::traces
