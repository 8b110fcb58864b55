// Policies on hand-computed grids, Algorithm 1 against brute force, sweeps and their summaries.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>

#include <unistd.h>

#include <filesystem>

#include "base/error.hpp"
#include "base/units.hpp"
#include "explore/policy.hpp"
#include "explore/problem.hpp"
#include "explore/space.hpp"
#include "explore/sweep.hpp"
#include "tests/support/temp_store.hpp"
#include "traces/store/store.hpp"
#include "traces/workload.hpp"

namespace pacer::explore {
namespace {

// Knob f1 < f2 < f3, batch sizes 4 and 8.
//   time/batch [s]   b=4: 4.0 2.0 1.5     b=8: 6.0 3.0 2.0
//   peak power [W]   b=4: 2   3   5       b=8: 3   4   7
//   mean power [W]   b=4: 1.6 2.4 4.0     b=8: 2.4 3.2 5.6
// Proxy N(b): 400, 1000 samples -> 100 and 125 mini-batches. Target N(b): 800 (seeds 700, 900), 1000.
traces::ProfileTable hand_profile() {
  traces::ProfileTable t;
  t.workload = "hand";
  t.device = "test";
  const double f[3] = {100e6, 200e6, 300e6};
  const double time[2][3] = {{4.0, 2.0, 1.5}, {6.0, 3.0, 2.0}};
  const double peak[2][3] = {{2, 3, 5}, {3, 4, 7}};
  const double mean[2][3] = {{1.6, 2.4, 4.0}, {2.4, 3.2, 5.6}};
  const int b[2] = {4, 8};
  for (int bi = 0; bi < 2; ++bi)
    for (int ki = 0; ki < 3; ++ki) {
      traces::ProfilePoint p;
      p.knob = {f[ki]};
      p.batch_size = b[bi];
      p.time_per_batch_mean_s = time[bi][ki];
      p.power_peak_w = peak[bi][ki];
      p.power_mean_w = mean[bi][ki];
      t.points.push_back(p);
    }
  return t;
}

traces::RelationSet relation(const std::string& name, std::vector<std::pair<int, int64_t>> runs) {
  traces::RelationSet s;
  s.name = name;
  int seed = 0;
  for (auto [b, n] : runs) {
    traces::RelationRun r;
    r.batch_size = b;
    r.seed = seed++;
    r.reached = true;
    r.samples = n;
    s.runs.push_back(r);
  }
  return s;
}

struct Hand {
  Space space = Space::from_profile(hand_profile());
  Index index{space};
  traces::RelationSet proxy_set = relation("proxy", {{4, 400}, {8, 1000}});
  traces::RelationSet target_set = relation("target", {{4, 700}, {4, 900}, {8, 1000}, {8, 1000}});
  Relation proxy = Relation::from_set(proxy_set, space);
  Relation target = Relation::from_set(target_set, space);
  PolicyContext ctx() const {
    PolicyContext c;
    c.index = &index;
    c.proxy = &proxy;
    c.target = &target;
    return c;
  }
};

TEST(Space, FromProfileUsesPeakWhenEveryPointHasIt) {
  Hand h;
  EXPECT_EQ(h.space.basis(), PowerBasis::Peak);
  EXPECT_EQ(h.space.num_knobs(), 3u);
  EXPECT_EQ(h.space.batch_sizes(), (std::vector<int>{4, 8}));
  EXPECT_DOUBLE_EQ(h.space.power_w(1, 2), 7.0);
  auto t = hand_profile();
  t.points[0].power_peak_w = traces::kNaN;
  const Space mean_space = Space::from_profile(t);
  EXPECT_EQ(mean_space.basis(), PowerBasis::Mean);
  EXPECT_DOUBLE_EQ(mean_space.power_w(1, 2), 5.6);
  EXPECT_THROW(Space::from_profile(t, PowerBasis::Peak), Error);
}

// A store with a proxy and the true relation `pacer validate` trains (the README's flow): select,
// sweep and simulate take them as proxy and target without being told (they stopped at "2
// relations to choose from"); an ambiguous store gets one error naming the option to set.
TEST(Problem, ChoosesTheProxyAndTheTargetByRole) {
  const testing::TempStore path("problem");
  {
    auto store = traces::Store::open_or_create(path);
    store.write(hand_profile(), "hand");
    store.write(relation("fmnist-proxy", {{4, 400}, {8, 1000}}));
    store.write(relation(traces::true_relation_name("fmnist-target-a"), {{4, 800}, {8, 1000}}));
  }
  auto choose = [&] { return load_problem(traces::Store::open(path), ProblemSpec{}); };
  const auto pb = choose();
  EXPECT_EQ(pb->proxy_set.name, "fmnist-proxy");
  ASSERT_TRUE(pb->target_set);
  EXPECT_EQ(pb->target_set->name, "fmnist-target-a-true");
  ASSERT_TRUE(pb->target);
  auto option_of = [&] {
    try {
      choose();
    } catch (const OptionError& e) {
      return e.option;
    }
    return std::string("none");
  };
  traces::Store::open(path).write(relation(traces::true_relation_name("fmnist-target-b"), {{4, 900}}));
  EXPECT_EQ(option_of(), "target");  // two targets: name one
  traces::Store::open(path).write(relation("fmnist-other", {{4, 500}}));
  EXPECT_EQ(option_of(), "relation");  // two relations could be the proxy
}

// No cap (`-P none`, units::kNoCap): every configuration is feasible, so each policy makes the
// choice it makes under a cap above every configuration's power.
TEST(Policies, NoCapIsACapAboveEveryConfiguration) {
  Hand h;
  for (Policy p : all_policies()) {
    const auto free = select(p, h.ctx(), units::kNoCap);
    const auto high = select(p, h.ctx(), 1e6);
    ASSERT_TRUE(free.feasible) << to_string(p);
    EXPECT_EQ(free.batch_size, high.batch_size) << to_string(p);
    EXPECT_EQ(free.knob, high.knob) << to_string(p);
  }
}

// A relation of another workload than the profile's (a merged store: `select --relation
// fmnist-proxy` on a profile of resnet18-mine) is refused with one error naming the flag that
// allows it; with the flag it is paired; a relation that names no workload (older records) passes;
// the default proxy and target are only ever relations of the profile's workload.
TEST(Problem, ARelationOfAnotherWorkloadIsRefusedUnlessAllowed) {
  const testing::TempStore path("mismatch");
  {
    auto store = traces::Store::open_or_create(path);
    store.write(hand_profile(), "hand");  // workload "hand"
    auto theirs = relation("fmnist-proxy", {{4, 400}, {8, 1000}});
    theirs.workload = "cnn@1x28x28";
    store.write(theirs);
    auto true_theirs = relation(traces::true_relation_name("fmnist-target-a"), {{4, 800}, {8, 1000}});
    true_theirs.workload = "cnn@1x28x28";
    store.write(true_theirs);
  }
  const traces::Store store = traces::Store::open(path);
  ProblemSpec spec;
  spec.relation = "fmnist-proxy";
  try {
    load_problem(store, spec);
    ADD_FAILURE() << "a relation of another workload was paired silently";
  } catch (const SettingError& e) {
    EXPECT_EQ(e.option, "allow-workload-mismatch");
    EXPECT_STREQ(e.what(),
                 "relation 'fmnist-proxy' was measured on workload cnn@1x28x28 but profile 'hand' is workload hand: "
                 "pair records of one workload, or give this flag to pair them anyway");
  }
  spec.allow_workload_mismatch = true;
  const auto pb = load_problem(store, spec);
  EXPECT_EQ(pb->proxy_set.name, "fmnist-proxy");
  EXPECT_FALSE(pb->target_set);  // the other workload's true relation is not taken as the target
  // Without a name, neither is the proxy: no relation of workload "hand" in the store.
  try {
    load_problem(store, ProblemSpec{});
    ADD_FAILURE() << "a proxy of another workload was picked";
  } catch (const OptionError& e) {
    EXPECT_EQ(e.option, "relation");
    EXPECT_NE(std::string(e.what()).find("0 relations of workload hand that could be the proxy (none) (of other "
                                         "workloads: fmnist-proxy); name one"),
              std::string::npos)
        << e.what();
  }
  // A relation that does not say its workload is paired as before.
  traces::Store::open(path).write(relation("own", {{4, 300}, {8, 1000}}));
  EXPECT_EQ(load_problem(traces::Store::open(path), ProblemSpec{})->proxy_set.name, "own");
  EXPECT_NO_THROW(traces::check_workload_match("profile 'x'", "", relation("r", {{4, 1}}), false));
}

TEST(Policies, OursPicksFastestFeasibleByProxy) {
  Hand h;
  auto s = select(Policy::Ours, h.ctx(), 5.0);
  ASSERT_TRUE(s.feasible);
  EXPECT_EQ(s.batch_size, 4);
  EXPECT_DOUBLE_EQ(s.knob[0], 300e6);
  EXPECT_DOUBLE_EQ(s.predicted_time_s, 150.0);
  EXPECT_DOUBLE_EQ(s.predicted_energy_j, 600.0);
  EXPECT_EQ(s.method, "binary search");
  s = select(Policy::Ours, h.ctx(), 4.0);  // the cap is inclusive: b=8 at f2 draws exactly 4 W
  EXPECT_EQ(s.batch_size, 4);
  EXPECT_DOUBLE_EQ(s.knob[0], 200e6);
  EXPECT_DOUBLE_EQ(s.predicted_time_s, 200.0);
}

TEST(Policies, RunnerUpIsTheBestOtherBatchSize) {
  Hand h;
  std::vector<Selection> ranked;
  const auto s = select(Policy::Ours, h.ctx(), 5.0, &ranked);
  ASSERT_EQ(ranked.size(), 2u);
  EXPECT_EQ(ranked[0].batch_size, s.batch_size);
  EXPECT_EQ(ranked[1].batch_size, 8);
  EXPECT_DOUBLE_EQ(ranked[1].knob[0], 200e6);
  EXPECT_DOUBLE_EQ(ranked[1].predicted_time_s, 375.0);
}

TEST(Policies, OracleUsesTheTargetRelation) {
  Hand h;
  auto s = select(Policy::Oracle, h.ctx(), 4.0);
  EXPECT_EQ(s.batch_size, 8);  // target: b=4 f2 400 s, b=8 f2 375 s
  EXPECT_DOUBLE_EQ(s.predicted_time_s, 375.0);
  s = select(Policy::Oracle, h.ctx(), 7.0);
  EXPECT_EQ(s.batch_size, 8);
  EXPECT_DOUBLE_EQ(s.predicted_time_s, 250.0);
}

TEST(Policies, BaselinesUseTheDeviceWideCap) {
  Hand h;
  // Cap 5 W: f3 draws 7 W at b=8, so the device-wide cap is f2.
  auto b1 = select(Policy::Baseline1, h.ctx(), 5.0);
  ASSERT_TRUE(b1.feasible);
  EXPECT_EQ(b1.batch_size, 8);
  EXPECT_DOUBLE_EQ(b1.knob[0], 200e6);
  EXPECT_DOUBLE_EQ(b1.predicted_time_s, 375.0);
  auto b2 = select(Policy::Baseline2, h.ctx(), 5.0);
  EXPECT_EQ(b2.batch_size, 4);
  EXPECT_DOUBLE_EQ(b2.knob[0], 200e6);
  EXPECT_DOUBLE_EQ(b2.predicted_time_s, 200.0);
  // With a second workload that draws 4.5 W at f2, the device-wide cap at 4 W drops to f1.
  traces::ProfileTable other = hand_profile();
  for (auto& p : other.points) p.power_peak_w += 0.5;
  const Space other_space = Space::from_profile(other);
  const DeviceWideCap cap({&h.space, &other_space});
  auto ctx = h.ctx();
  ctx.device_cap = &cap;
  b1 = select(Policy::Baseline1, ctx, 4.0);
  EXPECT_DOUBLE_EQ(b1.knob[0], 100e6);
  EXPECT_EQ(b1.batch_size, 8);
  EXPECT_FALSE(select(Policy::Baseline1, ctx, 3.0).feasible);  // 3.5 W at f1, b=8 for the other workload
}

TEST(Policies, EnergyZeusAndPowerTrain) {
  Hand h;
  auto e = select(Policy::EnergyOptimal, h.ctx(), 7.0);
  EXPECT_EQ(e.batch_size, 4);
  EXPECT_DOUBLE_EQ(e.knob[0], 200e6);
  EXPECT_DOUBLE_EQ(e.predicted_energy_j, 480.0);
  e = select(Policy::EnergyOptimal, h.ctx(), 2.5);
  EXPECT_DOUBLE_EQ(e.knob[0], 100e6);
  EXPECT_DOUBLE_EQ(e.predicted_energy_j, 640.0);
  // Zeus cost with eta 0.5 and MaxPower = 7 W: b=4 f3 costs 100 x (0.5 x 6 J + 3.5 W x 1.5 s) = 825.
  auto z = select(Policy::ZeusCost, h.ctx(), 7.0);
  EXPECT_EQ(z.batch_size, 4);
  EXPECT_DOUBLE_EQ(z.knob[0], 300e6);
  EXPECT_DOUBLE_EQ(h.index.unit_cost(0, 2, Objective::ZeusCost) * 100, 825.0);
  z = select(Policy::ZeusCost, h.ctx(), 4.0);
  EXPECT_DOUBLE_EQ(z.knob[0], 200e6);
  // eta = 1 is pure energy: the same choice as energy-optimal.
  const Index energy_index(h.space, IndexOptions{1.0, traces::kNaN});
  auto ctx = h.ctx();
  ctx.index = &energy_index;
  z = select(Policy::ZeusCost, ctx, 7.0);
  EXPECT_DOUBLE_EQ(z.knob[0], 200e6);
  // PowerTrain: fastest under the cap at the largest b, or at a given b.
  auto pt = select(Policy::PowerTrain, h.ctx(), 5.0);
  EXPECT_EQ(pt.batch_size, 8);
  EXPECT_DOUBLE_EQ(pt.knob[0], 200e6);
  ctx = h.ctx();
  ctx.powertrain_batch = 4;
  pt = select(Policy::PowerTrain, ctx, 5.0);
  EXPECT_EQ(pt.batch_size, 4);
  EXPECT_DOUBLE_EQ(pt.knob[0], 300e6);
}

// Issue 22 item 22: a negative PowerTrain batch size was read as "the largest"; it is refused, as a
// usage error (OptionError: exit 2; it was a SettingError, exit 1).
TEST(Policies, ANegativePowertrainBatchIsRefused) {
  Hand h;
  auto ctx = h.ctx();
  ctx.powertrain_batch = -1;
  try {
    select(Policy::PowerTrain, ctx, 5.0);
    ADD_FAILURE() << "--powertrain-batch -1 was accepted";
  } catch (const OptionError& e) {
    EXPECT_EQ(e.option, "powertrain-batch");
  }
}

TEST(Policies, InfeasibleCapGivesAMessageForEveryPolicy) {
  Hand h;
  for (Policy p : all_policies()) {
    const auto s = select(p, h.ctx(), 1.5);
    EXPECT_FALSE(s.feasible) << to_string(p);
    EXPECT_FALSE(s.message.empty()) << to_string(p);
  }
  EXPECT_NE(select(Policy::Ours, h.ctx(), 1.5).message.find("lowest is 2 W"), std::string::npos)
      << select(Policy::Ours, h.ctx(), 1.5).message;
}

// At 2.5 W only b=4 fits (2 W at f1), and the relation has no samples-to-target at b=4. Raising the
// cap is not what helps: the message names the batch sizes without data and the ones the relation
// has.
TEST(Policies, BatchSizesMissingFromTheRelationAreNamedNotTheCap) {
  Hand h;
  const traces::RelationSet only8 = relation("only8", {{8, 1000}});
  const Relation proxy = Relation::from_set(only8, h.space);
  PolicyContext c = h.ctx();
  c.proxy = &proxy;
  c.target = &proxy;
  for (Policy p : {Policy::Ours, Policy::OursRobust, Policy::Oracle, Policy::EnergyOptimal, Policy::Pacer}) {
    const auto s = select(p, c, 2.5);
    ASSERT_FALSE(s.feasible) << to_string(p);
    EXPECT_EQ(s.message.find("raise the cap"), std::string::npos) << to_string(p) << ": " << s.message;
    EXPECT_NE(s.message.find("relation 'only8' has no samples-to-target at b=4"), std::string::npos)
        << to_string(p) << ": " << s.message;
    EXPECT_NE(s.message.find("it has b=8"), std::string::npos) << to_string(p) << ": " << s.message;
  }
  // Below every configuration the cap is what to change.
  EXPECT_NE(select(Policy::Ours, c, 1.5).message.find("raise the cap"), std::string::npos);
}

TEST(Policies, TiesPreferLowerPowerThenLargerBatch) {
  Space::Arrays a;
  a.knob = traces::KnobSpace::gpu_frequency();
  a.knob_settings = {{1e8}, {2e8}};
  a.batch_sizes = {4, 8};
  // Same TT at both b (same time per sample, same r) and same power: the larger b wins.
  // Within b=4, f1 and f2 take the same time: the front keeps the lower-power f1,
  // Algorithm 1 takes the highest feasible knob (f2).
  a.time_per_batch_s = {1.0, 1.0, 2.0, 2.0};
  a.power_w = {2.0, 3.0, 2.0, 3.0};
  const Space s = Space::from_arrays(a);
  const Index idx(s);
  Relation r{"r", {400, 400}};  // 100 s at b=4 (100 x 1 s) and at b=8 (50 x 2 s)
  PolicyContext ctx;
  ctx.index = &idx;
  ctx.proxy = &r;
  auto robust = select(Policy::OursRobust, ctx, 10.0);
  EXPECT_EQ(robust.batch_size, 8);
  EXPECT_DOUBLE_EQ(robust.knob[0], 1e8);
  auto ours = select(Policy::Ours, ctx, 10.0);
  EXPECT_EQ(ours.batch_size, 8);
  EXPECT_DOUBLE_EQ(ours.knob[0], 2e8);
  EXPECT_EQ(scan_fastest(idx, r, 10.0).knob_index, robust.knob_index);
  EXPECT_EQ(scan_fastest(idx, r, 10.0).batch_index, robust.batch_index);
}

TEST(Policies, RobustSeesNonMonotoneTime) {
  Space::Arrays a;
  a.knob = traces::KnobSpace::power_limit();
  a.knob_settings = {{100}, {150}, {200}};
  a.batch_sizes = {32};
  a.basis = PowerBasis::Mean;
  a.time_per_batch_s = {4.0, 2.0, 2.5};  // measured slower at the highest limit
  a.power_w = {90, 120, 160};
  // Power not monotone in the knob for a second space: Algorithm 1 falls back to a scan.
  const Space s = Space::from_arrays(a);
  const Index idx(s);
  Relation r{"r", {3200}};
  PolicyContext ctx;
  ctx.index = &idx;
  ctx.proxy = &r;
  EXPECT_DOUBLE_EQ(select(Policy::Ours, ctx, 200).knob[0], 200);
  EXPECT_DOUBLE_EQ(select(Policy::OursRobust, ctx, 200).knob[0], 150);
  a.power_w = {90, 170, 160};
  const Space s2 = Space::from_arrays(a);
  const Index idx2(s2);
  EXPECT_FALSE(idx2.monotone(0));
  EXPECT_EQ(idx2.highest_feasible_knob(0, 165), 2u);  // 160 W at the highest limit
  EXPECT_EQ(idx2.highest_feasible_knob(0, 150), 0u);
}

Space random_space(std::mt19937& rng, bool monotone, size_t dims) {
  std::uniform_int_distribution<int> nk(1, 25), nb(1, 8);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  Space::Arrays a;
  a.knob = dims == 1 ? traces::KnobSpace::gpu_frequency() : traces::KnobSpace::power_mode();
  const int k = nk(rng), b = nb(rng);
  for (int i = 0; i < k; ++i) {
    std::vector<double> knob(dims);
    for (size_t d = 0; d < dims; ++d) knob[d] = (i + 1) * 1e8 + d;  // distinct, ascending
    a.knob_settings.push_back(knob);
  }
  for (int j = 0; j < b; ++j) a.batch_sizes.push_back(4 << j);
  for (int j = 0; j < b; ++j) {
    double p = 1 + u(rng), t = 10 + 10 * u(rng);
    for (int i = 0; i < k; ++i) {
      if (monotone) {
        p += 0.01 + u(rng);
        t *= 0.6 + 0.39 * u(rng);
      } else {
        p = 1 + 10 * u(rng);
        t = 1 + 10 * u(rng);
      }
      a.time_per_batch_s.push_back(t * (1 + j * 0.5));
      a.power_w.push_back(std::round(p * 4) / 4);  // quarter watts: ties happen
    }
  }
  // Holes: a missing configuration must never be picked.
  if (a.time_per_batch_s.size() > 3) a.time_per_batch_s[a.time_per_batch_s.size() / 2] = traces::kNaN;
  return Space::from_arrays(a);
}

TEST(Algorithm1, BinarySearchEqualsBruteForceOnRandomMonotoneTables) {
  std::mt19937 rng(42);
  std::uniform_real_distribution<double> cap(0.5, 30);
  int compared = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const Space s = random_space(rng, true, 1);
    const Index idx(s);
    Relation r{"r", {}};
    for (int b : s.batch_sizes()) r.samples_by_batch.push_back(b * (50.0 + (b % 7)));
    PolicyContext ctx;
    ctx.index = &idx;
    ctx.proxy = &r;
    for (int c = 0; c < 20; ++c) {
      const double p = cap(rng);
      const auto fast = select(Policy::Ours, ctx, p);
      const auto brute = scan_algorithm1(idx, r, p);
      ASSERT_EQ(fast.feasible, brute.feasible);
      if (!fast.feasible) continue;
      EXPECT_EQ(fast.knob_index, brute.knob_index);
      EXPECT_EQ(fast.batch_index, brute.batch_index);
      EXPECT_LE(fast.power_w, p);
      // With time falling and power rising in the knob, Algorithm 1 is exact: it equals a
      // brute-force search of the whole space.
      const auto all = scan_fastest(idx, r, p);
      EXPECT_DOUBLE_EQ(fast.predicted_time_s, all.predicted_time_s);
      ++compared;
    }
  }
  EXPECT_GT(compared, 1000);
}

TEST(Front, EqualsBruteForceWithoutMonotonicity) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> cap(0.5, 12);
  for (size_t dims : {1u, 4u})
    for (int trial = 0; trial < 200; ++trial) {
      const Space s = random_space(rng, false, dims);
      const Index idx(s);
      Relation r{"r", {}};
      for (int b : s.batch_sizes()) r.samples_by_batch.push_back(b * 100.0 / (1 + b % 3));
      PolicyContext ctx;
      ctx.index = &idx;
      ctx.proxy = &r;
      for (int c = 0; c < 10; ++c) {
        const double p = cap(rng);
        const auto front = select(Policy::OursRobust, ctx, p);
        const auto brute = scan_fastest(idx, r, p);
        ASSERT_EQ(front.feasible, brute.feasible);
        if (!front.feasible) continue;
        EXPECT_EQ(front.knob_index, brute.knob_index);
        EXPECT_EQ(front.batch_index, brute.batch_index);
        EXPECT_TRUE(s.has(front.batch_index, front.knob_index));
      }
    }
}

