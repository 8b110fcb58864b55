// Selection over power modes from a calibrated caps model: the model is evaluated on every nvpmodel
// mode of the board (the catalog's), and the choice is the brute-force optimum.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <numbers>

#include "base/error.hpp"
#include "base/units.hpp"
#include "explore/choose.hpp"
#include "explore/problem.hpp"
#include "models/mode_model.hpp"
#include "models/uncertainty.hpp"
#include "tests/support/lomo_uncertainty.hpp"
#include "tests/support/mode_models.hpp"
#include "tests/support/temp_store.hpp"
#include "traces/catalog/catalog.hpp"
#include "traces/catalog/power_modes.hpp"
#include "traces/store/store.hpp"

namespace pacer::explore {
namespace {
namespace fs = std::filesystem;

std::unique_ptr<models::ModeModel> orin_model(const traces::DeviceSpec& d) {
  const models::AnalyticalParams a = pacer::testing::synthetic_orin_gpu_params();
  traces::ModelRecord r;
  r.kind = "analytical";
  auto gpu = std::make_unique<models::AnalyticalModel>(a, r);
  models::ModeTerms terms;
  terms.time_cpu_s = 0.004;
  terms.power_mean_host_w = terms.power_peak_host_w = 6;
  traces::ModelRecord mr;
  mr.name = "w@" + d.name + ":modes";
  mr.workload = "w";
  mr.device = d.name;
  return std::make_unique<models::ModeModel>(traces::power_mode_knob(d), traces::mode_maxima(d), std::move(gpu), terms,
                                             mr);
}

TEST(ModesSelect, ChoosesTheFastestFeasibleModeAndBatchSize) {
  const testing::TempStore path("modes-select");
  const auto d = traces::find_device("jetson-agx-orin");
  const auto model = orin_model(d);
  traces::RelationSet rel;
  rel.name = "w.proxy";
  rel.workload = "w";
  rel.metric = "accuracy";
  rel.target = 0.9;
  const std::vector<int> bs = {8, 16, 32, 64, 128};
  for (int b : bs) rel.runs.push_back({b, 0, true, static_cast<int64_t>(20000 + 400 * b), 10000000});
  {
    auto s = traces::Store::open_or_create(path);
    s.write_device(d);
    s.write(model->to_record());
    s.write(rel);
  }
  const auto store = traces::Store::open(path);
  ProblemSpec spec;
  spec.model = "w@jetson-agx-orin:modes";
  const auto pb = load_problem(store, spec);
  ASSERT_EQ(pb->space->num_knobs(), 4u) << "every mode of the board, profiled or not";
  EXPECT_EQ(pb->space->knob().kind, traces::KnobKind::power_mode);
  for (double cap : {15.0, 20.0, 30.0, 45.0, 80.0}) {
    double best = std::numeric_limits<double>::infinity();
    std::vector<double> best_knob;
    int best_b = 0;
    for (const auto& k : traces::mode_settings(d))
      for (int b : bs) {
        const auto p = model->predict(k, b);
        if (p.power_peak_w > cap) continue;
        const double tt = p.time_per_batch_s * static_cast<double>(20000 + 400 * b) / b;
        if (tt < best) best = tt, best_knob = k, best_b = b;
      }
    if (best_knob.empty()) {
      EXPECT_THROW(choose(*pb, pb->context(), Policy::Ours, cap, choice_rule(*pb, 0.0)), Error) << cap;
      continue;
    }
    const auto r = choose(*pb, pb->context(), Policy::Ours, cap, choice_rule(*pb, 0.0));
    ASSERT_TRUE(r.choice.feasible) << cap;
    EXPECT_EQ(pb->space->knob_settings()[r.choice.knob_index], best_knob) << cap;
    EXPECT_EQ(pb->space->batch_sizes()[r.choice.batch_index], best_b) << cap;
  }
}

// A calibrated model's uncertainty is printed with the choice it makes, and a choice whose power
// lies within 1 sigma of the cap says so.
TEST(ModesSelect, PrintsTheModelsUncertaintyWithTheChoice) {
  const testing::TempStore path("modes-sigma");
  const auto d = traces::find_device("jetson-agx-orin");
  auto record = orin_model(d)->to_record();
  testing::store_lomo_uncertainty(record, traces::kModeFloatingClocks);
  traces::RelationSet rel;
  rel.name = "w.proxy";
  rel.workload = "w";
  rel.metric = "accuracy";
  rel.target = 0.9;
  for (int b : {8, 32, 128}) rel.runs.push_back({b, 0, true, static_cast<int64_t>(20000 + 400 * b), 10000000});
  {
    auto s = traces::Store::open_or_create(path);
    s.write_device(d);
    s.write(record);
    s.write(rel);
  }
  ProblemSpec spec;
  spec.model = record.name;
  const auto pb = load_problem(traces::Store::open(path), spec);
  ASSERT_TRUE(pb->model_uncertainty.has_value());
  // Peak basis: sigma = max(3% * sqrt(pi/2), 2.5%) = 3.76% of the choice's peak power.
  const double sigma = 0.03 * std::sqrt(std::numbers::pi / 2);
  const auto far = choose(*pb, pb->context(), Policy::Ours, 200, choice_rule(*pb, 0.0));
  auto text = format_choice(*pb, far);
  EXPECT_NE(text.find("model uncertainty (1 sigma, lomo error): time per mini-batch ±5.0%, power ±" +
                      units::format(sigma * far.choice.power_w, units::Dimension::Power) + " (±" +
                      units::format(0.025 * far.choice.power_w, units::Dimension::Power) +
                      " of it measurement spread; clocks that floated: gpu, cpu, emc"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("within 1 sigma of the cap"), std::string::npos) << text;
  // A cap 2% above that choice's power: the same choice, now within 1 sigma of the cap.
  const auto near = choose(*pb, pb->context(), Policy::Ours, far.choice.power_w * 1.02, choice_rule(*pb, 0.0));
  EXPECT_EQ(near.choice.knob_index, far.choice.knob_index);
  text = format_choice(*pb, near);
  EXPECT_NE(text.find("within 1 sigma of the cap"), std::string::npos) << text;
}

}  // namespace
}  // namespace pacer::explore
