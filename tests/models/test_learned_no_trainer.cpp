// pacer_models links no libtorch: without the trainer that pacer_dnn installs, asking for a learned
// model is one actionable Error (not a crash, not a link error).
#include <gtest/gtest.h>

#include <string>

#include "base/error.hpp"
#include "models/calibrate.hpp"
#include "models/learned.hpp"
#include "tests/models/test_calib_fixtures.hpp"
#include "traces/catalog/catalog.hpp"

namespace pacer::models {
namespace {

TEST(LearnedWithoutTrainer, CalibrateSaysTrainingNeedsLibtorch) {
  const auto nano = traces::find_device("jetson-nano");
  const auto table =
      testing::table_from(testing::nano_truth(nano), nano.gpu_freqs_hz, testing::paper_batches(), 0.0, 1, "target");
  CalibrationOptions opt;
  opt.model = traces::ModelKind::learned;
  opt.cv_folds = 1;
  try {
    calibrate(table, &nano, opt);
    FAIL() << "calibrate trained a learned model without a trainer";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("libtorch"), std::string::npos) << e.what();
  }
  EXPECT_THROW(train_learned(table.points, table.knob, {}), Error);
}

}  // namespace
}  // namespace pacer::models