TEST(DeviceWideCap, MultiDimPicksTheMostPowerAllowed) {
  Space::Arrays a;
  a.knob = traces::KnobSpace::power_mode();
  a.knob_settings = {{2, 1e9, 3e8, 1e9}, {4, 1e9, 3e8, 2e9}, {4, 2e9, 6e8, 2e9}};
  a.batch_sizes = {16};
  a.time_per_batch_s = {3, 2, 1};
  a.power_w = {5, 9, 8};  // the lexicographically highest mode is not the most power-hungry
  const Space s = Space::from_arrays(a);
  const DeviceWideCap cap({&s});
  EXPECT_EQ(cap.knob_for(8.5), (std::vector<double>{4, 2e9, 6e8, 2e9}));
  EXPECT_EQ(cap.knob_for(9), (std::vector<double>{4, 1e9, 3e8, 2e9}));
  EXPECT_FALSE(cap.knob_for(4.9));
}

TEST(Sweep, RegretAndSpeedUpByHand) {
  Hand h;
  SweepWorkload w;
  w.workload = "hand";
  w.index = &h.index;
  w.proxy = &h.proxy;
  w.target = &h.target;
  w.target_set = &h.target_set;
  w.caps_w = {4, 5, 7};
  const auto rows = sweep(w, SweepOptions{});
  ASSERT_EQ(rows.size(), 3 * all_policies().size());
  auto row = [&](double cap, const std::string& p) {
    for (const auto& r : rows)
      if (r.cap_w == cap && r.policy == p) return r;
    ADD_FAILURE() << p;
    return traces::SweepRow{};
  };
  EXPECT_NEAR(row(4, "ours").regret, 400.0 / 375 - 1, 1e-12);
  EXPECT_NEAR(row(5, "ours").regret, 0, 1e-12);
  EXPECT_NEAR(row(7, "ours").regret, 0.2, 1e-12);
  EXPECT_NEAR(row(5, "baseline1").regret, 0.25, 1e-12);
  // Replay over the target's seeds: b=4 at f3 takes 1.5 s x 700/4 and 1.5 s x 900/4.
  EXPECT_NEAR(row(5, "ours").replayed_time_mean_s, 300, 1e-9);
  EXPECT_NEAR(row(5, "ours").replayed_time_std_s, std::sqrt(2 * 37.5 * 37.5), 1e-9);
  EXPECT_NEAR(row(5, "ours").replayed_energy_j, 1200, 1e-9);
  const auto sum = summarize(rows);
  const auto& ours = sum.policies.front();
  EXPECT_EQ(ours.policy, "ours");
  EXPECT_NEAR(ours.mean_regret, (400.0 / 375 - 1 + 0.2) / 3, 1e-12);
  EXPECT_NEAR(ours.max_regret, 0.2, 1e-12);
  EXPECT_EQ(ours.optimal, 1);
  ASSERT_EQ(sum.speedups.size(), 2u);
  EXPECT_EQ(sum.speedups[0].over, "baseline1");
  EXPECT_EQ(sum.speedups[0].pairs, 3);
  EXPECT_NEAR(sum.speedups[0].geomean, std::cbrt((375.0 / 400) * (375.0 / 300) * (250.0 / 300)), 1e-12);
  EXPECT_NEAR(sum.speedups[0].max, 1.25, 1e-12);
  for (const auto& r : rows) {
    if (r.policy == "oracle") {
      EXPECT_NEAR(r.regret, 0, 1e-12);
    }
  }
  // An infeasible cap gives rows marked infeasible, not an exception.
  w.caps_w = {1.0};
  for (const auto& r : sweep(w, SweepOptions{})) EXPECT_FALSE(r.feasible);
}

