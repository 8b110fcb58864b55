// The one choice rule (explore/decide.hpp): every command that chooses a configuration gives the
// same choice for the same (store, cap, policy, guard), and a point whose measured power is over
// the cap is never chosen, whatever the model predicts for it. A property test over random stores:
// a measured profile of part of a grid, the model's predicted table of the whole grid (off by up
// to +-12%), a model record with its held-out peak error, proxy and target relations.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "explore/choose.hpp"
#include "explore/decide.hpp"
#include "explore/problem.hpp"
#include "explore/simulate.hpp"
#include "explore/sweep.hpp"
#include "models/calibrate.hpp"
#include "models/mode_model.hpp"
#include "models/uncertainty.hpp"
#include "sim/replay.hpp"
#include "tests/models/test_calib_fixtures.hpp"
#include "tests/support/choice_store.hpp"
#include "tests/support/lomo_uncertainty.hpp"
#include "tests/support/mode_models.hpp"
#include "tests/support/temp_store.hpp"
#include "traces/catalog/catalog.hpp"
#include "traces/catalog/power_modes.hpp"
#include "traces/import/tegrastats.hpp"
#include "traces/import/zeus.hpp"
#include "traces/store/store.hpp"

namespace pacer::explore {
namespace {

using testing::kDevice;
using testing::kMeasured;
using testing::kPredicted;
using testing::kWorkload;
using testing::write_random_store;

struct Pick {
  bool feasible = false;
  std::vector<double> knob;
  int batch_size = 0;
  bool operator==(const Pick&) const = default;
};
Pick pick_of(const Selection& s) {
  return s.feasible ? Pick{true, s.knob, s.batch_size} : Pick{};
}
std::ostream& operator<<(std::ostream& os, const Pick& p) {
  return os << (p.feasible ? "b=" + std::to_string(p.batch_size) + " @ " + std::to_string(p.knob.at(0) / 1e6) + " MHz"
                           : std::string("infeasible"));
}

// Every entry path for one (store, cap, policy, guard).
struct Paths {
  Pick decide, select, sweep, simulate, validate;
};

// The problem as select, sweep and simulate load it, and as validate's choice step does: the
// profile and the proxy without the store's target (its oracle gets the target relation it trained,
// here the store's), Baselines with the device-wide cap over the space and the store's profiles of
// its device (explore::device_wide_cap, as validate_probe.cpp's Chooser).
struct Loaded {
  std::unique_ptr<Problem> pb, vp;
  Relation target;
  std::unique_ptr<DeviceWideCap> own;
  explicit Loaded(const std::filesystem::path& path, const std::string& profile = kPredicted) {
    const auto store = traces::Store::open(path);
    ProblemSpec spec;
    spec.profile = profile;
    pb = load_problem(store, spec);
    vp = load_problem(store, spec);
    target = *vp->target;
    vp->target.reset();
    vp->target_set.reset();
    own = std::make_unique<DeviceWideCap>(device_wide_cap(store, vp->device, *vp->space));
  }
};

Paths every_path(const Loaded& l, Policy policy, double cap, std::optional<double> guard) {
  const Problem* pb = l.pb.get();
  Paths out;
  out.decide = pick_of(decide(policy, pb->context(), cap, choice_rule(*pb, guard)));
  // `pacer select`: choose() (the other policies' picks beside the chosen one).
  try {
    const auto report = choose(*pb, pb->context(), policy, cap, choice_rule(*pb, guard));
    out.select = pick_of(report.choice);
    for (const auto& c : report.others)
      if (c.selection.policy == policy) EXPECT_EQ(pick_of(c.selection), out.select) << "select's table";
  } catch (const Error&) {
    out.select = Pick{};
  }
  // `pacer sweep` (and the demo's sweep, and `select --save`): sweep_record's row.
  SweepRequest request;
  request.caps_w = {cap};
  request.options.policies = {policy};
  request.guard = guard;
  const auto record = sweep_record({pb}, request);
  EXPECT_EQ(record.rows.size(), 1u);
  if (!record.rows.empty() && record.rows[0].feasible)
    out.sweep = Pick{true, record.rows[0].knob, record.rows[0].batch_size};
  // `pacer simulate` with a policy under a constant cap: the first segment's request.
  SimulateRequest sr;
  sr.policy = policy;
  sr.guard = guard;
  sr.caps = {{0, cap}};
  try {
    const auto sim = simulate(*pb, sr);
    if (!sim.result.segments.empty())
      out.simulate = Pick{true, sim.result.segments[0].requested.knob, sim.result.segments[0].requested.batch_size};
  } catch (const Error&) {
    out.simulate = Pick{};
  }
  // `pacer validate`'s choice step (validate.cpp choose_all, also the demo's and experiment's).
  PolicyContext ctx = l.vp->context();
  ctx.target = &l.target;
  ctx.device_cap = l.own.get();
  out.validate = pick_of(decide(policy, ctx, cap, choice_rule(*l.vp, guard)));
  // The records keep the rule.
  EXPECT_DOUBLE_EQ(record.guard, choice_rule(*pb, guard).guard);
  EXPECT_EQ(record.feasibility, describe_feasibility(choice_rule(*pb, guard)));
  return out;
}

TEST(ChoiceRule, EveryCommandChoosesTheSameOverRandomStoresAndCaps) {
  std::mt19937_64 rng(23);
  const testing::TempStore path("choice-rule");
  int compared = 0, feasible = 0;
  for (int s = 0; s < 9; ++s) {
    path.remove();
    const double share = s % 3 == 0 ? 1.0 : s % 3 == 1 ? 0.5 : 0.0;
    const auto rs = write_random_store(path, rng, share, 0.02 + 0.02 * (s % 5));
    const Loaded loaded(path);
    for (double cap : rs.caps)
      for (const std::optional<double> guard :
           {std::optional<double>(), std::optional<double>(0.0), std::optional<double>(0.07)})
        for (Policy policy : {Policy::Ours, Policy::Baseline1, Policy::Baseline2, Policy::Pacer, Policy::Oracle,
                              Policy::EnergyOptimal}) {
          const Paths p = every_path(loaded, policy, cap, guard);
          const std::string what = "store " + std::to_string(s) + ", cap " + std::to_string(cap) + " W, " +
                                   std::string(to_string(policy)) + ", guard " +
                                   (guard ? std::to_string(*guard) : std::string("auto"));
          EXPECT_EQ(p.select, p.decide) << what;
          EXPECT_EQ(p.sweep, p.decide) << what;
          EXPECT_EQ(p.validate, p.decide) << what;
          if (policy != Policy::Oracle) EXPECT_EQ(p.simulate, p.decide) << what;  // simulate's oracle: same target
          ++compared;
          feasible += p.decide.feasible;
        }
  }
  EXPECT_GT(feasible, compared / 2) << "the caps must leave most choices feasible to compare";
}

// The automatic guard: sensor noise (kDefaultGuard) where every point's power is measured, the
// model's held-out peak error at the 95th percentile where some point's power is predicted.
// Two workloads profiled on one device (mean power, as Zeus: guard 0), and a third on another
// device. Workload a draws 2.2 / 3.2 / 4.2 W at 300 / 600 / 900 MHz (b=64; 0.2 W less at b=8),
// workload b 3.2 / 5.2 / 7.2 W: the paper's device-wide cap keeps *any* model under the cap, so at
// 5.5 W it is 600 MHz (b's 7.2 W rules out 900 MHz, which a alone would allow), and at 3 W nothing
// (b draws 3.2 W at 300 MHz) where a alone would run at 300 MHz.
void write_two_workload_store(const std::filesystem::path& path) {
  auto store = traces::Store::open_or_create(path);
  auto write = [&](const std::string& workload, const std::string& device, const std::vector<double>& watts_b64) {
    traces::ProfileTable t;
    t.workload = workload;
    t.device = device;
    const std::vector<double> freqs = {300e6, 600e6, 900e6};
    for (size_t i = 0; i < freqs.size(); ++i)
      for (int b : {8, 64})
        t.points.push_back(testing::profile_point(freqs[i], b, 0.001 * b * 1e9 / freqs[i], traces::kNaN,
                                                  watts_b64[i] - (b == 8 ? 0.2 : 0.0), 0));
    store.write(t, workload);
    for (const auto& name : {traces::zeus::proxy_name(workload), traces::zeus::target_name(workload)}) {
      traces::RelationSet r;
      r.name = name;
      r.workload = workload;
      r.metric = "accuracy";
      r.target = 0.9;
      for (int seed = 0; seed < 2; ++seed) {
        r.runs.push_back({8, seed, true, 20000, 10000000});
        r.runs.push_back({64, seed, true, 40000, 10000000});
      }
      store.write(r);
    }
  };
  write("a", kDevice, {2.2, 3.2, 4.2});
  write("b", kDevice, {3.2, 5.2, 7.2});
  write("c", "another-board", {50, 60, 70});  // another device: bounds nothing here
}

// The audit's repro in small (Zeus: `sweep --power-limits 100W` had cifar100's baselines
// infeasible where `select --profile cifar100...` chose them): select, sweep (of the one profile
// and of every profile), simulate and validate's choice step give Baselines 1 and 2 the same
// device-wide cap, the one over every workload profiled on the device.
TEST(ChoiceRule, BaselinesUseOneDeviceWideCapInEveryCommandOnAMultiWorkloadStore) {
  const testing::TempStore path("choice-rule-device-wide");
  write_two_workload_store(path);
  const Loaded a(path, "a");
  const auto store = traces::Store::open(path);
  ProblemSpec all;
  const auto problems = load_problems(store, all);
  ASSERT_EQ(problems.size(), 3u);
  ASSERT_EQ(problems[0]->workload, "a");
  struct Case {
    double cap;
    Policy policy;
    Pick expected;
  };
  const std::vector<Case> cases = {{5.5, Policy::Baseline1, Pick{true, {600e6}, 64}},
                                   {5.5, Policy::Baseline2, Pick{true, {600e6}, 8}},
                                   {3.0, Policy::Baseline1, Pick{}},
                                   {3.0, Policy::Baseline2, Pick{}}};
  for (const auto& c : cases) {
    const std::string what = fmt::format("{} at {} W", to_string(c.policy), c.cap);
    const Paths p = every_path(a, c.policy, c.cap, std::nullopt);
    EXPECT_EQ(p.decide, c.expected) << what;
    EXPECT_EQ(p.select, c.expected) << what;
    EXPECT_EQ(p.sweep, c.expected) << what;
    EXPECT_EQ(p.simulate, c.expected) << what;
    EXPECT_EQ(p.validate, c.expected) << what;
    // `pacer sweep` of every profile: a's row is the same.
    SweepRequest request;
    request.caps_w = {c.cap};
    request.options.policies = {c.policy};
    const auto record = sweep_record({problems[0].get(), problems[1].get(), problems[2].get()}, request);
    ASSERT_EQ(record.rows.size(), 3u) << what;
    EXPECT_EQ(record.rows[0].workload, "a");
    const Pick swept = record.rows[0].feasible ? Pick{true, record.rows[0].knob, record.rows[0].batch_size} : Pick{};
    EXPECT_EQ(swept, c.expected) << what;
  }
  // The other device's profile bounds nothing: its own 70 W cap keeps 900 MHz.
  const Pick other = pick_of(decide(Policy::Baseline1, problems[2]->context(), 75, choice_rule(*problems[2])));
  EXPECT_EQ(other, (Pick{true, {900e6}, 64}));
  // A cap below every configuration of every profile: in a pipeline's own grid (the demo's sweep
  // starts below the feasible range) an infeasible row per workload; in a user's list (`pacer sweep
  // --power-limits`) refused, as select refuses it.
  SweepRequest grid;
  grid.caps_w = {0.5};
  grid.options.policies = {Policy::Ours};
  const std::vector<const Problem*> views = {problems[0].get(), problems[1].get(), problems[2].get()};
  const auto rows = sweep_record(views, grid).rows;
  ASSERT_EQ(rows.size(), 3u);
  for (const auto& row : rows) EXPECT_FALSE(row.feasible) << row.workload;
  SweepRequest given = grid;
  given.refuse_unrunnable_caps = true;
  try {
    sweep_record(views, given);
    ADD_FAILURE() << "a cap below every configuration was swept";
  } catch (const SettingError& e) {
    EXPECT_EQ(e.option, "power-limits");
    EXPECT_NE(std::string(e.what()).find("500 mW is below the lowest"), std::string::npos) << e.what();
  }
}

// Two workloads on one device whose automatic guards differ: w's profile every point predicted by a
// model with a 15% held-out peak error (guard 0.15), v's every peak measured (sensor noise, 3%).
// `pacer sweep` of both chooses each workload under its own guard, as `pacer select --profile` of it
// does: the same choice and guard at every cap and policy (a sweep that took the larger guard for
// both chose v's configurations under cap x 0.85).
TEST(ChoiceRule, SweepOfSeveralWorkloadsChoosesEachUnderItsOwnGuardAsSelectDoes) {
  std::mt19937_64 rng(11);
  const testing::TempStore path("choice-rule-two-guards");
  testing::write_two_guard_store(path, rng);
  const auto store = traces::Store::open(path);
  const auto problems = load_problems(store, ProblemSpec{});
  ASSERT_EQ(problems.size(), 2u);
  std::vector<const Problem*> views;
  std::map<std::string, const Problem*> by_workload;
  for (const auto& p : problems) {
    views.push_back(p.get());
    by_workload[p->workload] = p.get();
  }
  ASSERT_EQ(by_workload.count("v"), 1u);
  ASSERT_EQ(by_workload.count(kWorkload), 1u);
  EXPECT_DOUBLE_EQ(choice_rule(*by_workload.at("v")).guard, kDefaultGuard);
  EXPECT_NEAR(choice_rule(*by_workload.at(kWorkload)).guard, 0.15, 0.002);
  const Space& s = *by_workload.at("v")->space;
  const auto caps = cap_grid_w(s.min_power_w(), s.max_power_w(), 12);
  for (const std::optional<double> guard : {std::optional<double>(), std::optional<double>(0.07)}) {
    SweepRequest request;
    request.caps_w = caps;
    request.guard = guard;
    const auto record = sweep_record(views, request);
    ASSERT_EQ(record.rows.size(), 2 * caps.size() * request.options.policies.size());
    int differ = 0;  // v's choices the larger guard would have changed
    for (const auto& row : record.rows) {
      const Problem& pb = *by_workload.at(row.workload);
      const Policy policy = *policy_from_string(row.policy);
      const auto rule = choice_rule(pb, guard);
      const std::string what = fmt::format("{} at {} W, {}, guard {}", row.workload, row.cap_w, row.policy,
                                           guard ? fmt::format("{}", *guard) : std::string("auto"));
      // `pacer select --profile <workload>`: choose() under the workload's own rule.
      Pick select{};
      try {
        select = pick_of(choose(pb, pb.context(), policy, row.cap_w, rule).choice);
      } catch (const Error&) {
      }
      const Pick swept = row.feasible ? Pick{true, row.knob, row.batch_size} : Pick{};
      EXPECT_EQ(swept, select) << what;
      EXPECT_DOUBLE_EQ(row.guard, rule.guard) << what;
      if (row.workload == "v" && !guard)
        differ += pick_of(decide(policy, pb.context(), row.cap_w, choice_rule(pb, 0.15))) != select;
    }
    if (!guard) {
      EXPECT_GT(differ, 0) << "the caps must tell the two guards apart";
      // The record says each workload's guard, and whoever reads it back gets each workload's own.
      EXPECT_NE(record.feasibility.find("v: cap x (1 - 0.03)"), std::string::npos) << record.feasibility;
    }
    auto rw = traces::Store::open(path);
    rw.write(record, traces::Replace::always);
    const auto back = traces::Store::open(path).read<traces::SweepResult>(record.name);
    for (const auto& [w, pb] : by_workload)
      EXPECT_DOUBLE_EQ(recorded_rule(back, w).guard, choice_rule(*pb, guard).guard) << w;
  }
}

// A sweep record written before rows kept their guard: the record's one guard for every workload.
TEST(ChoiceRule, RecordedRuleOfASweepWithoutRowGuardsIsTheRecordsGuard) {
  traces::SweepResult sweep;
  sweep.guard = 0.12;
  sweep.feasibility = "mean";
  sweep.rows.resize(2);
  sweep.rows[0].workload = "a";
  sweep.rows[1].workload = "b";
  EXPECT_DOUBLE_EQ(recorded_rule(sweep, "a").guard, 0.12);
  EXPECT_EQ(recorded_rule(sweep, "b").power, PowerBasis::Mean);
  sweep.rows[0].guard = 0.03;
  sweep.rows[1].guard = 0.2;
  EXPECT_DOUBLE_EQ(recorded_rule(sweep, "a").guard, 0.03);
  EXPECT_DOUBLE_EQ(recorded_rule(sweep, "b").guard, 0.2);
  EXPECT_DOUBLE_EQ(recorded_rule(sweep, "c").guard, 0.12);  // rows that differ, none of c: the record's
  sweep.rows[1].guard = 0.03;
  EXPECT_DOUBLE_EQ(recorded_rule(sweep, "c").guard, 0.03);  // a profile under another name: the rows' one guard
}

TEST(ChoiceRule, AutomaticGuardIsTheModelsHeldOutPeakErrorWhereAPointIsPredicted) {
  std::mt19937_64 rng(5);
  const testing::TempStore path("choice-guard");
  for (const double share : {1.0, 0.5, 0.0}) {
    path.remove();
    write_random_store(path, rng, share, 0.08);
    ProblemSpec spec;
    spec.profile = kPredicted;
    const auto pb = load_problem(traces::Store::open(path), spec);
    const auto rule = choice_rule(*pb);
    if (pb->origin.basis == PointBasis::Measured) {
      EXPECT_DOUBLE_EQ(rule.guard, kDefaultGuard);
    } else {
      EXPECT_NEAR(rule.guard, 0.08, 0.002) << rule.guard_source;
    }
    EXPECT_DOUBLE_EQ(choice_rule(*pb, 0.11).guard, 0.11);  // a given guard overrides it
    EXPECT_EQ(choice_rule(*pb, 0.11).guard_source, "given");
  }
  // The measured profile itself is measured throughout.
  ProblemSpec spec;
  spec.profile = kMeasured;
  path.remove();
  write_random_store(path, rng, 0.5, 0.08);
  EXPECT_EQ(load_problem(traces::Store::open(path), spec)->origin.basis, PointBasis::Measured);
}

// The vision-tx2nx case: the model predicts a point under cap x (1 - guard) while its
// measured peak is over the cap. Measured wins: no command chooses it.
TEST(ChoiceRule, AMeasuredOverCapPointIsNeverChosenThoughTheModelSaysItFits) {
  const testing::TempStore path("choice-measured");
  traces::ProfileTable measured, predicted;
  for (auto* t : {&measured, &predicted}) {
    t->workload = kWorkload;
    t->device = kDevice;
  }
  // Two settings, one batch size: 854.25 MHz is fastest; its measured peak 7.99 W, predicted 6.9 W.
  for (const auto& [f, peak, time] :
       std::vector<std::tuple<double, double, double>>{{600e6, 6.0, 0.02}, {854.25e6, 7.99, 0.014}}) {
    traces::ProfilePoint p;
    p.knob = {f};
    p.batch_size = 32;
    p.time_per_batch_mean_s = time;
    p.power_peak_w = peak;
    p.power_mean_w = peak * 0.9;
    measured.points.push_back(p);
    p.power_peak_w = f > 700e6 ? 6.9 : peak;
    predicted.points.push_back(p);
  }
  // Another b only the model predicts, at the fast setting: it stays the model's (6.5 W).
  traces::ProfilePoint q = predicted.points[1];
  q.batch_size = 64;
  q.power_peak_w = 6.5;
  q.time_per_batch_mean_s = 0.05;
  predicted.points.push_back(q);
  {
    auto store = traces::Store::open_or_create(path);
    store.write(measured, kMeasured);
    store.write(predicted, kPredicted);
    store.write(testing::model_record(10.1));
    store.write(testing::one_seed_proxy({32, 64}));
  }
  ProblemSpec spec;
  spec.profile = kPredicted;
  const auto pb = load_problem(traces::Store::open(path), spec);
  EXPECT_EQ(pb->origin.basis, PointBasis::Mixed);
  EXPECT_EQ(pb->origin.measured, 2u);
  const size_t fast = *pb->space->knob_index({854.25e6});
  EXPECT_DOUBLE_EQ(pb->space->power_w(*pb->space->batch_index(32), fast), 7.99);
  EXPECT_DOUBLE_EQ(pb->space->power_w(*pb->space->batch_index(64), fast), 6.5);  // predicted only
  for (const std::optional<double> guard : {std::optional<double>(), std::optional<double>(0.0)}) {
    const auto rule = choice_rule(*pb, guard);
    for (Policy policy : {Policy::Ours, Policy::Pacer, Policy::Baseline2, Policy::EnergyOptimal}) {
      const Selection s = decide(policy, pb->context(), 7.8, rule);
      ASSERT_TRUE(s.feasible) << to_string(policy);
      EXPECT_FALSE(s.batch_size == 32 && s.knob_index == fast) << to_string(policy) << ": the measured 7.99 W point";
      EXPECT_LE(s.power_w, guarded_cap_w(7.8, rule.guard)) << to_string(policy);
    }
    SweepRequest request;
    request.caps_w = {7.8};
    request.guard = guard;
    for (const auto& row : sweep_record({pb.get()}, request).rows)
      EXPECT_FALSE(row.batch_size == 32 && row.feasible && row.knob == std::vector<double>{854.25e6}) << row.policy;
  }
  // The automatic guard here is the model's 10.1% (a point is predicted).
  EXPECT_NEAR(choice_rule(*pb).guard, 0.101, 1e-9);
}

// Feasibility per point (issue 23 item 2, text-nano at 5.9 W): a measured point's feasibility power
// is its own peak projected to a run of 10 x its samples (projected_run_peak_w), and the guard is the
// point term alone (kDefaultGuard where every peak is measured). The profile is the emulated Nano's
// at b=128 (store of validate-goal.md): 460.8 MHz peaked 5.704 W over 31 samples (mean 5.474 W),
// under 5.9 x 0.97 = 5.723 W, and its validation run peaked 5.955 W; its projection, 6.05 W, is over
// 5.723 W. Its neighbour 384 MHz is steady (peak 5.40 W, mean 5.35 W over 100 samples): projected
// 5.47 W, under. 537.6 MHz has a wide spread (a projection far over any cap here). Under the former
// space-wide rule, 537.6 MHz's spread set the guard for every point (10.6%: 5.9 x 0.894 = 5.27 W) and
// both 384 and 460.8 MHz were dropped.
struct MarginPoint {
  double f, peak, mean;
  int samples;
  double time;
};
const std::vector<MarginPoint> kMarginPoints = {
    {384e6, 5.40, 5.35, 100, 0.2413}, {460.8e6, 5.704, 5.474, 31, 0.2047}, {537.6e6, 6.6, 5.6, 31, 0.1783}};

void write_margin_store(const testing::TempStore& path, bool spread) {
  path.remove();
  traces::ProfileTable measured;
  measured.workload = kWorkload;
  measured.device = kDevice;
  for (const auto& m : kMarginPoints)
    measured.points.push_back(testing::profile_point(m.f, 128, m.time, m.peak, spread ? m.mean : m.peak, m.samples));
  const auto proxy = testing::one_seed_proxy({128});
  auto store = traces::Store::open_or_create(path);
  store.write(measured, kMeasured);
  store.write(proxy);
  store.write(testing::same_runs_target(proxy));
}

// The former rule's guard: the largest over the measured points of 1 - peak / projected peak.
double space_wide_guard() {
  double g = kDefaultGuard;
  for (const auto& m : kMarginPoints) {
    const double sigma = (m.peak - m.mean) / max_of_normals_quantile(m.samples, 0.5);
    g = std::max(g, 1 - m.peak / (m.mean + sigma * max_of_normals_quantile(10.0 * m.samples, kRunPeakQuantile)));
  }
  return g;
}

TEST(ChoiceRule, EveryCommandSkipsAMeasuredPointWhoseOwnProjectionIsOverTheCapAndKeepsItsNeighbour) {
  const testing::TempStore path("choice-per-point");
  write_margin_store(path, true);
  const Loaded loaded(path, kMeasured);
  const Problem& pb = *loaded.pb;
  ASSERT_EQ(pb.origin.basis, PointBasis::Measured);
  const auto rule = choice_rule(pb);
  EXPECT_DOUBLE_EQ(rule.guard, kDefaultGuard) << "the point term alone: " << rule.guard_source;
  EXPECT_TRUE(rule.guard_source.starts_with("sensor noise")) << rule.guard_source;
  EXPECT_NE(describe_feasibility(rule).find("peak power (a measured peak projected to a run of 10x its samples"),
            std::string::npos)
      << describe_feasibility(rule);
  // Each point's feasibility power is its own projection: sigma = (peak - mean) / z(m, 1/2), the run's
  // peak mean + 1.4 sigma x z(10 m, 0.95).
  const size_t bi = *pb.space->batch_index(128);
  for (const auto& m : kMarginPoints) {
    const double sigma = (m.peak - m.mean) / max_of_normals_quantile(m.samples, 0.5);
    EXPECT_NEAR(pb.space->power_w(bi, *pb.space->knob_index({m.f})),
                m.mean + 1.4 * sigma * max_of_normals_quantile(10.0 * m.samples, kRunPeakQuantile), 1e-9);
  }
  const double guarded = guarded_cap_w(5.9, rule.guard);
  EXPECT_GT(pb.space->power_w(bi, *pb.space->knob_index({460.8e6})), guarded);  // 6.05 W > 5.723 W
  EXPECT_LT(pb.space->power_w(bi, *pb.space->knob_index({384e6})), guarded);    // 5.47 W
  // The former space-wide rule dropped 384 MHz as well.
  EXPECT_GT(space_wide_guard(), 0.10);
  EXPECT_LT(guarded_cap_w(5.9, space_wide_guard()), 5.40);
  const Pick neighbour{true, {384e6}, 128};
  for (Policy policy : {Policy::Ours, Policy::Pacer, Policy::Baseline2, Policy::Oracle, Policy::EnergyOptimal}) {
    const Paths p = every_path(loaded, policy, 5.9, std::nullopt);
    const std::string what(to_string(policy));
    EXPECT_EQ(p.decide, neighbour) << what << ": not 460.8 MHz (projected 6.05 W), not infeasible";
    EXPECT_EQ(p.select, neighbour) << what;
    EXPECT_EQ(p.sweep, neighbour) << what;
    EXPECT_EQ(p.validate, neighbour) << what;
    if (policy != Policy::Oracle) EXPECT_EQ(p.simulate, neighbour) << what;
  }
  // A given guard overrides the band; the points' feasibility power is still their projection, so
  // 460.8 MHz is not chosen under a 3% guard either, nor under none at 5.9 W; at 6.1 W with none it is.
  EXPECT_EQ(every_path(loaded, Policy::Ours, 5.9, 0.03).decide, neighbour);
  EXPECT_EQ(every_path(loaded, Policy::Ours, 5.9, 0.0).decide, neighbour);
  EXPECT_EQ(every_path(loaded, Policy::Ours, 6.1, 0.0).decide, (Pick{true, {460.8e6}, 128}));
}

// A predicted point is judged like a measured one: its peak is projected to a run over the
// calibration's median power samples (models::stated_power_samples), so a point whose predicted
// peak fits but whose projection does not is skipped by every command, as it would be measured.
TEST(ChoiceRule, EveryCommandSkipsAPredictedPointWhoseRunProjectionIsOverTheCap) {
  const testing::TempStore path("choice-predicted-projection");
  testing::write_predicted_projection_store(path);
  const auto predicted = traces::Store::open(path).read<traces::ProfileTable>(kPredicted);
  for (const auto& p : predicted.points) EXPECT_EQ(p.power_samples, 31) << "the median of 25, 100, 31 samples";
  const Loaded loaded(path);
  const Problem& pb = *loaded.pb;
  ASSERT_EQ(pb.origin.basis, PointBasis::Mixed);
  EXPECT_EQ(pb.origin.measured, 3u);
  const auto rule = choice_rule(pb);
  EXPECT_NEAR(rule.guard, 0.03, 1e-12) << rule.guard_source;
  const size_t bi = *pb.space->batch_index(128), over = *pb.space->knob_index(testing::kProjectionOverCapKnob);
  const double guarded = guarded_cap_w(testing::kProjectionCapW, rule.guard);
  EXPECT_LT(5.704, guarded) << "its predicted peak alone fits";
  EXPECT_DOUBLE_EQ(pb.space->power_w(bi, over), projected_run_peak_w(5.704, 5.474, 31));
  EXPECT_GT(pb.space->power_w(bi, over), guarded);  // 6.05 W
  const Pick neighbour{true, testing::kProjectionNeighbourKnob, 128};
  for (Policy policy :
       {Policy::Ours, Policy::Pacer, Policy::Baseline1, Policy::Baseline2, Policy::Oracle, Policy::EnergyOptimal}) {
    for (const std::optional<double> guard : {std::optional<double>(), std::optional<double>(0.0)}) {
      const Paths p = every_path(loaded, policy, testing::kProjectionCapW, guard);
      const std::string what = std::string(to_string(policy)) + (guard ? ", no guard" : ", automatic guard");
      EXPECT_EQ(p.decide, neighbour) << what << ": not 460.8 MHz (predicted 5.704 W, projected 6.05 W)";
      EXPECT_EQ(p.select, neighbour) << what;
      EXPECT_EQ(p.sweep, neighbour) << what;
      EXPECT_EQ(p.validate, neighbour) << what;
      if (policy != Policy::Oracle) EXPECT_EQ(p.simulate, neighbour) << what;
    }
  }
  // A space evaluated from a model (select --model) projects the same way with the record's count.
  sim::TableModel model(predicted);
  Space::Grid grid{{{384e6}, {460.8e6}}, {128}};
  EXPECT_DOUBLE_EQ(Space::from_model(model, grid, "m", 31).power_w(0, 1), projected_run_peak_w(5.704, 5.474, 31));
  EXPECT_DOUBLE_EQ(Space::from_model(model, grid, "m").power_w(0, 1), 5.704);
  traces::ModelRecord record;
  EXPECT_EQ(models::stated_power_samples(record), 0);
  record.metrics[models::kPowerSamplesMetric] = 31;
  EXPECT_EQ(models::stated_power_samples(record), 31);
  EXPECT_EQ(models::stated_power_samples(std::vector<traces::ProfilePoint>{}), 0);
}

TEST(ChoiceRule, AMeasuredPointWithoutASpreadIsFeasibleByItsPeak) {
  const testing::TempStore path("choice-no-spread");
  write_margin_store(path, false);
  ProblemSpec spec;
  spec.profile = kMeasured;
  const auto pb = load_problem(traces::Store::open(path), spec);
  const auto rule = choice_rule(*pb);
  EXPECT_DOUBLE_EQ(rule.guard, kDefaultGuard);
  EXPECT_DOUBLE_EQ(pb->space->power_w(0, *pb->space->knob_index({460.8e6})), 5.704);
  EXPECT_EQ(decide(Policy::Ours, pb->context(), 5.9, rule).knob, std::vector<double>{460.8e6});
}

TEST(ChoiceRule, ProjectedRunPeakByHand) {
  // z(k, q) = Phi^-1(q^(1/k)): one draw's 97.5th percentile is 1.96; the median max of 31 is 2.012.
  EXPECT_NEAR(max_of_normals_quantile(1, 0.975), 1.959964, 1e-5);
  EXPECT_NEAR(max_of_normals_quantile(31, 0.5), 2.01197, 1e-4);
  EXPECT_NEAR(max_of_normals_quantile(310, 0.95), 3.58983, 1e-4);
  // mean 5, peak 5.2 over 31 samples: sigma = 0.2 / 2.01197, run peak 5 + 1.4 sigma x 3.58983.
  EXPECT_NEAR(projected_run_peak_w(5.2, 5.0, 31), 5 + 1.4 * 0.2 / 2.01197 * 3.58983, 1e-6);
  // More profile samples: less growth to a run ten times as long.
  EXPECT_LT(projected_run_peak_w(5.2, 5.0, 300), projected_run_peak_w(5.2, 5.0, 31));
  // No spread, no samples, no mean: the peak itself.
  EXPECT_EQ(projected_run_peak_w(5.0, 5.0, 31), 5.0);
  EXPECT_EQ(projected_run_peak_w(5.2, 5.0, 1), 5.2);
  EXPECT_EQ(projected_run_peak_w(5.2, traces::kNaN, 31), 5.2);
  // A profile point: the peak basis projects, the mean basis is the mean.
  traces::ProfilePoint p;
  p.power_peak_w = 5.2;
  p.power_mean_w = 5.0;
  p.power_samples = 31;
  EXPECT_DOUBLE_EQ(feasibility_power_w(p, PowerBasis::Peak), projected_run_peak_w(5.2, 5.0, 31));
  EXPECT_DOUBLE_EQ(feasibility_power_w(p, PowerBasis::Mean), 5.0);
}

// The per-point projection against real Jetson power (docs/explore.md, "The guard"): in each
// shipped tegrastats log, every 31-sample window is a profile point, and the real max over the 310
// samples that start with it is its run's peak; a window is covered when the run's peak is at most its
// projection under a cap with the sensor-noise guard (projection / (1 - kDefaultGuard)). Only
// windows whose run is the same load count (the run's mean within 10% of the window's: a profile
// point is one configuration; the AGX log's load starts after its first windows). The spread factor
// k (growth above the mean x k) is chosen by leave-one-log-out: the smallest k (steps of 0.01) that
// covers 95% of the other two logs' windows, checked on the held-out log; kRunPeakSpreadFactor is the
// same fit on all three logs, rounded up to 0.1. The docs' table is this test's output.
TEST(ChoiceRule, SampleCountTermOnRealTegrastatsLogs) {
  const auto dir = std::filesystem::path(PACER_SOURCE_DIR) / "data" / "jetson" / "loudva" / "tegrastats";
  if (!std::filesystem::exists(dir / "nano.log")) GTEST_SKIP() << "no LoudVA tegrastats logs under " << dir;
  const size_t m = 31, n = static_cast<size_t>(kRunSamplesPerProfileSample) * m;
  struct Window {
    double mean, growth, run_peak;  // growth: the unwidened projection's (k = 1) over the mean
  };
  const std::vector<std::string> logs = {"nano.log", "xavier-nx.log", "agx-xavier.log"};
  std::vector<std::vector<Window>> windows(logs.size());
  std::vector<size_t> all(logs.size());
  for (size_t l = 0; l < logs.size(); ++l) {
    std::ifstream in(dir / logs[l]);
    std::stringstream text;
    text << in.rdbuf();
    std::vector<double> w;
    for (const auto& s : traces::tegrastats::parse_log(text.str(), logs[l], 0.5)) w.push_back(s.module_power_w);
    ASSERT_GE(w.size(), n) << logs[l];
    for (size_t s = 0; s + n <= w.size(); ++s, ++all[l]) {
      const double peak = *std::max_element(w.begin() + s, w.begin() + s + m);
      double mean = 0, run_mean = 0;
      for (size_t i = s; i < s + m; ++i) mean += w[i] / m;
      for (size_t i = s; i < s + n; ++i) run_mean += w[i] / n;
      if (std::abs(run_mean / mean - 1) > 0.10) continue;  // another load
      const double growth = (projected_run_peak_w(peak, mean, m) - mean) / kRunPeakSpreadFactor;
      windows[l].push_back({mean, growth, *std::max_element(w.begin() + s, w.begin() + s + n)});
    }
  }
  const auto covered = [](const std::vector<Window>& ws, double k) {
    size_t c = 0;
    for (const auto& x : ws) c += x.run_peak <= (x.mean + k * x.growth) / (1 - kDefaultGuard) * (1 + 1e-12);
    return c;
  };
  // The smallest k covering 95% of the pooled windows of the logs `use` says.
  const auto fit = [&](const std::vector<bool>& use) {
    for (int i = 100; i <= 500; ++i) {
      size_t c = 0, total = 0;
      for (size_t l = 0; l < logs.size(); ++l)
        if (use[l]) c += covered(windows[l], i / 100.0), total += windows[l].size();
      if (c >= 0.95 * total) return i / 100.0;
    }
    return 5.0;
  };
  const double k_all = fit({true, true, true});
  std::printf("all logs: k = %.2f (shipped %.1f)\n", k_all, kRunPeakSpreadFactor);
  EXPECT_LE(k_all, kRunPeakSpreadFactor);
  EXPECT_GT(k_all, kRunPeakSpreadFactor - 0.1);
  for (size_t l = 0; l < logs.size(); ++l) {
    std::vector<bool> others(logs.size(), true);
    others[l] = false;
    const double k = fit(others);
    const size_t ws = windows[l].size();
    std::printf("| %s | %zu of %zu | %zu (%.0f%%) | %zu (%.0f%%) | %.2f | %zu (%.0f%%) |\n", logs[l].c_str(), ws,
                all[l], covered(windows[l], 1), 100.0 * covered(windows[l], 1) / ws,
                covered(windows[l], kRunPeakSpreadFactor), 100.0 * covered(windows[l], kRunPeakSpreadFactor) / ws, k,
                covered(windows[l], k), 100.0 * covered(windows[l], k) / ws);
    EXPECT_GE(covered(windows[l], kRunPeakSpreadFactor), covered(windows[l], 1));
  }
}

TEST(ChoiceRule, PeakErrorQuantileReadsTheStoredQuantileElseTheGaussianOfTheMape) {
  traces::ModelRecord r;
  EXPECT_TRUE(std::isnan(models::peak_error_quantile(r)));
  r.metrics["power_peak_mape_cv"] = 4;
  EXPECT_NEAR(models::peak_error_quantile(r), 1.959964 * std::sqrt(M_PI / 2) * 0.04, 1e-6);
  r.metrics["power_peak_abs_err_q95_cv"] = 7.5;
  EXPECT_DOUBLE_EQ(models::peak_error_quantile(r), 0.075);
}

// A model calibrated on a profile with mean power only (the LoudVA Jetson sweeps and power modes,
// NVML, Zeus) predicts no peak, so its predicted table and a --model space are on the mean basis as
// the measured profile is, and the measured means win there. `measured` (no peak) is calibrated as
// `options` asks on `device`, its settings predicted at its batch sizes, and every command's choice
// at `caps` compared on the predicted and the measured profile.
void expect_no_peak_and_the_measured_means_win(traces::ProfileTable measured, const traces::DeviceSpec& device,
                                               const models::CalibrationOptions& options,
                                               const std::vector<double>& caps) {
  measured.device = kDevice;
  for (auto& p : measured.points) p.power_peak_w = traces::kNaN;  // a mean-only profile
  const auto cal = models::calibrate(measured, &device, options);
  const auto kind = traces::model_kind_from_string(cal.record.kind);
  std::vector<std::vector<double>> settings;
  for (const auto& p : measured.points)
    if (std::find(settings.begin(), settings.end(), p.knob) == settings.end()) settings.push_back(p.knob);
  const auto batch_sizes = measured.batch_sizes();
  const auto predicted = models::predict_table(*cal.model, measured, settings, batch_sizes);
  for (const auto& p : predicted.points) ASSERT_TRUE(std::isnan(p.power_peak_w)) << "no peak was measured";
  const testing::TempStore path("choice-no-peak");
  {
    auto store = traces::Store::open_or_create(path);
    store.write(measured, kMeasured);
    store.write(predicted, kPredicted);
    auto record = cal.record;
    record.name = models::model_record_name(kWorkload, kDevice, kind);
    record.workload = kWorkload;
    record.device = kDevice;
    store.write(record);
    store.write(testing::one_seed_proxy(batch_sizes));
  }
  ProblemSpec spec;
  spec.profile = kPredicted;
  const auto pb = load_problem(traces::Store::open(path), spec);
  EXPECT_EQ(pb->space->basis(), PowerBasis::Mean);
  EXPECT_EQ(pb->origin.basis, PointBasis::Measured) << "every configuration was measured";
  spec.profile = kMeasured;
  const auto mp = load_problem(traces::Store::open(path), spec);
  EXPECT_DOUBLE_EQ(choice_rule(*pb).guard, choice_rule(*mp).guard);
  int feasible = 0;
  for (const double cap : caps)
    for (Policy policy : {Policy::Ours, Policy::Oracle, Policy::EnergyOptimal}) {
      const Selection a = decide(policy, pb->context(), cap, choice_rule(*pb));
      const Selection b = decide(policy, mp->context(), cap, choice_rule(*mp));
      ASSERT_EQ(a.feasible, b.feasible) << cap << " W, " << to_string(policy);
      if (!a.feasible) continue;
      ++feasible;
      // the measured power decides in both (the times differ: the model's and the profile's)
      EXPECT_NEAR(a.power_w, pb->space->power_w(a.batch_index, a.knob_index), 0);
      const traces::ProfilePoint* m = measured.find(a.knob, a.batch_size);
      ASSERT_NE(m, nullptr);
      EXPECT_DOUBLE_EQ(a.power_w, m->power_mean_w) << cap << " W, " << to_string(policy);
      EXPECT_LE(a.power_w, cap) << to_string(policy);
    }
  EXPECT_GT(feasible, 0) << "no cap left a choice to compare";
  // --model: the model's own space is on the mean basis too.
  spec.profile.clear();
  spec.model = models::model_record_name(kWorkload, kDevice, kind);
  spec.batch_sizes = batch_sizes;
  spec.device = device.name;
  EXPECT_EQ(load_problem(traces::Store::open(path), spec)->space->basis(), PowerBasis::Mean);
}

// Before, the analytical model mirrored the mean as its peak: `pacer select nano.h5 --profile
// inceptionv3-triton-predicted -P 5W` chose on a "peak" basis from the model alone (3% guard, every
// measured mean ignored: no peak to overlay) while `--profile inceptionv3-triton` chose on the
// measured means (no guard), another choice.
TEST(ChoiceRule, AModelCalibratedWithoutPeaksPredictsNoPeakAndTheMeasuredMeansWin) {
  const auto nano = traces::find_device("jetson-nano");
  const auto measured = models::testing::table_from(models::testing::nano_truth(nano), nano.gpu_freqs_hz,
                                                    {8, 16, 32, 64, 128}, 0.03, 11, kWorkload);
  models::CalibrationOptions options;
  options.points = 8;
  expect_no_peak_and_the_measured_means_win(measured, nano, options, {4.0, 5.0, 6.0, 7.0});
}

// The power-modes model likewise (its GPU part is the analytical model): before, it predicted the
// GPU part's mirrored peak minus its cap terms, so the predicted table of the LoudVA Nano modes
// (mean only) was on the peak basis.
TEST(ChoiceRule, AModesModelCalibratedWithoutPeaksPredictsNoPeakAndTheMeasuredMeansWin) {
  const auto orin = traces::find_device("jetson-agx-orin");
  models::ModeTerms terms;
  terms.time_cpu_s = 0.004;
  terms.power_mean_host_w = terms.power_peak_host_w = 6;
  traces::ModelRecord gpu_record;
  gpu_record.kind = "analytical";
  const models::ModeModel truth(
      traces::power_mode_knob(orin), traces::mode_maxima(orin),
      std::make_unique<models::AnalyticalModel>(testing::synthetic_orin_gpu_params(), gpu_record), terms,
      traces::ModelRecord{});
  traces::ProfileTable measured = testing::modes_table(truth, orin, kWorkload, false);
  for (auto& p : measured.points) p.power_samples = 100;
  models::CalibrationOptions options;
  options.model = traces::ModelKind::modes;
  options.cv_folds = 1;
  std::vector<double> caps;
  for (const auto& p : measured.points) caps.push_back(p.power_mean_w + 0.01);
  expect_no_peak_and_the_measured_means_win(measured, orin, options, caps);
}

// select warns where its choice's predicted power lies within the model's 1 sigma of the cap, on a
// predicted table as with --model (before, only --model spaces carried the model's uncertainty: the
// predicted table that calibrate --predict, the demo and validate use gave no warning), and not where
// the choice's power is measured (measured wins: the model's error does not apply).
TEST(ChoiceRule, SelectWarnsWhereAPredictedChoiceIsWithinOneSigmaOfTheCapAndNotWhereItIsMeasured) {
  const testing::TempStore path("choice-sigma");
  traces::ProfileTable measured, predicted;
  for (auto* t : {&measured, &predicted}) {
    t->workload = kWorkload;
    t->device = kDevice;
  }
  // b=32: 300 MHz measured (5.0 W), 600 MHz predicted only (6.0 W, faster).
  measured.points.push_back(testing::profile_point(300e6, 32, 0.030, 5.0, 4.9, 0));
  predicted.points = measured.points;
  predicted.points.push_back(testing::profile_point(600e6, 32, 0.020, 6.0, 5.8, 0));
  auto record = testing::model_record(5.0);
  testing::store_lomo_uncertainty(record, "");
  {
    auto store = traces::Store::open_or_create(path);
    store.write(measured, kMeasured);
    store.write(predicted, kPredicted);
    store.write(record);
    store.write(testing::one_seed_proxy({32}));
  }
  ProblemSpec spec;
  spec.profile = kPredicted;
  const auto pb = load_problem(traces::Store::open(path), spec);
  ASSERT_TRUE(pb->model_uncertainty.has_value()) << "the predicted table's model states its uncertainty";
  const double sigma = pb->model_uncertainty->power_peak_rel;
  ASSERT_GT(sigma, 0.02);
  // 600 MHz (predicted) under a cap 2% above it: within 1 sigma.
  const auto near = choose(*pb, pb->context(), Policy::Ours, 6.0 * 1.02, choice_rule(*pb, 0.0));
  ASSERT_EQ(near.choice.knob, std::vector<double>{600e6});
  EXPECT_NE(format_choice(*pb, near).find("within 1 sigma of the cap"), std::string::npos) << format_choice(*pb, near);
  EXPECT_NE(choice_json(*pb, near).find("\"within_1_sigma_of_cap\":true"), std::string::npos) << choice_json(*pb, near);
  // Far from it: no warning.
  const auto far = choose(*pb, pb->context(), Policy::Ours, 6.0 * (1 + 2 * sigma), choice_rule(*pb, 0.0));
  EXPECT_EQ(format_choice(*pb, far).find("within 1 sigma of the cap"), std::string::npos);
  // 300 MHz (measured 5.0 W) under a cap 1% above it: measured, no warning.
  const auto measured_choice = choose(*pb, pb->context(), Policy::Ours, 5.0 * 1.01, choice_rule(*pb, 0.0));
  ASSERT_EQ(measured_choice.choice.knob, std::vector<double>{300e6});
  EXPECT_EQ(format_choice(*pb, measured_choice).find("within 1 sigma of the cap"), std::string::npos)
      << format_choice(*pb, measured_choice);
  EXPECT_EQ(choice_json(*pb, measured_choice).find("\"within_1_sigma_of_cap\":true"), std::string::npos);
}

TEST(ChoiceRule, FeasibilityTextStartsWithThePowerBasis) {
  ChoiceRule rule;
  rule.guard = 0.05;
  rule.guard_source = "given";
  EXPECT_EQ(feasibility_basis(describe_feasibility(rule)), PowerBasis::Peak);
  rule.power = PowerBasis::Mean;
  EXPECT_EQ(feasibility_basis(describe_feasibility(rule)), PowerBasis::Mean);
  EXPECT_EQ(feasibility_basis("peak"), PowerBasis::Peak);  // records written before the rule
  EXPECT_EQ(feasibility_basis("peak,mean (per profile)"), std::nullopt);
  EXPECT_DOUBLE_EQ(recorded_rule(0.25, "peak").guard, 0.25);
}

}  // namespace
}  // namespace pacer::explore
