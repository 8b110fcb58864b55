#pragma once
// HDF5 group, dataset and attribute I/O for the trace-store codecs: one helper per shape of data.
// Writing gives every numeric dataset a `unit` attribute; reading names the file and the object in
// every failure and refuses, before allocating, what a damaged header can declare. The HDF5 headers
// stay in h5io.cpp: the record codecs (traces/store/codecs.hpp) are templates that every user of
// the store includes.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace H5 {
class Group;
}

namespace pacer::traces::h5 {

class GroupWriter {
 public:
  explicit GroupWriter(const H5::Group& g);

  GroupWriter sub(const std::string& name);

  void attr(const std::string& name, const std::string& v);
  // A fixed-length string attribute: its bytes sit in the group's header, not in the file's global
  // heap, whose references a damaged file can point anywhere (libhdf5 then copies from there).
  void fixed_attr(const std::string& name, const std::string& v);
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
  std::shared_ptr<H5::Group> g_;
};

class GroupReader {
 public:
  GroupReader(const std::string& file, std::string path, const H5::Group& g);

  [[noreturn]] void fail(const std::string& object, const std::string& what) const;

  bool has(const std::string& name) const;
  bool has_attr(const std::string& name) const;
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

  const H5::Group& group() const { return *g_; }

 private:
  std::vector<std::string> attr_names() const;

  std::string file_;
  std::string path_;
  std::shared_ptr<H5::Group> g_;
};

}  // namespace pacer::traces::h5
