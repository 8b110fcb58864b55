#pragma once
// `pacer export`'s library side: what a trace store holds, and any of its records as CSV with units
// in the header (traces/csv.hpp). Every group of kStoreGroups is exported through its record type
// (StoreRecord), so a group added to the store is exported without a change here.
#include <string>

#include "traces/store/store.hpp"

namespace pacer::traces {

// The records a store can export, for help texts: "profiles/NAME, ..., validations/NAME or device".
std::string export_record_forms();

// The record `record` of `store` as CSV: "GROUP/NAME" with GROUP one of kStoreGroups, or "device";
// first its provenance as comment lines ("# pacer_version: 0.1.0", traces/provenance.hpp).
// Throws UsageError for another form or group, Error for a record the store does not hold.
std::string export_csv(const Store& store, const std::string& record);

// What `store` holds: "PATH (schema N):", then "  device" and one "  GROUP/NAME" line per record,
// groups in kStoreGroups order, each followed by its provenance in one indented line.
std::string format_store_contents(const Store& store);

}  // namespace pacer::traces
