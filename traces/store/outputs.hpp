#pragma once
// Checks a command makes before any work (measuring, training, fitting, reading big inputs), so that
// it never fails after the work because an output cannot be written: every file, folder, store
// and record it will write. Each error names the option (`option`, the CLI prints "--KEY: ...") and
// says what to do; nothing is created by a check.
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "traces/store/store.hpp"

namespace pacer::traces {

// A file the command will write (a CSV, a table): not a folder, in a folder that exists and
// accepts a new file, or a device or FIFO (written in place), or "-" (the standard output).
// SettingError(option) otherwise.
void check_output_file(const std::filesystem::path& path, const std::string& option);

// A companion CSV written beside `csv`: "<csv without its extension><suffix>.csv"
// ("rows.csv", "-summary" -> "rows-summary.csv"). None (an empty path) beside "-", a device or a
// FIFO: nothing is created in /dev.
std::filesystem::path companion_csv(const std::filesystem::path& csv, const std::string& suffix);

// A folder the command writes files into, created when missing: it is a folder (or can be made
// one) and accepts new files. SettingError(option) otherwise.
void check_output_folder(const std::filesystem::path& dir, const std::string& option);

// A record name the command will write (OptionError(option) when it is not one).
void check_record_name_option(const std::string& group, const std::string& name, const std::string& option);

// What a command does with a store that is not there yet.
enum class StoreCreation {
  must_exist,       // it needs what the store holds: a missing store is an Error
  file,             // creates the store file in a folder that must exist
  file_and_folder,  // creates the store and the folders above it
};
// The trace store the command will write into: one that exists must read (the store's own Error,
// damaged or not a store); its folder (or the nearest existing one, with file_and_folder) must
// accept the temporary file of an atomic rewrite and the writers' lock (SettingError(option)).
void check_store_output(const std::filesystem::path& store, const std::string& option,
                        StoreCreation creation = StoreCreation::file);

// A record group/name of `rows` rows the command will write into `store` (checked with
// check_store_output first): a valid name (OptionError(name_option)), and a stored record of more
// rows is not replaced unless `replace` allows it (SettingError("replace")).
struct RecordOutput {
  std::string group;  // "validations", "sweeps", ...
  std::string name;
  std::string name_option;  // the option that sets the name ("name", "save", ...)
  size_t rows = 0;          // rows the new record will have; 0: not known before the work
  Replace replace = Replace::if_not_smaller;
};
void check_record_output(const std::filesystem::path& store, const RecordOutput& record);

// Whether `a` and `b` name one file: std::filesystem::equivalent when both exist (another path to
// it, a symbolic or hard link), else their weakly_canonical forms are equal.
bool same_file(const std::filesystem::path& a, const std::filesystem::path& b);

// A file a command reads or writes, and the key of the option that names it.
struct NamedFile {
  std::filesystem::path path;
  std::string option;
};
// No output of a command may be one of its inputs or another of its outputs (a CSV named like the
// trace store replaces the store; a store named like the CSV it imports replaces the CSV):
// SettingError(option of the later output) naming the option of the other. Inputs that are not
// there are not compared (a catalog device name is not a file); empty paths and "-" (stdout) are
// skipped. A store the command reads and writes is one of its outputs.
void check_distinct_outputs(const std::vector<NamedFile>& inputs, const std::vector<NamedFile>& outputs);

}  // namespace pacer::traces
