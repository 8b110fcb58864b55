// Training to a target: the learning-rate rule, determinism, censoring, hooks and checkpoints, on
// small synthetic data the test builds (fast on one CPU thread).
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "base/error.hpp"
#include "dnn/data/samples.hpp"
#include "dnn/data/text.hpp"
#include "dnn/train.hpp"

namespace fs = std::filesystem;
namespace pm = pacer::models;
namespace pd = pacer::dnn::data;

namespace {

// Four classes: a bright 4x4 square in one quadrant of a noisy 12x12 image. Learnable in a few
// hundred samples; with `random_labels` nothing can be learned.
pd::DataSplit quadrants(int n, bool random_labels = false) {
  pd::Samples s;
  s.task = "image";
  s.sample_shape = {1, 12, 12};
  s.num_classes = 10;
  uint64_t state = 12345;
  auto rnd = [&state] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<uint32_t>(state >> 33);
  };
  for (int i = 0; i < n; ++i) {
    const int cls = i % 4;
    for (int y = 0; y < 12; ++y)
      for (int x = 0; x < 12; ++x) {
        const bool in = (y / 6) * 2 + (x / 6) == cls && y % 6 >= 1 && y % 6 < 5 && x % 6 >= 1 && x % 6 < 5;
        s.values.push_back(static_cast<uint8_t>((in ? 160 : 0) + rnd() % 90));
      }
    s.labels.push_back(random_labels ? static_cast<int32_t>(rnd() % 4) : cls);
  }
  return pd::split(s, 0.8, 1, "quadrants");
}

pacer::dnn::TrainOptions quick(int batch_size, int seed) {
  pacer::dnn::TrainOptions o;
  o.workload = "cnn";
  o.batch_size = batch_size;
  o.seed = seed;
  o.threads = 1;
  o.base_lr = 2e-3;
  o.base_batch = 32;
  o.eval_every_samples = 64;
  o.target = 0.95;
  o.budget_samples = 4096;
  return o;
}

fs::path temp_file(const std::string& name) {
  return fs::temp_directory_path() / ("pacer-test-train-" + std::to_string(::getpid()) + "-" + name);
}

}  // namespace

TEST(Train, LearningRateScalesWithTheSquareRootOfTheBatchSize) {
  EXPECT_DOUBLE_EQ(pacer::dnn::scaled_learning_rate(1e-3, 64, 64), 1e-3);
  EXPECT_DOUBLE_EQ(pacer::dnn::scaled_learning_rate(1e-3, 64, 16), 5e-4);
  EXPECT_DOUBLE_EQ(pacer::dnn::scaled_learning_rate(4e-3, 128, 8), 1e-3);
  EXPECT_EQ(pacer::dnn::learning_rate_rule(0.001, 64), "lr = 0.001 * sqrt(b / 64)");
  EXPECT_THROW(pacer::dnn::scaled_learning_rate(0, 64, 4), pacer::Error);
  const auto r = pacer::dnn::train_to_target(quick(8, 0), quadrants(400));
  EXPECT_DOUBLE_EQ(r.learning_rate, 2e-3 * 0.5);
}

TEST(Train, ReachesTheTargetAndIsReproducibleFromTheSeed) {
  const auto data = quadrants(400);
  const auto a = pacer::dnn::train_to_target(quick(16, 3), data);
  const auto b = pacer::dnn::train_to_target(quick(16, 3), data);
  ASSERT_TRUE(a.reached);
  EXPECT_GE(a.final_metric, 0.95);
  EXPECT_GT(a.samples, 0);
  EXPECT_EQ(a.samples % 64, 0);  // stops at an evaluation
  EXPECT_EQ(a.samples, b.samples);
  ASSERT_EQ(a.history.size(), b.history.size());
  for (size_t i = 0; i < a.history.size(); ++i) {
    EXPECT_EQ(a.history[i].samples, b.history[i].samples);
    EXPECT_DOUBLE_EQ(a.history[i].metric, b.history[i].metric);
    EXPECT_DOUBLE_EQ(a.history[i].loss, b.history[i].loss);
  }
  EXPECT_EQ(a.history.front().samples, 0);  // evaluated before training
  EXPECT_LT(a.history.front().metric, 0.6);
  EXPECT_LE(a.eval_time_s, a.wall_time_s);
  // Another seed gives another data order, so another trajectory.
  const auto c = pacer::dnn::train_to_target(quick(16, 4), data);
  EXPECT_NE(a.history[1].loss, c.history[1].loss);
}

