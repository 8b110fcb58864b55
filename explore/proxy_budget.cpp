#include "explore/proxy_budget.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "base/error.hpp"
#include "base/stats.hpp"
#include "base/units.hpp"
#include "explore/adaptive.hpp"
#include "traces/csv.hpp"

namespace pacer::explore {
namespace {

bool is_full(const ProxyCut& c) {
  return c.stop == ProxyCut::Stop::none && c.seeds == 0;
}

// Per batch size, the `keep` lowest seeds of the relation (all when keep is 0).
std::set<std::pair<int, int>> kept_runs(const traces::RelationSet& set, int keep) {
  std::map<int, std::set<int>> seeds;
  for (const auto& r : set.runs) seeds[r.batch_size].insert(r.seed);
  std::set<std::pair<int, int>> kept;
  for (const auto& [b, s] : seeds) {
    int n = 0;
    for (int seed : s)
      if (keep == 0 || n++ < keep) kept.insert({b, seed});
  }
  return kept;
}

// The curve's metric levels looser than the relation's target, nearest first.
std::vector<double> looser_levels(const traces::RelationSet& proxy, const traces::LearningCurve& curve) {
  std::set<double> looser;
  for (const auto& p : curve.points)
    if (proxy.higher_is_better ? p.metric < proxy.target : p.metric > proxy.target) looser.insert(p.metric);
  std::vector<double> order(looser.begin(), looser.end());  // ascending
  if (proxy.higher_is_better) std::reverse(order.begin(), order.end());
  return order;
}

std::string format_samples(int64_t n) {
  if (n >= 10'000'000) return fmt::format("{:.0f}M samples", static_cast<double>(n) / 1e6);
  if (n >= 10'000) return fmt::format("{:.0f}k samples", static_cast<double>(n) / 1e3);
  return fmt::format("{} samples", n);
}

}  // namespace

std::string ProxyCut::label() const {
  std::string s;
  switch (stop) {
    case Stop::none:
      s = "full";
      break;
    case Stop::level:
      s = fmt::format("level {:g}", level);
      break;
    case Stop::looser:
      s = fmt::format("{} level{} looser", looser, looser == 1 ? "" : "s");
      break;
    case Stop::samples:
      s = format_samples(samples);
      break;
    case Stop::fraction:
      s = fmt::format("{:g}% of the longest run", 100 * fraction);
      break;
  }
  if (seeds > 0) s += fmt::format(" x {} seed{}", seeds, seeds == 1 ? "" : "s");
  return s;
}

ProxyCut parse_cut(const std::string& text, const std::string& option_key) {
  const auto bad = [&](const std::string& why) {
    return OptionError(option_key, fmt::format("'{}': {} (full, level:<metric>, looser:<k>, samples:<count> or "
                                               "fraction:<f>, each with an optional @<seeds>, e.g. looser:1@1)",
                                               text, why));
  };
  ProxyCut c;
  std::string body = text;
  if (const auto at = body.find('@'); at != std::string::npos) {
    const std::string seeds = body.substr(at + 1);
    body = body.substr(0, at);
    const auto n = units::to_integer(seeds, 1, 1000);
    if (!n) throw bad("the seeds after @ must be a count from 1 to 1000");
    c.seeds = static_cast<int>(*n);
  }
  const auto colon = body.find(':');
  const std::string kind = body.substr(0, colon), value = colon == std::string::npos ? "" : body.substr(colon + 1);
  if (kind == "full" && colon == std::string::npos) return c;
  if (kind == "level") {
    c.stop = ProxyCut::Stop::level;
    const auto v = units::to_number(value);
    if (!v || !std::isfinite(*v)) throw bad("not a metric value");
    c.level = *v;
  } else if (kind == "looser") {
    c.stop = ProxyCut::Stop::looser;
    const auto v = units::to_integer(value, 1, 100);
    if (!v) throw bad("not a count of levels from 1 to 100");
    c.looser = static_cast<int>(*v);
  } else if (kind == "samples") {
    c.stop = ProxyCut::Stop::samples;
    const auto v = units::to_integer(value, 1);
    if (!v) throw bad("not a positive count");
    c.samples = *v;
  } else if (kind == "fraction") {
    c.stop = ProxyCut::Stop::fraction;
    const auto v = units::to_number(value);
    if (!v || !(*v > 0 && *v <= 1)) throw bad("not a fraction in (0, 1]");
    c.fraction = *v;
  } else {
    throw bad("unknown cut");
  }
  return c;
}

double best_metric(const std::vector<std::pair<int64_t, double>>& seen, bool higher_is_better) {
  double best = traces::kNaN;
  for (const auto& [n, m] : seen)
    if (!std::isnan(m) && (std::isnan(best) || (higher_is_better ? m > best : m < best))) best = m;
  return best;
}

double extrapolate_samples(std::vector<std::pair<int64_t, double>> points, double target, bool higher_is_better,
                           int last_points) {
  // One point per sample count, the best metric there (levels first reached at the same epoch).
  std::sort(points.begin(), points.end());
  std::vector<std::pair<int64_t, double>> distinct;
  for (const auto& [n, m] : points) {
    if (n <= 0 || std::isnan(m)) continue;
    if (!distinct.empty() && distinct.back().first == n) {
      auto& best = distinct.back().second;
      best = higher_is_better ? std::max(best, m) : std::min(best, m);
    } else {
      distinct.emplace_back(n, m);
    }
  }
  if (distinct.size() < 2) return traces::kNaN;
  const size_t k = std::min(distinct.size(), static_cast<size_t>(std::max(2, last_points)));
  std::vector<double> log_n_seen, metric;
  for (size_t i = distinct.size() - k; i < distinct.size(); ++i) {
    log_n_seen.push_back(std::log(static_cast<double>(distinct[i].first)));
    metric.push_back(distinct[i].second);
  }
  const base::Line line = base::least_squares_line(log_n_seen, metric);
  if (line.constant) return traces::kNaN;  // the sample counts are one, up to rounding
  if (higher_is_better ? !(line.slope > 0) : !(line.slope < 0)) return traces::kNaN;  // not moving toward the target
  const double log_n = (target - line.intercept) / line.slope;
  if (!std::isfinite(log_n) || log_n > 60) return traces::kNaN;
  return std::max(std::exp(log_n), static_cast<double>(distinct.back().first));
}

std::string_view to_string(Extrapolation e) {
  return e == Extrapolation::curve ? "curve" : "ratio";
}

Extrapolation parse_extrapolation(const std::string& text, const std::string& option_key) {
  if (text == "curve") return Extrapolation::curve;
  if (text == "ratio") return Extrapolation::ratio;
  throw OptionError(option_key, fmt::format("'{}' is not an extrapolation (curve or ratio)", text));
}

namespace {

// A kept run cut at `stop` samples, before its samples-to-target is estimated.
struct CutRun {
  traces::RelationRun run;
  int64_t stop = 0;
  bool finished = false;                         // reached the target within the cut
  std::vector<std::pair<int64_t, double>> seen;  // its learning curve up to the cut
};

// Extrapolation::ratio: every unfinished run's count as its samples to a common level times one
// shared ratio (see the header). False when no level or no ratio can be formed: the caller falls
// back to the runs' own curves.
bool shared_ratio(std::vector<CutRun>& runs, const traces::LearningCurve& curve, const traces::RelationSet& proxy,
                  double cut_level, CutRelation& out) {
  const bool hib = proxy.higher_is_better;
  double level = cut_level;
  if (std::isnan(level))  // a cut of samples: the highest level every unfinished run reached
    for (const auto& c : runs)
      if (!c.finished) {
        const double best = best_metric(c.seen, hib);
        if (std::isnan(best)) return false;
        level = std::isnan(level) ? best : hib ? std::min(level, best) : std::max(level, best);
      }
  if (std::isnan(level)) return false;
  std::vector<double> exact, extrapolated;
  for (const auto& c : runs) {
    const int64_t at = curve.first_reaching(c.run.batch_size, c.run.seed, level);
    if (at <= 0 || at > c.stop) continue;
    if (c.finished) {
      exact.push_back(static_cast<double>(c.run.samples) / static_cast<double>(at));
    } else {
      const double n = extrapolate_samples(c.seen, proxy.target, hib);
      if (std::isfinite(n)) extrapolated.push_back(n / static_cast<double>(at));
    }
  }
  if (exact.empty() && extrapolated.empty()) return false;
  const double ratio = std::max(1.0, base::median(exact.empty() ? extrapolated : exact));
  for (auto& c : runs) {
    if (c.finished) continue;
    const int64_t at = curve.first_reaching(c.run.batch_size, c.run.seed, level);
    c.run.budget_samples = c.stop;
    if (at > 0 && at <= c.stop) {
      c.run.reached = true;
      c.run.samples = std::max<int64_t>(c.stop, std::llround(static_cast<double>(at) * ratio));
      ++out.extrapolated;
    } else {
      c.run.reached = false;
      c.run.samples = c.stop;
      ++out.censored;
    }
    c.finished = true;
  }
  return true;
}

}  // namespace

CutRelation cut_relation(const traces::RelationSet& proxy, const traces::LearningCurve& curve, const ProxyCut& cut,
                         Extrapolation extrapolation) {
  if (cut.stop == ProxyCut::Stop::samples && cut.samples <= 0)
    throw Error("a proxy cut after a number of samples needs a positive number of samples");
  CutRelation out;
  out.set = proxy;
  out.set.runs.clear();
  const auto kept = kept_runs(proxy, cut.seeds);
  // The cut in absolute terms for this relation: a level, or a number of samples.
  double level = cut.level;
  int64_t samples = cut.samples;
  if (cut.stop == ProxyCut::Stop::looser) {
    const auto looser = looser_levels(proxy, curve);
    if (looser.empty())
      throw Error(fmt::format("relation '{}': its learning curve has no level looser than the target {:g}", proxy.name,
                              proxy.target));
    level = looser[std::min(looser.size(), static_cast<size_t>(cut.looser)) - 1];
  } else if (cut.stop == ProxyCut::Stop::fraction) {
    int64_t longest = 0;
    for (const auto& r : proxy.runs) longest = std::max(longest, run_compute_samples(r));
    samples = std::max<int64_t>(1, std::llround(cut.fraction * static_cast<double>(longest)));
  }
  const bool by_level = cut.stop == ProxyCut::Stop::level || cut.stop == ProxyCut::Stop::looser;
  const bool by_samples = cut.stop == ProxyCut::Stop::samples || cut.stop == ProxyCut::Stop::fraction;
  std::map<std::pair<int, int>, std::vector<std::pair<int64_t, double>>> run_points;
  for (const auto& p : curve.points) run_points[{p.batch_size, p.seed}].emplace_back(p.samples, p.metric);
  std::vector<CutRun> runs;
  for (const auto& r : proxy.runs) {
    const int64_t full = run_compute_samples(r);
    out.compute_full += static_cast<double>(full);
    if (!kept.count({r.batch_size, r.seed})) continue;
    CutRun c;
    c.run = r;
    c.stop = full;
    if (by_level) {
      const int64_t at = curve.first_reaching(r.batch_size, r.seed, level);
      if (at > 0) c.stop = std::min(at, full);
    } else if (by_samples) {
      c.stop = std::min(samples, full);
    }
    out.compute_used += static_cast<double>(c.stop);
    c.finished = r.reached && r.samples <= c.stop;
    for (const auto& pt : run_points[{r.batch_size, r.seed}])
      if (pt.first <= c.stop) c.seen.push_back(pt);
    runs.push_back(std::move(c));
  }
  const bool any_unfinished = std::any_of(runs.begin(), runs.end(), [](const CutRun& c) { return !c.finished; });
  if (any_unfinished && extrapolation == Extrapolation::ratio && (by_level || by_samples))
    shared_ratio(runs, curve, proxy, by_level ? level : traces::kNaN, out);
  for (auto& c : runs) {
    if (!c.finished) {  // its own curve
      const double n = extrapolate_samples(c.seen, proxy.target, proxy.higher_is_better);
      c.run.budget_samples = c.stop;
      c.run.reached = std::isfinite(n);
      c.run.samples = std::isfinite(n) ? std::llround(n) : c.stop;
      ++(std::isfinite(n) ? out.extrapolated : out.censored);
    }
    out.set.runs.push_back(c.run);
  }
  return out;
}

std::vector<ProxyCut> default_cuts(const traces::LearningCurve& curve, int levels) {
  std::vector<ProxyCut> stops{ProxyCut{}};
  if (curve.source == "levels") {
    for (int k = 1; k <= levels; ++k) {
      ProxyCut c;
      c.stop = ProxyCut::Stop::looser;
      c.looser = k;
      stops.push_back(c);
    }
  } else {
    for (double f : {0.02, 0.05, 0.1, 0.2, 0.35, 0.5}) {
      ProxyCut c;
      c.stop = ProxyCut::Stop::fraction;
      c.fraction = f;
      stops.push_back(c);
    }
  }
  std::vector<ProxyCut> cuts = stops;
  for (ProxyCut c : stops) {
    c.seeds = 1;
    cuts.push_back(c);
  }
  return cuts;
}

std::vector<traces::LearningCurve> read_curves(const traces::Store& store,
                                               const std::vector<const Problem*>& problems) {
  std::vector<traces::LearningCurve> curves;
  for (const auto* p : problems) {
    const std::string& name = p->proxy_set.name;
    if (!store.has<traces::LearningCurve>(name))
      throw Error(fmt::format(
          "{}: no learning curve 'curves/{}' for the proxy relation of '{}': it is written by the relation campaign "
          "and by the Zeus import of this version; rerun the one that made the relation",
          store.path().string(), name, p->workload));
    curves.push_back(store.read<traces::LearningCurve>(name));
  }
  return curves;
}

namespace {
// Pools one draw's sweep into `merged`, the record of every draw: the first draw's record as it is,
// each later draw's rows appended.
void pool_draw(traces::SweepResult& merged, traces::SweepResult&& draw, bool first) {
  if (first)
    merged = std::move(draw);
  else
    merged.rows.insert(merged.rows.end(), draw.rows.begin(), draw.rows.end());
}
}  // namespace

BudgetResult budget_sweep(const std::vector<const Problem*>& problems, const std::vector<traces::LearningCurve>& curves,
                          const BudgetRequest& request) {
  if (problems.empty()) throw Error("a proxy-budget sweep needs at least one design space");
  if (curves.size() != problems.size()) throw Error("a proxy-budget sweep needs one learning curve per design space");
  std::vector<ProxyCut> cuts = request.cuts.empty() ? default_cuts(curves[0]) : request.cuts;
  if (std::none_of(cuts.begin(), cuts.end(), is_full)) cuts.insert(cuts.begin(), ProxyCut{});  // the reference
  BudgetResult result;
  // Per cut below the full proxy, per problem, per draw of seeds: its compute share (the adaptive
  // replays' budgets). A cut of fewer seeds is taken over the replays' draws (cut_over_orders: in
  // order k, the seeds the replay of order k draws first), its rows pooled over them.
  std::vector<std::pair<std::string, std::vector<std::vector<double>>>> budgets{
      {"", std::vector<std::vector<double>>(problems.size(), std::vector<double>{0})}};
  for (size_t i = 0; i < cuts.size(); ++i) {
    std::vector<std::vector<CutRelation>> drawn;  // per problem, per draw
    size_t draws = 1;
    if (!is_full(cuts[i]))
      for (size_t j = 0; j < problems.size(); ++j) {
        drawn.push_back(cut_over_orders({problems[j]->proxy_set, curves[j]}, cuts[i], request.adaptive_orders,
                                        request.extrapolation));
        draws = std::max(draws, drawn.back().size());
      }
    traces::SweepResult merged;
    double share_sum = 0;
    std::vector<std::vector<double>> shares(problems.size());
    for (size_t d = 0; d < draws; ++d) {
      std::vector<Relation> relations;  // one per problem, alive for the sweep
      relations.reserve(problems.size());
      SweepRequest req = request.sweep;
      req.name = fmt::format("{}@{}", request.name, i);
      for (size_t j = 0; j < problems.size(); ++j) {
        if (is_full(cuts[i])) {
          req.proxies.push_back(&problems[j]->proxy);  // as `pacer sweep`: with its looser level
          share_sum += 1;
          continue;
        }
        const CutRelation& cut = drawn[j][std::min(d, drawn[j].size() - 1)];
        const auto* target =
            problems[j]->target_set ? &*problems[j]->target_set : nullptr;  // as the full: its transfer
        relations.push_back(proxy_relation(cut.set, *problems[j]->space, nullptr, target));
        req.proxies.push_back(&relations.back());
        share_sum += cut.share();
        shares[j].push_back(cut.share());
      }
      pool_draw(merged, sweep_record(problems, req), d == 0);
    }
    merged.budget = request.name;
    merged.proxy_cut = cuts[i].label();
    merged.proxy_share = share_sum / static_cast<double>(problems.size() * draws);
    result.sweeps.push_back(std::move(merged));
    if (!is_full(cuts[i])) budgets.emplace_back(cuts[i].label(), std::move(shares));
  }
  if (request.adaptive_orders > 0) {
    for (const auto& [budget_of, shares] : budgets) {
      traces::SweepResult merged;
      double share_sum = 0;
      for (int order = 1; order <= request.adaptive_orders; ++order) {
        std::vector<Relation> relations;
        relations.reserve(problems.size());
        SweepRequest req = request.sweep;
        req.name = fmt::format("{}@{}", request.name, result.sweeps.size());
        for (size_t j = 0; j < problems.size(); ++j) {
          const Problem& p = *problems[j];
          AdaptiveProblem ap;
          ap.index = p.index.get();
          ap.caps_w = req.caps_w.empty()
                          ? cap_grid_w(p.space->min_power_w(), p.space->max_power_w(), req.caps_per_workload)
                          : req.caps_w;
          ap.rule = choice_rule(p, req.guard);  // the workload's own, as its sweep and `pacer select`
          ap.relation = p.proxy_set;
          ap.looser_level = p.proxy_looser_set ? p.proxy_looser_set->target : traces::kNaN;
          ap.transfer = transfer_sd(p.proxy_set, p.target_set ? &*p.target_set : nullptr);
          ReplayOptions ro;
          ro.order_seed = static_cast<uint64_t>(order);
          ro.budget_share = shares[j][std::min(static_cast<size_t>(order - 1), shares[j].size() - 1)];
          const ReplayResult r = replay_adaptive(ap, {p.proxy_set, curves[j]}, ro);
          relations.push_back(proxy_relation(r.final.relation, *p.space, r.final.looser ? &*r.final.looser : nullptr,
                                             p.target_set ? &*p.target_set : nullptr));
          req.proxies.push_back(&relations.back());
          share_sum += r.share();
        }
        pool_draw(merged, sweep_record(problems, req), order == 1);
      }
      merged.budget = request.name;
      merged.proxy_cut = adaptive_cut_label(budget_of);
      merged.proxy_share = share_sum / static_cast<double>(problems.size() * request.adaptive_orders);
      result.sweeps.push_back(std::move(merged));
    }
  }
  result.points = budget_points(result.sweeps);
  return result;
}

std::vector<BudgetPoint> budget_points(const std::vector<traces::SweepResult>& sweeps) {
  std::map<std::string, const traces::SweepResult*> reference;  // the full proxy's sweep of each budget
  for (const auto& s : sweeps)
    if (!std::isnan(s.proxy_share) && s.proxy_cut == ProxyCut{}.label()) reference[s.budget] = &s;
  std::vector<BudgetPoint> points;
  for (const auto& s : sweeps) {
    if (std::isnan(s.proxy_share)) continue;
    std::map<std::tuple<std::string, double, std::string>, int> full_b;  // (workload, cap, policy) -> b
    if (const auto it = reference.find(s.budget); it != reference.end())
      for (const auto& r : it->second->rows) full_b[{r.workload, r.cap_w, r.policy}] = r.feasible ? r.batch_size : -1;
    for (const auto& ps : summarize(s.rows).policies) {
      if (is_policy(ps.policy, Policy::Oracle)) continue;
      BudgetPoint p;
      p.cut = s.proxy_cut;
      p.share = s.proxy_share;
      p.policy = ps.policy;
      p.rows = ps.rows;
      p.feasible = ps.feasible;
      p.mean_regret = ps.mean_regret;
      p.max_regret = ps.max_regret;
      int same = 0, compared = 0;
      for (const auto& r : s.rows) {
        if (r.policy != ps.policy) continue;
        const auto f = full_b.find({r.workload, r.cap_w, r.policy});
        if (f == full_b.end()) continue;
        ++compared;
        same += f->second == (r.feasible ? r.batch_size : -1);
      }
      if (compared) p.same_choice = static_cast<double>(same) / compared;
      points.push_back(p);
    }
  }
  return points;
}

std::string format_budget(const std::vector<BudgetPoint>& points) {
  size_t width = std::string_view("proxy cut").size();
  for (const auto& p : points) width = std::max(width, p.cut.size());
  std::string out = fmt::format("  {:<{}} {:>8}  {:<8} {:>12} {:>12} {:>12}\n", "proxy cut", width, "compute", "policy",
                                "mean regret", "max regret", "same choice");
  // A policy with no feasible choice on a cut has no regret: "-", never "nan%".
  const auto pct = [](double v, int decimals) {
    return std::isfinite(v) ? fmt::format("{:.{}f}%", 100 * v, decimals) : std::string("-");
  };
  for (const auto& p : points)
    out += fmt::format("  {:<{}} {:>7.1f}%  {:<8} {:>12} {:>12} {:>12}\n", p.cut, width, 100 * p.share, p.policy,
                       pct(p.mean_regret, 2), pct(p.max_regret, 2), pct(p.same_choice, 0));
  return out;
}

std::string budget_csv(const std::vector<BudgetPoint>& points) {
  std::string out = "cut,proxy_share[1],policy,rows,feasible,mean_regret[1],max_regret[1],same_choice[1]\n";
  for (const auto& p : points)
    out += fmt::format("{},{:.6g},{},{},{},{:.6g},{:.6g},{:.6g}\n", traces::csv_field(p.cut), p.share, p.policy, p.rows,
                       p.feasible, p.mean_regret, p.max_regret, p.same_choice);
  return out;
}

}  // namespace pacer::explore
