#include "traces/store/store.hpp"

#include <unistd.h>

#include <H5Cpp.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <mutex>
#include <set>

#include "base/error.hpp"
#include "base/files.hpp"
#include "traces/store/codecs.hpp"
#include "traces/store/store_file.hpp"

namespace pacer::traces {
namespace fs = std::filesystem;
namespace {

using h5::GroupReader;
using h5::GroupWriter;

// A full read-back of a store in a child process gets this long before it counts as a hang inside
// libhdf5: 10 s, plus 1 s per 10 MB (reading back takes well under 1 s per 10 MB).
int read_back_timeout_s(uintmax_t bytes) {
  return 10 + static_cast<int>(bytes / 10'000'000);
}

H5::H5File open_file(const fs::path& path) {
  try {
    return H5::H5File(path.string(), H5F_ACC_RDONLY);
  } catch (const H5::Exception&) {
    throw Error(
        fmt::format("{}: the HDF5 file is truncated or corrupt and cannot be opened; restore it from a copy "
                    "or rerun the campaign",
                    path.string()));
  }
}

void check_schema(const H5::H5File& f, const fs::path& path) try {
  if (!f.attrExists("pacer_schema"))
    throw Error(
        fmt::format("{}: HDF5 file without the root attribute 'pacer_schema': not a pacer trace store", path.string()));
  H5::Attribute a = f.openAttribute("pacer_schema");
  if (a.getTypeClass() != H5T_INTEGER || a.getSpace().getSimpleExtentNpoints() != 1)
    throw Error(fmt::format("{}: root attribute 'pacer_schema' is not an integer scalar", path.string()));
  int64_t v = 0;
  a.read(H5::PredType::NATIVE_INT64, &v);
  if (v != kSchemaVersion)
    throw Error(fmt::format("{}: trace store schema version {} is not supported (this pacer reads version {})",
                            path.string(), v, kSchemaVersion));
} catch (const H5::Exception& e) {
  throw Error(fmt::format("{}: cannot read the root attribute 'pacer_schema' (damaged file?): {}", path.string(),
                          e.getDetailMsg()));
}

// Library errors outside the record readers (a damaged root group, a broken link) become
// pacer::Error naming the file, like every other read failure.
template <typename Fn>
auto guarded(const fs::path& path, const std::string& what, Fn fn) {
  try {
    return fn();
  } catch (const H5::Exception& e) {
    throw Error(fmt::format("{}: cannot {} (damaged file?): {}", path.string(), what, e.getDetailMsg()));
  }
}

// The attribute that marks a group made for a record type outside kStoreGroups (a test's own
// record), so that rewrites keep it; foreign groups (another tool's) are not kept.
constexpr const char* kRecordGroupMark = "pacer_record_group";

H5::Group create_extra_group(H5::H5File& f, const std::string& group) {
  H5::Group g = f.createGroup(group);
  GroupWriter mark(g);
  mark.attr(kRecordGroupMark, int64_t{1});
  return g;
}

// The groups of record types outside kStoreGroups in the file `f`, in the file's order.
std::vector<std::string> extra_record_groups(const H5::H5File& f) {
  std::vector<std::string> out;
  for (hsize_t i = 0; i < f.getNumObjs(); ++i) {
    const std::string name = f.getObjnameByIdx(i);
    if (name == "device" || find_store_group(name)) continue;
    H5L_info_t link;
    if (H5Lget_info(f.getId(), name.c_str(), &link, H5P_DEFAULT) < 0 || link.type != H5L_TYPE_HARD) continue;
    if (f.childObjType(name) == H5O_TYPE_GROUP && f.openGroup(name).attrExists(kRecordGroupMark)) out.push_back(name);
  }
  return out;
}

// Reads every record of the store at `path` (no checksum check: the caller decides when that is safe).
void read_everything(const fs::path& path) {
  guarded(path, "read the store back", [&] {
    H5::H5File f = open_file(path);
    check_schema(f, path);
    GroupReader root(path.string(), "", f.openGroup("/"));
    // Every record and its provenance (export, the report and a rewrite read both).
    if (root.has("device")) {
      (void)codec::read_device(root.sub("device"));
      (void)read_provenance(root.sub("device"));
    }
    for (size_t i = 0; i < std::size(kStoreGroups); ++i) {
      if (!root.has(kStoreGroups[i])) continue;
      const GroupReader g = root.sub(kStoreGroups[i]);
      for (const auto& child : g.children()) {
        visit_store_group(i, [&]<typename R>(std::type_identity<R>) { (void)codec::read<R>(g.sub(child)); });
        (void)read_provenance(g.sub(child));
      }
    }
    for (const auto& group : extra_record_groups(f)) {  // their records' types are not known here
      const GroupReader g = root.sub(group);
      for (const auto& child : g.children()) (void)g.sub(child);
    }
    return 0;
  });
}

// A file without pacer's checksum header (written by h5py or another tool) may crash libhdf5: it is
// read back once in a child process before this process lets libhdf5 parse it. Files that passed
// are remembered by path and content for the life of the process.
void guard_unsealed(const fs::path& path, const std::string& bytes) {
  static std::mutex mutex;
  static std::set<std::pair<std::string, size_t>> passed;
  const auto key = std::make_pair(fs::absolute(path).string(), std::hash<std::string>{}(bytes));
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (passed.count(key)) return;
  }
  const file::ChildResult r = file::run_in_child([&] { read_everything(path); }, read_back_timeout_s(bytes.size()));
  if (r.crashed)
    throw Error(
        fmt::format("{}: this HDF5 file has no pacer checksum header and cannot be read safely: {}; restore "
                    "it from a copy or rewrite it with the tool that made it",
                    path.string(), r.message));
  std::lock_guard<std::mutex> lock(mutex);
  passed.insert(key);  // a clean error is raised again, safely, by the read that follows
}

file::Contents validate_store(const fs::path& path) {
  if (path.empty()) throw Error("no trace store given: the store's file name is empty");
  file::Contents c = file::verify(path);
  if (!c.sealed) guard_unsealed(path, c.bytes);
  return c;
}

void init_layout(H5::H5File& f) {
  GroupWriter root(f.openGroup("/"));
  root.attr("pacer_schema", static_cast<int64_t>(kSchemaVersion));
  root.attr("creator", std::string("pacer"));
  for (const char* g : kStoreGroups) f.createGroup(g);
}

void copy_object(const H5::H5File& in, H5::H5File& out, const std::string& object, const fs::path& path) {
  if (H5Ocopy(in.getId(), object.c_str(), out.getId(), object.c_str(), H5P_DEFAULT, H5P_DEFAULT) < 0)
    throw Error(fmt::format("{}: could not copy '{}' while updating the store", path.string(), object));
}

// The provenance of a copied record stays the run's that wrote it (none is added to an older one).
void carry_provenance(const GroupReader& from, GroupWriter& to) {
  const Provenance p = read_provenance(from);
  if (p != Provenance{}) write_provenance(to, p);
}

// Copies the stored record `group`/`name` of kStoreGroups[index] (or the device) by decoding it with
// its codec and encoding it again, field by field, never with H5Ocopy: libhdf5 1.10 crashes
// (H5T_close_real <- H5Ocopy) copying a datatype or attribute whose bytes were changed although every
// record reads back, and the codec reads only the fields it knows, each checked against its type.
void copy_record(const GroupReader& src, size_t index, const std::string& name, H5::Group& dst) {
  visit_store_group(index, [&]<typename R>(std::type_identity<R>) {
    const R record = codec::read<R>(src.sub(name));
    GroupWriter w(dst.createGroup(name));
    codec::write(w, record);
    carry_provenance(src.sub(name), w);
  });
}

// The bytes of the store at `path` (if any) without `skip` ("group/name" or "device"), plus what
// `add` writes, built in memory (HDF5 core driver) and sealed with the checksum header. libhdf5 never
// writes to disk here, so a full disk cannot fail inside it.
std::string build_image(const fs::path& path, const std::string& skip, const std::function<void(H5::H5File&)>& add) {
  static std::atomic<unsigned> serial{0};
  std::string image;
  {
    H5::FileCreatPropList create;
    create.setUserblock(file::kUserBlockBytes);  // room for the checksum header
    H5::FileAccPropList access;
    access.setCore(1 << 20, false);  // in memory, no backing file
    H5::H5File out(fmt::format("{}.image-{}", path.string(), serial++), H5F_ACC_TRUNC, create, access);
    init_layout(out);
    std::error_code ec;
    if (fs::exists(path, ec)) {
      validate_store(path);
      H5::H5File in = open_file(path);
      check_schema(in, path);
      const GroupReader root(path.string(), "", in.openGroup("/"));
      if (root.has("device") && skip != "device") {
        const DeviceSpec device = codec::read_device(root.sub("device"));
        GroupWriter w(out.createGroup("device"));
        codec::write(w, device);
        carry_provenance(root.sub("device"), w);
      }
      for (size_t i = 0; i < std::size(kStoreGroups); ++i) {
        const std::string g = kStoreGroups[i];
        if (!root.has(g)) continue;
        const GroupReader src = root.sub(g);
        H5::Group dst = out.openGroup(g);
        for (const auto& name : src.children())
          if (g + "/" + name != skip) copy_record(src, i, name, dst);
      }
      // A test's record types are not known here: their groups are copied whole.
      for (const auto& g : extra_record_groups(in)) {
        create_extra_group(out, g);
        H5::Group src = in.openGroup(g);
        for (hsize_t i = 0; i < src.getNumObjs(); ++i) {
          const std::string name = src.getObjnameByIdx(i);
          if (g + "/" + name != skip) copy_object(in, out, "/" + g + "/" + name, path);
        }
      }
    }
    add(out);
    out.flush(H5F_SCOPE_GLOBAL);
    // libhdf5 1.10 leaves the user block out of the image (the superblock comes first); the bytes
    // on disk are the user block, then the image, exactly as its own file driver writes them.
    const ssize_t size = H5Fget_file_image(out.getId(), nullptr, 0);
    if (size <= 0) throw Error(fmt::format("{}: could not build the new store image", path.string()));
    image.assign(file::kUserBlockBytes, '\0');
    image.resize(file::kUserBlockBytes + static_cast<size_t>(size));
    if (H5Fget_file_image(out.getId(), image.data() + file::kUserBlockBytes, static_cast<size_t>(size)) != size)
      throw Error(fmt::format("{}: could not build the new store image", path.string()));
    static constexpr std::string_view kHdf5Signature("\x89HDF\r\n\x1a\n", 8);
    if (image.compare(file::kUserBlockBytes, kHdf5Signature.size(), kHdf5Signature) != 0)
      image.erase(0, file::kUserBlockBytes);  // a libhdf5 that keeps the user block in the image
  }
  const std::string header = file::checksum_header(image);
  image.replace(0, header.size(), header);
  return image;
}

// Rewrites the store with `skip` left out and `add`'s object added. The caller holds the WriteLock.
// Rewriting (instead of editing in place) keeps the original intact until the rename and reclaims
// the space of replaced objects.
void rewrite(const fs::path& path, const std::string& skip, const std::function<void(H5::H5File&)>& add) {
  file::remove_stale_temporaries(path);
  std::string image;
  try {
    image = build_image(path, skip, add);
  } catch (const H5::Exception& e) {
    throw Error(fmt::format("{}: HDF5 error while writing ({}): {}; the store was left as it was", path.string(),
                            e.getFuncName(), e.getDetailMsg()));
  }
  file::write_atomic(path, image);
}

}  // namespace

