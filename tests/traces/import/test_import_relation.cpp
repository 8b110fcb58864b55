// Relation importer (pacer import relation): a user's own samples-to-target runs and learning curve
// from CSV, units in the headings, the same value checks as the other importers, and a relation's
// own `pacer export` CSV reading back as it was.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "base/error.hpp"
#include "traces/record_traits.hpp"
#include "traces/import/csv_relations.hpp"

namespace pacer::traces {
namespace {

csv_import::RelationImportOptions options() {
  csv_import::RelationImportOptions o;
  o.name = "mine-proxy";
  o.workload = "resnet18-mine";
  o.target = 0.85;
  return o;
}

TEST(ImportRelation, RunsInSamplesOrEpochsReachedOrCensored) {
  auto o = options();
  const auto s = csv_import::import_relation_text(
      "b,seed,reached,samples,wall_time[min],final_metric\n"
      "8,0,1,4000,2,0.86\n8,1,yes,6000,3,0.851\n32,0,true,12000,,0.9\n32,1,0,20000,5,0.8\n",
      "runs.csv", o);
  EXPECT_EQ(s.name, "mine-proxy");
  EXPECT_EQ(s.workload, "resnet18-mine");
  EXPECT_EQ(s.dataset, "mine-proxy");
  EXPECT_DOUBLE_EQ(s.target, 0.85);
  ASSERT_EQ(s.runs.size(), 4u);
  EXPECT_TRUE(s.runs[1].reached);
  EXPECT_FALSE(s.runs[3].reached);
  EXPECT_EQ(s.runs[3].samples, 20000);
  EXPECT_EQ(s.runs[3].budget_samples, 20000);  // censored where it stopped
  EXPECT_DOUBLE_EQ(s.runs[0].wall_time_s, 120);
  EXPECT_TRUE(std::isnan(s.runs[2].wall_time_s));
  EXPECT_DOUBLE_EQ(s.mean_samples(8), 5000);
  EXPECT_DOUBLE_EQ(s.mean_samples(32), 12000);  // the censored run is not a reached count
  EXPECT_DOUBLE_EQ(s.relation_vector().at(8), 5000.0 / 12000.0);

  o.samples_per_epoch = 1000;
  const auto e = csv_import::import_relation_text("batch_size,seed,reached,epochs,budget\n16,3,1,2.5,10\n",
                                                  "epochs.csv", o);
  EXPECT_EQ(e.runs[0].samples, 2500);
  EXPECT_EQ(e.runs[0].budget_samples, 10000);  // the budget in the count's unit: epochs
  EXPECT_EQ(e.samples_per_epoch, 1000);
}

TEST(ImportRelation, AnExportedRelationReadsBackAsItWas) {
  RelationSet s;
  s.name = "mine-proxy";
  s.workload = "resnet18-mine";
  s.dataset = "mine-proxy";
  s.metric = "accuracy";
  s.target = 0.85;
  s.base_batch = 8;
  s.runs = {{8, 0, true, 4000, 9000, 12.5, 0.86, 0.001}, {16, 1, false, 9000, 9000, kNaN, 0.7, kNaN}};
  const auto back = csv_import::import_relation_text(to_csv(s), "export.csv", options());
  EXPECT_EQ(back, s);
}

TEST(ImportRelation, TheLearningCurveBelongsToTheRuns) {
  auto o = options();
  const auto s = csv_import::import_relation_text("b,seed,reached,samples\n8,0,1,4000\n8,1,0,5000\n", "r.csv", o);
  const auto c = csv_import::import_curve_text("b,seed,samples,metric[accuracy]\n8,0,4000,0.86\n8,0,2000,0.6\n",
                                               "c.csv", o, s);
  EXPECT_EQ(c.name, "mine-proxy");
  EXPECT_EQ(c.source, "evaluations");
  ASSERT_EQ(c.points.size(), 2u);
  EXPECT_EQ(c.points[0].samples, 2000);  // sorted by run, then samples
  EXPECT_EQ(c.first_reaching(8, 0, 0.85), 4000);
  EXPECT_THROW(csv_import::import_curve_text("b,seed,samples,metric\n64,0,100,0.5\n", "c.csv", o, s), Error);
}

// Bad input: one error naming the file, the line and the column, and what to do.
TEST(ImportRelation, BadInputIsOneErrorNamingTheRowAndColumn) {
  auto o = options();
  const auto expect_error = [&](const std::string& csv, const std::string& message) {
    try {
      csv_import::import_relation_text(csv, "runs.csv", o);
      ADD_FAILURE() << "expected: " << message;
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), message);
    }
  };
  expect_error("b,seed,reached,samples\n8,0,1,-5\n", "runs.csv:2: samples holds '-5', not a positive whole number of samples");
  expect_error("b,seed,reached,samples\n8,0,1,4000\n8,1,1,inf\n", "runs.csv:3: samples holds 'inf', not a number");
  expect_error("b,seed,reached,samples\n8,0,maybe,4000\n",
               "runs.csv:2: reached holds 'maybe', not 1/0, true/false, yes/no or reached/censored");
  expect_error("b,seed,reached,samples\n0,0,1,4000\n", "runs.csv:2: b holds '0', not a whole number >= 1");
  expect_error("b,seed,reached,samples\n8,-1,1,4000\n", "runs.csv:2: seed holds '-1', not a whole number >= 0");
  expect_error("b,seed,reached,samples,threads\n8,0,1,4000,1.5\n", "runs.csv:2: threads holds '1.5', not a whole number >= 0");
  expect_error("b,seed,reached,samples\n8,0,1,4000\n8,0,1,5000\n", "runs.csv:3: the run b=8 seed=0 appears twice");
  expect_error("b,seed,reached,samples,loss\n8,0,1,4000,2\n",
               "runs.csv: unknown column 'loss' (known: b, seed, reached, samples, epochs, budget, wall_time, "
               "final_metric, learning_rate, threads)");
  expect_error("b,seed,reached,samples[s]\n8,0,1,4000\n", "runs.csv: column samples takes [samples], found [s]");
  expect_error("b,seed,reached,samples,wall_time[W]\n8,0,1,4000,3\n",
               "runs.csv: column wall_time has unit [W], not a unit of time (e.g. [s], [ms])");
  expect_error("b,seed,samples\n8,0,4000\n", "runs.csv: no 'reached' column in the header");
  expect_error("b,seed,reached\n8,0,1\n", "runs.csv: give the count to the target as one column, samples or epochs "
                                          "(found neither)");
  expect_error("b,seed,reached,epochs\n8,0,1,3\n",
               "runs.csv: counts in epochs need the samples in one epoch (samples per epoch)");
  expect_error("b,seed,reached,samples,budget\n8,0,0,4000,3000\n",
               "runs.csv:2: budget (3000 samples) is below the samples trained (4000)");
  expect_error("b,seed,reached,samples\n8,0,0,4000\n",
               "runs.csv: no run reached the target: a relation needs at least one reached run");
  expect_error("b,seed,reached,samples\n", "runs.csv: no runs under the header");
  o.target = kNaN;
  expect_error("b,seed,reached,samples\n8,0,1,4000\n",
               "the relation's target (the metric level the counts are to) is missing");
}

}  // namespace
}  // namespace pacer::traces
