#pragma once
// Record <-> HDF5 group, for each of the eight record kinds of the trace store. The layout follows
// the field tables of traces/columns.hpp; docs/trace-store.md documents it.
#include "traces/records.hpp"
#include "traces/store/h5io.hpp"
#include "traces/store/store.hpp"

namespace pacer::traces::codec {

void write(h5::GroupWriter w, const DeviceSpec& d);
void write(h5::GroupWriter w, const ProfileTable& t);
void write(h5::GroupWriter w, const RelationSet& s);
void write(h5::GroupWriter w, const LearningCurve& c);
void write(h5::GroupWriter w, const ModelRecord& m);
void write(h5::GroupWriter w, const SweepResult& s);
void write(h5::GroupWriter w, const PowerSeries& s);
void write(h5::GroupWriter w, const ValidationResult& v);

DeviceSpec read_device(const h5::GroupReader& g);
ProfileTable read_profile(const h5::GroupReader& g);
RelationSet read_relation(const h5::GroupReader& g);
LearningCurve read_curve(const h5::GroupReader& g);
ModelRecord read_model(const h5::GroupReader& g);
SweepResult read_sweep(const h5::GroupReader& g);
PowerSeries read_series(const h5::GroupReader& g);
ValidationResult read_validation(const h5::GroupReader& g);

// The record at `g` of group kStoreGroups[group], as alternative `group` of StoreRecord (each
// alternative read by its type's reader above).
StoreRecord read_record(size_t group, const h5::GroupReader& g);

}  // namespace pacer::traces::codec