Store Store::open(const fs::path& path) {
  validate_store(path);
  guarded(path, "read the root group", [&] {
    H5::H5File f = open_file(path);
    check_schema(f, path);
    return 0;
  });
  return Store(path);
}

Store Store::open_or_create(const fs::path& path) {
  if (path.empty()) throw Error("no trace store given: the store's file name is empty");
  std::error_code ec;
  if (fs::exists(path, ec)) return open(path);
  if (!path.parent_path().empty() && !fs::exists(path.parent_path(), ec))
    throw Error(fmt::format("{}: directory {} does not exist", path.string(), path.parent_path().string()));
  file::WriteLock lock(path);
  if (!fs::exists(path, ec)) rewrite(path, "", [](H5::H5File&) {});  // another writer may have made it meanwhile
  return open(path);
}

bool Store::has_device() const {
  validate_store(path_);
  return guarded(path_, "look for '/device'", [&] { return open_file(path_).nameExists("device"); });
}

DeviceSpec Store::read_device() const {
  validate_store(path_);
  return guarded(path_, "read '/device'", [&] {
    H5::H5File f = open_file(path_);
    check_schema(f, path_);
    GroupReader root(path_.string(), "", f.openGroup("/"));
    return codec::read_device(root.sub("device"));
  });
}

void Store::write_device(const DeviceSpec& device) {
  write_device_from(device, current_run());
}

