#pragma once
// Test helper: after a test edits a trace store in place with the HDF5 API, the checksum header is
// recomputed without reading the store back (traces::file::seal), so the damage reaches the record
// readers instead of stopping at the checksum -- the way a foreign but consistent, or hostile,
// writer would leave the file. (traces::reseal_store, the user's reseal, refuses such files.)
#include <string>

#include "traces/store/store_file.hpp"

namespace pacer::testing {

inline void reseal_store(const std::string& path) {
  traces::file::seal(path);
}

}  // namespace pacer::testing