// Evaluations stop early only when they cannot reach the target: the screen (a score far below the
// target after screen_samples) or the bound after any later chunk. Reaching is decided on the full set.
TEST(Train, ScreeningDecidesOnlyOnFullEvaluations) {
  const auto data = quadrants(2000);
  auto o = quick(16, 3);
  o.eval_stop = pacer::dnn::TrainOptions::kScreened;
  o.screen_samples = 40;
  o.screen_margin = 0.1;
  const auto r = pacer::dnn::train_to_target(o, data);
  ASSERT_TRUE(r.reached);
  const int64_t full = data.eval.size();
  EXPECT_EQ(r.history.back().eval_samples, full);
  EXPECT_GE(r.history.back().metric, 0.95);
  int screened = 0;
  for (const auto& e : r.history) {
    if (e.eval_samples == full) continue;
    EXPECT_LT(e.metric, 0.95);  // an evaluation stops early only below the target
    if (e.eval_samples == 40) {
      ++screened;
      EXPECT_LT(e.metric, 0.95 - 0.1);  // the screen skips only scores far from the target
    } else {
      // Stopped later by the bound: even 3.09 standard errors above the score so far miss it.
      const double m = static_cast<double>(e.eval_samples);
      const double se = std::sqrt(e.metric * (1 - e.metric) / m);
      EXPECT_LT((e.metric * m + (static_cast<double>(full) - m) * std::min(1.0, e.metric + 3.09 * se)) /
                    static_cast<double>(full),
                0.95)
          << "stopped after " << e.eval_samples << " at " << e.metric;
    }
  }
  EXPECT_GE(screened, 1);  // the untrained start is far from the target
}

TEST(Train, AnEvaluationStopsEarlyOnlyWhenTheRestCannotPlausiblyLiftItToTheTarget) {
  // 93% after 1000 of 2000 samples: se 0.81%, the rest at most 95.5%, the whole at most 94.25%.
  EXPECT_TRUE(pacer::dnn::evaluation_cannot_reach(930, 1000, 1000, 2000, 0.95, 3.09));
  // 94.5%: the rest at most 96.7%, the whole at most 95.6%: score on.
  EXPECT_FALSE(pacer::dnn::evaluation_cannot_reach(945, 1000, 1000, 2000, 0.95, 3.09));
  // ... unless z is small: at z = 1 the whole is at most 94.86%.
  EXPECT_TRUE(pacer::dnn::evaluation_cannot_reach(945, 1000, 1000, 2000, 0.95, 1.0));
  // 93% after only 250 samples: se 1.6%, the whole at most 97.4%: score on.
  EXPECT_FALSE(pacer::dnn::evaluation_cannot_reach(232.5, 250, 250, 2000, 0.95, 3.09));
  // Text, 64 labels per sample: the standard error counts the 100 samples, not the 6,400 labels
  // (with labels, 90% at z = 3.09 would stop; with samples the whole may still reach 98.3%).
  EXPECT_FALSE(pacer::dnn::evaluation_cannot_reach(0.9 * 6400, 6400, 100, 1000, 0.95, 3.09));
  EXPECT_TRUE(pacer::dnn::evaluation_cannot_reach(0.9 * 6400, 6400, 100, 1000, 0.95, 1.0));
  // Nothing scored yet, or everything scored: never an early stop.
  EXPECT_FALSE(pacer::dnn::evaluation_cannot_reach(0, 0, 0, 2000, 0.95, 3.09));
  EXPECT_FALSE(pacer::dnn::evaluation_cannot_reach(900, 1000, 1000, 1000, 0.95, 3.09));
}