void Store::write_device_from(const DeviceSpec& device, const Provenance& from) {
  file::WriteLock lock(path_);
  rewrite(path_, "device", [&](H5::H5File& f) {
    GroupWriter w(f.createGroup("device"));
    codec::write(w, device);
    write_provenance(w, from);
  });
}

std::vector<std::string> Store::list(const std::string& group) const {
  validate_store(path_);
  return guarded(path_, "list '/" + group + "'", [&] {
    H5::H5File f = open_file(path_);
    GroupReader root(path_.string(), "", f.openGroup("/"));
    if (!root.has(group)) return std::vector<std::string>{};
    return root.sub(group).children();
  });
}

bool Store::has(const std::string& group, const std::string& name) const {
  for (const auto& n : list(group))
    if (n == name) return true;
  return false;
}

size_t Store::rows(const std::string& group, const std::string& name) const {
  if (!has(group, name)) return 0;
  const auto index = find_store_group(group);
  if (!index) return 0;
  return visit_store_group(*index, [&]<typename R>(std::type_identity<R>) { return rows<R>(name); });
}

void Store::read_group(std::string_view group_name, const std::string& name,
                       const std::function<void(const GroupReader&)>& read) const {
  const std::string group(group_name);
  validate_store(path_);
  guarded(path_, fmt::format("read '{}/{}'", group, name), [&] {
    H5::H5File f = open_file(path_);
    check_schema(f, path_);
    GroupReader root(path_.string(), "", f.openGroup("/"));
    GroupReader g = root.sub(group);
    if (!g.has(name)) {
      std::string known;
      for (const auto& c : g.children()) known += (known.empty() ? "" : ", ") + c;
      throw Error(fmt::format("{}: no {} record named '{}' (present: {})", path_.string(), group, name,
                              known.empty() ? "none" : known));
    }
    read(g.sub(name));
    return 0;
  });
}