// One table gives every policy its id, label and paper row, so that the ids the explorer writes in
// records are the ones the tables label (they drifted: "zeus" vs "zeus-cost").
TEST(PolicyTable, IdsRoundTripAndEveryIdHasItsLabel) {
  std::set<std::string> labels;
  for (const auto& row : policy_table()) {
    EXPECT_EQ(policy_from_string(row.id), row.policy) << row.id;
    EXPECT_EQ(to_string(row.policy), row.id);
    EXPECT_FALSE(row.description.empty()) << row.id;
    EXPECT_TRUE(labels.insert(std::string(row.label)).second) << row.label;
    EXPECT_EQ(policy_label(row.id), row.label);
  }
  EXPECT_EQ(policy_label("zeus-cost"), "Zeus cost");
  EXPECT_EQ(policy_label("energy-opt"), "Energy-optimal");
  EXPECT_EQ(policy_label("baseline1"), "Baseline 1");
  EXPECT_EQ(policy_label("no-such"), "no-such");
  EXPECT_LT(policy_rank("baseline1"), policy_rank("baseline2"));
  EXPECT_LT(policy_rank("baseline2"), policy_rank("ours"));
  EXPECT_LT(policy_rank("ours"), policy_rank("oracle"));
  EXPECT_EQ(policy_rank("zeus-cost"), 100);
  EXPECT_EQ(policy_names().find("zeus-cost") != std::string::npos, true);
}