// Stopping hopeless evaluations early changes the cost, not the answer: the same runs reach the
// target after the same samples as with every evaluation full, at a fraction of the scored samples.
TEST(Train, EarlyStoppedEvaluationsGiveTheSameSamplesToTarget) {
  const auto data = quadrants(2000);
  int64_t scored_early = 0, scored_full = 0;
  for (int b : {8, 32}) {
    auto o = quick(b, 1);
    o.eval_every_samples = 32;
    o.target = 0.97;
    auto full = o;
    full.eval_stop = pacer::dnn::TrainOptions::kFull;
    o.eval_stop = pacer::dnn::TrainOptions::kScreened;
    o.screen_samples = 40;
    o.screen_margin = 0.05;
    const auto a = pacer::dnn::train_to_target(o, data);
    const auto f = pacer::dnn::train_to_target(full, data);
    ASSERT_TRUE(f.reached) << "b=" << b;
    EXPECT_EQ(a.reached, f.reached);
    EXPECT_EQ(a.samples, f.samples) << "b=" << b;
    EXPECT_DOUBLE_EQ(a.final_metric, f.final_metric);
    for (const auto& e : a.history) scored_early += e.eval_samples;
    for (const auto& e : f.history) scored_full += e.eval_samples;
  }
  EXPECT_LT(scored_early, scored_full * 3 / 4);
}

// Hardest-first evaluations score the samples missed last time first and stop once the target is
// out of reach even with every unscored sample right. Over a small campaign (2 batch sizes x 2
// seeds sharing one memory of the held-out samples, as `pacer relation` does) every run stops after
// exactly the samples of full evaluations, every evaluation that stopped early was below the target
// on the full split too, its score (estimated for the learning curve) is close to the full one,
// and far fewer samples are scored.
TEST(Train, HardestFirstEvaluationsStopWhereFullOnesDo) {
  const auto data = quadrants(4000);
  const int64_t n = data.eval.size();
  int64_t scored_hard = 0, scored_full = 0, stopped = 0;
  double worst_estimate = 0, sum_error = 0;
  pacer::dnn::HeldOutMargins campaign;
  for (int b : {8, 32})
    for (int seed : {1, 2}) {
      auto o = quick(b, seed);
      o.eval_every_samples = 32;
      o.target = 0.97;
      o.eval_stop = pacer::dnn::TrainOptions::kHardestFirst;
      o.estimate_samples = 100;  // of the 800 held-out samples
      auto full = o;
      full.eval_stop = pacer::dnn::TrainOptions::kFull;
      const auto h = pacer::dnn::train_to_target(o, data, {}, &campaign);
      const auto f = pacer::dnn::train_to_target(full, data);
      ASSERT_TRUE(f.reached) << "b=" << b;
      EXPECT_EQ(h.reached, f.reached);
      EXPECT_EQ(h.samples, f.samples) << "b=" << b << " seed=" << seed;
      EXPECT_DOUBLE_EQ(h.final_metric, f.final_metric);
      ASSERT_EQ(h.history.size(), f.history.size());
      for (size_t i = 0; i < h.history.size(); ++i) {
        const auto& e = h.history[i];
        EXPECT_EQ(e.samples, f.history[i].samples);
        if (e.eval_samples == n) {
          EXPECT_DOUBLE_EQ(e.metric, f.history[i].metric);  // the same count, in another order
        } else {
          ++stopped;
          EXPECT_LT(e.metric, 0.97);
          EXPECT_LT(f.history[i].metric, 0.97);  // the full evaluation could not reach it either
          worst_estimate = std::max(worst_estimate, std::abs(e.metric - f.history[i].metric));
          sum_error += std::abs(e.metric - f.history[i].metric);
        }
        scored_hard += e.eval_samples;
        scored_full += f.history[i].eval_samples;
      }
    }
  EXPECT_GT(stopped, 20);
  // The estimate from 100 of the unscored samples (the bound it stopped on was off by up to 0.7).
  EXPECT_LT(sum_error / static_cast<double>(stopped), 0.03);
  EXPECT_LT(worst_estimate, 0.15);
  EXPECT_LT(scored_hard, scored_full / 2);
}

TEST(Train, RunsThatMissTheTargetAreCensoredAtTheBudget) {
  auto o = quick(16, 0);
  o.budget_samples = 320;
  const auto r = pacer::dnn::train_to_target(o, quadrants(400, /*random_labels=*/true));
  EXPECT_FALSE(r.reached);
  EXPECT_EQ(r.samples, 320);
  EXPECT_EQ(r.history.back().samples, 320);
  EXPECT_LT(r.final_metric, 0.95);
}

