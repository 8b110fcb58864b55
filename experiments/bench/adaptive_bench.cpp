#include "experiments/bench/adaptive_bench.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>

#include "base/error.hpp"
#include "base/stats.hpp"
#include "explore/decide.hpp"
#include "explore/policy.hpp"
#include "explore/problem.hpp"
#include "explore/proxy_budget.hpp"
#include "explore/sweep.hpp"
#include "traces/csv.hpp"
#include "traces/import/zeus.hpp"

namespace pacer::experiments {
namespace {

// The shared ratio's form, as the tables name it (AdaptiveOptions::ratio_line).
const char* ratio_form(bool line) { return line ? "line in log b" : "median"; }

namespace fs = std::filesystem;
using base::mean;

double largest(const std::vector<double>& v) {
  return v.empty() ? traces::kNaN : *std::max_element(v.begin(), v.end());
}

// One workload of one GPU, ready to score relations on.
struct Case {
  std::string gpu;
  traces::zeus::Workload w;
  std::unique_ptr<explore::Space> space;
  std::unique_ptr<explore::Index> index;
  explore::Relation target;
  std::vector<double> caps;
  std::vector<int> full_choice;  // per cap: the full campaign's choice (-1: none)
  // The rule every command chooses this workload under (explore::choice_rule; the traces' points are
  // measured means: guard 0), for the sweeps that score and the replays' engine alike.
  explore::ChoiceRule rule;
};

// What one campaign gave on one case: its compute share, and per cap pacer's regret and choice.
struct Outcome {
  double share = 0;
  std::vector<double> regrets;  // feasible rows only
  std::vector<int> choices;     // per cap (-1: none)
  bool decided = false;
};

Outcome score(const Case& c, const explore::Relation& proxy, double share) {
  explore::SweepWorkload sw;
  sw.workload = c.w.name;
  sw.index = c.index.get();
  sw.proxy = &proxy;
  sw.target = &c.target;
  sw.target_set = &c.w.target;
  sw.caps_w = c.caps;
  explore::SweepOptions so;
  so.policies = {explore::Policy::Pacer, explore::Policy::Oracle};
  so.rule = c.rule;
  Outcome o;
  o.share = share;
  for (const auto& row : explore::sweep(sw, so)) {
    if (!explore::is_policy(row.policy, explore::Policy::Pacer)) continue;
    o.choices.push_back(row.feasible ? row.batch_size : -1);
    if (row.feasible && !std::isnan(row.regret)) o.regrets.push_back(row.regret);
  }
  return o;
}

explore::AdaptiveProblem adaptive_problem(const Case& c) {
  explore::AdaptiveProblem p;
  p.index = c.index.get();
  p.caps_w = c.caps;
  p.rule = c.rule;
  p.relation = c.w.proxy;
  p.looser_level = c.w.proxy_looser.runs.empty() ? traces::kNaN : c.w.proxy_looser.target;
  return p;
}

Outcome adaptive(const Case& c, const AdaptiveConstants& k, uint64_t order, double budget_share) {
  explore::ReplayOptions ro;
  ro.engine.tolerance = k.tolerance;
  ro.engine.initial_fraction = k.initial_fraction;
  ro.engine.z = k.z;
  ro.engine.estimate_z = k.estimate_z;
  ro.engine.extrapolation = k.extrapolation;
  ro.engine.budget_first_share = k.budget_first_share;
  ro.engine.ratio_line = k.ratio_line;
  ro.order_seed = order;
  ro.budget_share = budget_share;
  const explore::ReplayResult r = explore::replay_adaptive(adaptive_problem(c), {c.w.proxy, c.w.proxy_curve}, ro);
  const auto* looser = r.final.looser ? &*r.final.looser : nullptr;
  const explore::Relation rel = explore::Relation::from_set(r.final.relation, *c.space, looser);
  Outcome o = score(c, rel, r.share());
  o.decided = r.final.verdict == explore::AdaptiveVerdict::Decided;
  return o;
}

// A fixed cut over the orders of the pool: a cut of all seeds once (the order does not change it);
// a cut of fewer seeds keeps, in order k, the seeds the adaptive replay of order k draws first
// (explore::reorder_pool), so that both are compared over the same draws of seeds.
std::vector<Outcome> fixed_cut(const Case& c, const explore::ProxyCut& cut, int orders) {
  std::vector<Outcome> per_order;
  for (const auto& cr : explore::cut_over_orders({c.w.proxy, c.w.proxy_curve}, cut, orders))
    per_order.push_back(score(c, explore::Relation::from_set(cr.set, *c.space), cr.share()));
  return per_order;
}

// A campaign's outcomes over cases (and orders), summarised as one table row.
AdaptiveBenchRow summarize_campaign(const std::string& gpu, const std::string& campaign,
                                    const std::vector<const Case*>& cases,
                                    const std::vector<std::vector<Outcome>>& per_case) {
  AdaptiveBenchRow row{gpu, campaign};
  std::vector<double> all, shares, order_max;
  int same = 0, compared = 0, decided = 0, runs = 0;
  const size_t orders = per_case.empty() ? 0 : per_case.front().size();
  for (size_t o = 0; o < orders; ++o) {
    std::vector<double> rows;
    for (size_t i = 0; i < cases.size(); ++i) {
      const Outcome& out = per_case[i][o];
      rows.insert(rows.end(), out.regrets.begin(), out.regrets.end());
      shares.push_back(out.share);
      decided += out.decided;
      ++runs;
      for (size_t k = 0; k < out.choices.size() && k < cases[i]->full_choice.size(); ++k) {
        ++compared;
        same += out.choices[k] == cases[i]->full_choice[k];
      }
    }
    all.insert(all.end(), rows.begin(), rows.end());
    if (!rows.empty()) order_max.push_back(largest(rows));
  }
  row.share = mean(shares);
  row.mean_regret = mean(all);
  row.max_regret = mean(order_max);
  row.worst_regret = largest(all);
  row.same_choice = compared ? static_cast<double>(same) / compared : traces::kNaN;
  row.decided = runs ? static_cast<double>(decided) / runs : traces::kNaN;
  return row;
}

}  // namespace

std::string AdaptiveConstants::label() const {
  return fmt::format("tolerance {:g} %, round 1 at {:g} %, z {:g}, estimates at +{:g} sd{}, ratio {}", 100 * tolerance,
                     100 * initial_fraction, z, estimate_z,
                     extrapolation == explore::AdaptiveExtrapolation::ratio
                         ? ""
                         : fmt::format(", {}", explore::to_string(extrapolation)),
                     ratio_form(ratio_line));
}

AdaptiveBenchResult run_adaptive_bench(const AdaptiveBenchOptions& options) {
  AdaptiveBenchOptions o = options;
  if (o.zeus_dir.empty()) o.zeus_dir = traces::zeus::default_data_dir();
  AdaptiveBenchResult result;
  result.gpus = o.gpus.empty() ? traces::zeus::available_gpus(o.zeus_dir) : o.gpus;
  if (result.gpus.empty() || !fs::exists(traces::zeus::train_trace(o.zeus_dir)))
    throw Error(
        fmt::format("{}: no Zeus traces (summary_train.csv and summary_power_<gpu>.csv) here; give the folder "
                    "of the Zeus traces (pacer's data/zeus)",
                    o.zeus_dir.string()));
  if (o.orders < 1) throw Error("the adaptive benchmark needs at least one order of the pool");
  result.orders = o.orders;

  std::vector<std::unique_ptr<Case>> cases;
  for (const auto& gpu : result.gpus) {
    traces::zeus::ImportOptions zo;
    zo.data_dir = o.zeus_dir;
    zo.gpu = gpu;
    for (auto& w : traces::zeus::import_traces(zo).workloads) {
      auto c = std::make_unique<Case>();
      c->gpu = gpu;
      c->w = std::move(w);
      c->space = std::make_unique<explore::Space>(explore::Space::from_profile(c->w.profile));
      c->index = std::make_unique<explore::Index>(*c->space);
      c->target = explore::Relation::from_set(c->w.target, *c->space);
      c->caps = traces::zeus::protocol_caps_w(c->w.profile, o.caps_per_workload);
      c->rule = explore::choice_rule(*c->space, explore::PointOrigin{});
      cases.push_back(std::move(c));
    }
  }

  // Leave one workload out over the grid.
  std::vector<AdaptiveConstants> grid;
  for (double t : o.tolerances)
    for (double f : o.initial_fractions)
      for (double z : o.zs)
        for (double ez : o.estimate_zs)
          for (const auto x : o.extrapolations)
            for (bool rl : o.ratio_lines) grid.push_back({t, f, z, ez, x, rl});
  std::set<std::string> workloads;
  for (const auto& c : cases) workloads.insert(c->w.name);
  // grid point -> case -> orders
  std::vector<std::vector<std::vector<Outcome>>> grid_out(grid.size());
  for (size_t g = 0; g < grid.size(); ++g)
    for (const auto& c : cases) {
      std::vector<Outcome> per_order;
      for (int k = 1; k <= o.orders; ++k) per_order.push_back(adaptive(*c, grid[g], static_cast<uint64_t>(k), 0));
      grid_out[g].push_back(std::move(per_order));
    }
  const auto pooled = [&](size_t g, const std::string& name, bool held) {
    std::vector<double> regrets, shares, maxima;
    for (size_t i = 0; i < cases.size(); ++i) {
      if ((cases[i]->w.name == name) != held) continue;
      for (const auto& out : grid_out[g][i]) {
        regrets.insert(regrets.end(), out.regrets.begin(), out.regrets.end());
        shares.push_back(out.share);
        if (!out.regrets.empty()) maxima.push_back(largest(out.regrets));
      }
    }
    return std::make_tuple(mean(shares), mean(regrets), mean(maxima));
  };
  // The full campaign's regret per case (the bar of goal (a) on the training folds).
  std::vector<std::vector<double>> full_regrets;
  for (const auto& c : cases) {
    const auto* looser = c->w.proxy_looser.runs.empty() ? nullptr : &c->w.proxy_looser;
    full_regrets.push_back(score(*c, explore::Relation::from_set(c->w.proxy, *c->space, looser), 1.0).regrets);
  }
  const auto full_mean = [&](const std::string& name, bool held) {
    std::vector<double> v;
    for (size_t i = 0; i < cases.size(); ++i)
      if ((cases[i]->w.name == name) == held) v.insert(v.end(), full_regrets[i].begin(), full_regrets[i].end());
    return mean(v);
  };
  for (size_t g = 0; g < grid.size(); ++g) {
    const auto [share, m, mx] = pooled(g, "", false);
    result.grid.push_back({grid[g], share, m, mx});
  }
  std::vector<double> held_share, held_mean, held_max;
  if (grid.size() > 1)
    for (const auto& name : workloads) {
      // The cheapest point whose mean regret on the other workloads is at most the full campaign's
      // there (goal (a)'s bar, to 1e-4); none: the least mean regret, then the least share.
      const double bar = std::round(full_mean(name, false) * 1e4);
      const auto key = [&](size_t g) {
        const auto [share, m, mx] = pooled(g, name, false);
        const double rm = std::round(m * 1e4);
        const bool meets = rm <= bar;
        return std::make_tuple(!meets, meets ? share : rm, meets ? rm : share);
      };
      size_t best = 0;
      for (size_t g = 1; g < grid.size(); ++g)
        if (key(g) < key(best)) best = g;
      const auto [share, m, mx] = pooled(best, name, true);
      result.folds.push_back({name, grid[best], share, m, mx});
      held_share.push_back(share);
      held_mean.push_back(m);
      held_max.push_back(mx);
    }
  result.held_out_share = mean(held_share);
  result.held_out_mean = mean(held_mean);
  result.held_out_max = mean(held_max);

  // Round 1's share of a compute budget, leave one workload out: per grid share, the adaptive
  // campaign at every fixed cut's compute (the code's other constants); a fold takes the share with
  // the least mean over the cuts of its max regret on the other workloads.
  AdaptiveConstants used = grid.size() == 1 ? grid.front() : AdaptiveConstants{};
  if (o.budget_first_shares.size() == 1) used.budget_first_share = o.budget_first_shares.front();
  if (o.ratio_lines.size() == 1) used.ratio_line = o.ratio_lines.front();
  // The budget grid: (round 1's share, the shared ratio's form); one point: no choice.
  std::vector<std::pair<double, bool>> budget_points;
  for (double share : o.budget_first_shares)
    for (bool line : o.ratio_lines) budget_points.emplace_back(share, line);
  // point -> cut label -> case index -> orders
  std::vector<std::map<std::string, std::map<size_t, std::vector<Outcome>>>> budget_out(budget_points.size());
  // cut label -> case index -> the fixed cut over the orders
  std::map<std::string, std::map<size_t, std::vector<Outcome>>> fixed_out;
  // The compute share of a fixed cut in order r (1-based; a cut of all seeds has one).
  const auto share_in = [](const std::vector<Outcome>& fixed, int r) {
    return fixed.size() == 1 ? fixed.front().share : fixed.at(static_cast<size_t>(r - 1)).share;
  };
  if (budget_points.size() > 1)
    for (size_t i = 0; i < cases.size(); ++i)
      for (const auto& cut : explore::default_cuts(cases[i]->w.proxy_curve)) {
        if (cut.stop == explore::ProxyCut::Stop::none && cut.seeds == 0) continue;
        const auto& fixed = fixed_out[cut.label()][i] = fixed_cut(*cases[i], cut, o.orders);
        for (size_t g = 0; g < budget_points.size(); ++g) {
          AdaptiveConstants k = used;
          k.budget_first_share = budget_points[g].first;
          k.ratio_line = budget_points[g].second;
          auto& per_order = budget_out[g][cut.label()][i];
          for (int r = 1; r <= o.orders; ++r)
            per_order.push_back(adaptive(*cases[i], k, static_cast<uint64_t>(r), share_in(fixed, r)));
        }
      }
  // The mean over the cuts (those every selected case has) of the adaptive max regret on the cases
  // of workload `name` (held) or of the others; and at how many cuts it is below the fixed cut's.
  const auto budget_score = [&](size_t g, const std::string& name, bool held) {
    std::vector<const Case*> sel;
    std::vector<size_t> idx;
    for (size_t i = 0; i < cases.size(); ++i)
      if ((cases[i]->w.name == name) == held) {
        sel.push_back(cases[i].get());
        idx.push_back(i);
      }
    std::vector<double> maxima;
    int lower = 0;
    for (const auto& [label, by_case] : budget_out[g]) {
      std::vector<std::vector<Outcome>> per_case;
      std::vector<std::vector<Outcome>> fixed;
      for (size_t i : idx)
        if (by_case.count(i)) {
          per_case.push_back(by_case.at(i));
          fixed.push_back(fixed_out[label][i]);
        }
      if (per_case.size() != idx.size()) continue;
      const double m = summarize_campaign("", label, sel, per_case).max_regret;
      maxima.push_back(m);
      lower += m < summarize_campaign("", label, sel, fixed).max_regret;
    }
    return std::make_tuple(mean(maxima), lower, static_cast<int>(maxima.size()));
  };
  if (budget_points.size() > 1) {
    for (size_t g = 0; g < budget_points.size(); ++g)
      result.budget_grid.emplace_back(budget_points[g].first, budget_points[g].second,
                                      std::get<0>(budget_score(g, "", false)));
    for (const auto& name : workloads) {
      const auto key = [&](size_t g) {  // the most cuts below the fixed cut's max regret, then the least mean max
        const auto [m, lower, cuts] = budget_score(g, name, false);
        return std::make_pair(-lower, m);
      };
      size_t best = 0;
      for (size_t g = 1; g < budget_points.size(); ++g)
        if (key(g) < key(best)) best = g;
      const auto [m, lower, cuts] = budget_score(best, name, true);
      result.budget_folds.push_back({name, budget_points[best].first, budget_points[best].second, m, lower, cuts});
    }
  }

  // The table with the code's constants (or the one grid point given): each case's outcomes once.
  result.used = used;
  std::vector<std::string> campaigns;                                 // in table order
  std::map<std::string, std::vector<std::vector<Outcome>>> outcomes;  // campaign -> case -> orders
  const auto add = [&](const std::string& campaign, std::vector<Outcome> per_order) {
    if (std::find(campaigns.begin(), campaigns.end(), campaign) == campaigns.end()) campaigns.push_back(campaign);
    outcomes[campaign].push_back(std::move(per_order));
  };
  // The adaptive campaign over the orders: unbounded (no fixed cut) or at the fixed cut's compute in each order.
  const auto orders_of = [&](const Case& c, const std::vector<Outcome>* fixed) {
    std::vector<Outcome> per_order;
    for (int k = 1; k <= o.orders; ++k)
      per_order.push_back(adaptive(c, used, static_cast<uint64_t>(k), fixed ? share_in(*fixed, k) : 0));
    return per_order;
  };
  std::vector<double> choices_shares;
  for (auto& c : cases) {
    // The full campaign (as `pacer sweep`: with its looser level) and its choices.
    const auto* looser = c->w.proxy_looser.runs.empty() ? nullptr : &c->w.proxy_looser;
    const explore::Relation proxy = explore::Relation::from_set(c->w.proxy, *c->space, looser);
    Outcome full = score(*c, proxy, 1.0);
    c->full_choice = full.choices;
    {
      const std::set<int> chosen(full.choices.begin(), full.choices.end());
      double mine = 0, all = 0;
      for (const auto& r : c->w.proxy.runs) {
        const auto n = static_cast<double>(explore::run_compute_samples(r));
        all += n;
        if (chosen.count(r.batch_size)) mine += n;
      }
      choices_shares.push_back(all > 0 ? mine / all : 0);
    }
    add(explore::ProxyCut{}.label(), {full});
    add(explore::adaptive_cut_label(), orders_of(*c, nullptr));
    for (const auto& cut : explore::default_cuts(c->w.proxy_curve)) {
      if (cut.stop == explore::ProxyCut::Stop::none && cut.seeds == 0) continue;
      const std::vector<Outcome> fixed = fixed_cut(*c, cut, o.orders);
      add(cut.label(), fixed);
      add(explore::adaptive_cut_label(cut.label()), orders_of(*c, &fixed));
    }
  }
  result.choices_share = mean(choices_shares);
  std::vector<std::string> groups = result.gpus;
  if (groups.size() > 1) groups.push_back("all");
  for (const auto& gpu : groups) {
    const bool goal_group = gpu == "all" || groups.size() == 1;
    std::vector<const Case*> mine;
    std::vector<size_t> idx;
    for (size_t i = 0; i < cases.size(); ++i)
      if (gpu == "all" || cases[i]->gpu == gpu) {
        mine.push_back(cases[i].get());
        idx.push_back(i);
      }
    std::map<std::string, AdaptiveBenchRow> by_campaign;
    for (const auto& campaign : campaigns) {
      const auto& all = outcomes[campaign];
      if (all.size() != cases.size()) continue;  // a cut not every case has
      std::vector<std::vector<Outcome>> sel;
      for (size_t i : idx) sel.push_back(all[i]);
      by_campaign[campaign] = summarize_campaign(gpu, campaign, mine, sel);
      result.rows.push_back(by_campaign[campaign]);
    }
    if (!goal_group) continue;
    const auto& full_row = by_campaign[explore::ProxyCut{}.label()];
    const auto& ad_row = by_campaign[explore::adaptive_cut_label()];
    result.goal_a = ad_row.mean_regret <= full_row.mean_regret + 1e-12 && ad_row.share <= kAdaptiveGoalShare;
    for (const auto& [campaign, row] : by_campaign) {
      const auto it = by_campaign.find(explore::adaptive_cut_label(campaign));
      if (it == by_campaign.end()) continue;
      ++result.goal_b_cuts;
      result.goal_b_met += it->second.max_regret < row.max_regret;
    }
  }
  return result;
}

std::string AdaptiveBenchResult::markdown() const {
  std::string md;
  if (!folds.empty()) {
    md += fmt::format(
        "### The adaptive campaign's constants, leave one workload out (Zeus traces: {}; {} orders of the pool)\n\n"
        "| held-out workload | chosen on the others | compute | mean regret | max regret (mean over orders) |\n"
        "|---|---|---|---|---|\n",
        fmt::join(gpus, ", "), orders);
    for (const auto& f : folds)
      md += fmt::format("| {} | {} | {:.1f} % | {:.2f} % | {:.2f} % |\n", f.held_out, f.chosen.label(), 100 * f.share,
                        100 * f.mean_regret, 100 * f.max_regret);
    md += fmt::format("| **all folds** (mean over folds) | | **{:.1f} %** | **{:.2f} %** | **{:.2f} %** |\n\n",
                      100 * held_out_share, 100 * held_out_mean, 100 * held_out_max);
    md +=
        "Every grid point on all the data (* = the code's constants):\n\n"
        "| constants | compute | mean regret | max regret (mean over orders) |\n|---|---|---|---|\n";
    const AdaptiveConstants code;
    for (const auto& p : grid)
      md += fmt::format(
          "| {}{} | {:.1f} % | {:.2f} % | {:.2f} % |\n", p.constants.label(),
          p.constants.tolerance == code.tolerance && p.constants.initial_fraction == code.initial_fraction &&
                  p.constants.z == code.z && p.constants.estimate_z == code.estimate_z &&
                  p.constants.extrapolation == code.extrapolation && p.constants.ratio_line == code.ratio_line
              ? " *"
              : "",
          100 * p.share, 100 * p.mean_regret, 100 * p.max_regret);
    md += "\n";
  }
  if (!budget_folds.empty()) {
    md +=
        "### Round 1's share of a compute budget, leave one workload out (the adaptive campaign at each fixed cut's "
        "compute)\n\n"
        "| held-out workload | chosen on the others | max regret (mean over the cuts) | cuts below the fixed cut's max "
        "|\n|---|---|---|---|\n";
    std::vector<double> m;
    int lower = 0, cuts = 0;
    for (const auto& f : budget_folds) {
      md += fmt::format("| {} | {:g} %, ratio {} | {:.2f} % | {} of {} |\n", f.held_out, 100 * f.chosen,
                        ratio_form(f.chosen_line), 100 * f.max_regret, f.lower_max, f.cuts);
      m.push_back(f.max_regret);
      lower += f.lower_max;
      cuts += f.cuts;
    }
    md += fmt::format("| **all folds** | | **{:.2f} %** (mean) | **{} of {}** |\n\n", 100 * mean(m), lower, cuts);
    md += "Every point on all the data (* = the code's constants; 0: round 1 at the initial fraction of the run budget):\n\n"
          "| round 1's share of the budget | shared ratio | max regret (mean over the cuts) |\n|---|---|---|\n";
    for (const auto& [share, line, mx] : budget_grid)
      md += fmt::format("| {:g} %{} | {} | {:.2f} % |\n", 100 * share,
                        share == explore::kAdaptiveBudgetFirstShare && line == explore::kAdaptiveRatioLine ? " *" : "",
                        ratio_form(line), 100 * mx);
    md += "\n";
  }
  md += fmt::format(
      "### Adaptive against full and fixed campaigns (pacer policy; constants: {}, round 1 of a budget {:g} %; adaptive rows over {} orders)\n\n"
      "| GPU | campaign | compute | mean regret | max regret | worst row | same choice as full | decided |\n"
      "|---|---|---|---|---|---|---|---|\n",
      used.label(), 100 * used.budget_first_share, orders);
  const auto pct = [](double v, int d) {
    return std::isfinite(v) ? fmt::format("{:.{}f} %", 100 * v, d) : std::string("-");
  };
  for (const auto& r : rows)
    md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} |\n", r.gpu, r.campaign, pct(r.share, 1),
                      pct(r.mean_regret, 2), pct(r.max_regret, 2), pct(r.worst_regret, 2), pct(r.same_choice, 0),
                      explore::is_adaptive_cut(r.campaign) ? pct(r.decided, 0) : std::string("-"));
  md += fmt::format("\ngoal (a) adaptive mean regret <= the full campaign's at <= {:g} % of its compute: {}\n",
                    100 * kAdaptiveGoalShare, goal_a ? "PASS" : "FAIL");
  md += fmt::format(
      "  (the full campaign's chosen batch sizes alone, all their runs to the target, cost {:.1f} % of its compute)\n",
      100 * choices_share);
  md += fmt::format("goal (b) lower max regret than the fixed campaign at equal compute: {} ({} of {} fixed cuts)\n",
                    goal_b_met == goal_b_cuts ? "PASS" : "FAIL", goal_b_met, goal_b_cuts);
  return md;
}

std::string AdaptiveBenchResult::csv() const {
  std::string out =
      "gpu,campaign,compute_share[1],mean_regret[1],max_regret[1],worst_regret[1],same_choice[1],decided[1]\n";
  for (const auto& r : rows)
    out += fmt::format("{},{},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g}\n", r.gpu, traces::csv_field(r.campaign),
                       r.share, r.mean_regret, r.max_regret, r.worst_regret, r.same_choice, r.decided);
  return out;
}

}  // namespace pacer::experiments
