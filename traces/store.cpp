#include "traces/store.hpp"

#include <H5Cpp.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>

#include "traces/error.hpp"

namespace pacer::traces {
namespace fs = std::filesystem;
namespace {

const H5::StrType& vlen_string() {
  static const H5::StrType t(H5::PredType::C_S1, H5T_VARIABLE);
  return t;
}

// ---------------------------------------------------------------------------------------------
// Writing: one helper per shape of data. Every numeric dataset gets a `unit` attribute.
class GroupWriter {
 public:
  explicit GroupWriter(H5::Group g) : g_(std::move(g)) {}

  GroupWriter sub(const std::string& name) { return GroupWriter(g_.createGroup(name)); }

  void attr(const std::string& name, const std::string& v) {
    H5::Attribute a = g_.createAttribute(name, vlen_string(), H5::DataSpace(H5S_SCALAR));
    a.write(vlen_string(), v);
  }
  void attr(const std::string& name, double v) {
    H5::Attribute a = g_.createAttribute(name, H5::PredType::NATIVE_DOUBLE, H5::DataSpace(H5S_SCALAR));
    a.write(H5::PredType::NATIVE_DOUBLE, &v);
  }
  void attr(const std::string& name, int64_t v) {
    H5::Attribute a = g_.createAttribute(name, H5::PredType::NATIVE_INT64, H5::DataSpace(H5S_SCALAR));
    a.write(H5::PredType::NATIVE_INT64, &v);
  }
  void attr(const std::string& name, bool v) { attr(name, static_cast<int64_t>(v)); }
  void attr(const std::string& name, int v) { attr(name, static_cast<int64_t>(v)); }

  void col(const std::string& name, const std::vector<double>& v, const std::string& unit) {
    write_numeric(name, v.data(), {v.size()}, H5::PredType::NATIVE_DOUBLE, unit);
  }
  void col(const std::string& name, const std::vector<int64_t>& v, const std::string& unit) {
    write_numeric(name, v.data(), {v.size()}, H5::PredType::NATIVE_INT64, unit);
  }
  void col(const std::string& name, const std::vector<std::string>& v) {
    hsize_t dims[1] = {v.size()};
    H5::DataSet ds = g_.createDataSet(name, vlen_string(), H5::DataSpace(1, dims));
    std::vector<const char*> ptrs;
    for (const auto& s : v) ptrs.push_back(s.c_str());
    if (!v.empty()) ds.write(ptrs.data(), vlen_string());
  }
  // Row-major matrix rows x cols.
  void matrix(const std::string& name, const std::vector<double>& flat, size_t rows, size_t cols,
              const std::string& unit) {
    write_numeric(name, flat.data(), {rows, cols}, H5::PredType::NATIVE_DOUBLE, unit);
  }
  void blob(const std::string& name, const std::vector<uint8_t>& v) {
    write_numeric(name, v.data(), {v.size()}, H5::PredType::NATIVE_UINT8, "byte");
  }
  void string_map(const std::string& name, const std::map<std::string, std::string>& m) {
    GroupWriter s = sub(name);
    for (const auto& [k, v] : m) s.attr(k, v);
  }
  void number_map(const std::string& name, const std::map<std::string, double>& m) {
    GroupWriter s = sub(name);
    for (const auto& [k, v] : m) s.attr(k, v);
  }

 private:
  void write_numeric(const std::string& name, const void* data, std::vector<hsize_t> dims,
                     const H5::PredType& type, const std::string& unit) {
    H5::DataSet ds = g_.createDataSet(name, type, H5::DataSpace(static_cast<int>(dims.size()), dims.data()));
    bool empty = false;
    for (auto d : dims) empty = empty || d == 0;
    if (!empty) ds.write(data, type);
    H5::Attribute a = ds.createAttribute("unit", vlen_string(), H5::DataSpace(H5S_SCALAR));
    a.write(vlen_string(), unit);
  }
  H5::Group g_;
};

// ---------------------------------------------------------------------------------------------
// Reading: every failure names the file and the object and says what was expected.
class GroupReader {
 public:
  GroupReader(const std::string& file, std::string path, H5::Group g)
      : file_(file), path_(std::move(path)), g_(std::move(g)) {}

  [[noreturn]] void fail(const std::string& object, const std::string& what) const {
    throw Error(fmt::format("{}: object '{}{}': {}", file_, path_, object.empty() ? "" : "/" + object, what));
  }

  bool has(const std::string& name) const { return g_.nameExists(name); }
  bool has_attr(const std::string& name) const { return g_.attrExists(name); }

  GroupReader sub(const std::string& name) const {
    if (!has(name)) fail(name, "missing group (the file was not written by this pacer, or is damaged)");
    try {
      return GroupReader(file_, path_ + "/" + name, g_.openGroup(name));
    } catch (const H5::Exception&) {
      fail(name, "is not a group");
    }
  }

  std::vector<std::string> children() const {
    std::vector<std::string> out;
    for (hsize_t i = 0; i < g_.getNumObjs(); ++i) out.push_back(g_.getObjnameByIdx(i));
    return out;
  }