TEST(Train, BatchHookSeesEverySampleAndCanStopTheRun) {
  std::vector<int64_t> seen;
  pacer::dnn::TrainHooks hooks;
  hooks.on_batch = [&](int64_t samples, int b) {
    EXPECT_EQ(b, 8);
    seen.push_back(samples);
    return seen.size() < 5;
  };
  int progress_calls = 0;
  hooks.on_progress = [&](const pacer::dnn::TrainProgress& p) {
    ++progress_calls;
    EXPECT_EQ(p.batch_size, 8);
  };
  const auto r = pacer::dnn::train_to_target(quick(8, 0), quadrants(400), hooks);
  EXPECT_TRUE(r.stopped_by_hook);
  EXPECT_EQ(seen, std::vector<int64_t>({8, 16, 24, 32, 40}));
  EXPECT_EQ(r.samples, 40);
  EXPECT_EQ(progress_calls, static_cast<int>(r.history.size()));
}

TEST(Train, CheckpointsRoundTripAndNameTheirWorkload) {
  const auto data = quadrants(400);
  const fs::path ckpt = temp_file("ckpt.pt");
  auto o = quick(16, 1);
  o.save_checkpoint = ckpt.string();
  const auto trained = pacer::dnn::train_to_target(o, data);
  ASSERT_TRUE(fs::exists(ckpt));
  pacer::dnn::check_checkpoint(ckpt.string(), "cnn@1x12x12");
  EXPECT_THROW(pacer::dnn::check_checkpoint(ckpt.string(), "resnet18"), pacer::Error);

  // Fine-tuning from the checkpoint starts at the trained accuracy: the first evaluation is the same.
  auto f = quick(16, 1);
  f.init_checkpoint = ckpt.string();
  const auto tuned = pacer::dnn::train_to_target(f, data);
  EXPECT_TRUE(tuned.reached);
  EXPECT_EQ(tuned.samples, 0);
  EXPECT_DOUBLE_EQ(tuned.history.front().metric, trained.final_metric);

  // Wrong workload for these weights, and a corrupt file.
  auto w = quick(16, 1);
  w.workload = "cnn-w0.5";
  w.init_checkpoint = ckpt.string();
  EXPECT_THROW(pacer::dnn::train_to_target(w, data), pacer::Error);
  const fs::path bad = temp_file("bad.pt");
  { std::ofstream(bad) << "not a checkpoint"; }
  f.init_checkpoint = bad.string();
  EXPECT_THROW(pacer::dnn::train_to_target(f, data), pacer::Error);
  fs::remove(ckpt);
  fs::remove(bad);
}

// An adaptive campaign's run trained in parts (dnn::TrainOptions::run_state): stopped at a first
// budget that is not on its evaluation schedule and crosses an epoch (336 samples, 21 batches of
// 16; an epoch is 20), then continued, it trains exactly as one run would: the same samples, the
// same outcome, the same evaluations (losses) after the stop and the same final metric. Continued
// again, a run that has ended trains no more.
TEST(Train, ARunContinuedFromItsStateTrainsAsOneRun) {
  const auto data = quadrants(400);
  auto one = quick(16, 2);
  one.target = NAN;  // no target: the run trains its budget (the data is learnt within 256 samples)
  one.budget_samples = 704;
  const auto whole = pacer::dnn::train_to_target(one, data);
  ASSERT_GT(whole.samples, 336) << "the test needs a run longer than its first part";
  const fs::path state = temp_file("state.pt");
  fs::remove(state);
  auto first = one;
  first.run_state = state.string();
  first.budget_samples = 336;
  const auto a = pacer::dnn::train_to_target(first, data);
  EXPECT_FALSE(a.reached);
  EXPECT_EQ(a.samples, 336);
  EXPECT_EQ(a.resumed_samples, 0);
  ASSERT_TRUE(fs::exists(state));
  auto rest = one;
  rest.run_state = state.string();
  const auto b = pacer::dnn::train_to_target(rest, data);
  EXPECT_EQ(b.resumed_samples, 336);
  EXPECT_EQ(b.reached, whole.reached);
  EXPECT_EQ(b.samples, whole.samples);
  EXPECT_DOUBLE_EQ(b.final_metric, whole.final_metric);
  ASSERT_FALSE(b.history.empty());
  EXPECT_GT(b.history.front().samples, 336);  // no evaluation at the start of a continued run
  for (const auto& e : b.history) {
    const auto it = std::find_if(whole.history.begin(), whole.history.end(),
                                 [&](const pacer::dnn::Evaluation& w) { return w.samples == e.samples; });
    ASSERT_NE(it, whole.history.end()) << e.samples;
    EXPECT_DOUBLE_EQ(it->metric, e.metric) << e.samples;
    // The mean loss is summed in the hardest-first order, which the evaluations before set: the
    // same weights give it up to the float rounding of that sum.
    EXPECT_NEAR(it->loss, e.loss, 1e-6 * it->loss) << e.samples;
  }
  const auto c = pacer::dnn::train_to_target(rest, data);
  EXPECT_EQ(c.reached, whole.reached);
  EXPECT_EQ(c.samples, whole.samples);
  EXPECT_TRUE(c.history.empty());
  // A state of other weights is refused in one line.
  auto other = one;
  other.workload = "cnn-w0.5";
  other.run_state = state.string();
  EXPECT_THROW(pacer::dnn::train_to_target(other, data), pacer::Error);
  fs::remove(state);
}

