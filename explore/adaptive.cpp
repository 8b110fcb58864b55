#include "explore/adaptive.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>

#include "base/error.hpp"
#include "base/hash.hpp"
#include "base/stats.hpp"
#include "explore/curve_fit.hpp"
#include "explore/pacer_policy.hpp"
#include "explore/policy.hpp"
#include "explore/problem.hpp"
#include "explore/proxy_budget.hpp"
#include "explore/sweep.hpp"

namespace pacer::explore {
namespace {

// Variance of a log count estimated from a ratio fitted to fewer than three runs, or from the run's
// own curve: wide (a factor of 1.65 at one standard deviation), not tuned.
constexpr double kLooseEstimateVar = 0.25;
// Variance of a log count from its level's shared ratio (the learning curves' shape differs
// across b: on the Zeus traces the last step is 1.6x at b = 16 and 3.5x at b = 4096), not tuned.
constexpr double kCommonRatioVar = 0.05;

bool better_or_equal(double metric, double level, bool higher_is_better) {
  return higher_is_better ? metric >= level : metric <= level;
}

// The first sample count at which `curve` reaches `level`; 0 when never.
int64_t first_reaching(const std::vector<std::pair<int64_t, double>>& curve, double level, bool higher_is_better) {
  int64_t first = 0;
  for (const auto& [n, m] : curve)
    if (n > 0 && !std::isnan(m) && better_or_equal(m, level, higher_is_better) && (first == 0 || n < first)) first = n;
  return first;
}

double normal_cdf(double x) {
  return 0.5 * std::erfc(-x / std::sqrt(2.0));
}

// E[max(0, e^X - 1)], X ~ N(mu, var).
double expected_excess(double mu, double var) {
  if (!(var > 0)) return std::max(0.0, std::exp(mu) - 1);
  const double s = std::sqrt(var);
  return std::exp(mu + var / 2) * normal_cdf((mu + var) / s) - normal_cdf(mu / s);
}

// The spacing of the levels the learning curves show: the median gap between consecutive ones
// (`levels` in either order; 0 with fewer than two).
double median_gap(std::vector<double> levels) {
  std::sort(levels.begin(), levels.end());
  std::vector<double> gaps;
  for (size_t i = 0; i + 1 < levels.size(); ++i) gaps.push_back(levels[i + 1] - levels[i]);
  return gaps.empty() ? 0.0 : base::median(gaps);
}

struct Estimate {
  double log_samples = traces::kNaN;  // NaN: censored
  double var = 0;                     // of the log estimate
};

// Step 1: an unfinished run's samples-to-target from the runs that reached it.
// Where no run reached the target past the run's own level (its best metric): the median over every
// run that reached that level of log(own extrapolation / samples to the level) (explore/proxy_budget.hpp's
// shared ratio, at the run's level). Runs at one level share the factor, so their ranking comes from
// their measured samples to that level; a run stopped at a looser level gets that level's factor,
// never a factor taken at a level looser than its own.
// With `line` (AdaptiveOptions::ratio_line), a line in log b through those log ratios at b,
// clamped to their range (as the finished runs' ratio), where they span two batch sizes or more
// and number three or more: the median gives every b one factor, which understates the large b's
// slower last steps (CIFAR-100: b = 512 at 1.3 M against 2.15 M).
double shared_log_ratio(const std::vector<AdaptiveRun>& runs, double level, const traces::RelationSet& header, int b,
                        bool line_in_log_b) {
  const bool hib = header.higher_is_better;
  std::vector<double> ratios, log_b;
  for (const auto& r : runs) {
    const int64_t at = first_reaching(r.curve, level, hib);
    const double n = extrapolate_samples(r.curve, header.target, hib);
    if (at > 0 && std::isfinite(n)) {
      ratios.push_back(std::log(n / static_cast<double>(at)));
      log_b.push_back(std::log(static_cast<double>(r.batch_size)));
    }
  }
  if (ratios.empty()) return traces::kNaN;
  if (line_in_log_b && ratios.size() >= 3 &&
      *std::min_element(log_b.begin(), log_b.end()) < *std::max_element(log_b.begin(), log_b.end())) {
    const base::Line line = base::least_squares_line(log_b, ratios);
    const auto [lo, hi] = std::minmax_element(ratios.begin(), ratios.end());
    return std::max(0.0, std::clamp(line.at(std::log(static_cast<double>(b))), *lo, *hi));
  }
  return std::max(0.0, base::median(ratios));
}

// The estimate of a run of batch size `b` that reached `level` at `at` samples: `at` times the
// ratio target/level of the finished runs (a line in log b, clamped to their range), else the
// shared ratio at `level`, else (own: the run's curve) its own extrapolation.
Estimate estimate_from(int b, double level, int64_t at, const std::vector<std::pair<int64_t, double>>* own,
                       const std::vector<const AdaptiveRun*>& finished, const std::vector<AdaptiveRun>& all,
                       const traces::RelationSet& header, int64_t floor_samples, bool ratio_line) {
  const bool hib = header.higher_is_better;
  Estimate e;
  std::vector<double> log_b, log_ratio;
  for (const auto* f : finished) {
    const int64_t f_at = first_reaching(f->curve, level, hib);
    if (f_at <= 0 || f_at > f->samples) continue;
    log_b.push_back(std::log(static_cast<double>(f->batch_size)));
    log_ratio.push_back(std::log(static_cast<double>(f->samples) / static_cast<double>(f_at)));
  }
  const double floor = std::log(static_cast<double>(std::max<int64_t>(1, floor_samples)));
  if (log_ratio.empty()) {  // no run reached the target past this level: the shared ratio at this level
    const double shared = shared_log_ratio(all, level, header, b, ratio_line);
    if (!std::isnan(shared)) {
      e.log_samples = std::max(floor, std::log(static_cast<double>(at)) + shared);
      e.var = kCommonRatioVar;
      return e;
    }
    if (!own) return e;
    const double n = extrapolate_samples(*own, header.target, hib);  // the run's own curve
    if (!std::isfinite(n)) return e;
    e.log_samples = std::max(floor, std::log(n));
    e.var = kLooseEstimateVar;
    return e;
  }
  const base::Line line = base::least_squares_line(log_b, log_ratio);
  const auto [lo, hi] = std::minmax_element(log_ratio.begin(), log_ratio.end());
  const double r = std::clamp(line.at(std::log(static_cast<double>(b))), *lo, *hi);
  double resid = 0;
  for (size_t i = 0; i < log_b.size(); ++i) resid += std::pow(log_ratio[i] - line.at(log_b[i]), 2);
  const size_t dof = log_b.size() > 2 ? log_b.size() - 2 : 0;
  e.var = dof > 0 ? std::max(resid / static_cast<double>(dof), 0.0) : kLooseEstimateVar;
  e.log_samples = std::max(floor, std::log(static_cast<double>(at)) + std::max(0.0, r));
  return e;
}

// `power`: the run's estimate on the shared power law (extrapolation "power-law"), used when given.
// A run that trained past the point where it reached its best level without reaching the next one
// (the next level any run's curve shows, looser than the target) is censored there: its samples
// to that next level are at least its samples, so its estimate is at least the one from the next
// level at its samples (without this bound a run stalled at its level, b = 64 on ImageNet at
// 7.7 M samples after reaching 0.4 at 3.8 M, was estimated from 3.8 M and chosen at every cap).
Estimate estimate_run(const AdaptiveRun& run, const std::vector<const AdaptiveRun*>& finished,
                      const std::vector<AdaptiveRun>& all, const traces::RelationSet& header,
                      const PowerLawEstimate* power, bool ratio_line) {
  const bool hib = header.higher_is_better;
  const double level = best_metric(run.curve, hib);
  Estimate e;
  if (std::isnan(level)) return e;
  const int64_t at = first_reaching(run.curve, level, hib);
  if (at <= 0) return e;
  const double floor = std::log(static_cast<double>(std::max<int64_t>(1, run.samples)));
  if (power) return {std::max(floor, power->log_samples), power->var};
  e = estimate_from(run.batch_size, level, at, &run.curve, finished, all, header, run.samples, ratio_line);
  if (std::isnan(e.log_samples) || run.samples <= at) return e;
  const auto tighter = [&](double x, double y) { return hib ? x > y : x < y; };
  double next = traces::kNaN;  // the next level past the run's own, short of the target
  for (const auto& r : all)
    for (const auto& [n, m] : r.curve)
      if (!std::isnan(m) && tighter(m, level) && tighter(header.target, m) && (std::isnan(next) || tighter(next, m)))
        next = m;
  if (std::isnan(next)) return e;
  const Estimate bound =
      estimate_from(run.batch_size, next, run.samples, nullptr, finished, all, header, run.samples, ratio_line);
  if (!std::isnan(bound.log_samples) && bound.log_samples > e.log_samples) e = bound;
  return e;
}

// Step 1 with the extrapolation "shared-curve": the learning curve shared across batch sizes. Its levels are those
// where the unfinished runs stopped (their best metric), then the target; step i is log(samples to
// level i+1 / samples to level i) of every run that reached level i+1 (a run at the target: its
// count). An unfinished run's estimate is its samples to its level plus the steps from there to the
// target: per step b's own runs' mean where b has any, else a line in log b through every run's
// (clamped to their range). Each borrowed step adds its residual variance (kLooseEstimateVar from
// fewer than three runs); the sum is at most kLooseEstimateVar. NaN where a step has no run.
class SharedCurve {
 public:
  SharedCurve(const std::vector<AdaptiveRun>& runs, const traces::RelationSet& header) : hib_(header.higher_is_better) {
    for (const auto& r : runs) {
      const double best = best_metric(r.curve, hib_);
      if (!r.reached && !std::isnan(best) && !better_or_equal(best, header.target, hib_)) levels_.push_back(best);
    }
    std::sort(levels_.begin(), levels_.end(), [&](double a, double b) { return hib_ ? a < b : a > b; });
    levels_.erase(std::unique(levels_.begin(), levels_.end()), levels_.end());
    levels_.push_back(header.target);
    steps_.resize(levels_.size() - 1);
    for (const auto& r : runs)
      for (size_t i = 0; i + 1 < levels_.size(); ++i) {
        const int64_t from = first_reaching(r.curve, levels_[i], hib_);
        const int64_t to = i + 2 == levels_.size() ? (r.reached ? r.samples : 0)
                                                   : first_reaching(r.curve, levels_[i + 1], hib_);
        if (from <= 0 || to < from) continue;
        steps_[i].push_back({r.batch_size, std::log(static_cast<double>(to) / static_cast<double>(from))});
      }
  }

