// Structure-aware fuzzing of the trace-store reader. LLVMFuzzerInitialize writes a valid store with
// one record of every kind through the real writer (traces::Store). Each input is a program of edits
// applied with the HDF5 C++ API to a copy of that store -- delete an object or attribute, replace a
// dataset or attribute with another type (numeric, fixed or variable strings, compound, array,
// enum, opaque, vlen sequence), rank (null, scalar, 1-3), length and content, swap a group for a
// dataset, add soft, external or cyclic hard links -- and the result is read back through Store.
// The checksum header is recomputed after the edits so they reach the record readers. Every read
// must return a record or throw pacer::Error: any other exception, crash or sanitizer report is a bug.
#include <H5Cpp.h>
#include <fuzzer/FuzzedDataProvider.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../support/sample_records.hpp"
#include "../support/store_seal.hpp"
#include "base/error.hpp"
#include "store_read_all.hpp"
#include "traces/catalog/catalog.hpp"
#include "traces/store/store.hpp"

namespace {

using namespace pacer::traces;
using namespace pacer::testing;  // the shared sample records (tests/support/sample_records.hpp)

std::string g_base;  // bytes of the valid store
std::string g_path;  // per-process scratch file

std::string read_bytes(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Every object path in the file, "/" first.
std::vector<std::string> object_paths(H5::H5File& f) {
  std::vector<std::string> out{"/"};
  auto visit = [](hid_t, const char* name, const H5O_info_t*, void* op) -> herr_t {
    if (std::string(name) != ".") static_cast<std::vector<std::string>*>(op)->push_back("/" + std::string(name));
    return 0;
  };
  H5Ovisit(f.getId(), H5_INDEX_NAME, H5_ITER_NATIVE, visit, &out);
  return out;
}

// A data type chosen by the input; `kind` tells the writer how to fill it.
enum class Fill { Bytes, VlenString, None };
struct TypeChoice {
  H5::DataType type;
  Fill fill;
};

TypeChoice pick_type(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange(0, 13)) {
    case 0: return {H5::PredType::NATIVE_DOUBLE, Fill::Bytes};
    case 1: return {H5::PredType::NATIVE_FLOAT, Fill::Bytes};
    case 2: return {H5::PredType::NATIVE_INT64, Fill::Bytes};
    case 3: return {H5::PredType::NATIVE_INT32, Fill::Bytes};
    case 4: return {H5::PredType::NATIVE_UINT8, Fill::Bytes};
    case 5: return {H5::PredType::STD_U64BE, Fill::Bytes};
    case 6: return {H5::StrType(H5::PredType::C_S1, H5T_VARIABLE), Fill::VlenString};
    case 7: return {H5::StrType(H5::PredType::C_S1, in.ConsumeIntegralInRange<size_t>(1, 16)), Fill::Bytes};
    case 8: {
      H5::CompType c(size_t{16});
      c.insertMember("a", 0, H5::PredType::NATIVE_DOUBLE);
      c.insertMember("b", 8, H5::PredType::NATIVE_INT64);
      return {c, Fill::Bytes};
    }
    case 9: {
      const hsize_t n[1] = {3};
      return {H5::ArrayType(H5::PredType::NATIVE_DOUBLE, 1, n), Fill::Bytes};
    }
    case 10: {
      H5::EnumType e(H5::PredType::NATIVE_INT);
      int zero = 0, one = 1;
      e.insert("no", &zero);
      e.insert("yes", &one);
      return {e, Fill::Bytes};
    }
    case 11: return {H5::DataType(H5T_OPAQUE, 4), Fill::Bytes};
    case 12: return {H5::VarLenType(H5::PredType::NATIVE_INT), Fill::None};
    default: {
      // A floating-point type the library must convert: 16-bit IEEE half.
      H5::FloatType h(H5::PredType::IEEE_F32LE);
      h.setFields(15, 10, 5, 0, 10);
      h.setOffset(0);
      h.setPrecision(16);
      h.setSize(2);
      h.setEbias(15);
      return {h, Fill::Bytes};
    }
  }
}

H5::DataSpace pick_space(FuzzedDataProvider& in, hsize_t& npoints) {
  const int shape = in.ConsumeIntegralInRange(0, 9);
  npoints = 1;
  if (shape == 0) {
    npoints = 0;
    return H5::DataSpace(H5S_NULL);
  }
  if (shape == 1) return H5::DataSpace(H5S_SCALAR);
  if (shape == 2) {
    // A column that claims to be huge but whose data was never written.
    hsize_t dims[1] = {hsize_t{1} << in.ConsumeIntegralInRange(20, 40)};
    npoints = 0;  // not written
    return H5::DataSpace(1, dims);
  }
  const int rank = shape < 7 ? 1 : shape - 5;  // 1, 2, 3 (shape 7 -> 2, 8 -> 3, 9 -> 4 -> capped)
  hsize_t dims[3] = {0, 0, 0};
  const int r = rank > 3 ? 3 : rank;
  for (int i = 0; i < r; ++i) {
    dims[i] = in.ConsumeIntegralInRange<hsize_t>(0, r == 1 ? 64 : 6);
    npoints *= dims[i];
  }
  return H5::DataSpace(r, dims);
}

std::vector<char> payload(FuzzedDataProvider& in, size_t bytes) {
  std::vector<char> buf(bytes, 0);
  const auto src = in.ConsumeBytes<char>(std::min<size_t>(bytes, in.remaining_bytes()));
  std::copy(src.begin(), src.end(), buf.begin());
  return buf;
}

// DataSet::write and Attribute::write take their arguments in opposite orders.
void write_raw(H5::DataSet& d, const H5::DataType& t, const void* buf) { d.write(buf, t); }
void write_raw(H5::Attribute& a, const H5::DataType& t, const void* buf) { a.write(t, buf); }

template <typename Obj>
void write_contents(Obj& obj, FuzzedDataProvider& in, const TypeChoice& t, hsize_t npoints) {
  if (npoints == 0 || t.fill == Fill::None) return;
  if (t.fill == Fill::VlenString) {
    std::vector<std::string> s;
    for (hsize_t i = 0; i < npoints; ++i) s.push_back(in.ConsumeRandomLengthString(24));
    std::vector<const char*> ptrs;
    for (const auto& x : s) ptrs.push_back(x.c_str());
    write_raw(obj, t.type, ptrs.data());
    return;
  }
  const auto buf = payload(in, t.type.getSize() * npoints);
  write_raw(obj, t.type, buf.data());
}

const char* kAttrNames[] = {"pacer_schema", "unit", "name", "workload", "device", "knob_kind", "emulated",
                            "virtual_time", "cuda_cores", "target", "samples_per_epoch", "memory_bytes",
                            "record", "failed_reads", "cap_w", "power_mape_cv", "fit"};

void mutate(H5::H5File& f, FuzzedDataProvider& in) {
  const int ops = in.ConsumeIntegralInRange(1, 6);
  for (int op = 0; op < ops && in.remaining_bytes() > 0; ++op) {
    const auto paths = object_paths(f);
    const std::string target = paths[in.ConsumeIntegralInRange<size_t>(0, paths.size() - 1)];
    const bool is_root = target == "/";
    const int kind = in.ConsumeIntegralInRange(0, 7);
    try {
      switch (kind) {
        case 0:  // delete an object
          if (!is_root) H5Ldelete(f.getId(), target.c_str(), H5P_DEFAULT);
          break;
        case 1: {  // replace (or add) a dataset with another type, shape and content
          std::string name = target;
          if (H5Oexists_by_name(f.getId(), target.c_str(), H5P_DEFAULT) > 0 &&
              f.childObjType(target) == H5O_TYPE_GROUP) {
            name = (is_root ? "" : target) + "/" + in.ConsumeRandomLengthString(12);
          } else {
            H5Ldelete(f.getId(), target.c_str(), H5P_DEFAULT);
          }
          const TypeChoice t = pick_type(in);
          hsize_t n = 0;
          const H5::DataSpace sp = pick_space(in, n);
          H5::DataSet ds = f.createDataSet(name, t.type, sp);
          write_contents(ds, in, t, n);
          if (in.ConsumeBool()) {
            H5::Attribute a = ds.createAttribute("unit", H5::StrType(H5::PredType::C_S1, H5T_VARIABLE),
                                                 H5::DataSpace(H5S_SCALAR));
            a.write(H5::StrType(H5::PredType::C_S1, H5T_VARIABLE), std::string("W"));
          }
          break;
        }
        case 2:    // replace or add an attribute
        case 3: {  // delete an attribute
          H5::H5Object* obj = nullptr;
          H5::Group g;
          H5::DataSet d;
          if (is_root || f.childObjType(target) == H5O_TYPE_GROUP) {
            g = f.openGroup(target);
            obj = &g;
          } else if (f.childObjType(target) == H5O_TYPE_DATASET) {
            d = f.openDataSet(target);
            obj = &d;
          } else {
            break;
          }
          std::string name;
          const int nattr = obj->getNumAttrs();
          if (nattr > 0 && in.ConsumeBool())
            name = obj->openAttribute(in.ConsumeIntegralInRange<unsigned>(0, nattr - 1)).getName();
          else if (in.ConsumeBool())
            name = kAttrNames[in.ConsumeIntegralInRange<size_t>(0, std::size(kAttrNames) - 1)];
          else
            name = in.ConsumeRandomLengthString(12);
          if (name.empty()) name = "x";
          if (obj->attrExists(name)) obj->removeAttr(name);
          if (kind == 3) break;
          const TypeChoice t = pick_type(in);
          hsize_t n = 0;
          const H5::DataSpace sp = pick_space(in, n);
          if (sp.getSimpleExtentType() == H5S_SIMPLE && sp.getSimpleExtentNpoints() > 4096) break;
          H5::Attribute a = obj->createAttribute(name, t.type, sp);
          write_contents(a, in, t, n);
          break;
        }
        case 4: {  // swap a dataset for a group or a group for a dataset
          if (is_root) break;
          const bool was_group = f.childObjType(target) == H5O_TYPE_GROUP;
          H5Ldelete(f.getId(), target.c_str(), H5P_DEFAULT);
          if (was_group) {
            hsize_t dims[1] = {3};
            f.createDataSet(target, H5::PredType::NATIVE_DOUBLE, H5::DataSpace(1, dims));
          } else {
            f.createGroup(target);
          }
          break;
        }
        case 5: {  // soft link, dangling or to another object
          if (is_root) break;
          H5Ldelete(f.getId(), target.c_str(), H5P_DEFAULT);
          const std::string to = in.ConsumeBool() ? paths[in.ConsumeIntegralInRange<size_t>(0, paths.size() - 1)]
                                                  : "/nowhere/" + in.ConsumeRandomLengthString(8);
          H5Lcreate_soft(to.c_str(), f.getId(), target.c_str(), H5P_DEFAULT, H5P_DEFAULT);
          break;
        }
        case 6: {  // external link to a missing file or back into this one
          if (is_root) break;
          H5Ldelete(f.getId(), target.c_str(), H5P_DEFAULT);
          const std::string file = in.ConsumeBool() ? g_path : "/tmp/pacer-fuzz-missing.h5";
          H5Lcreate_external(file.c_str(), paths[in.ConsumeIntegralInRange<size_t>(0, paths.size() - 1)].c_str(),
                             f.getId(), target.c_str(), H5P_DEFAULT, H5P_DEFAULT);
          break;
        }
        default: {  // hard link to another object, cycles included (e.g. a group linking to "/")
          if (is_root) break;
          H5Ldelete(f.getId(), target.c_str(), H5P_DEFAULT);
          const std::string to = paths[in.ConsumeIntegralInRange<size_t>(0, paths.size() - 1)];
          H5Lcreate_hard(f.getId(), to.c_str(), f.getId(), target.c_str(), H5P_DEFAULT, H5P_DEFAULT);
          break;
        }
      }
    } catch (const H5::Exception&) {
      // The edit itself was not possible (a name clash, a deleted parent): the file stays valid.
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  H5::Exception::dontPrint();
  g_path = pacer::fuzz::scratch_dir() + "/pacer-fuzz-struct-" + std::to_string(::getpid()) + ".h5";
  std::remove(g_path.c_str());
  Store store = Store::open_or_create(g_path);
  store.write_device(find_device("jetson-nano"));
  store.write(sample_profile());
  store.write(sample_relation());
  store.write(sample_model());
  store.write(sample_sweep());
  store.write(sample_series());
  store.write(sample_validation());
  g_base = read_bytes(g_path);
  std::atexit([] { std::remove(g_path.c_str()); });
  // The unmodified store must read back completely (7 records + 6 has() checks).
  if (pacer::fuzz::read_all_records(g_path) != 13) {
    std::fprintf(stderr, "fuzz_store_struct: the base store does not read back\n");
    std::abort();
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  {
    std::ofstream out(g_path, std::ios::binary | std::ios::trunc);
    out.write(g_base.data(), static_cast<std::streamsize>(g_base.size()));
  }
  FuzzedDataProvider in(data, size);
  {
    H5::H5File f(g_path, H5F_ACC_RDWR);
    mutate(f, in);
  }
  // A consistent checksum, as a foreign or hostile writer would leave: the edits reach the readers.
  pacer::testing::reseal_store(g_path);
  try {
    (void)pacer::fuzz::read_all_records(g_path);
  } catch (const pacer::Error&) {
  }
  return 0;
}