// Records keep policy ids as text; code compares them with a Policy (is_policy). Every
// policy round-trips through the id stores hold (spelled out: fixed by the files written so far),
// and a misspelt id matches none.
TEST(PolicyTable, StoredIdsCompareByPolicyAndMisspellingsMatchNone) {
  const std::vector<std::pair<Policy, std::string>> ids = {{Policy::Ours, "ours"},
                                                           {Policy::OursRobust, "ours-robust"},
                                                           {Policy::Baseline1, "baseline1"},
                                                           {Policy::Baseline2, "baseline2"},
                                                           {Policy::Pacer, "pacer"},
                                                           {Policy::Oracle, "oracle"},
                                                           {Policy::EnergyOptimal, "energy-opt"},
                                                           {Policy::ZeusCost, "zeus-cost"},
                                                           {Policy::PowerTrain, "powertrain"}};
  ASSERT_EQ(ids.size(), all_policies().size());
  for (const auto& [policy, id] : ids) {
    EXPECT_EQ(to_string(policy), id);
    EXPECT_EQ(policy_from_string(id), policy) << id;
    for (Policy other : all_policies()) EXPECT_EQ(is_policy(id, other), other == policy) << id;
  }
  for (const char* bad : {"Ours", "baseline 1", "oracle ", "zeus", "energy_opt", ""}) {
    EXPECT_FALSE(policy_from_string(bad)) << bad;
    for (Policy p : all_policies()) EXPECT_FALSE(is_policy(bad, p)) << bad;
  }
  EXPECT_EQ(policy_ids({Policy::Baseline1, Policy::Oracle, Policy::Ours}),
            (std::vector<std::string>{"baseline1", "oracle", "ours"}));
}