void Store::write_group(std::string_view group_name, const std::string& name,
                        const std::function<void(GroupWriter&)>& write, const RowsCheck* check,
                        const std::function<void()>& under_lock, const Provenance* stamp) {
  const std::string group(group_name);
  check_record_name(group, name);
  if (path_.empty()) throw Error("no trace store given: the store's file name is empty");
  file::WriteLock lock(path_);
  std::error_code ec;
  if (check && check->replace == Replace::if_not_smaller && fs::exists(path_, ec)) {
    const Store store = Store::open(path_);
    if (store.has(group, name)) check_replace(path_, group, name, check->stored(store), check->fresh, check->replace);
  }
  if (under_lock && fs::exists(path_, ec)) under_lock();
  rewrite(path_, group + "/" + name, [&](H5::H5File& f) {
    H5::Group g = f.nameExists(group) ? f.openGroup(group) : create_extra_group(f, group);
    GroupWriter w(g.createGroup(name));
    write(w);
    write_provenance(w, stamp ? *stamp : current_run());
  });
}

Provenance Store::read_provenance(const std::string& group, const std::string& name) const {
  if (group == "device") {
    validate_store(path_);
    return guarded(path_, "read '/device'", [&] {
      H5::H5File f = open_file(path_);
      GroupReader root(path_.string(), "", f.openGroup("/"));
      return traces::read_provenance(root.sub("device"));
    });
  }
  Provenance p;
  read_group(group, name, [&](const GroupReader& g) { p = traces::read_provenance(g); });
  return p;
}

