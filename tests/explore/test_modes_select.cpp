// Selection over power modes from a calibrated caps model (issue 15): the model is evaluated on
// every nvpmodel mode of the board (the catalog's), and the choice is the brute-force optimum.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include "explore/choose.hpp"
#include "explore/problem.hpp"
#include "models/mode_model.hpp"
#include "traces/catalog.hpp"
#include "traces/error.hpp"
#include "traces/power_modes.hpp"
#include "traces/store.hpp"

namespace pacer::explore {
namespace {
namespace fs = std::filesystem;

std::unique_ptr<models::ModeModel> orin_model(const traces::DeviceSpec& d) {
  models::AnalyticalParams a;
  a.voltage.floor_v = 1;
  a.voltage.knee_hz = 500e6;
  a.voltage.slope_v_per_hz = 0.5e-9;
  a.time = {0.004, 0.0002, 1.5e6, 3e6};
  a.power_mean = {8, 3, 2e-9, 1.2e-8, 16, 0, 0};
  a.power_peak = {8, 3, 3e-9, 1.6e-8, 16, 0, 0};
  traces::ModelRecord r;
  r.kind = "analytical";
  auto gpu = std::make_unique<models::AnalyticalModel>(a, r);
  models::ModeTerms terms;
  terms.time_cpu_s = 0.004;
  terms.power_mean_host_w = terms.power_peak_host_w = 6;
  traces::ModelRecord mr;
  mr.name = "w@jetson-agx-orin:modes";
  mr.workload = "w";
  mr.device = d.name;
  return std::make_unique<models::ModeModel>(traces::power_mode_knob(d), traces::mode_maxima(d), std::move(gpu), terms,
                                             mr);
}

TEST(ModesSelect, ChoosesTheFastestFeasibleModeAndBatchSize) {
  const fs::path path = fs::temp_directory_path() / ("pacer-modes-select-" + std::to_string(::getpid()) + ".h5");
  fs::remove(path);
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
    s.write_model(model->to_record());
    s.write_relation(rel);
  }
  const auto store = traces::Store::open(path);
  ProblemSpec spec;
  spec.model = "w@jetson-agx-orin:modes";
  const auto pb = load_problem(store, spec);
  ASSERT_EQ(pb->space->num_knobs(), 4u) << "every mode of the board, profiled or not";
  EXPECT_EQ(pb->space->knob().kind, "power_mode");
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
      EXPECT_THROW(choose(*pb, pb->context(), Policy::Ours, cap), Error) << cap;
      continue;
    }
    const auto r = choose(*pb, pb->context(), Policy::Ours, cap);
    ASSERT_TRUE(r.choice.feasible) << cap;
    EXPECT_EQ(pb->space->knob_settings()[r.choice.knob_index], best_knob) << cap;
    EXPECT_EQ(pb->space->batch_sizes()[r.choice.batch_index], best_b) << cap;
  }
  fs::remove(path);
}

}  // namespace
}  // namespace pacer::explore
