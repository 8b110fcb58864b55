#include "traces/store/h5io.hpp"

#include <algorithm>

#include <H5Cpp.h>
#include <fmt/format.h>

#include "base/error.hpp"

namespace pacer::traces::h5 {
namespace {

// A damaged header can declare any extent: no column beyond this is read.
constexpr size_t kMaxColumnElements = size_t{1} << 27;

// libhdf5 prints its own error stack on every failure; pacer reports errors itself.
struct Silence {
  Silence() { H5::Exception::dontPrint(); }
};
const Silence silence_hdf5;

// The variable-length UTF-8 string type of every string attribute and column.
const H5::StrType& vlen_string() {
  static const H5::StrType t(H5::PredType::C_S1, H5T_VARIABLE);
  return t;
}

void write_numeric(H5::Group& g, const std::string& name, const void* data, std::vector<hsize_t> dims,
                   const H5::PredType& type, const std::string& unit) {
  H5::DataSet ds = g.createDataSet(name, type, H5::DataSpace(static_cast<int>(dims.size()), dims.data()));
  bool empty = false;
  for (auto d : dims) empty = empty || d == 0;
  if (!empty) ds.write(data, type);
  H5::Attribute a = ds.createAttribute("unit", vlen_string(), H5::DataSpace(H5S_SCALAR));
  a.write(vlen_string(), unit);
}

H5::Attribute open_attr(const GroupReader& r, const std::string& name) {
  if (!r.group().attrExists(name)) r.fail("@" + name, "missing attribute");
  return r.group().openAttribute(name);
}

H5::DataSet open_ds(const GroupReader& r, const std::string& name) {
  if (!r.has(name)) r.fail(name, "missing column");
  try {
    return r.group().openDataSet(name);
  } catch (const H5::Exception&) {
    r.fail(name, "is not a dataset");
  }
}

// Refuses, before allocating, a column whose data was never written or is shorter than its extent,
// and any column beyond kMaxColumnElements.
void check_stored(const GroupReader& r, const H5::DataSet& ds, const std::string& name, size_t n) {
  if (n == 0) return;
  if (n > kMaxColumnElements)
    r.fail(name, fmt::format("column declares {} entries (more than {}): the file is damaged", n, kMaxColumnElements));
  const hsize_t stored = ds.getStorageSize();
  const H5::DSetCreatPropList plist = ds.getCreatePlist();
  const bool chunked = plist.getLayout() == H5D_CHUNKED;  // may be compressed: no size relation
  const hsize_t needed = static_cast<hsize_t>(n) * ds.getDataType().getSize();
  if (stored == 0 || (!chunked && stored < needed))
    r.fail(name, fmt::format("column declares {} entries but stores {} of the {} bytes they need: the file is "
                             "damaged or truncated",
                             n, stored, needed));
}

template <typename T>
void read_numeric(const GroupReader& r, const std::string& name, H5T_class_t cls, const H5::PredType& mem,
                  std::vector<T>& out, int ndims, long expect_rows, size_t expect_cols = 0) {
  H5::DataSet ds = open_ds(r, name);
  if (ds.getTypeClass() != cls)
    r.fail(name, cls == H5T_FLOAT ? "column has the wrong type (expected floating point)"
                                  : "column has the wrong type (expected integer)");
  H5::DataSpace sp = ds.getSpace();
  if (sp.getSimpleExtentNdims() != ndims) r.fail(name, fmt::format("column must have {} dimension(s)", ndims));
  hsize_t dims[2] = {0, 0};
  sp.getSimpleExtentDims(dims);
  if (expect_rows >= 0 && static_cast<long>(dims[0]) != expect_rows)
    r.fail(name, fmt::format("column has {} rows, expected {}", dims[0], expect_rows));
  if (ndims == 2 && dims[1] != expect_cols)
    r.fail(name, fmt::format("column has {} columns, expected {}", dims[1], expect_cols));
  const size_t n = ndims == 2 ? dims[0] * dims[1] : dims[0];
  check_stored(r, ds, name, n);
  out.resize(n);
  if (n > 0) ds.read(out.data(), mem);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Writing.
GroupWriter::GroupWriter(const H5::Group& g) : g_(std::make_shared<H5::Group>(g)) {}

GroupWriter GroupWriter::sub(const std::string& name) {
  return GroupWriter(g_->createGroup(name));
}

void GroupWriter::attr(const std::string& name, const std::string& v) {
  H5::Attribute a = g_->createAttribute(name, vlen_string(), H5::DataSpace(H5S_SCALAR));
  a.write(vlen_string(), v);
}
void GroupWriter::fixed_attr(const std::string& name, const std::string& v) {
  const H5::StrType type(H5::PredType::C_S1, std::max<size_t>(1, v.size()));
  H5::Attribute a = g_->createAttribute(name, type, H5::DataSpace(H5S_SCALAR));
  a.write(type, v.empty() ? std::string(1, '\0') : v);
}
void GroupWriter::attr(const std::string& name, double v) {
  H5::Attribute a = g_->createAttribute(name, H5::PredType::NATIVE_DOUBLE, H5::DataSpace(H5S_SCALAR));
  a.write(H5::PredType::NATIVE_DOUBLE, &v);
}
void GroupWriter::attr(const std::string& name, int64_t v) {
  H5::Attribute a = g_->createAttribute(name, H5::PredType::NATIVE_INT64, H5::DataSpace(H5S_SCALAR));
  a.write(H5::PredType::NATIVE_INT64, &v);
}

void GroupWriter::col(const std::string& name, const std::vector<double>& v, const std::string& unit) {
  write_numeric(*g_, name, v.data(), {v.size()}, H5::PredType::NATIVE_DOUBLE, unit);
}
void GroupWriter::col(const std::string& name, const std::vector<int64_t>& v, const std::string& unit) {
  write_numeric(*g_, name, v.data(), {v.size()}, H5::PredType::NATIVE_INT64, unit);
}
void GroupWriter::col(const std::string& name, const std::vector<std::string>& v) {
  hsize_t dims[1] = {v.size()};
  H5::DataSet ds = g_->createDataSet(name, vlen_string(), H5::DataSpace(1, dims));
  std::vector<const char*> ptrs;
  for (const auto& s : v) ptrs.push_back(s.c_str());
  if (!v.empty()) ds.write(ptrs.data(), vlen_string());
}
void GroupWriter::matrix(const std::string& name, const std::vector<double>& flat, size_t rows, size_t cols,
                         const std::string& unit) {
  write_numeric(*g_, name, flat.data(), {rows, cols}, H5::PredType::NATIVE_DOUBLE, unit);
}
void GroupWriter::blob(const std::string& name, const std::vector<uint8_t>& v) {
  write_numeric(*g_, name, v.data(), {v.size()}, H5::PredType::NATIVE_UINT8, "byte");
}
void GroupWriter::string_map(const std::string& name, const std::map<std::string, std::string>& m) {
  GroupWriter s = sub(name);
  for (const auto& [k, v] : m) s.attr(k, v);
}
void GroupWriter::number_map(const std::string& name, const std::map<std::string, double>& m) {
  GroupWriter s = sub(name);
  for (const auto& [k, v] : m) s.attr(k, v);
}

// ---------------------------------------------------------------------------------------------
// Reading: every failure names the file and the object and says what was expected.
GroupReader::GroupReader(const std::string& file, std::string path, const H5::Group& g)
    : file_(file), path_(std::move(path)), g_(std::make_shared<H5::Group>(g)) {}

void GroupReader::fail(const std::string& object, const std::string& what) const {
  throw Error(fmt::format("{}: object '{}{}': {}", file_, path_, object.empty() ? "" : "/" + object, what));
}

bool GroupReader::has(const std::string& name) const {
  return g_->nameExists(name);
}

bool GroupReader::has_attr(const std::string& name) const {
  return g_->attrExists(name);
}

GroupReader GroupReader::sub(const std::string& name) const {
  if (!has(name)) fail(name, "missing group (the file was not written by this pacer, or is damaged)");
  try {
    return GroupReader(file_, path_ + "/" + name, g_->openGroup(name));
  } catch (const H5::Exception&) {
    fail(name, "is not a group");
  }
}

std::vector<std::string> GroupReader::children() const {
  std::vector<std::string> out;
  for (hsize_t i = 0; i < g_->getNumObjs(); ++i) out.push_back(g_->getObjnameByIdx(i));
  return out;
}

std::string GroupReader::str_attr(const std::string& name) const {
  H5::Attribute a = open_attr(*this, name);
  if (a.getTypeClass() != H5T_STRING) fail("@" + name, "attribute is not a string");
  // Reading an array into one string would overflow the single destination.
  if (a.getSpace().getSimpleExtentNpoints() != 1) fail("@" + name, "attribute is not a scalar");
  const H5::StrType type = a.getStrType();
  if (!type.isVariableStr()) {
    std::string v;
    a.read(type, v);
    return v.substr(0, v.find('\0'));
  }
  // Through the C API: a never-written variable string reads as a null pointer, which the C++
  // API would hand to std::string.
  char* raw = nullptr;
  if (H5Aread(a.getId(), vlen_string().getId(), &raw) < 0) fail("@" + name, "attribute cannot be read");
  std::string v = raw ? raw : "";
  H5free_memory(raw);
  return v;
}

double GroupReader::num_attr(const std::string& name) const {
  H5::Attribute a = open_attr(*this, name);
  if (a.getTypeClass() != H5T_FLOAT && a.getTypeClass() != H5T_INTEGER) fail("@" + name, "attribute is not numeric");
  if (a.getSpace().getSimpleExtentNpoints() != 1) fail("@" + name, "attribute is not a scalar");
  double v = 0;
  a.read(H5::PredType::NATIVE_DOUBLE, &v);
  return v;
}

int64_t GroupReader::int_attr(const std::string& name) const {
  H5::Attribute a = open_attr(*this, name);
  if (a.getTypeClass() != H5T_INTEGER) fail("@" + name, "attribute is not an integer");
  if (a.getSpace().getSimpleExtentNpoints() != 1) fail("@" + name, "attribute is not a scalar");
  int64_t v = 0;
  a.read(H5::PredType::NATIVE_INT64, &v);
  return v;
}

std::vector<double> GroupReader::col_d(const std::string& name, long expect) const {
  std::vector<double> v;
  read_numeric(*this, name, H5T_FLOAT, H5::PredType::NATIVE_DOUBLE, v, 1, expect);
  return v;
}
std::vector<int64_t> GroupReader::col_i(const std::string& name, long expect) const {
  std::vector<int64_t> v;
  read_numeric(*this, name, H5T_INTEGER, H5::PredType::NATIVE_INT64, v, 1, expect);
  return v;
}
std::vector<uint8_t> GroupReader::blob(const std::string& name) const {
  std::vector<uint8_t> v;
  read_numeric(*this, name, H5T_INTEGER, H5::PredType::NATIVE_UINT8, v, 1, -1);
  return v;
}
std::vector<double> GroupReader::matrix(const std::string& name, long rows, size_t cols) const {
  std::vector<double> v;
  read_numeric(*this, name, H5T_FLOAT, H5::PredType::NATIVE_DOUBLE, v, 2, rows, cols);
  return v;
}

std::vector<std::string> GroupReader::col_s(const std::string& name, long expect) const {
  H5::DataSet ds = open_ds(*this, name);
  if (ds.getTypeClass() != H5T_STRING) fail(name, "column is not a string column");
  H5::DataSpace sp = ds.getSpace();
  if (sp.getSimpleExtentNdims() != 1) fail(name, "column is not one-dimensional");
  hsize_t n = 0;
  sp.getSimpleExtentDims(&n);
  if (expect >= 0 && static_cast<long>(n) != expect)
    fail(name, fmt::format("column has {} entries, expected {}", n, expect));
  check_stored(*this, ds, name, n);
  std::vector<std::string> out(n);
  if (n == 0) return out;
  if (!ds.getStrType().isVariableStr()) fail(name, "column is not a variable-length string column");
  std::vector<char*> raw(n, nullptr);
  ds.read(raw.data(), vlen_string());
  for (hsize_t i = 0; i < n; ++i) out[i] = raw[i] ? raw[i] : "";
  H5Dvlen_reclaim(vlen_string().getId(), sp.getId(), H5P_DEFAULT, raw.data());
  return out;
}

std::map<std::string, std::string> GroupReader::string_map(const std::string& name) const {
  std::map<std::string, std::string> m;
  GroupReader s = sub(name);
  for (const auto& k : s.attr_names()) m[k] = s.str_attr(k);
  return m;
}
std::map<std::string, double> GroupReader::number_map(const std::string& name) const {
  std::map<std::string, double> m;
  GroupReader s = sub(name);
  for (const auto& k : s.attr_names()) m[k] = s.num_attr(k);
  return m;
}

std::vector<std::string> GroupReader::attr_names() const {
  std::vector<std::string> out;
  const int n = g_->getNumAttrs();
  for (int i = 0; i < n; ++i) out.push_back(g_->openAttribute(static_cast<unsigned>(i)).getName());
  return out;
}

}  // namespace pacer::traces::h5