// Zeus's MAXPOWER is the highest power limit of a power-limit knob (here 200 W, while the highest
// average power is 190 W); other knobs keep the space's highest power; a given value wins.
TEST(Index, ZeusMaxPowerIsTheHighestPowerLimit) {
  Space::Arrays a;
  a.knob = traces::KnobSpace::power_limit();
  a.knob_settings = {{100}, {200}};
  a.batch_sizes = {4};
  a.basis = PowerBasis::Mean;
  a.time_per_batch_s = {2, 1};
  a.power_w = {90, 190};
  const Space s = Space::from_arrays(a);
  EXPECT_DOUBLE_EQ(Index(s).max_power_w(), 200);
  EXPECT_NE(Index(s).max_power_source().find("highest power limit"), std::string::npos);
  IndexOptions o;
  o.max_power_w = 250;
  EXPECT_DOUBLE_EQ(Index(s, o).max_power_w(), 250);
  // Zeus cost per batch at 100 W: 0.5 x 90 x 2 + 0.5 x 200 x 2 = 290.
  EXPECT_DOUBLE_EQ(Index(s).unit_cost(0, 0, Objective::ZeusCost), 290);
  Hand h;
  EXPECT_DOUBLE_EQ(h.index.max_power_w(), 7);  // a frequency knob: the space's highest (peak) power
}