  Estimate estimate(const AdaptiveRun& run) const {
    Estimate e;
    const double level = best_metric(run.curve, hib_);
    const auto it = std::find(levels_.begin(), levels_.end(), level);
    const int64_t at = std::isnan(level) ? 0 : first_reaching(run.curve, level, hib_);
    if (it == levels_.end() || at <= 0) return e;
    double log_n = std::log(static_cast<double>(at)), var = 0;
    for (auto i = static_cast<size_t>(it - levels_.begin()); i < steps_.size(); ++i) {
      const auto& pts = steps_[i];
      if (pts.empty()) return e;
      std::vector<double> own, log_b, ratio;
      for (const auto& [b, r] : pts) {
        if (b == run.batch_size) own.push_back(r);
        log_b.push_back(std::log(static_cast<double>(b)));
        ratio.push_back(r);
      }
      if (!own.empty()) {
        log_n += base::mean(own);
        continue;
      }
      const base::Line line = base::least_squares_line(log_b, ratio);
      const auto [lo, hi] = std::minmax_element(ratio.begin(), ratio.end());
      log_n += std::clamp(line.at(std::log(static_cast<double>(run.batch_size))), *lo, *hi);
      double resid = 0;
      for (size_t k = 0; k < ratio.size(); ++k) resid += std::pow(ratio[k] - line.at(log_b[k]), 2);
      var += ratio.size() > 2 ? resid / static_cast<double>(ratio.size() - 2) : kLooseEstimateVar;
    }
    e.log_samples = std::max(std::log(static_cast<double>(std::max<int64_t>(1, run.samples))), log_n);
    e.var = std::min(var, kLooseEstimateVar);
    return e;
  }