  std::string str_attr(const std::string& name) const {
    H5::Attribute a = open_attr(name);
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
  double num_attr(const std::string& name) const {
    H5::Attribute a = open_attr(name);
    if (a.getTypeClass() != H5T_FLOAT && a.getTypeClass() != H5T_INTEGER) fail("@" + name, "attribute is not numeric");
    if (a.getSpace().getSimpleExtentNpoints() != 1) fail("@" + name, "attribute is not a scalar");
    double v = 0;
    a.read(H5::PredType::NATIVE_DOUBLE, &v);
    return v;
  }
  int64_t int_attr(const std::string& name) const {
    H5::Attribute a = open_attr(name);
    if (a.getTypeClass() != H5T_INTEGER) fail("@" + name, "attribute is not an integer");
    if (a.getSpace().getSimpleExtentNpoints() != 1) fail("@" + name, "attribute is not a scalar");
    int64_t v = 0;
    a.read(H5::PredType::NATIVE_INT64, &v);
    return v;
  }

  std::vector<double> col_d(const std::string& name, long expect = -1) const {
    std::vector<double> v;
    read_numeric(name, H5T_FLOAT, H5::PredType::NATIVE_DOUBLE, v, 1, expect);
    return v;
  }
  std::vector<int64_t> col_i(const std::string& name, long expect = -1) const {
    std::vector<int64_t> v;
    read_numeric(name, H5T_INTEGER, H5::PredType::NATIVE_INT64, v, 1, expect);
    return v;
  }
  std::vector<uint8_t> blob(const std::string& name) const {
    std::vector<uint8_t> v;
    read_numeric(name, H5T_INTEGER, H5::PredType::NATIVE_UINT8, v, 1, -1);
    return v;
  }
  std::vector<double> matrix(const std::string& name, long rows, size_t cols) const {
    std::vector<double> v;
    read_numeric(name, H5T_FLOAT, H5::PredType::NATIVE_DOUBLE, v, 2, rows, cols);
    return v;
  }
  std::vector<std::string> col_s(const std::string& name, long expect = -1) const {
    H5::DataSet ds = open_ds(name);
    if (ds.getTypeClass() != H5T_STRING) fail(name, "column is not a string column");
    H5::DataSpace sp = ds.getSpace();
    if (sp.getSimpleExtentNdims() != 1) fail(name, "column is not one-dimensional");
    hsize_t n = 0;
    sp.getSimpleExtentDims(&n);
    if (expect >= 0 && static_cast<long>(n) != expect)
      fail(name, fmt::format("column has {} entries, expected {}", n, expect));
    check_stored(ds, name, n);
    std::vector<std::string> out(n);
    if (n == 0) return out;
    if (!ds.getStrType().isVariableStr()) fail(name, "column is not a variable-length string column");
    std::vector<char*> raw(n, nullptr);
    ds.read(raw.data(), vlen_string());
    for (hsize_t i = 0; i < n; ++i) out[i] = raw[i] ? raw[i] : "";
    H5Dvlen_reclaim(vlen_string().getId(), sp.getId(), H5P_DEFAULT, raw.data());
    return out;
  }
  std::map<std::string, std::string> string_map(const std::string& name) const {
    std::map<std::string, std::string> m;
    GroupReader s = sub(name);
    for (const auto& k : s.attr_names()) m[k] = s.str_attr(k);
    return m;
  }
  std::map<std::string, double> number_map(const std::string& name) const {
    std::map<std::string, double> m;
    GroupReader s = sub(name);
    for (const auto& k : s.attr_names()) m[k] = s.num_attr(k);
    return m;
  }

 private:
  std::vector<std::string> attr_names() const {
    std::vector<std::string> out;
    const int n = g_.getNumAttrs();
    for (int i = 0; i < n; ++i) out.push_back(g_.openAttribute(static_cast<unsigned>(i)).getName());
    return out;
  }
  H5::Attribute open_attr(const std::string& name) const {
    if (!g_.attrExists(name)) fail("@" + name, "missing attribute");
    return g_.openAttribute(name);
  }
  H5::DataSet open_ds(const std::string& name) const {
    if (!has(name)) fail(name, "missing column");
    try {
      return g_.openDataSet(name);
    } catch (const H5::Exception&) {
      fail(name, "is not a dataset");
    }
  }
  // A damaged header can declare any extent. Refuse, before allocating, a column whose data was never
  // written or is shorter than its extent, and any column beyond kMaxColumnElements.
  void check_stored(const H5::DataSet& ds, const std::string& name, size_t n) const {
    if (n == 0) return;
    if (n > kMaxColumnElements)
      fail(name, fmt::format("column declares {} entries (more than {}): the file is damaged", n, kMaxColumnElements));
    const hsize_t stored = ds.getStorageSize();
    const H5::DSetCreatPropList plist = ds.getCreatePlist();
    const bool chunked = plist.getLayout() == H5D_CHUNKED;  // may be compressed: no size relation
    const hsize_t needed = static_cast<hsize_t>(n) * ds.getDataType().getSize();
    if (stored == 0 || (!chunked && stored < needed))
      fail(name, fmt::format("column declares {} entries but stores {} of the {} bytes they need: the file is "
                             "damaged or truncated",
                             n, stored, needed));
  }
  static constexpr size_t kMaxColumnElements = size_t{1} << 27;

  template <typename T>
  void read_numeric(const std::string& name, H5T_class_t cls, const H5::PredType& mem, std::vector<T>& out,
                    int ndims, long expect_rows, size_t expect_cols = 0) const {
    H5::DataSet ds = open_ds(name);
    const H5T_class_t actual = ds.getTypeClass();
    if (actual != cls)
      fail(name, cls == H5T_FLOAT ? "column has the wrong type (expected floating point)"
                                  : "column has the wrong type (expected integer)");
    H5::DataSpace sp = ds.getSpace();
    if (sp.getSimpleExtentNdims() != ndims) fail(name, fmt::format("column must have {} dimension(s)", ndims));
    hsize_t dims[2] = {0, 0};
    sp.getSimpleExtentDims(dims);
    if (expect_rows >= 0 && static_cast<long>(dims[0]) != expect_rows)
      fail(name, fmt::format("column has {} rows, expected {}", dims[0], expect_rows));
    if (ndims == 2 && dims[1] != expect_cols)
      fail(name, fmt::format("column has {} columns, expected {}", dims[1], expect_cols));
    const size_t n = ndims == 2 ? dims[0] * dims[1] : dims[0];
    check_stored(ds, name, n);
    out.resize(n);
    if (n > 0) ds.read(out.data(), mem);
  }

  std::string file_;
  std::string path_;
  H5::Group g_;
};


void write_knob_space(GroupWriter& w, const KnobSpace& k) {
  w.attr("knob_kind", k.kind);
  std::vector<std::string> names, units;
  for (const auto& d : k.dims) {
    names.push_back(d.name);
    units.push_back(d.unit);
  }
  w.col("knob_dims", names);
  w.col("knob_units", units);
}

KnobSpace read_knob_space(const GroupReader& r) {
  KnobSpace k;
  k.kind = r.str_attr("knob_kind");
  const auto names = r.col_s("knob_dims");
  const auto units = r.col_s("knob_units", static_cast<long>(names.size()));
  if (names.empty()) r.fail("knob_dims", "a knob space needs at least one dimension");
  for (size_t i = 0; i < names.size(); ++i) k.dims.push_back({names[i], units[i]});
  return k;
}

std::string knob_unit(const KnobSpace& k) {
  std::string u;
  for (const auto& d : k.dims) u += (u.empty() ? "" : ",") + d.unit;
  return u;
}

// ---------------------------------------------------------------------------------------------
// Record <-> group.
void write(GroupWriter w, const DeviceSpec& d) {
  w.attr("name", d.name);
  w.attr("display_name", d.display_name);
  w.attr("soc", d.soc);
  w.attr("gpu_arch", d.gpu_arch);
  w.attr("memory_bytes", d.memory_bytes);
  w.attr("devfreq_path", d.devfreq_path);
  w.attr("devfreq_node", d.devfreq_node);
  w.attr("gpu_device_dir", d.gpu_device_dir);
  w.attr("sensor_layout", d.sensor_layout);
  w.attr("sensor_driver", d.sensor_driver);
  w.attr("total_rail", d.total_rail);
  w.attr("gpu_rail", d.gpu_rail);
  w.attr("cuda_cores", static_cast<int64_t>(d.cuda_cores));
  w.attr("mem_bandwidth_bytes_s", d.mem_bandwidth_bytes_s);
  w.attr("idle_power_w", d.idle_power_w);
  w.attr("max_power_w", d.max_power_w);
  w.col("gpu_freqs", d.gpu_freqs_hz, "Hz");
  GroupWriter m = w.sub("power_modes");
  std::vector<int64_t> ids, cores;
  std::vector<std::string> names;
  std::vector<double> gpu, cpu, mem, budget;
  for (const auto& p : d.power_modes) {
    ids.push_back(p.id);
    names.push_back(p.name);
    gpu.push_back(p.gpu_max_hz);
    cores.push_back(p.cpu_cores);
    cpu.push_back(p.cpu_max_hz);
    mem.push_back(p.mem_hz);
    budget.push_back(p.budget_w);
  }
  m.col("id", ids, "1");
  m.col("name", names);
  m.col("gpu_max_freq", gpu, "Hz");
  m.col("cpu_cores", cores, "1");
  m.col("cpu_max_freq", cpu, "Hz");
  m.col("mem_freq", mem, "Hz");
  m.col("budget", budget, "W");
  GroupWriter r = w.sub("rails");
  std::vector<std::string> chip, rname, role;
  std::vector<int64_t> ch;
  for (const auto& x : d.rails) {
    chip.push_back(x.chip);
    ch.push_back(x.channel);
    rname.push_back(x.name);
    role.push_back(x.role);
  }
  r.col("chip", chip);
  r.col("channel", ch, "1");
  r.col("name", rname);
  r.col("role", role);
  GroupWriter v = w.sub("voltage_table");
  std::vector<double> f, volt;
  for (const auto& p : d.voltage_table) {
    f.push_back(p.freq_hz);
    volt.push_back(p.volt_v);
  }
  v.col("freq", f, "Hz");
  v.col("voltage", volt, "V");
  w.string_map("sources", d.sources);
}

DeviceSpec read_device(const GroupReader& g) {
  DeviceSpec d;
  d.name = g.str_attr("name");
  d.display_name = g.str_attr("display_name");
  d.soc = g.str_attr("soc");
  d.gpu_arch = g.str_attr("gpu_arch");
  d.memory_bytes = g.num_attr("memory_bytes");
  d.devfreq_path = g.str_attr("devfreq_path");
  d.devfreq_node = g.str_attr("devfreq_node");
  d.gpu_device_dir = g.str_attr("gpu_device_dir");
  d.sensor_layout = g.str_attr("sensor_layout");
  d.sensor_driver = g.str_attr("sensor_driver");
  d.total_rail = g.str_attr("total_rail");
  d.gpu_rail = g.str_attr("gpu_rail");
  d.cuda_cores = static_cast<int>(g.int_attr("cuda_cores"));
  d.mem_bandwidth_bytes_s = g.num_attr("mem_bandwidth_bytes_s");
  d.idle_power_w = g.num_attr("idle_power_w");
  d.max_power_w = g.num_attr("max_power_w");
  d.gpu_freqs_hz = g.col_d("gpu_freqs");
  const GroupReader m = g.sub("power_modes");
  const auto ids = m.col_i("id");
  const long n = static_cast<long>(ids.size());
  const auto names = m.col_s("name", n);
  const auto gpu = m.col_d("gpu_max_freq", n);
  const auto cores = m.col_i("cpu_cores", n);
  const auto cpu = m.col_d("cpu_max_freq", n);
  const auto mem = m.col_d("mem_freq", n);
  const auto budget = m.col_d("budget", n);
  for (long i = 0; i < n; ++i)
    d.power_modes.push_back({static_cast<int>(ids[i]), names[i], gpu[i], static_cast<int>(cores[i]), cpu[i], mem[i], budget[i]});
  const GroupReader r = g.sub("rails");
  const auto chip = r.col_s("chip");
  const long nr = static_cast<long>(chip.size());
  const auto ch = r.col_i("channel", nr);
  const auto rname = r.col_s("name", nr);
  const auto role = r.col_s("role", nr);
  for (long i = 0; i < nr; ++i) d.rails.push_back({chip[i], static_cast<int>(ch[i]), rname[i], role[i]});
  const GroupReader v = g.sub("voltage_table");
  const auto f = v.col_d("freq");
  const auto volt = v.col_d("voltage", static_cast<long>(f.size()));
  for (size_t i = 0; i < f.size(); ++i) d.voltage_table.push_back({f[i], volt[i]});
  d.sources = g.string_map("sources");
  return d;
}

void write(GroupWriter w, const ProfileTable& t) {
  w.attr("record", std::string("ProfileTable"));
  w.attr("workload", t.workload);
  w.attr("device", t.device);
  w.attr("emulated", t.emulated);
  w.attr("virtual_time", t.virtual_time);
  w.attr("source", t.source);
  w.attr("samples_per_epoch", t.samples_per_epoch);
  w.attr("warmup_batches", t.warmup_batches);
  w.attr("measured_batches", t.measured_batches);
  w.attr("profiling_cost_s", t.profiling_cost_s);
  write_knob_space(w, t.knob);
  const size_t n = t.points.size(), dims = t.knob.dims.size();
  std::vector<double> knob, tmean, tstd, ppeak, pmean, energy, rate, temp;
  std::vector<int64_t> b, samples, psamples;
  std::vector<std::string> status;
  for (const auto& p : t.points) {
    if (p.knob.size() != dims)
      throw Error(fmt::format("profile '{}': a point has {} knob values but the knob space has {} dimensions",
                              t.workload, p.knob.size(), dims));
    knob.insert(knob.end(), p.knob.begin(), p.knob.end());
    b.push_back(p.batch_size);
    tmean.push_back(p.time_per_batch_mean_s);
    tstd.push_back(p.time_per_batch_std_s);
    ppeak.push_back(p.power_peak_w);
    pmean.push_back(p.power_mean_w);
    energy.push_back(p.energy_j);
    samples.push_back(p.samples);
    psamples.push_back(p.power_samples);
    rate.push_back(p.sensor_rate_hz);
    temp.push_back(p.temperature_c);
    status.push_back(p.status);
  }
  w.matrix("knob", knob, n, dims, knob_unit(t.knob));
  w.col("batch_size", b, "samples");
  w.col("time_per_batch_mean", tmean, "s");
  w.col("time_per_batch_std", tstd, "s");
  w.col("power_peak", ppeak, "W");
  w.col("power_mean", pmean, "W");
  w.col("energy", energy, "J");
  w.col("samples", samples, "samples");
  w.col("power_samples", psamples, "1");
  w.col("sensor_rate", rate, "Hz");
  w.col("temperature", temp, "degC");
  w.col("status", status);
}

ProfileTable read_profile(const GroupReader& g) {
  ProfileTable t;
  t.workload = g.str_attr("workload");
  t.device = g.str_attr("device");
  t.emulated = g.int_attr("emulated") != 0;
  t.virtual_time = g.int_attr("virtual_time") != 0;
  t.source = g.str_attr("source");
  t.samples_per_epoch = g.int_attr("samples_per_epoch");
  t.warmup_batches = static_cast<int>(g.int_attr("warmup_batches"));
  t.measured_batches = static_cast<int>(g.int_attr("measured_batches"));
  t.profiling_cost_s = g.num_attr("profiling_cost_s");
  t.knob = read_knob_space(g);
  const auto b = g.col_i("batch_size");
  const long n = static_cast<long>(b.size());
  const size_t dims = t.knob.dims.size();
  const auto knob = g.matrix("knob", n, dims);
  const auto tmean = g.col_d("time_per_batch_mean", n);
  const auto tstd = g.col_d("time_per_batch_std", n);
  const auto ppeak = g.col_d("power_peak", n);
  const auto pmean = g.col_d("power_mean", n);
  const auto energy = g.col_d("energy", n);
  const auto samples = g.col_i("samples", n);
  const auto psamples = g.col_i("power_samples", n);
  const auto rate = g.col_d("sensor_rate", n);
  const auto temp = g.col_d("temperature", n);
  const auto status = g.col_s("status", n);
  for (long i = 0; i < n; ++i) {
    ProfilePoint p;
    p.knob.assign(knob.begin() + static_cast<long>(i * dims), knob.begin() + static_cast<long>((i + 1) * dims));
    p.batch_size = static_cast<int>(b[i]);
    p.time_per_batch_mean_s = tmean[i];
    p.time_per_batch_std_s = tstd[i];
    p.power_peak_w = ppeak[i];
    p.power_mean_w = pmean[i];
    p.energy_j = energy[i];
    p.samples = samples[i];
    p.power_samples = psamples[i];
    p.sensor_rate_hz = rate[i];
    p.temperature_c = temp[i];
    p.status = status[i];
    t.points.push_back(std::move(p));
  }
  return t;
}

void write(GroupWriter w, const RelationSet& s) {
  w.attr("record", std::string("RelationSet"));
  w.attr("name", s.name);
  w.attr("workload", s.workload);
  w.attr("dataset", s.dataset);
  w.attr("metric", s.metric);
  w.attr("higher_is_better", s.higher_is_better);
  w.attr("target", s.target);
  w.attr("lr_rule", s.lr_rule);
  w.attr("base_lr", s.base_lr);
  w.attr("base_batch", s.base_batch);
  w.attr("optimizer", s.optimizer);
  w.attr("samples_per_epoch", s.samples_per_epoch);
  std::vector<int64_t> b, seed, reached, samples, budget;
  std::vector<double> wall, metric, lr;
  for (const auto& r : s.runs) {
    b.push_back(r.batch_size);
    seed.push_back(r.seed);
    reached.push_back(r.reached);
    samples.push_back(r.samples);
    budget.push_back(r.budget_samples);
    wall.push_back(r.wall_time_s);
    metric.push_back(r.final_metric);
    lr.push_back(r.learning_rate);
  }
  w.col("batch_size", b, "samples");
  w.col("seed", seed, "1");
  w.col("reached", reached, "bool");
  w.col("samples", samples, "samples");
  w.col("budget", budget, "samples");
  w.col("wall_time", wall, "s");
  w.col("final_metric", metric, s.metric);
  w.col("learning_rate", lr, "1");
}

RelationSet read_relation(const GroupReader& g) {
  RelationSet s;
  s.name = g.str_attr("name");
  s.workload = g.str_attr("workload");
  s.dataset = g.str_attr("dataset");
  s.metric = g.str_attr("metric");
  s.higher_is_better = g.int_attr("higher_is_better") != 0;
  s.target = g.num_attr("target");
  s.lr_rule = g.str_attr("lr_rule");
  s.base_lr = g.num_attr("base_lr");
  s.base_batch = static_cast<int>(g.int_attr("base_batch"));
  s.optimizer = g.str_attr("optimizer");
  s.samples_per_epoch = g.int_attr("samples_per_epoch");
  const auto b = g.col_i("batch_size");
  const long n = static_cast<long>(b.size());
  const auto seed = g.col_i("seed", n);
  const auto reached = g.col_i("reached", n);
  const auto samples = g.col_i("samples", n);
  const auto budget = g.col_i("budget", n);
  const auto wall = g.col_d("wall_time", n);
  const auto metric = g.col_d("final_metric", n);
  const auto lr = g.col_d("learning_rate", n);
  for (long i = 0; i < n; ++i)
    s.runs.push_back({static_cast<int>(b[i]), static_cast<int>(seed[i]), reached[i] != 0, samples[i], budget[i],
                      wall[i], metric[i], lr[i]});
  return s;
}

void write(GroupWriter w, const ModelRecord& m) {
  w.attr("record", std::string("ModelRecord"));
  w.attr("name", m.name);
  w.attr("kind", m.kind);
  w.attr("workload", m.workload);
  w.attr("device", m.device);
  w.col("param_names", m.param_names);
  w.col("param_values", m.param_values, "SI (per parameter, see param_names)");
  w.col("param_stderr", m.param_stderr, "SI (per parameter, see param_names)");
  w.number_map("metrics", m.metrics);
  w.string_map("settings", m.settings);
  w.blob("blob", m.blob);
}

ModelRecord read_model(const GroupReader& g) {
  ModelRecord m;
  m.name = g.str_attr("name");
  m.kind = g.str_attr("kind");
  m.workload = g.str_attr("workload");
  m.device = g.str_attr("device");
  m.param_names = g.col_s("param_names");
  const long n = static_cast<long>(m.param_names.size());
  m.param_values = g.col_d("param_values", n);
  m.param_stderr = g.col_d("param_stderr", n);
  m.metrics = g.number_map("metrics");
  m.settings = g.string_map("settings");
  m.blob = g.blob("blob");
  return m;
}

void write(GroupWriter w, const SweepResult& s) {
  w.attr("record", std::string("SweepResult"));
  w.attr("name", s.name);
  w.attr("profile", s.profile);
  w.attr("relation", s.relation);
  w.attr("target", s.target);
  w.attr("feasibility", s.feasibility);
  w.attr("guard", s.guard);
  write_knob_space(w, s.knob);
  const size_t n = s.rows.size(), dims = s.knob.dims.size();
  std::vector<double> cap, knob, pt, pe, rt, rs, re, regret;
  std::vector<std::string> workload, policy;
  std::vector<int64_t> feasible, b;
  for (const auto& r : s.rows) {
    cap.push_back(r.cap_w);
    workload.push_back(r.workload);
    policy.push_back(r.policy);
    feasible.push_back(r.feasible);
    std::vector<double> k = r.knob;
    k.resize(dims, kNaN);  // infeasible rows have no configuration
    knob.insert(knob.end(), k.begin(), k.end());
    b.push_back(r.batch_size);
    pt.push_back(r.predicted_time_s);
    pe.push_back(r.predicted_energy_j);
    rt.push_back(r.replayed_time_mean_s);
    rs.push_back(r.replayed_time_std_s);
    re.push_back(r.replayed_energy_j);
    regret.push_back(r.regret);
  }
  w.col("cap", cap, "W");
  w.col("workload", workload);
  w.col("policy", policy);
  w.col("feasible", feasible, "bool");
  w.matrix("knob", knob, n, dims, knob_unit(s.knob));
  w.col("batch_size", b, "samples");
  w.col("predicted_time", pt, "s");
  w.col("predicted_energy", pe, "J");
  w.col("replayed_time_mean", rt, "s");
  w.col("replayed_time_std", rs, "s");
  w.col("replayed_energy", re, "J");
  w.col("regret", regret, "1");
}

SweepResult read_sweep(const GroupReader& g) {
  SweepResult s;
  s.name = g.str_attr("name");
  s.profile = g.str_attr("profile");
  s.relation = g.str_attr("relation");
  s.target = g.str_attr("target");
  s.feasibility = g.str_attr("feasibility");
  s.guard = g.has_attr("guard") ? g.num_attr("guard") : 0.0;  // stores written before the guard was recorded
  s.knob = read_knob_space(g);
  const auto cap = g.col_d("cap");
  const long n = static_cast<long>(cap.size());
  const size_t dims = s.knob.dims.size();
  const auto workload = g.col_s("workload", n);
  const auto policy = g.col_s("policy", n);
  const auto feasible = g.col_i("feasible", n);
  const auto knob = g.matrix("knob", n, dims);
  const auto b = g.col_i("batch_size", n);
  const auto pt = g.col_d("predicted_time", n);
  const auto pe = g.col_d("predicted_energy", n);
  const auto rt = g.col_d("replayed_time_mean", n);
  const auto rs = g.col_d("replayed_time_std", n);
  const auto re = g.col_d("replayed_energy", n);
  const auto regret = g.col_d("regret", n);
  for (long i = 0; i < n; ++i) {
    SweepRow r;
    r.cap_w = cap[i];
    r.workload = workload[i];
    r.policy = policy[i];
    r.feasible = feasible[i] != 0;
    if (r.feasible)
      r.knob.assign(knob.begin() + static_cast<long>(i * dims), knob.begin() + static_cast<long>((i + 1) * dims));
    r.batch_size = static_cast<int>(b[i]);
    r.predicted_time_s = pt[i];
    r.predicted_energy_j = pe[i];
    r.replayed_time_mean_s = rt[i];
    r.replayed_time_std_s = rs[i];
    r.replayed_energy_j = re[i];
    r.regret = regret[i];
    s.rows.push_back(std::move(r));
  }
  return s;
}

void write(GroupWriter w, const PowerSeries& s) {
  w.attr("record", std::string("PowerSeries"));
  w.attr("name", s.name);
  w.attr("emulated", s.emulated);
  w.attr("cap_w", s.cap_w);
  w.attr("failed_reads", s.failed_reads);
  w.col("time", s.time_s, "s");
  w.col("power", s.power_w, "W");
  w.col("gpu_power", s.gpu_power_w, "W");
  w.col("gpu_freq", s.freq_hz, "Hz");
}

PowerSeries read_series(const GroupReader& g) {
  PowerSeries s;
  s.name = g.str_attr("name");
  s.emulated = g.int_attr("emulated") != 0;
  s.cap_w = g.num_attr("cap_w");
  s.failed_reads = g.int_attr("failed_reads");
  s.time_s = g.col_d("time");
  const long n = static_cast<long>(s.time_s.size());
  s.power_w = g.col_d("power", n);
  s.gpu_power_w = g.col_d("gpu_power");
  if (!s.gpu_power_w.empty() && static_cast<long>(s.gpu_power_w.size()) != n)
    g.fail("gpu_power", fmt::format("column has {} rows, expected 0 or {}", s.gpu_power_w.size(), n));
  s.freq_hz = g.col_d("gpu_freq");
  if (!s.freq_hz.empty() && static_cast<long>(s.freq_hz.size()) != n)
    g.fail("gpu_freq", fmt::format("column has {} rows, expected 0 or {}", s.freq_hz.size(), n));
  return s;
}

void write(GroupWriter w, const ValidationResult& v) {
  w.attr("record", std::string("ValidationResult"));
  w.attr("name", v.name);
  w.attr("workload", v.workload);
  w.attr("device", v.device);
  w.attr("dataset", v.dataset);
  w.attr("metric", v.metric);
  w.attr("target", v.target);
  w.attr("emulated", v.emulated);
  w.attr("feasibility", v.feasibility);
  w.attr("guard", v.guard);
  write_knob_space(w, v.knob);
  const size_t n = v.rows.size(), dims = v.knob.dims.size();
  std::vector<double> cap, knob, dev_t, wall, energy, peak, mean, over, pt, pe, metric;
  std::vector<int64_t> b, seed, reached, samples, exceeded;
  std::vector<std::string> policy, series, status;
  for (const auto& r : v.rows) {
    cap.push_back(r.cap_w);
    policy.push_back(r.policy);
    std::vector<double> k = r.knob;
    k.resize(dims, kNaN);
    knob.insert(knob.end(), k.begin(), k.end());
    b.push_back(r.batch_size);
    seed.push_back(r.seed);
    reached.push_back(r.reached);
    samples.push_back(r.samples);
    dev_t.push_back(r.device_time_s);
    wall.push_back(r.wall_time_s);
    energy.push_back(r.energy_j);
    peak.push_back(r.power_peak_w);
    mean.push_back(r.power_mean_w);
    exceeded.push_back(r.cap_exceeded);
    over.push_back(r.time_over_cap_s);
    pt.push_back(r.predicted_time_s);
    pe.push_back(r.predicted_energy_j);
    metric.push_back(r.final_metric);
    series.push_back(r.series);
    status.push_back(r.status);
  }
  w.col("cap", cap, "W");
  w.col("policy", policy);
  w.matrix("knob", knob, n, dims, knob_unit(v.knob));
  w.col("batch_size", b, "samples");
  w.col("seed", seed, "1");
  w.col("reached", reached, "bool");
  w.col("samples", samples, "samples");
  w.col("device_time", dev_t, "s");
  w.col("wall_time", wall, "s");
  w.col("energy", energy, "J");
  w.col("power_peak", peak, "W");
  w.col("power_mean", mean, "W");
  w.col("cap_exceeded", exceeded, "bool");
  w.col("time_over_cap", over, "s");
  w.col("predicted_time", pt, "s");
  w.col("predicted_energy", pe, "J");
  w.col("final_metric", metric, v.metric);
  w.col("series", series);
  w.col("status", status);
}

ValidationResult read_validation(const GroupReader& g) {
  ValidationResult v;
  v.name = g.str_attr("name");
  v.workload = g.str_attr("workload");
  v.device = g.str_attr("device");
  v.dataset = g.str_attr("dataset");
  v.metric = g.str_attr("metric");
  v.target = g.num_attr("target");
  v.emulated = g.int_attr("emulated") != 0;
  v.feasibility = g.str_attr("feasibility");
  v.guard = g.has_attr("guard") ? g.num_attr("guard") : 0.0;  // stores written before the guard was recorded
  v.knob = read_knob_space(g);
  const auto cap = g.col_d("cap");
  const long n = static_cast<long>(cap.size());
  const size_t dims = v.knob.dims.size();
  const auto policy = g.col_s("policy", n);
  const auto knob = g.matrix("knob", n, dims);
  const auto b = g.col_i("batch_size", n);
  const auto seed = g.col_i("seed", n);
  const auto reached = g.col_i("reached", n);
  const auto samples = g.col_i("samples", n);
  const auto dev_t = g.col_d("device_time", n);
  const auto wall = g.col_d("wall_time", n);
  const auto energy = g.col_d("energy", n);
  const auto peak = g.col_d("power_peak", n);
  const auto mean = g.col_d("power_mean", n);
  const auto exceeded = g.col_i("cap_exceeded", n);
  const auto over = g.col_d("time_over_cap", n);
  const auto pt = g.col_d("predicted_time", n);
  const auto pe = g.col_d("predicted_energy", n);
  const auto metric = g.col_d("final_metric", n);
  const auto series = g.col_s("series", n);
  // Stores written before the power watchdog of validate have no status: every run ran to its end.
  const auto status = g.has("status") ? g.col_s("status", n) : std::vector<std::string>(static_cast<size_t>(n));
  for (long i = 0; i < n; ++i) {
    ValidationRow r;
    r.cap_w = cap[i];
    r.policy = policy[i];
    r.knob.assign(knob.begin() + static_cast<long>(i * dims), knob.begin() + static_cast<long>((i + 1) * dims));
    r.batch_size = static_cast<int>(b[i]);
    r.seed = static_cast<int>(seed[i]);
    r.reached = reached[i] != 0;
    r.samples = samples[i];
    r.device_time_s = dev_t[i];
    r.wall_time_s = wall[i];
    r.energy_j = energy[i];
    r.power_peak_w = peak[i];
    r.power_mean_w = mean[i];
    r.cap_exceeded = exceeded[i] != 0;
    r.time_over_cap_s = over[i];
    r.predicted_time_s = pt[i];
    r.predicted_energy_j = pe[i];
    r.final_metric = metric[i];
    r.series = series[i];
    r.status = status[i];
    v.rows.push_back(std::move(r));
  }
  return v;
}

// ---------------------------------------------------------------------------------------------
// File handling.
struct Silence {
  Silence() { H5::Exception::dontPrint(); }
};
const Silence silence_hdf5;

void fsync_path(const fs::path& p, bool directory) {
  const int fd = ::open(p.c_str(), directory ? O_RDONLY | O_DIRECTORY : O_RDONLY);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

// ---------------------------------------------------------------------------------------------
// Whole-file checksum. libhdf5 1.10 is not hardened against damaged files: a flipped byte can
// crash it (SIGSEGV) or make it loop forever (docs/reliability.md). Every store pacer writes
// therefore starts with a 512-byte HDF5 user block (which libhdf5 and h5py skip) holding
//   "PACERSUM 1 crc32=<8 hex> bytes=<size of the rest>\n"
// and every open verifies it before libhdf5 parses a byte. Stores without the header (written by
// another tool) are read unchecked.
constexpr hsize_t kUserBlockBytes = 512;
constexpr std::string_view kSumMagic = "PACERSUM 1 ";

uint32_t crc32(const char* data, size_t n) {
  static const auto table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) c = table[(c ^ static_cast<uint8_t>(data[i])) & 0xFFu] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void seal_store(const fs::path& path) {
  const std::string bytes = read_all(path);
  if (bytes.size() < kUserBlockBytes) throw Error(fmt::format("{}: store shorter than its header", path.string()));
  const size_t body = bytes.size() - kUserBlockBytes;
  const std::string header = fmt::format("{}crc32={:08x} bytes={}\n", kSumMagic,
                                         crc32(bytes.data() + kUserBlockBytes, body), body);
  std::fstream out(path, std::ios::binary | std::ios::in | std::ios::out);
  out.seekp(0);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.flush();
  if (!out) throw Error(fmt::format("{}: cannot write the checksum header (disk full?)", path.string()));
}

// Returns the file's bytes; throws when a pacer checksum header is present and does not match.
std::string verify_checksum(const fs::path& path) {
  std::string bytes = read_all(path);
  if (bytes.compare(0, kSumMagic.size(), kSumMagic) != 0) {
    // A superblock behind a 512-byte user block is pacer's layout: its header was damaged.
    static constexpr std::string_view kHdf5Signature("\x89HDF\r\n\x1a\n", 8);
    if (bytes.size() >= kUserBlockBytes + kHdf5Signature.size() &&
        bytes.compare(kUserBlockBytes, kHdf5Signature.size(), kHdf5Signature) == 0)
      throw Error(fmt::format("{}: damaged checksum header: restore the store from a copy or rerun the campaign",
                              path.string()));
    return bytes;
  }
  unsigned sum = 0;
  unsigned long long body = 0;
  const std::string header = bytes.substr(0, std::min<size_t>(bytes.size(), 128));
  if (std::sscanf(header.c_str() + kSumMagic.size(), "crc32=%8x bytes=%llu", &sum, &body) != 2)
    throw Error(fmt::format("{}: damaged checksum header: restore the store from a copy or rerun the campaign",
                            path.string()));
  if (bytes.size() < kUserBlockBytes || bytes.size() - kUserBlockBytes != body)
    throw Error(fmt::format("{}: the store is {} bytes but its header records {}: the file was truncated or "
                            "extended; restore it from a copy or rerun the campaign",
                            path.string(), bytes.size(), body + kUserBlockBytes));
  if (crc32(bytes.data() + kUserBlockBytes, body) != sum)
    throw Error(fmt::format("{}: checksum mismatch: the file is damaged (a flipped or zeroed block); restore it "
                            "from a copy or rerun the campaign (edited on purpose with another HDF5 tool? reseal it with pacer "
                            "export)",
                            path.string()));
  return bytes;
}

// libhdf5 1.10 loops forever when it loads a global heap collection (where variable-length strings
// live) holding a free-space object of size 0 -- what a zeroed (torn) sector inside a collection
// looks like: its decoder advances by the object's size. Collections are found by their "GCOL"
// signature and walked exactly as H5HG__cache_heap_deserialize does, before libhdf5 sees the file.
void check_global_heaps(const fs::path& path, const std::string& bytes) {
  auto u64 = [&](size_t at) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(bytes[at + static_cast<size_t>(i)]);
    return v;
  };
  constexpr size_t kHeader = 16, kObjectHeader = 16;
  for (size_t at = bytes.find("GCOL"); at != std::string::npos; at = bytes.find("GCOL", at + 1)) {
    if (at + kHeader > bytes.size() || bytes[at + 4] != 1) continue;
    const uint64_t size = u64(at + 8);
    if (size < kHeader || size > bytes.size() - at) continue;  // libhdf5 rejects these itself
    const size_t end = at + static_cast<size_t>(size);
    for (size_t p = at + kHeader; p + kObjectHeader <= end;) {
      const unsigned idx = static_cast<uint8_t>(bytes[p]) | (static_cast<unsigned>(static_cast<uint8_t>(bytes[p + 1])) << 8);
      const uint64_t obj = u64(p + 8);
      if (idx == 0 && obj == 0)
        throw Error(fmt::format("{}: damaged global heap at byte {} (a zeroed block?): the file cannot be read safely; "
                                "restore it from a copy or rerun the campaign",
                                path.string(), p));
      const uint64_t need = idx > 0 ? kObjectHeader + ((obj + 7) & ~uint64_t{7}) : obj;
      if (need > end - p) break;
      p += static_cast<size_t>(need);
    }
  }
}

void validate_store(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw Error(fmt::format("{}: no such trace store (create it first with the command that writes it, e.g. "
                            "pacer profile)",
                            path.string()));
  if (!fs::is_regular_file(path, ec)) throw Error(fmt::format("{}: not a regular file", path.string()));
  const std::string bytes = verify_checksum(path);  // first: nothing damaged reaches libhdf5
  htri_t is_h5 = H5Fis_hdf5(path.c_str());
  if (is_h5 <= 0) throw Error(fmt::format("{}: not an HDF5 file (a pacer trace store is HDF5; was the file overwritten?)", path.string()));
  check_global_heaps(path, bytes);
}

H5::H5File open_file(const fs::path& path, unsigned flags) {
  try {
    return H5::H5File(path.string(), flags);
  } catch (const H5::Exception&) {
    throw Error(fmt::format("{}: the HDF5 file is truncated or corrupt and cannot be opened; restore it from a copy or rerun the campaign",
                            path.string()));
  }
}

void check_schema(const H5::H5File& f, const fs::path& path) try {
  if (!f.attrExists("pacer_schema"))
    throw Error(fmt::format("{}: HDF5 file without the root attribute 'pacer_schema': not a pacer trace store", path.string()));
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

const char* kGroups[] = {"profiles", "relations", "models", "sweeps", "runs", "validations"};

void init_layout(H5::H5File& f) {
  GroupWriter root(f.openGroup("/"));
  root.attr("pacer_schema", static_cast<int64_t>(kSchemaVersion));
  root.attr("creator", std::string("pacer"));
  for (const char* g : kGroups) f.createGroup(g);
}

// Rewrites the store into a temporary sibling, leaving out `skip` ("group/name" or "device"),
// lets `add` write the new object, then fsyncs and renames. Copying (instead of editing in place)
// keeps the original intact until the rename and reclaims the space of replaced objects.
// A writer killed (SIGKILL, power loss) between creating its temporary sibling and the rename leaves
// "<store>.tmp-<pid>" behind; a long campaign that is killed often would pile up store-sized files.
void remove_stale_temporaries(const fs::path& path) {
  const fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  const std::string prefix = path.filename().string() + ".tmp-";
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string pid_text = name.substr(prefix.size());
    if (pid_text.empty() || pid_text.find_first_not_of("0123456789") != std::string::npos) continue;
    const long pid = std::strtol(pid_text.c_str(), nullptr, 10);
    if (pid == ::getpid() || (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)) fs::remove(entry.path(), ec);
  }
}

void rewrite(const fs::path& path, const std::string& skip, const std::function<void(H5::H5File&)>& add) {
  remove_stale_temporaries(path);
  const fs::path tmp = path.string() + fmt::format(".tmp-{}", ::getpid());
  try {
    {
      H5::FileCreatPropList create;
      create.setUserblock(kUserBlockBytes);  // room for the checksum header (seal_store)
      H5::H5File out(tmp.string(), H5F_ACC_TRUNC, create);
      init_layout(out);
      std::error_code ec;
      if (fs::exists(path, ec)) {
        validate_store(path);
        H5::H5File in = open_file(path, H5F_ACC_RDONLY);
        check_schema(in, path);
        if (in.nameExists("device") && skip != "device")
          H5Ocopy(in.getId(), "device", out.getId(), "device", H5P_DEFAULT, H5P_DEFAULT);
        for (const char* g : kGroups) {
          if (!in.nameExists(g)) continue;
          H5::Group src = in.openGroup(g);
          for (hsize_t i = 0; i < src.getNumObjs(); ++i) {
            const std::string name = src.getObjnameByIdx(i);
            if (std::string(g) + "/" + name == skip) continue;
            const std::string full = std::string("/") + g + "/" + name;
            if (H5Ocopy(in.getId(), full.c_str(), out.getId(), full.c_str(), H5P_DEFAULT, H5P_DEFAULT) < 0)
              throw Error(fmt::format("{}: could not copy '{}' while updating the store", path.string(), full));
          }
        }
      }
      add(out);
      out.flush(H5F_SCOPE_GLOBAL);
    }
    seal_store(tmp);
    fsync_path(tmp, false);
    fs::rename(tmp, path);
    fsync_path(path.parent_path().empty() ? fs::path(".") : path.parent_path(), true);
  } catch (const H5::Exception& e) {
    std::error_code ec;
    fs::remove(tmp, ec);
    throw Error(fmt::format("{}: HDF5 error while writing ({}): {}", path.string(), e.getFuncName(), e.getDetailMsg()));
  } catch (...) {
    std::error_code ec;
    fs::remove(tmp, ec);
    throw;
  }
}

void check_name(const std::string& what, const std::string& name) {
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
    throw Error(fmt::format("invalid {} name '{}': use a non-empty name without '/'", what, name));
}

template <typename Record>
void put(const fs::path& path, const std::string& group, const std::string& name, const Record& rec) {
  check_name(group, name);
  rewrite(path, group + "/" + name, [&](H5::H5File& f) {
    H5::Group g = f.openGroup(group);
    write(GroupWriter(g.createGroup(name)), rec);
  });
}

template <typename Fn>
auto get(const fs::path& path, const std::string& group, const std::string& name, Fn read) {
  validate_store(path);
  H5::H5File f = open_file(path, H5F_ACC_RDONLY);
  check_schema(f, path);
  try {
    GroupReader root(path.string(), "", f.openGroup("/"));
    GroupReader g = root.sub(group);
    if (!g.has(name)) {
      std::string known;
      for (const auto& c : g.children()) known += (known.empty() ? "" : ", ") + c;
      throw Error(fmt::format("{}: no {} record named '{}' (present: {})", path.string(), group, name,
                              known.empty() ? "none" : known));
    }
    return read(g.sub(name));
  } catch (const H5::Exception& e) {
    throw Error(fmt::format("{}: cannot read '{}/{}': {}", path.string(), group, name, e.getDetailMsg()));
  }
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

}  // namespace

Store Store::open(const fs::path& path) {
  validate_store(path);
  guarded(path, "read the root group", [&] {
    H5::H5File f = open_file(path, H5F_ACC_RDONLY);
    check_schema(f, path);
    return 0;
  });
  return Store(path);
}

Store Store::open_or_create(const fs::path& path) {
  std::error_code ec;
  if (fs::exists(path, ec)) return open(path);
  if (!path.parent_path().empty() && !fs::exists(path.parent_path(), ec))
    throw Error(fmt::format("{}: directory {} does not exist", path.string(), path.parent_path().string()));
  rewrite(path, "", [](H5::H5File&) {});
  return Store(path);
}

bool Store::has_device() const {
  validate_store(path_);
  return guarded(path_, "look for '/device'", [&] {
    H5::H5File f = open_file(path_, H5F_ACC_RDONLY);
    return f.nameExists("device");
  });
}

DeviceSpec Store::read_device() const {
  validate_store(path_);
  return guarded(path_, "read '/device'", [&] {
    H5::H5File f = open_file(path_, H5F_ACC_RDONLY);
    check_schema(f, path_);
    GroupReader root(path_.string(), "", f.openGroup("/"));
    return traces::read_device(root.sub("device"));
  });
}

void Store::write_device(const DeviceSpec& device) {
  rewrite(path_, "device", [&](H5::H5File& f) { write(GroupWriter(f.createGroup("device")), device); });
}

std::vector<std::string> Store::list(const std::string& group) const {
  validate_store(path_);
  return guarded(path_, "list '/" + group + "'", [&] {
    H5::H5File f = open_file(path_, H5F_ACC_RDONLY);
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

ProfileTable Store::read_profile(const std::string& name) const {
  return get(path_, "profiles", name, [](const GroupReader& g) { return traces::read_profile(g); });
}
void Store::write_profile(const ProfileTable& table, const std::string& name) {
  put(path_, "profiles", name.empty() ? table.workload : name, table);
}
RelationSet Store::read_relation(const std::string& name) const {
  return get(path_, "relations", name, [](const GroupReader& g) { return traces::read_relation(g); });
}
void Store::write_relation(const RelationSet& set) { put(path_, "relations", set.name, set); }
ModelRecord Store::read_model(const std::string& name) const {
  return get(path_, "models", name, [](const GroupReader& g) { return traces::read_model(g); });
}
void Store::write_model(const ModelRecord& model) { put(path_, "models", model.name, model); }
SweepResult Store::read_sweep(const std::string& name) const {
  return get(path_, "sweeps", name, [](const GroupReader& g) { return traces::read_sweep(g); });
}
void Store::write_sweep(const SweepResult& sweep) { put(path_, "sweeps", sweep.name, sweep); }
PowerSeries Store::read_series(const std::string& name) const {
  return get(path_, "runs", name, [](const GroupReader& g) { return traces::read_series(g); });
}
void Store::write_series(const PowerSeries& series) { put(path_, "runs", series.name, series); }
ValidationResult Store::read_validation(const std::string& name) const {
  return get(path_, "validations", name, [](const GroupReader& g) { return traces::read_validation(g); });
}
void Store::write_validation(const ValidationResult& result) { put(path_, "validations", result.name, result); }

void reseal_store(const fs::path& path) {
  const std::string bytes = read_all(path);
  if (bytes.compare(0, kSumMagic.size(), kSumMagic) == 0) seal_store(path);
}

void write_file_atomic(const fs::path& path, const std::string& content) {
  const fs::path tmp = path.string() + fmt::format(".tmp-{}", ::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(fmt::format("{}: cannot write (does the directory exist and is it writable?)", path.string()));
    out << content;
    out.flush();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw Error(fmt::format("{}: write failed (disk full?)", path.string()));
    }
  }
  fsync_path(tmp, false);
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw Error(fmt::format("{}: cannot replace file: {}", path.string(), ec.message()));
  }
}

}  // namespace pacer::traces