TEST(Train, WorkloadMustFitTheData) {
  auto o = quick(16, 0);
  o.workload = "chartransformer-tiny";
  EXPECT_THROW(pacer::dnn::train_to_target(o, quadrants(100)), pacer::Error);
  o.workload = "cnn@1x28x28";
  EXPECT_THROW(pacer::dnn::train_to_target(o, quadrants(100)), pacer::Error);
  o.workload = "cnn";
  o.batch_size = 1000;
  EXPECT_THROW(pacer::dnn::train_to_target(o, quadrants(100)), pacer::Error);
}

TEST(Train, TinyTransformerLearnsARepeatingText) {
  std::string text;
  while (text.size() < 20000) text += "the cat sat on the mat. ";
  const auto data = pd::split(pd::text_windows(text, 32), 0.8, 0, "cats");
  pacer::dnn::TrainOptions o;
  o.workload = "chartransformer-tiny";
  o.batch_size = 16;
  o.threads = 1;
  o.optimizer = "adamw";
  o.weight_decay = 0.01;
  o.base_lr = 3e-3;
  o.base_batch = 16;
  o.eval_every_samples = 128;
  o.eval_max_samples = 64;
  o.target = 0.9;
  o.budget_samples = 8000;
  o.eval_stop = pacer::dnn::TrainOptions::kFull;  // the untrained start's own score, not a bound
  const auto r = pacer::dnn::train_to_target(o, data);
  EXPECT_TRUE(r.reached) << "char accuracy " << r.final_metric;
  EXPECT_LT(r.history.front().metric, 0.3);
  // Hardest-first evaluations (labels per position) stop after the same samples.
  o.eval_stop = pacer::dnn::TrainOptions::kHardestFirst;
  const auto h = pacer::dnn::train_to_target(o, data);
  EXPECT_EQ(h.reached, r.reached);
  EXPECT_EQ(h.samples, r.samples);
  EXPECT_DOUBLE_EQ(h.final_metric, r.final_metric);
}

// A batch that does not fit in memory is one line that says so and what to do, never libtorch's
// error with its C++ stack trace, which a user cannot act on. The run is confined (RLIMIT_AS) in a
// re-executed child so that the allocation fails for certain on any machine.
TEST(TrainDeathTest, ABatchThatDoesNotFitIsOneLineWithoutAStackTrace) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto run = [] {
    long pages = 0;
    std::ifstream("/proc/self/statm") >> pages;
    const rlim_t limit = static_cast<rlim_t>(pages) * static_cast<rlim_t>(::sysconf(_SC_PAGESIZE)) + (768ull << 20);
    const rlimit rl{limit, limit};
    ::setrlimit(RLIMIT_AS, &rl);
    auto o = quick(4096, 0);
    o.workload = "resnet18";
    o.budget_samples = 4096;
    try {
      pacer::dnn::train_to_target(o, quadrants(5200));
    } catch (const pacer::Error& e) {
      const std::string what = e.what();
      const bool one_line = what.find('\n') == std::string::npos && what.find("frame #") == std::string::npos;
      std::fprintf(stderr, "%s: %s\n", one_line ? "ONE LINE" : "SEVERAL LINES", what.c_str());
      std::exit(one_line ? 0 : 2);
    }
    std::exit(3);  // it fitted: the limit is wrong
  };
  EXPECT_EXIT(run(), ::testing::ExitedWithCode(0), "ONE LINE: .*4096 samples does not fit.*lower the batch size");
}
