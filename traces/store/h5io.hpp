#pragma once
// HDF5 group, dataset and attribute I/O for the trace-store codecs: one helper per shape of data.
// Writing gives every numeric dataset a `unit` attribute; reading names the file and the object in
// every failure and refuses, before allocating, what a damaged header can declare.
#include <H5Cpp.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace pacer::traces::h5 {

// The variable-length UTF-8 string type of every string attribute and column.
const H5::StrType& vlen_string();

class GroupWriter {
 public:
  explicit GroupWriter(H5::Group g) : g_(std::move(g)) {}

  GroupWriter sub(const std::string& name) { return GroupWriter(g_.createGroup(name)); }

  void attr(const std::string& name, const std::string& v);
  void attr(const std::string& name, double v);
  void attr(const std::string& name, int64_t v);
  void attr(const std::string& name, bool v) { attr(name, static_cast<int64_t>(v)); }
  void attr(const std::string& name, int v) { attr(name, static_cast<int64_t>(v)); }

  void col(const std::string& name, const std::vector<double>& v, const std::string& unit);
  void col(const std::string& name, const std::vector<int64_t>& v, const std::string& unit);
  void col(const std::string& name, const std::vector<std::string>& v);
  // Row-major matrix rows x cols.
  void matrix(const std::string& name, const std::vector<double>& flat, size_t rows, size_t cols,
              const std::string& unit);
  void blob(const std::string& name, const std::vector<uint8_t>& v);
  void string_map(const std::string& name, const std::map<std::string, std::string>& m);
  void number_map(const std::string& name, const std::map<std::string, double>& m);

 private:
  void write_numeric(const std::string& name, const void* data, std::vector<hsize_t> dims, const H5::PredType& type,
                     const std::string& unit);
  H5::Group g_;
};

class GroupReader {
 public:
  GroupReader(const std::string& file, std::string path, H5::Group g)
      : file_(file), path_(std::move(path)), g_(std::move(g)) {}

  [[noreturn]] void fail(const std::string& object, const std::string& what) const;

  bool has(const std::string& name) const { return g_.nameExists(name); }
  bool has_attr(const std::string& name) const { return g_.attrExists(name); }
  GroupReader sub(const std::string& name) const;
  std::vector<std::string> children() const;

  std::string str_attr(const std::string& name) const;
  double num_attr(const std::string& name) const;
  int64_t int_attr(const std::string& name) const;

  // `expect` >= 0: the column must have that many rows.
  std::vector<double> col_d(const std::string& name, long expect = -1) const;
  std::vector<int64_t> col_i(const std::string& name, long expect = -1) const;
  std::vector<std::string> col_s(const std::string& name, long expect = -1) const;
  std::vector<uint8_t> blob(const std::string& name) const;
  std::vector<double> matrix(const std::string& name, long rows, size_t cols) const;
  std::map<std::string, std::string> string_map(const std::string& name) const;
  std::map<std::string, double> number_map(const std::string& name) const;

 private:
  std::vector<std::string> attr_names() const;
  H5::Attribute open_attr(const std::string& name) const;
  H5::DataSet open_ds(const std::string& name) const;
  void check_stored(const H5::DataSet& ds, const std::string& name, size_t n) const;
  template <typename T>
  void read_numeric(const std::string& name, H5T_class_t cls, const H5::PredType& mem, std::vector<T>& out, int ndims,
                    long expect_rows, size_t expect_cols = 0) const;

  std::string file_;
  std::string path_;
  H5::Group g_;
};

}  // namespace pacer::traces::h5
