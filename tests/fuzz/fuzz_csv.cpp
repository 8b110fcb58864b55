// Fuzzes traces::parse_csv (shared by every CSV importer): only pacer::Error may escape and an
// accepted table is rectangular.
#include <cstdint>
#include <string>

#include "base/error.hpp"
#include "fuzz_check.hpp"
#include "traces/csv.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto table = pacer::traces::parse_csv(text, "fuzz.csv");
    PACER_FUZZ_CHECK(!table.header.empty());
    for (const auto& row : table.rows) PACER_FUZZ_CHECK(row.size() == table.header.size());
    PACER_FUZZ_CHECK(table.column(table.header.front(), "fuzz.csv") == 0);
    // Cells never hold the record separators of unquoted text.
    size_t cells = 0;
    for (const auto& row : table.rows) cells += row.size();
    PACER_FUZZ_CHECK(cells <= size + table.header.size() * (table.rows.size() + 1));
  } catch (const pacer::Error&) {
  }
  return 0;
}