void check_record_name(const std::string& group, const std::string& name) {
  // A control character (a newline, an escape sequence) would break listings and terminals: the
  // name is refused without echoing it.
  for (size_t i = 0; i < name.size(); ++i) {
    const auto c = static_cast<unsigned char>(name[i]);
    if (c < 0x20 || c == 0x7f)
      throw Error(
          fmt::format("invalid {} name: it holds a control character (byte 0x{:02x} at position {}); use "
                      "printable characters",
                      group, c, i + 1));
  }
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
    throw Error(fmt::format("invalid {} name '{}': use a non-empty name without '/'", group, name));
}

void check_replace(const fs::path& path, const std::string& group, const std::string& name, size_t stored, size_t fresh,
                   Replace replace) {
  if (replace == Replace::always || fresh >= stored) return;
  throw Error(
      fmt::format("{}: '{}/{}' holds {} rows and the new record only {}: it is not replaced by a smaller one unless "
                  "replacing is asked for (or write it under another name)",
                  path.string(), group, name, stored, fresh));
}

StoreRecord Store::read_record(const std::string& group, const std::string& name) const {
  const auto index = find_store_group(group);
  if (!index)
    throw Error(fmt::format("{}: no record group '{}' in a trace store (its groups: {})", path_.string(), group,
                            fmt::join(kStoreGroups, ", ")));
  return visit_store_group(
      *index, [&]<typename R>(std::type_identity<R>) { return StoreRecord(std::in_place_type<R>, read<R>(name)); });
}

std::optional<size_t> find_store_group(const std::string& group) {
  for (size_t i = 0; i < std::size(kStoreGroups); ++i)
    if (group == kStoreGroups[i]) return i;
  return std::nullopt;
}

void reseal_store(const fs::path& path) {
  if (path.empty()) throw Error("no trace store given: the store's file name is empty");
  std::error_code ec;
  if (const std::string kind = base::non_regular_kind(path); !kind.empty())
    throw Error(fmt::format("{} is {}, not a trace store: a store is a regular file", path.string(), kind));
  if (!fs::is_regular_file(path, ec))
    throw Error(fmt::format("{}: no such trace store (check the path)", path.string()));
  file::WriteLock lock(path);
  const file::ChildResult r =
      file::run_in_child([&] { read_everything(path); }, read_back_timeout_s(fs::file_size(path, ec)));
  if (!r.ok)
    throw Error(
        fmt::format("{}: not resealed, because reading it back failed: {}; the file was left as it was "
                    "(restore it from a copy or rerun the campaign)",
                    path.string(), r.message));
  file::seal(path);  // a store without the header is left as it is (seal writes it only where it is)
}

file::StagedFile stage_file_atomic(const fs::path& path, const std::string& content) {
  if (is_stdout(path))  // a stream: written as it is, at commit
    return file::StagedFile({}, [content] {
      std::fflush(nullptr);
      if (std::fwrite(content.data(), 1, content.size(), stdout) != content.size() || std::fflush(stdout) != 0)
        throw Error(fmt::format("cannot write to the standard output ({})", std::strerror(errno)));
    });
  // A write killed between its temporary file and the rename left "<path>.tmp-<pid>": removed here
  // as a store rewrite removes its own (file::remove_stale_temporaries: only a dead process's).
  if (file::write_target(path).kind == file::WriteTarget::Kind::file) file::remove_stale_temporaries(path);
  return file::stage_atomic(path, content);
}

void write_file_atomic(const fs::path& path, const std::string& content) {
  stage_file_atomic(path, content).commit();
}

bool is_stdout(const fs::path& path) {
  return path == "-";
}

}  // namespace pacer::traces
