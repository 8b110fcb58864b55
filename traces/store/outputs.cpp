#include "traces/store/outputs.hpp"

#include <fmt/format.h>

#include "base/error.hpp"
#include "traces/store/store_file.hpp"

namespace pacer::traces {
namespace fs = std::filesystem;

void check_output_file(const fs::path& path, const std::string& option) {
  if (is_stdout(path)) return;
  if (const std::string why = file::why_not_writable(path); !why.empty())
    throw SettingError(option, fmt::format("{}: {}", path.string(), why));
}

fs::path companion_csv(const fs::path& csv, const std::string& suffix) {
  if (is_stdout(csv) || file::write_target(csv).kind != file::WriteTarget::Kind::file) return {};
  return fs::path(csv).replace_extension("").string() + suffix + ".csv";
}

void check_output_folder(const fs::path& dir, const std::string& option) {
  if (dir.empty()) throw SettingError(option, "no folder given");
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw SettingError(option, fmt::format("{} is a file, not a folder: name a folder", dir.string()));
  // The nearest folder that exists must accept what is made below it.
  fs::path existing = dir;
  while (!existing.empty() && !fs::exists(existing, ec)) existing = existing.parent_path();
  if (existing.empty()) existing = ".";
  if (!fs::is_directory(existing, ec))
    throw SettingError(option, fmt::format("{}: {} is a file, not a folder", dir.string(), existing.string()));
  if (const std::string why = file::why_not_writable(existing / ".pacer-output-check"); !why.empty())
    throw SettingError(option, fmt::format("{}: {}", dir.string(), why));
}

void check_record_name_option(const std::string& group, const std::string& name, const std::string& option) {
  try {
    check_record_name(group, name);
  } catch (const Error& e) {
    throw OptionError(option, e.what());
  }
}

void check_store_output(const fs::path& store, const std::string& option, StoreCreation creation) {
  if (store.empty()) throw SettingError(option, "no trace store given: the store's file name is empty");
  std::error_code ec;
  if (fs::is_directory(store, ec))
    throw SettingError(option, fmt::format("{} is a folder: name the store file (e.g. {})", store.string(),
                                           (store / "campaign.h5").string()));
  if (fs::exists(store, ec))
    (void)Store::open(store);  // damaged, not a store, or unreadable: its own Error, before any work
  else if (creation == StoreCreation::must_exist)
    throw Error(fmt::format("{}: no such trace store (check the path; the commands that record results create it)",
                            store.string()));
  const fs::path folder = store.parent_path();
  if (creation == StoreCreation::file_and_folder && !folder.empty() && !fs::exists(folder, ec)) {
    check_output_folder(folder, option);
    return;
  }
  // An atomic rewrite creates <store>.tmp-PID and the writers' lock <store>.lock beside the store.
  if (const std::string why = file::why_not_writable(file::lock_path(store)); !why.empty())
    throw SettingError(option, fmt::format("{}: {}", store.string(), why));
}

void check_record_output(const fs::path& store, const RecordOutput& record) {
  check_record_name_option(record.group, record.name, record.name_option);
  std::error_code ec;
  if (record.rows == 0 || record.replace == Replace::always || !fs::exists(store, ec)) return;
  const Store s = Store::open(store);
  try {
    check_replace(store, record.group, record.name, s.rows(record.group, record.name), record.rows, record.replace);
  } catch (const Error& e) {
    throw SettingError("replace", e.what());
  }
}

bool same_file(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) {
    const bool same = fs::equivalent(a, b, ec);
    if (!ec) return same;
  }
  const fs::path ca = fs::weakly_canonical(a, ec);
  if (ec) return fs::absolute(a, ec).lexically_normal() == fs::absolute(b, ec).lexically_normal();
  const fs::path cb = fs::weakly_canonical(b, ec);
  return !ec && ca == cb;
}

void check_distinct_outputs(const std::vector<NamedFile>& inputs, const std::vector<NamedFile>& outputs) {
  const auto skipped = [](const NamedFile& f) { return f.path.empty() || f.path == "-"; };
  for (size_t i = 0; i < outputs.size(); ++i) {
    const NamedFile& out = outputs[i];
    if (skipped(out)) continue;
    const auto refuse = [&](const NamedFile& other, const char* what) {
      throw SettingError(out.option,
                         fmt::format("{} is the same file as {} (--{}, {}): writing it would replace that file; "
                                     "name another file",
                                     out.path.string(), other.path.string(), other.option, what));
    };
    for (size_t j = 0; j < i; ++j)
      if (!skipped(outputs[j]) && same_file(out.path, outputs[j].path)) refuse(outputs[j], "also written");
    std::error_code ec;
    for (const auto& in : inputs)
      if (!skipped(in) && fs::exists(in.path, ec) && same_file(out.path, in.path)) refuse(in, "an input");
  }
}

}  // namespace pacer::traces
