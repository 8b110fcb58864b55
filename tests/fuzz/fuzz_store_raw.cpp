// Raw-bytes fuzzing of the trace-store reader: the input is written as a file and opened with
// Store::open, then every record is read. The seeds are real stores written by pacer, which carry
// a whole-file checksum: it is the bound that keeps damaged bytes away from libhdf5 1.10.8, which
// crashes (SIGSEGV) or loops on about 4% of randomly damaged stores (docs/reliability.md). Files
// without pacer's checksum header are read back in a child process first (a crash there is an
// Error), so mutations that drop the header are covered too, at the cost of one fork per new input.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

#include "base/error.hpp"
#include "store_read_all.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = pacer::fuzz::scratch_dir() + "/pacer-fuzz-raw-" + std::to_string(::getpid()) + ".h5";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    (void)pacer::fuzz::read_all_records(path);
  } catch (const pacer::Error&) {
  }
  std::remove(path.c_str());
  return 0;
}
