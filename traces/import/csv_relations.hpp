#pragma once
// Importer for a user's own samples-to-target data in CSV (docs/trace-store.md, "Your own relation"):
// one row per training run (batch size, seed): the samples or epochs it took to reach the target,
// or where it stopped without reaching it (censored). Optionally a second file, the learning curve:
// the metric at increasing sample counts of the same runs. Headings name known columns, with units
// in brackets where a column has them; an unknown heading, a missing column, a value that is not a
// positive finite number or a repeated run is an Error naming the file, the line and the column.
//   runs:  b (or batch_size), seed, reached (1/0, true/false, yes/no), samples or epochs (to the
//          target, or to the stop of a censored run); optional budget (same unit as the count,
//          default: the count), wall_time[s|ms|min|h], final_metric, learning_rate
//   curve: b (or batch_size), seed, samples or epochs, metric
// Epochs need samples_per_epoch. A relation's rows read back from `pacer export` import as they are.
#include <filesystem>
#include <optional>
#include <string>

#include "traces/records.hpp"

namespace pacer::traces::csv_import {

struct RelationImportOptions {
  std::filesystem::path file;        // the runs
  std::filesystem::path curve_file;  // the learning curve; empty: none
  std::string name;                  // relation record name
  std::string workload;              // the network the runs trained (as the profile it goes with)
  std::string dataset;               // "": the record name
  std::string metric = "accuracy";
  bool higher_is_better = true;
  double target = kNaN;           // the metric level the counts are to (required, finite)
  int64_t samples_per_epoch = 0;  // samples in one epoch, for counts in epochs; 0: none given
  std::string optimizer;
  std::string lr_rule;
};

struct ImportedRelation {
  RelationSet relation;
  std::optional<LearningCurve> curve;  // stored under the relation's name (/curves/<name>)
};

// The runs of `csv` (named `origin` in errors) as a relation; throws Error for bad input.
RelationSet import_relation_text(const std::string& csv, const std::string& origin, const RelationImportOptions& o);
// The learning curve of `csv`; every (b, seed) must be a run of `relation`.
LearningCurve import_curve_text(const std::string& csv, const std::string& origin, const RelationImportOptions& o,
                                const RelationSet& relation);
// Both files of `o`, read whole before anything is returned.
ImportedRelation import_relation(const RelationImportOptions& o);

}  // namespace pacer::traces::csv_import