// With a guard band the sweep chooses under cap x (1 - guard), as validate does, so that a sweep
// and a validation of one run agree; the rows keep the cap itself.
TEST(Sweep, GuardChoosesUnderTheGuardedCap) {
  Hand h;
  SweepWorkload w;
  w.workload = "hand";
  w.index = &h.index;
  w.proxy = &h.proxy;
  w.target = &h.target;
  w.target_set = &h.target_set;
  w.caps_w = {5};
  SweepOptions guarded;
  guarded.rule.guard = 0.2;  // 5 W -> 4 W
  const auto rows = sweep(w, guarded);
  w.caps_w = {4};
  const auto at4 = sweep(w, SweepOptions{});
  ASSERT_EQ(rows.size(), at4.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].cap_w, 5);
    EXPECT_EQ(rows[i].knob, at4[i].knob) << rows[i].policy;
    EXPECT_EQ(rows[i].batch_size, at4[i].batch_size) << rows[i].policy;
  }
  EXPECT_EQ(cap_grid_w(2, 4, 3), (std::vector<double>{2, 3, 4}));
  EXPECT_EQ(cap_grid_w(2, 4, 1), (std::vector<double>{4}));
  EXPECT_EQ(cap_grid_w(0, 1, 4, 0.01), (std::vector<double>{0, 0.33, 0.67, 1}));
}

}  // namespace
}  // namespace pacer::explore

// A sweep without a target relation has no regret anywhere: its summary is one line saying so, not
// a "0/0 nan%" row per policy.
TEST(SweepSummary, WithoutATargetIsOneLineSayingSo) {
  std::vector<pacer::traces::SweepRow> rows;
  for (const char* policy : {"ours", "baseline1", "oracle"})
    for (double cap : {5.0, 7.0}) {
      pacer::traces::SweepRow r;
      r.cap_w = cap;
      r.workload = "w";
      r.policy = policy;
      r.feasible = std::string(policy) != "oracle";  // no target: no oracle
      r.batch_size = 8;
      rows.push_back(r);
    }
  const std::string text = pacer::explore::format_summary(pacer::explore::summarize(rows));
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2) << text;  // a blank line, then the one line
  EXPECT_NE(text.find("no workload swept has a target relation"), std::string::npos) << text;
  EXPECT_EQ(text.find("nan"), std::string::npos) << text;
}