 private:
  bool hib_;
  std::vector<double> levels_;                            // from the loosest to the target
  std::vector<std::vector<std::pair<int, double>>> steps_;  // per step: (b, log ratio) of each run
};

std::string pct(double v) {
  return fmt::format("{:.2g} %", 100 * v);
}

}  // namespace

std::string_view to_string(AdaptiveExtrapolation e) {
  switch (e) {
    case AdaptiveExtrapolation::ratio:
      return "ratio";
    case AdaptiveExtrapolation::shared_curve:
      return "shared-curve";
    case AdaptiveExtrapolation::power_law:
      return "power-law";
  }
  return "?";
}

AdaptiveExtrapolation parse_adaptive_extrapolation(const std::string& text, const std::string& option_key) {
  for (const auto e : {AdaptiveExtrapolation::ratio, AdaptiveExtrapolation::shared_curve, AdaptiveExtrapolation::power_law})
    if (text == to_string(e)) return e;
  throw OptionError(option_key, fmt::format("'{}' is not an extrapolation of the adaptive campaign ({}, {} or {})", text,
                                            to_string(AdaptiveExtrapolation::ratio),
                                            to_string(AdaptiveExtrapolation::shared_curve),
                                            to_string(AdaptiveExtrapolation::power_law)));
}

std::string_view to_string(AdaptiveVerdict v) {
  switch (v) {
    case AdaptiveVerdict::Continue:
      return "continue";
    case AdaptiveVerdict::Decided:
      return "decided";
    case AdaptiveVerdict::Budget:
      return "budget";
  }
  return "?";
}

AdaptivePlan plan_round(const AdaptiveProblem& problem, const std::vector<AdaptiveRun>& runs, int round,
                        const AdaptiveOptions& options) {
  if (!problem.index) throw Error("an adaptive relation campaign needs the device's design space");
  if (problem.caps_w.empty()) throw Error("an adaptive relation campaign needs at least one cap of interest");
  if (options.run_budget_samples <= 0) throw Error("an adaptive relation campaign needs a positive run budget");
  if (!(options.growth > 1)) throw Error("an adaptive relation campaign needs a growth factor above 1");
  if (!(options.initial_fraction > 0 && options.initial_fraction <= 1))
    throw Error("an adaptive relation campaign needs an initial fraction in (0, 1]");
  if (!(options.estimate_z >= 0)) throw Error("an adaptive relation campaign needs an estimate z of at least 0");
  if (!(options.budget_first_share >= 0 && options.budget_first_share <= 1))
    throw Error("an adaptive relation campaign needs round 1's share of the compute budget in [0, 1]");
  if (options.initial_seeds < 1 || options.max_seeds < options.initial_seeds)
    throw Error("an adaptive relation campaign needs 1 <= initial seeds <= max seeds");
  const Space& space = problem.index->space();
  const auto& batches = space.batch_sizes();
  const auto& header = problem.relation;

  AdaptivePlan plan;
  plan.round = round;
  for (const auto& r : runs) plan.compute_used += static_cast<double>(r.samples);
  plan.relation = header;
  plan.relation.runs.clear();

  if (runs.empty()) {  // round 1: every batch size, a short budget
    // With a compute budget, round 1 spends budget_first_share of it across the batch sizes.
    const bool of_budget = round_one_spends_budget(options.compute_budget_samples, options.budget_first_share);
    const double runs_in_round = static_cast<double>(batches.size()) * options.initial_seeds;
    const int64_t first = std::clamp<int64_t>(
        std::llround(of_budget ? options.budget_first_share * options.compute_budget_samples / runs_in_round
                               : options.initial_fraction * static_cast<double>(options.run_budget_samples)),
        1, options.run_budget_samples);
    const std::string share =
        of_budget ? fmt::format("{:g} % of the compute budget over {} runs", 100 * options.budget_first_share,
                                runs_in_round)
                  : fmt::format("{:g} % of the run budget", 100 * options.initial_fraction);
    for (int b : batches) {
      for (int s = 0; s < options.initial_seeds; ++s) plan.orders.push_back({b, s, first, true});
      plan.decisions.push_back(
          {b, round, "start", fmt::format("round 1 trains every batch size to {} samples ({})", first, share)});
    }
    plan.reason = "round 1: every batch size for a short budget";
    plan.log_mean.assign(batches.size(), traces::kNaN);
    plan.log_var.assign(batches.size(), traces::kNaN);
    return plan;
  }

  // Step 1: the runs with their counts.
  std::vector<const AdaptiveRun*> finished;
  for (const auto& r : runs)
    if (r.reached && r.samples > 0) finished.push_back(&r);
  const SharedCurve shared(runs, header);
  std::map<int, std::vector<double>> extra_var;  // per b: the estimates' variances
  std::map<int, int> runs_at;
  std::vector<CurvePoints> curves;  // the power law, when asked for: one fit, its exponent shared by all runs
  const bool power_law = options.extrapolation == AdaptiveExtrapolation::power_law;
  if (power_law)
    for (const auto& r : runs) curves.push_back(r.curve);
  const PowerLawFit fit = power_law ? fit_power_law(curves, header.higher_is_better) : PowerLawFit{};
  for (size_t i = 0; i < runs.size(); ++i) {
    const AdaptiveRun& r = runs[i];
    traces::RelationRun rr;
    rr.batch_size = r.batch_size;
    rr.seed = r.seed;
    rr.budget_samples = r.samples;
    ++runs_at[r.batch_size];
    if (r.reached) {
      rr.reached = true;
      rr.samples = r.samples;
      extra_var[r.batch_size].push_back(0);
    } else {
      const PowerLawEstimate pl =
          power_law ? power_law_samples(fit, i, header.target, header.higher_is_better) : PowerLawEstimate{};
      // The power law or the shared curve where asked for and valid, else the ratio.
      Estimate e =
          options.extrapolation == AdaptiveExtrapolation::shared_curve ? shared.estimate(r) : Estimate{};
      if (std::isnan(e.log_samples)) e = estimate_run(r, finished, runs, header, pl.valid ? &pl : nullptr, options.ratio_line);
      rr.reached = !std::isnan(e.log_samples);
      // Stored at its upper end: a loose extrapolation must not make a stopped b look best.
      rr.samples = rr.reached
                       ? std::max<int64_t>(
                             r.samples, std::llround(std::exp(e.log_samples + options.estimate_z * std::sqrt(e.var))))
                       : r.samples;
      extra_var[r.batch_size].push_back(rr.reached ? e.var : kLooseEstimateVar);
    }
    plan.relation.runs.push_back(rr);
  }
  if (!std::isnan(problem.looser_level)) {
    traces::RelationSet looser = header;
    looser.runs.clear();
    looser.target = problem.looser_level;
    for (const auto& r : runs) {
      const int64_t at = first_reaching(r.curve, problem.looser_level, header.higher_is_better);
      if (at <= 0) continue;
      traces::RelationRun rr;
      rr.batch_size = r.batch_size;
      rr.seed = r.seed;
      rr.reached = true;
      rr.samples = at;
      rr.budget_samples = r.samples;
      looser.runs.push_back(rr);
    }
    if (!looser.runs.empty()) plan.looser = std::move(looser);
  }

  // Step 2: the posterior per b.
  const Relation rel = proxy_relation(plan.relation, space, plan.looser ? &*plan.looser : nullptr, problem.transfer);
  plan.log_mean.assign(batches.size(), traces::kNaN);
  plan.log_var.assign(batches.size(), traces::kNaN);
  for (size_t bi = 0; bi < batches.size(); ++bi) {
    // The proxy mean's posterior (what more proxy runs narrow), not the target interval around it.
    if (bi >= rel.proxy_log_mean_by_batch.size()) break;
    // An unknown variance (one seed per b: no spread to estimate) is left to the floor below.
    const double m = rel.proxy_log_mean_by_batch[bi];
    const double var = std::isfinite(rel.proxy_log_var_by_batch[bi]) ? rel.proxy_log_var_by_batch[bi] : 0.0;
    if (!std::isfinite(m)) continue;
    const int n = std::max(1, runs_at[batches[bi]]);
    double ev = 0;
    for (double v : extra_var[batches[bi]]) ev += v;
    plan.log_mean[bi] = m;
    plan.log_var[bi] = std::max(var, options.seed_var / n) + ev / (static_cast<double>(n) * n);
  }

  // Step 3: choice, contenders and expected regret per cap.
  PolicyContext ctx;
  ctx.index = problem.index;
  ctx.proxy = &rel;
  std::map<int, std::pair<double, std::string>> why_contender;  // b -> (its regret term, why) at its worst cap
  std::set<int> contenders_undecided;
  std::set<int> contenders_any;                           // b whose interval overlaps the choice's at some cap
  std::map<int, std::pair<double, std::string>> why_any;  // as why_contender, over every cap
  bool all_decided = true;
  // No cap is decided before some run has reached the target: until then every count is an
  // extrapolation from levels short of it, and the expected regret says how sure the estimates
  // are, not that a choice holds (the text task decided b = 64 at every cap after round 1, every
  // run below its target, and lost all nine choices). Requiring a run of each cap's own choice at
  // the target instead cost the Zeus replays mean regret (0.31 -> 0.35 %): a b that trains on
  // only to be chosen is what the others' estimates had already priced.
  const bool any_reached = std::any_of(runs.begin(), runs.end(), [](const AdaptiveRun& r) { return r.reached; });
  for (double cap : problem.caps_w) {
    AdaptiveCap ac;
    ac.cap_w = cap;
    std::vector<Selection> per_batch;
    const Selection s = decide(Policy::Pacer, ctx, cap, problem.rule, &per_batch);
    if (!s.feasible) {
      plan.caps.push_back(ac);
      continue;
    }
    ac.choice = s.batch_size;
    const auto log_time = [&](const Selection& p) {
      const size_t bi = p.batch_index;
      return std::log(p.predicted_time_s) - std::log(rel.expected_samples_by_batch[bi]) + plan.log_mean[bi];
    };
    const size_t star = s.batch_index;
    if (std::isnan(plan.log_mean[star])) {
      plan.caps.push_back(ac);
      continue;
    }
    const double mu_star = log_time(s), v_star = plan.log_var[star];
    std::vector<std::pair<int, double>> terms;  // contender b, its regret term
    for (const auto& p : per_batch) {
      if (!p.feasible || std::isnan(plan.log_mean[p.batch_index])) continue;
      if (p.batch_index == star) continue;
      const double mu = log_time(p), v = plan.log_var[p.batch_index];
      const double term = expected_excess(mu_star - mu, v_star + v);
      ac.expected_regret += term;
      if (mu - options.z * std::sqrt(v) <= mu_star + options.z * std::sqrt(v_star))
        terms.emplace_back(p.batch_size, term);
    }
    ac.contenders.push_back(s.batch_size);
    for (const auto& [b, term] : terms) ac.contenders.push_back(b);
    std::sort(ac.contenders.begin(), ac.contenders.end());
    contenders_any.insert(ac.contenders.begin(), ac.contenders.end());
    for (const auto& [b, term] : terms) {
      auto& w = why_any[b];
      if (w.second.empty() || term > w.first)
        w = {term, fmt::format("contender at {:g} W: its interval overlaps the choice b={}'s (regret term {})", cap,
                               s.batch_size, pct(term))};
    }
    if (why_any[s.batch_size].second.empty())
      why_any[s.batch_size] = {ac.expected_regret, fmt::format("the choice at {:g} W", cap)};
    if (ac.expected_regret > options.tolerance || !any_reached) {
      all_decided = false;
      // The runs go where the regret is: a contender whose share of the expected regret is below
      // tolerance / contenders would leave the cap decided on its own; b* trains with any other.
      const double share = options.tolerance / static_cast<double>(ac.contenders.size());
      bool any = false;
      for (const auto& [b, term] : terms)
        if (term > share) {
          contenders_undecided.insert(b);
          any = true;
        }
      if (any || terms.empty() || !any_reached) contenders_undecided.insert(s.batch_size);
      const auto note = [&](int b, double term, const std::string& why) {
        auto& w = why_contender[b];
        if (w.second.empty() || term > w.first) w = {term, why};
      };
      note(s.batch_size, ac.expected_regret,
           ac.expected_regret > options.tolerance
               ? fmt::format("the choice at {:g} W, expected regret {} above the tolerance {}", cap,
                             pct(ac.expected_regret), pct(options.tolerance))
               : fmt::format("the choice at {:g} W, expected regret {} but no run at the target yet", cap,
                             pct(ac.expected_regret)));
      for (const auto& [b, term] : terms)
        note(b, term,
             fmt::format("contender at {:g} W: its interval overlaps the choice b={}'s (regret term {})", cap,
                         s.batch_size, pct(term)));
    }
    plan.caps.push_back(ac);
  }

  // Step 4: verdict and orders.
  std::map<int, std::vector<const AdaptiveRun*>> by_b;
  for (const auto& r : runs) by_b[r.batch_size].push_back(&r);
  const auto open = [&](const AdaptiveRun& r) {
    return !r.reached && !r.exhausted && r.samples < options.run_budget_samples;
  };
  const auto trained_now = [&](int b) {  // an unfinished run of b trained in the round just done
    for (const auto* r : by_b[b])
      if (open(*r) && (r->last_round == 0 || r->last_round == round)) return true;
    return false;
  };
  // With a compute budget the campaign spends all of it (a decided cap's choice gains from more runs
  // of its contenders): the batch sizes that train are the contenders at every cap; without one,
  // those at the undecided caps, and the campaign ends when every cap is decided.
  const bool budgeted = options.compute_budget_samples > 0;
  if (all_decided && !budgeted) {
    plan.verdict = AdaptiveVerdict::Decided;
    plan.reason =
        fmt::format("decided: expected regret <= {} at all {} caps", pct(options.tolerance), problem.caps_w.size());
  } else if (budgeted && plan.compute_used >= options.compute_budget_samples) {
    plan.verdict = AdaptiveVerdict::Budget;
    plan.reason = fmt::format("compute budget spent: {:.4g} of {:.4g} samples", plan.compute_used,
                              options.compute_budget_samples);
  }
  if (plan.verdict != AdaptiveVerdict::Continue) {
    for (int b : batches)
      if (trained_now(b)) plan.decisions.push_back({b, round, "stop", plan.reason});
    return plan;
  }
  const std::set<int>& active = budgeted ? contenders_any : contenders_undecided;
  auto& why_of = budgeted ? why_any : why_contender;
  const bool hib = header.higher_is_better;
  const auto tighter = [&](double x, double y) { return hib ? x > y : x < y; };
  // Run r's samples predicted at `goal`: its samples to its own level times the median ratio
  // goal/level of the runs that reached both; 0: none did.
  const auto predicted_at = [&](const AdaptiveRun& r, double goal) -> int64_t {
    const double level = best_metric(r.curve, hib);
    const int64_t at = std::isnan(level) ? 0 : first_reaching(r.curve, level, hib);
    if (at <= 0) return 0;
    std::vector<double> ratios;
    for (const auto& o : runs) {
      const int64_t from = first_reaching(o.curve, level, hib), to = first_reaching(o.curve, goal, hib);
      if (from > 0 && to >= from) ratios.push_back(static_cast<double>(to) / static_cast<double>(from));
    }
    return ratios.empty() ? 0 : std::llround(static_cast<double>(at) * base::median(ratios));
  };
  // First, with a compute budget and the policy's looser level known: every batch size's first run
  // to the looser level (what the pacer policy's blend ranks on, and what the cheapest fixed cut that
  // keeps the choices trains: one seed per batch size one level looser than the target); no batch
  // size stops before its first run is there.
  const auto seed_limit = [&](int b) {
    const auto limit = options.seeds_by_batch.find(b);
    return limit == options.seeds_by_batch.end() ? options.max_seeds : std::min(options.max_seeds, limit->second);
  };
  // The climb's width (see the width rule below): its round-1 seeds (seed < initial_seeds), or every
  // seed once the rule has widened the climb (a run beyond the round-1 seeds exists while it climbs).
  bool widened = false;
  for (const auto& r : runs) widened |= r.seed >= options.initial_seeds;
  const auto first_runs = [&](int b) {
    std::vector<const AdaptiveRun*> out;
    for (const auto* r : by_b[b])
      if (widened || r->seed < options.initial_seeds) out.push_back(r);
    return out;
  };
  // The climb goes one level at a time (a budget too small for the looser level ends with every
  // first run at one looser level, as a fixed cut "k levels looser x 1 seed"): the goal is the
  // level next tighter than the loosest first run's, among the levels any run's curve shows, and
  // at most the looser level; the first runs below it train until they reach it (stop_level), to
  // `growth` times their samples predicted there at most.
  const auto below = [&](const AdaptiveRun& r, double level) {
    return open(r) && first_reaching(r.curve, level, hib) <= 0;
  };
  bool climbing = false;
  double goal = problem.looser_level;
  std::vector<std::pair<int64_t, int64_t>> climb_need;  // per climbing order: (its samples, its need)
  if (budgeted && !std::isnan(problem.looser_level)) {
    double loosest = traces::kNaN;
    bool no_level = false;
    for (int b : batches)
      for (const auto* lead : first_runs(b)) {
        if (!below(*lead, problem.looser_level)) continue;
        climbing = true;
        const double level = best_metric(lead->curve, hib);
        if (std::isnan(level))
          no_level = true;
        else if (std::isnan(loosest) || tighter(loosest, level))
          loosest = level;
      }
    std::set<double> seen;  // the levels the curves show, from the looser level's side
    for (const auto& r : runs)
      for (const auto& [n, m] : r.curve)
        if (!std::isnan(m) && !tighter(m, problem.looser_level)) seen.insert(m);
    bool known = no_level;  // a level tighter than the loosest first run's that some curve shows
    for (double level : seen)
      if (no_level ? true : tighter(level, loosest)) {
        known = true;
        if (tighter(goal, level)) goal = level;  // the loosest candidate: the next step
      }
    // No curve shows a level past the loosest first run's yet (every run at the tightest level
    // seen): the next level is one spacing of the levels the curves show further, not the looser
    // level itself (a climb straight to it, cut by the budget, left the runs at different levels:
    // b = 64 of ImageNet stopped at 0.4 mid-stall while the other b trained past 0.45).
    if (!known && !std::isnan(loosest)) {
      const double gap = median_gap(std::vector<double>(seen.begin(), seen.end()));
      const double next = loosest + (hib ? 1 : -1) * gap * (1 - 1e-9);  // below the spacing by rounding only
      if (gap > 0 && tighter(problem.looser_level, next)) goal = next;
    }
  }
  // The width rule: while the climb has its round-1 seeds alone and every first run has a level,
  // it either widens (every batch size's missing seeds train to the loosest first run's level `cur`,
  // then all climb in step, as a fixed cut of all seeds) or goes on with one seed (as a fixed cut of
  // one seed). On the campaign's own runs it predicts how many levels past `cur` each gets on the
  // budget left, one seed j1 and every seed jA (the levels' spacing: the median gap between the
  // levels the curves show; a run's samples per level: a line in log b through every run's log
  // step between two consecutive levels it reached), and widens when the seed variance it averages
  // out exceeds the extrapolation variance of the levels it gives up:
  //   s2_seed x mean_b (1/k_b - 1/n_b)  >  (j1 - jA) x s2_step,
  // k_b the runs b has, n_b its seed limit; s2_seed the pooled within-b variance of log samples to
  // a level (every level two runs of one b reached; none: options.seed_var); s2_step the steps'
  // residual variance about that line (fewer than three steps: kLooseEstimateVar). No constant is
  // fitted. Where every seed reaches the looser level anyway it does not widen (the contenders'
  // seeds there, below, cost less).
  bool widen = false;
  double cur = traces::kNaN;
  std::string width_note;  // the rule's figures, in the decision log
  if (climbing && !widened) {
    bool every_level = true;
    for (int b : batches)
      for (const auto* lead : first_runs(b)) {
        const double level = best_metric(lead->curve, hib);
        if (std::isnan(level))
          every_level = false;
        else if (std::isnan(cur) || tighter(cur, level))
          cur = level;
      }
    std::vector<double> seen;  // the levels the curves show, up to the looser level, loosest first
    {
      std::set<double> levels;
      for (const auto& r : runs)
        for (const auto& [n, m] : r.curve)
          if (!std::isnan(m) && !tighter(m, problem.looser_level)) levels.insert(m);
      seen.assign(levels.begin(), levels.end());
      if (!hib) std::reverse(seen.begin(), seen.end());
    }
    std::vector<double> gaps, step_b, step;
    for (size_t i = 0; i + 1 < seen.size(); ++i) {
      gaps.push_back(std::abs(seen[i + 1] - seen[i]));
      for (const auto& r : runs) {
        const int64_t from = first_reaching(r.curve, seen[i], hib), to = first_reaching(r.curve, seen[i + 1], hib);
        if (from > 0 && to >= from) {
          step_b.push_back(std::log(static_cast<double>(r.batch_size)));
          step.push_back(std::log(static_cast<double>(to) / static_cast<double>(from)));
        }
      }
    }
    if (every_level && !std::isnan(cur) && !gaps.empty() && step.size() >= 3) {
      const double gap = median_gap(seen);
      const int levels_left =
          gap > 0 ? static_cast<int>(std::lround(std::abs(problem.looser_level - cur) / gap)) : 0;
      const base::Line line = base::least_squares_line(step_b, step);
      double s2_step = 0;
      for (size_t i = 0; i < step.size(); ++i) s2_step += std::pow(step[i] - line.at(step_b[i]), 2);
      s2_step /= static_cast<double>(step.size() - 2);
      const double left = options.compute_budget_samples - plan.compute_used;
      int j1 = -1, ja = -1;
      for (int j = 0; j <= levels_left; ++j) {
        double cost1 = 0, cost_a = 0;
        for (int b : batches) {
          const auto leads = first_runs(b);
          if (leads.empty()) continue;
          const double per_step = std::max(0.0, line.at(std::log(static_cast<double>(b))));
          for (const auto* lead : leads)
            if (open(*lead)) {
              const double at = static_cast<double>(first_reaching(lead->curve, cur, hib)) * std::exp(j * per_step);
              cost1 += std::max(0.0, at - static_cast<double>(lead->samples));
            }
          const double at = static_cast<double>(first_reaching(leads.front()->curve, cur, hib)) * std::exp(j * per_step);
          cost_a += std::max(0, seed_limit(b) - static_cast<int>(by_b[b].size())) * at;
        }
        cost_a += cost1;
        if (cost1 <= left) j1 = j;
        if (cost_a <= left) ja = j;
      }
      if (ja >= 0 && ja < levels_left) {
        double ss = 0, dof = 0;
        std::set<double> levels;
        for (const auto& r : runs)
          for (const auto& [n, m] : r.curve)
            if (!std::isnan(m)) levels.insert(m);
        for (double level : levels)
          for (int b : batches) {
            std::vector<double> logs;
            for (const auto* r : by_b[b])
              if (const int64_t at = first_reaching(r->curve, level, hib); at > 0)
                logs.push_back(std::log(static_cast<double>(at)));
            if (logs.size() < 2) continue;
            const double m = base::mean(logs);
            for (double x : logs) ss += (x - m) * (x - m);
            dof += static_cast<double>(logs.size() - 1);
          }
        const double s2_seed = dof > 0 ? ss / dof : options.seed_var;
        double gain = 0;
        for (int b : batches) {
          const double k = static_cast<double>(std::max<size_t>(1, by_b[b].size()));
          gain += s2_seed * (1 / k - 1 / std::max(k, static_cast<double>(seed_limit(b))));
        }
        gain /= static_cast<double>(std::max<size_t>(1, batches.size()));
        const double loss = static_cast<double>(j1 - ja) * s2_step;
        widen = gain > loss;
        width_note = fmt::format(
            " (width rule: seed variance averaged out {:.3g} {} extrapolation variance given up {:.3g}: every seed "
            "{} levels past {:g}, one seed {})",
            gain, widen ? ">" : "<=", loss, ja, cur, j1);
      }
    }
  }
  if (widen) {
    for (int b : batches) {
      const auto leads = first_runs(b);
      const int k = static_cast<int>(by_b[b].size()), n = seed_limit(b);
      int next_seed = 0;
      for (const auto* r : by_b[b]) next_seed = std::max(next_seed, r->seed + 1);
      const int64_t at = leads.empty() ? 0 : first_reaching(leads.front()->curve, cur, hib);
      for (int s = k; s < n && at > 0; ++s, ++next_seed) {
        const int64_t to = std::min<int64_t>(options.run_budget_samples, std::llround(options.growth * static_cast<double>(at)));
        plan.orders.push_back({b, next_seed, to, true, cur});
        climb_need.emplace_back(0, std::min<int64_t>(options.run_budget_samples, at));
      }
      plan.decisions.push_back(
          {b, round, n > k && at > 0 ? "add-seed" : "wait",
           fmt::format("the climb widens: every seed to level {:g}{}", cur, width_note)});
    }
  } else if (climbing) {
    for (int b : batches) {
      bool climbs = false;
      for (const auto* lead : first_runs(b)) {
        if (!below(*lead, goal)) continue;
        climbs = true;
        // Its need: the samples predicted at the goal (unknown: growth times its samples); it may
        // train to growth times the prediction (it stops at the goal).
        const int64_t f = predicted_at(*lead, goal);
        const int64_t need =
            std::min(options.run_budget_samples,
                     std::max<int64_t>(
                         lead->samples + 1,
                         f > lead->samples ? f : std::llround(options.growth * static_cast<double>(lead->samples))));
        const int64_t to =
            f > lead->samples ? std::min(options.run_budget_samples,
                                         std::max<int64_t>(need, std::llround(options.growth * static_cast<double>(f))))
                              : need;
        plan.orders.push_back({b, lead->seed, to, false, goal});
        climb_need.emplace_back(lead->samples, need);
      }
      plan.decisions.push_back(
          {b, round, climbs ? "continue" : "wait",
           climbs ? fmt::format("every batch size's first runs climb to level {:g} (the looser level {:g}){}", goal,
                                problem.looser_level, width_note)
                  : fmt::format("its first runs are at level {:g} (or done) while the others climb to it", goal)});
    }
  }
  // Then, with a compute budget, the contenders (at any cap) gain seeds at the looser level, one per
  // round each, before any run goes on to the target: counts at one level are what a fixed cut of
  // all seeds ranks on, and they cost a fraction of counts at the target.
  bool seeding = false;
  if (budgeted && !std::isnan(problem.looser_level) && !climbing) {
    for (int b : batches) {
      if (!contenders_any.count(b)) continue;
      const auto& rs = by_b[b];
      const auto limit = options.seeds_by_batch.find(b);
      const int seeds =
          limit == options.seeds_by_batch.end() ? options.max_seeds : std::min(options.max_seeds, limit->second);
      if (static_cast<int>(rs.size()) >= seeds) continue;
      int64_t longest = 0;  // its runs' samples to the looser level
      int next_seed = 0;
      bool all_there = true;
      for (const auto* r : rs) {
        next_seed = std::max(next_seed, r->seed + 1);
        const int64_t at = first_reaching(r->curve, problem.looser_level, hib);
        if (at > 0)
          longest = std::max(longest, at);
        else if (open(*r))
          all_there = false;
      }
      if (!all_there || longest <= 0) continue;
      const int64_t to = std::min<int64_t>(options.run_budget_samples, std::llround(options.growth * longest));
      plan.orders.push_back({b, next_seed, to, true, problem.looser_level});
      plan.decisions.push_back(
          {b, round, "add-seed",
           fmt::format("{}; a new seed to the looser level {:g}", why_any[b].second, problem.looser_level)});
      seeding = true;
    }
  }
  for (int b : (climbing || seeding ? std::vector<int>{} : batches)) {
    const auto& rs = by_b[b];
    if (!active.count(b)) {
      if (trained_now(b))
        plan.decisions.push_back({b, round, "stop", "not a contender at any undecided cap: its runs stay, censored"});
      continue;
    }
    const std::string& why = why_of[b].second;
    bool ordered = false;
    for (const auto* r : rs)
      if (open(*r)) {
        const int64_t to = std::min(options.run_budget_samples,
                                    std::max<int64_t>(r->samples + 1, std::llround(options.growth * r->samples)));
        plan.orders.push_back({b, r->seed, to, false});
        ordered = true;
      }
    if (ordered) {
      plan.decisions.push_back({b, round, "continue", why});
      continue;
    }
    int64_t longest = 0;
    int next_seed = 0;
    bool any_reached = false;
    for (const auto* r : rs) {
      next_seed = std::max(next_seed, r->seed + 1);
      if (r->reached) {
        any_reached = true;
        longest = std::max(longest, r->samples);
      }
    }
    const auto limit = options.seeds_by_batch.find(b);
    const int seeds =
        limit == options.seeds_by_batch.end() ? options.max_seeds : std::min(options.max_seeds, limit->second);
    if (any_reached && static_cast<int>(rs.size()) < seeds) {
      const int64_t to = std::min<int64_t>(options.run_budget_samples, std::llround(options.growth * longest));
      plan.orders.push_back({b, next_seed, to, true});
      plan.decisions.push_back({b, round, "add-seed", why});
    } else {
      plan.decisions.push_back({b, round, "done",
                                any_reached
                                    ? fmt::format("{}; it has all {} seeds", why, seeds)
                                    : fmt::format("{}; its runs spent their budget without reaching the target", why)});
    }
  }
  // A climbing round never asks for more than the budget leaves: where the needs exceed it, every
  // first run trains the same share of its need (the runs stay in step). Other rounds go
  // most-needed first, whole, while the budget lasts (the campaign's fit to its budget, or the
  // replay's).
  if (climbing) {
    double cost = 0;
    for (const auto& [from, need] : climb_need) cost += static_cast<double>(need - from);
    const double left = options.compute_budget_samples - plan.compute_used;
    if (cost > left && cost > 0)
      for (size_t i = 0; i < plan.orders.size(); ++i) {
        const auto [from, need] = climb_need[i];
        plan.orders[i].train_to_samples =
            from +
            std::max<int64_t>(1, static_cast<int64_t>(std::floor(static_cast<double>(need - from) * left / cost)));
      }
  }
  // Most-needed first (a campaign with a budget trains them in this order): by the regret the b's
  // uncertainty costs at its worst cap, then ascending b.
  std::stable_sort(plan.orders.begin(), plan.orders.end(), [&](const AdaptiveOrder& a, const AdaptiveOrder& b) {
    return why_of[a.batch_size].first > why_of[b.batch_size].first;
  });
  if (plan.orders.empty() && all_decided) {
    plan.verdict = AdaptiveVerdict::Decided;
    plan.reason = fmt::format("decided: expected regret <= {} at all {} caps, and nothing left to train",
                              pct(options.tolerance), problem.caps_w.size());
  } else if (plan.orders.empty()) {
    plan.verdict = AdaptiveVerdict::Budget;
    plan.reason = "nothing left to train: every contender has all its seeds at the target or its run budget spent";
  } else {
    plan.reason =
        fmt::format("continue: {} of {} caps undecided, {} runs ordered",
                    std::count_if(plan.caps.begin(), plan.caps.end(),
                                  [&](const AdaptiveCap& c) { return c.expected_regret > options.tolerance; }),
                    plan.caps.size(), plan.orders.size());
  }
  return plan;
}

std::string adaptive_cut_label(const std::string& budget_of) {
  return budget_of.empty() ? "adaptive" : "adaptive at the compute of " + budget_of;
}

bool is_adaptive_cut(std::string_view label) {
  return label.substr(0, 8) == "adaptive";
}

std::map<int, std::vector<int>> replay_seed_order(const traces::RelationSet& runs, uint64_t order_seed) {
  std::map<int, std::vector<int>> order;
  for (const auto& r : runs.runs) order[r.batch_size].push_back(r.seed);
  const uint64_t name_hash = base::text_hash(runs.name);  // orders differ per workload
  for (auto& [b, seeds] : order) {
    std::sort(seeds.begin(), seeds.end());
    if (order_seed != 0) {
      std::mt19937_64 rng(base::mix64(order_seed ^ base::mix64(name_hash ^ static_cast<uint64_t>(b))));
      std::shuffle(seeds.begin(), seeds.end(), rng);
    }
  }
  return order;
}

ReplayPool reorder_pool(const ReplayPool& pool, uint64_t order_seed) {
  std::map<std::pair<int, int>, int> rank;  // (b, seed) -> its rank in the draw order
  for (const auto& [b, seeds] : replay_seed_order(pool.runs, order_seed))
    for (size_t k = 0; k < seeds.size(); ++k) rank[{b, seeds[k]}] = static_cast<int>(k);
  ReplayPool out = pool;
  for (auto& r : out.runs.runs) r.seed = rank.at({r.batch_size, r.seed});
  out.curve.points.clear();
  for (auto p : pool.curve.points)
    if (const auto it = rank.find({p.batch_size, p.seed}); it != rank.end()) {
      p.seed = it->second;
      out.curve.points.push_back(p);
    }
  return out;
}

std::vector<CutRelation> cut_over_orders(const ReplayPool& pool, const ProxyCut& cut, int orders,
                                         Extrapolation extrapolation) {
  std::vector<CutRelation> out;
  if (cut.seeds == 0 || orders <= 0) {
    out.push_back(cut_relation(pool.runs, pool.curve, cut, extrapolation));
    return out;
  }
  for (int k = 1; k <= orders; ++k) {
    const ReplayPool drawn = reorder_pool(pool, static_cast<uint64_t>(k));
    out.push_back(cut_relation(drawn.runs, drawn.curve, cut, extrapolation));
  }
  return out;
}

ReplayResult replay_adaptive(const AdaptiveProblem& problem, const ReplayPool& pool, const ReplayOptions& options) {
  // The pool: per b, its runs in the order seeds are drawn, with their curves.
  struct PoolRun {
    const traces::RelationRun* run;
    int64_t end = 0;  // samples it trains at most: to the target, or its budget
    std::vector<std::pair<int64_t, double>> curve;
  };
  std::map<int, std::vector<PoolRun>> by_b;
  ReplayResult result;
  int64_t longest = 0;
  for (const auto& r : pool.runs.runs) {
    PoolRun p{&r, run_compute_samples(r), {}};
    for (const auto& pt : pool.curve.points)
      if (pt.batch_size == r.batch_size && pt.seed == r.seed) p.curve.emplace_back(pt.samples, pt.metric);
    std::sort(p.curve.begin(), p.curve.end());
    result.compute_full += static_cast<double>(p.end);
    longest = std::max(longest, p.end);
    by_b[r.batch_size].push_back(std::move(p));
  }
  if (by_b.empty()) throw Error(fmt::format("relation '{}': no runs to replay", pool.runs.name));
  const auto draw = replay_seed_order(pool.runs, options.order_seed);
  for (auto& [b, runs] : by_b) {
    const auto& seeds = draw.at(b);
    const auto rank = [&](const PoolRun& x) {
      return std::find(seeds.begin(), seeds.end(), x.run->seed) - seeds.begin();
    };
    std::stable_sort(runs.begin(), runs.end(), [&](const PoolRun& x, const PoolRun& y) { return rank(x) < rank(y); });
  }
  AdaptiveOptions engine = options.engine;
  if (engine.run_budget_samples <= 0) engine.run_budget_samples = longest;
  // Equal seeds: as many seeds at a b as the full campaign has there (the near-ties may get them all).
  for (const auto& [b, runs] : by_b) {
    engine.seeds_by_batch[b] = static_cast<int>(runs.size());
    engine.max_seeds = std::max(engine.max_seeds, static_cast<int>(runs.size()));
  }
  const double budget = options.budget_share > 0 ? options.budget_share * result.compute_full : 0;
  if (budget > 0 && (engine.compute_budget_samples <= 0 || engine.compute_budget_samples > budget))
    engine.compute_budget_samples = budget;

  std::vector<AdaptiveRun> runs;
  std::map<std::pair<int, int>, size_t> at;  // (b, seed) -> index in runs
  bool out_of_budget = false, pool_empty = false;
  for (int round = 0; round <= options.max_rounds; ++round) {
    AdaptivePlan plan = plan_round(problem, runs, round, engine);
    result.log.insert(result.log.end(), plan.decisions.begin(), plan.decisions.end());
    result.rounds = round;
    if (plan.verdict != AdaptiveVerdict::Continue || out_of_budget || round == options.max_rounds) {
      if (plan.verdict == AdaptiveVerdict::Continue) {
        plan.verdict = AdaptiveVerdict::Budget;
        plan.reason = pool_empty ? std::string("the pool has no run left that the engine asks for")
                      : out_of_budget
                          ? fmt::format("compute budget spent: {:.4g} of {:.4g} samples", result.compute_used, budget)
                          : fmt::format("stopped after {} rounds", options.max_rounds);
        plan.orders.clear();
      }
      result.final = std::move(plan);
      break;
    }
    bool bought = false;
    for (const auto& o : plan.orders) {
      const auto pit = by_b.find(o.batch_size);
      if (pit == by_b.end() || o.seed < 0 || static_cast<size_t>(o.seed) >= pit->second.size()) continue;
      const PoolRun& p = pit->second[static_cast<size_t>(o.seed)];
      auto [it, fresh] = at.try_emplace({o.batch_size, o.seed}, runs.size());
      if (fresh) runs.push_back({o.batch_size, o.seed, 0, false, false, 0, {}});
      AdaptiveRun& r = runs[it->second];
      int64_t to = std::min(o.train_to_samples, p.end);
      if (!std::isnan(o.stop_level))  // it stops where its curve reaches the level
        if (const int64_t at = first_reaching(p.curve, o.stop_level, pool.runs.higher_is_better); at > r.samples)
          to = std::min(to, at);
      if (budget > 0) {
        const double left = budget - result.compute_used;
        if (left < static_cast<double>(to - r.samples)) {
          to = r.samples + std::max<int64_t>(0, static_cast<int64_t>(std::floor(left)));
          out_of_budget = true;
        }
      }
      if (to <= r.samples) {
        if (out_of_budget) break;
        continue;
      }
      result.compute_used += static_cast<double>(to - r.samples);
      bought = true;
      r.samples = to;
      r.last_round = round + 1;
      r.reached = p.run->reached && p.run->samples <= to;
      if (r.reached) r.samples = p.run->samples;
      r.exhausted = !r.reached && to >= p.end;
      r.curve.clear();
      for (const auto& pt : p.curve)
        if (pt.first <= r.samples) r.curve.push_back(pt);
      if (out_of_budget) break;
    }
    if (!bought) {  // nothing the pool can give: stop with what was bought
      out_of_budget = true;
      pool_empty = true;
    }
  }
  return result;
}

std::string format_decisions(const std::vector<AdaptiveDecision>& decisions) {
  std::string out;
  for (const auto& d : decisions)
    out += fmt::format("round {:<3} b={:<6} {:<9} {}\n", d.round, d.batch_size, d.action, d.why);
  return out;
}

}  // namespace pacer::explore
