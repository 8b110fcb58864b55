// The learned (PowerTrain-style) predictor: transfer from a reference workload, determinism, records.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "base/error.hpp"
#include "dnn/learned_trainer.hpp"
#include "models/calibrate.hpp"
#include "models/learned.hpp"
#include "models/planner.hpp"
#include "tests/models/test_calib_fixtures.hpp"
#include "traces/catalog/catalog.hpp"

namespace pacer::models {
namespace {

struct TransferSetup {
  traces::DeviceSpec nano = traces::find_device("jetson-nano");
  traces::ProfileTable reference;
  traces::ProfileTable target;
  std::vector<traces::ProfilePoint> k_points;
  LearnedOptions options;

  TransferSetup() {
    dnn::install_learned_trainer();
    reference = testing::table_from(testing::nano_truth(nano), nano.gpu_freqs_hz, testing::paper_batches(), 0.01, 1,
                                    "reference");
    target = testing::table_from(testing::nano_truth_b(nano), nano.gpu_freqs_hz, testing::paper_batches(), 0.01, 2,
                                 "target");
    std::vector<PlanPoint> cands;
    for (const auto& p : target.points) cands.push_back({p.knob, p.batch_size});
    PlannerOptions po;
    po.k = 8;
    po.voltage_table = nano.voltage_table;
    for (const auto& c : plan_points(cands, po)) k_points.push_back(*target.find(c.knob, c.batch_size));
    options.seed = 3;
    options.knob_scale = {nano.max_freq_hz()};
  }
};

TEST(LearnedModel, TransferFromAReferenceBeatsTrainingFromScratchOnTheSamePoints) {
  TransferSetup s;
  const auto reference = train_learned(s.reference.points, s.reference.knob, s.options);
  // The reference model itself fits its own workload well.
  const auto ref_err = mape(*reference, s.reference.points);
  EXPECT_LT(ref_err.time_mape, 5.0);
  EXPECT_LT(ref_err.power_mean_mape, 3.0);

  const auto transferred = transfer_learned(*reference, s.k_points, s.options);
  const auto scratch = train_learned(s.k_points, s.target.knob, s.options);
  const auto t = mape(*transferred, s.target.points);
  const auto z = mape(*scratch, s.target.points);
  std::cout << "learned k=8: transfer time " << t.time_mape << "% power " << t.power_mean_mape << "%; scratch time "
            << z.time_mape << "% power " << z.power_mean_mape << "%\n";
  EXPECT_LT(t.time_mape, 0.7 * z.time_mape);
  EXPECT_LT(t.power_mean_mape + t.time_mape, 0.7 * (z.power_mean_mape + z.time_mape));
}

TEST(LearnedModel, IsDeterministicForASeedAndRoundTripsThroughItsRecord) {
  TransferSetup s;
  const auto a = train_learned(s.k_points, s.target.knob, s.options);
  const auto b = train_learned(s.k_points, s.target.knob, s.options);
  EXPECT_EQ(a->to_record().blob, b->to_record().blob);
  auto other = s.options;
  other.seed = 4;
  EXPECT_NE(train_learned(s.k_points, s.target.knob, other)->to_record().blob, a->to_record().blob);

  const auto rec = a->to_record();
  EXPECT_EQ(rec.kind, "learned");
  const auto back = model_from_record(rec);
  for (int bsz : {4, 24, 128}) {
    const auto p = a->predict({614.4e6}, bsz);
    const auto q = back->predict({614.4e6}, bsz);
    EXPECT_DOUBLE_EQ(p.time_per_batch_s, q.time_per_batch_s);
    EXPECT_DOUBLE_EQ(p.power_peak_w, q.power_peak_w);
  }
  auto damaged = rec;
  damaged.blob.pop_back();
  EXPECT_THROW(model_from_record(damaged), Error);
}

TEST(LearnedModel, CalibrateWithAReferenceTransfers) {
  TransferSetup s;
  CalibrationOptions opt;
  opt.model = traces::ModelKind::learned;
  opt.points = 8;
  opt.reference = &s.reference;
  opt.reference_name = "reference";
  opt.learned = s.options;
  opt.cv_folds = 1;  // keep the test fast
  const auto cal = calibrate(s.target, &s.nano, opt);
  EXPECT_EQ(cal.used.size(), 8u);
  EXPECT_EQ(cal.record.settings.at("trained"), "transfer");
  EXPECT_EQ(cal.record.settings.at("reference"), "reference");
  EXPECT_LT(cal.record.metrics.at("power_mean_mape_heldout"), 10.0);
  opt.points = 1;
  EXPECT_THROW(calibrate(s.target, &s.nano, opt), Error);
}

}  // namespace
}  // namespace pacer::models
