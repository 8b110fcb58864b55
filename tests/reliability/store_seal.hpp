#pragma once
// Test helper: after a test edits a trace store in place with the HDF5 API, the checksum header is
// recomputed (traces::reseal_store) so the damage reaches the record readers instead of stopping
// at the checksum -- the way a foreign but consistent writer would leave the file.
#include <string>

#include "traces/store.hpp"

namespace pacer::testing {

inline void reseal_store(const std::string& path) { traces::reseal_store(path); }

}  // namespace pacer::testing
