// `pacer calibrate` as a library call (experiments/campaigns/calibration.hpp): what it prints, in
// which order, what it writes, and that its errors name settings by key, never by flag.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "base/error.hpp"
#include "experiments/campaigns/calibration.hpp"
#include "tests/models/test_calib_fixtures.hpp"
#include "tests/support/temp_store.hpp"
#include "traces/catalog/catalog.hpp"
#include "traces/store/store.hpp"

namespace pacer::experiments {
namespace {

namespace fs = std::filesystem;

struct CalibrationFixture : ::testing::Test {
  pacer::testing::TempStore store{"calibration"};
  fs::path csv = store.path().string() + ".csv";
  traces::DeviceSpec nano = traces::find_device("jetson-nano");

  void SetUp() override {
    auto s = traces::Store::open_or_create(store.path());
    s.write_device(nano);
    s.write(models::testing::table_from(models::testing::nano_truth(nano), nano.gpu_freqs_hz,
                                        models::testing::paper_batches(), 0.01, 9, "synthetic"));
  }
  void TearDown() override { fs::remove(csv); }

  CalibrationRequest request() const {
    CalibrationRequest r;
    r.store = store.path();
    r.calibration.points = 8;
    return r;
  }
};

size_t at(const std::string& text, const std::string& what) {
  const size_t pos = text.find(what);
  EXPECT_NE(pos, std::string::npos) << "'" << what << "' missing from:\n" << text;
  return pos;
}

TEST_F(CalibrationFixture, PrintsTheModelThenEachFileItWrites) {
  CalibrationRequest r = request();
  r.predict = true;
  r.predictions_csv = csv.string();
  std::ostringstream out;
  run_calibration(r, out);
  const std::string text = out.str();
  const size_t n = nano.gpu_freqs_hz.size() * models::testing::paper_batches().size();
  const std::string model = "synthetic@jetson-nano:analytical";
  const std::string first = fmt::format(
      "model {} (analytical) from profile 'synthetic': 8 of {} points chosen by the planner\nparameter", model, n);
  EXPECT_EQ(text.rfind(first, 0), 0u) << text;
  // The results first, then one line per file, in the order they are written.
  const size_t errors = at(text, "MAPE [%]");
  const size_t wrote_model = at(text, fmt::format("wrote {}:/models/{}\n", store.path().string(), model));
  const size_t wrote_csv =
      at(text, fmt::format("wrote {} ({} measured points, 8 used for the fit)\n", csv.string(), n));
  const size_t wrote_grid =
      at(text, fmt::format("wrote {}:/profiles/synthetic-predicted ({} settings x 6 batch sizes)\n",
                           store.path().string(), nano.gpu_freqs_hz.size()));
  EXPECT_LT(errors, wrote_model);
  EXPECT_LT(wrote_model, wrote_csv);
  EXPECT_LT(wrote_csv, wrote_grid);
  const auto s = traces::Store::open(store.path());
  EXPECT_EQ(s.read<traces::ModelRecord>(model).kind, "analytical");
  EXPECT_EQ(s.read<traces::ProfileTable>("synthetic-predicted").points.size(), n);
  std::ifstream in(csv);
  EXPECT_EQ(std::count(std::istreambuf_iterator<char>(in), {}, '\n'), static_cast<long>(n) + 1);
}

TEST_F(CalibrationFixture, TheModelNameAndTheKindAreTheRequests) {
  CalibrationRequest r = request();
  r.model_name = "mine";
  r.calibration.model = traces::ModelKind::interpolating;
  r.calibration.points = 0;  // every point
  std::ostringstream out;
  run_calibration(r, out);
  EXPECT_EQ(out.str().rfind("model mine (interpolating) from profile 'synthetic'", 0), 0u) << out.str();
  EXPECT_EQ(traces::Store::open(store.path()).read<traces::ModelRecord>("mine").kind, "interpolating");
}

template <typename E>
std::string option_of(const CalibrationRequest& r) {
  std::ostringstream out;
  try {
    run_calibration(r, out);
  } catch (const E& e) {
    EXPECT_EQ(std::string(e.what()).find("--"), std::string::npos) << "a library names no flag: " << e.what();
    return e.option;
  }
  ADD_FAILURE() << "no error of the expected type";
  return "";
}

TEST_F(CalibrationFixture, ErrorsNameTheSettingByItsKeyAndWriteNothing) {
  CalibrationRequest r = request();
  r.reference = "nope";
  r.calibration.model = traces::ModelKind::learned;
  EXPECT_EQ(option_of<SettingError>(r), "reference");
  r = request();
  r.frequency_profile = "nope";
  EXPECT_EQ(option_of<SettingError>(r), "frequency-profile");
  r = request();
  r.model_name = "a/b";
  EXPECT_EQ(option_of<OptionError>(r), "model-name");
  {
    auto s = traces::Store::open(store.path());
    auto other = s.read<traces::ProfileTable>("synthetic");
    other.workload = "other";
    s.write(other);
  }
  EXPECT_EQ(option_of<OptionError>(request()), "name");  // two measured profiles: name one
  EXPECT_TRUE(traces::Store::open(store.path()).list<traces::ModelRecord>().empty());
}

}  // namespace
}  // namespace pacer::experiments
