#include "explore/proxy_budget.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "traces/error.hpp"
#include "traces/units.hpp"

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
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = distinct.size() - k; i < distinct.size(); ++i) {
    const double x = std::log(static_cast<double>(distinct[i].first)), y = distinct[i].second;
    sx += x, sy += y, sxx += x * x, sxy += x * y;
  }
  const double n = static_cast<double>(k), vxx = sxx / n - (sx / n) * (sx / n);
  if (!(vxx > 0)) return traces::kNaN;
  const double slope = (sxy / n - (sx / n) * (sy / n)) / vxx, intercept = sy / n - slope * sx / n;
  if (higher_is_better ? !(slope > 0) : !(slope < 0)) return traces::kNaN;  // not moving toward the target
  const double log_n = (target - intercept) / slope;
  if (!std::isfinite(log_n) || log_n > 60) return traces::kNaN;
  return std::max(std::exp(log_n), static_cast<double>(distinct.back().first));
}

CutRelation cut_relation(const traces::RelationSet& proxy, const traces::LearningCurve& curve, const ProxyCut& cut) {
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
    for (const auto& r : proxy.runs) longest = std::max(longest, r.reached ? r.samples : r.budget_samples);
    samples = std::max<int64_t>(1, std::llround(cut.fraction * static_cast<double>(longest)));
  }
  const bool by_level = cut.stop == ProxyCut::Stop::level || cut.stop == ProxyCut::Stop::looser;
  const bool by_samples = cut.stop == ProxyCut::Stop::samples || cut.stop == ProxyCut::Stop::fraction;
  std::map<std::pair<int, int>, std::vector<std::pair<int64_t, double>>> run_points;
  for (const auto& p : curve.points) run_points[{p.batch_size, p.seed}].emplace_back(p.samples, p.metric);
  for (const auto& r : proxy.runs) {
    const int64_t full = r.reached ? r.samples : r.budget_samples;
    out.compute_full += static_cast<double>(full);
    if (!kept.count({r.batch_size, r.seed})) continue;
    int64_t stop = full;
    if (by_level) {
      const int64_t at = curve.first_reaching(r.batch_size, r.seed, level);
      if (at > 0) stop = std::min(at, full);
    } else if (by_samples) {
      stop = std::min(samples, full);
    }
    out.compute_used += static_cast<double>(stop);
    if (r.reached && r.samples <= stop) {  // the run reached the target within the cut
      out.set.runs.push_back(r);
      continue;
    }
    std::vector<std::pair<int64_t, double>> seen;
    for (const auto& pt : run_points[{r.batch_size, r.seed}])
      if (pt.first <= stop) seen.push_back(pt);
    const double n = extrapolate_samples(seen, proxy.target, proxy.higher_is_better);
    traces::RelationRun c = r;
    c.budget_samples = stop;
    if (std::isfinite(n)) {
      c.reached = true;
      c.samples = std::llround(n);
      ++out.extrapolated;
    } else {
      c.reached = false;
      c.samples = stop;
      ++out.censored;
    }
    out.set.runs.push_back(c);
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
    if (!store.has("curves", name))
      throw Error(fmt::format(
          "{}: no learning curve 'curves/{}' for the proxy relation of '{}': it is written by the relation campaign "
          "and by the Zeus import of this version; rerun the one that made the relation",
          store.path().string(), name, p->workload));
    curves.push_back(store.read_curve(name));
  }
  return curves;
}

BudgetResult budget_sweep(const std::vector<const Problem*>& problems, const std::vector<traces::LearningCurve>& curves,
                          const BudgetRequest& request) {
  if (problems.empty()) throw Error("a proxy-budget sweep needs at least one design space");
  if (curves.size() != problems.size()) throw Error("a proxy-budget sweep needs one learning curve per design space");
  std::vector<ProxyCut> cuts = request.cuts.empty() ? default_cuts(curves[0]) : request.cuts;
  if (std::none_of(cuts.begin(), cuts.end(), is_full)) cuts.insert(cuts.begin(), ProxyCut{});  // the reference
  BudgetResult result;
  for (size_t i = 0; i < cuts.size(); ++i) {
    std::vector<Relation> relations;  // one per problem, alive for the sweep
    relations.reserve(problems.size());
    double share_sum = 0;
    SweepRequest req = request.sweep;
    req.name = fmt::format("{}@{}", request.name, i);
    for (size_t j = 0; j < problems.size(); ++j) {
      if (is_full(cuts[i])) {
        req.proxies.push_back(&problems[j]->proxy);  // as `pacer sweep`: with its looser level
        share_sum += 1;
        continue;
      }
      const CutRelation cut = cut_relation(problems[j]->proxy_set, curves[j], cuts[i]);
      relations.push_back(Relation::from_set(cut.set, *problems[j]->space));
      req.proxies.push_back(&relations.back());
      share_sum += cut.share();
    }
    traces::SweepResult s = sweep_record(problems, req);
    s.budget = request.name;
    s.proxy_cut = cuts[i].label();
    s.proxy_share = share_sum / static_cast<double>(problems.size());
    result.sweeps.push_back(std::move(s));
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
      if (ps.policy == "oracle") continue;
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
  std::string out = fmt::format("  {:<26} {:>8}  {:<8} {:>12} {:>12} {:>12}\n", "proxy cut", "compute", "policy",
                                "mean regret", "max regret", "same choice");
  for (const auto& p : points)
    out += fmt::format("  {:<26} {:>7.1f}%  {:<8} {:>11.2f}% {:>11.2f}% {:>11.0f}%\n", p.cut, 100 * p.share, p.policy,
                       100 * p.mean_regret, 100 * p.max_regret, 100 * p.same_choice);
  return out;
}

std::string budget_csv(const std::vector<BudgetPoint>& points) {
  std::string out = "cut,proxy_share[1],policy,rows,feasible,mean_regret[1],max_regret[1],same_choice[1]\n";
  for (const auto& p : points)
    out += fmt::format("\"{}\",{:.6g},{},{},{},{:.6g},{:.6g},{:.6g}\n", p.cut, p.share, p.policy, p.rows, p.feasible,
                       p.mean_regret, p.max_regret, p.same_choice);
  return out;
}

}  // namespace pacer::explore
