#include "experiments/report/report.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <type_traits>
#include <typeinfo>

#include "base/error.hpp"
#include "base/stats.hpp"
#include "base/units.hpp"
#include "experiments/report/html.hpp"
#include "experiments/report/plot.hpp"
#include "experiments/report/tables.hpp"
#include "explore/adaptive.hpp"
#include "explore/decide.hpp"
#include "explore/policy.hpp"
#include "explore/problem.hpp"
#include "explore/proxy_budget.hpp"
#include "explore/space.hpp"
#include "explore/sweep.hpp"
#include "traces/csv.hpp"
#include "traces/emulated_label.hpp"
#include "traces/store/outputs.hpp"
#include "traces/store/store.hpp"
#include "traces/store/store_file.hpp"

namespace pacer::experiments {
namespace fs = std::filesystem;
namespace {

std::string stem_of(const fs::path& store) {
  return store.stem().string();
}

std::string safe(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '-';
  return s;
}

void add(ReportOutput& out, const RenderResult& r, const std::string& what) {
  out.files.insert(out.files.end(), r.files.begin(), r.files.end());
  out.figures.push_back(what + (r.rendered ? "" : " (script and data only: gnuplot missing)"));
  for (const auto& f : r.files)
    if (f.extension() == ".svg") out.svgs.push_back({f.filename().string(), what.substr(what.find(": ") + 2)});
}

void write_tables(ReportOutput& out, const ResultTable& t, const fs::path& dir, const std::string& stem) {
  const std::string md = to_markdown(t);
  traces::write_file_atomic(dir / (stem + ".md"), md);
  traces::write_file_atomic(dir / (stem + ".tex"), to_latex(t));
  traces::write_file_atomic(dir / (stem + ".csv"), to_csv(t));
  out.files.push_back(dir / (stem + ".md"));
  out.files.push_back(dir / (stem + ".tex"));
  out.files.push_back(dir / (stem + ".csv"));
  out.tables_markdown.push_back(md);
  out.table_stems.push_back(stem);
}

// The first relation of a sweep's list (its `relation` or `target`) in the store that is
// `workload`'s (a sweep over several profiles lists every workload's; of one profile: the first).
std::optional<traces::RelationSet> sweep_relation(const traces::Store& store, const traces::SweepResult& sweep,
                                                  const std::string& list, const std::string& workload) {
  const bool one_profile = traces::split_list(sweep.profile).size() == 1;
  for (const auto& rn : traces::split_list(list))
    if (store.has<traces::RelationSet>(rn)) {
      auto r = store.read<traces::RelationSet>(rn);
      if (one_profile || r.workload == workload) return r;
    }
  return std::nullopt;
}

// The design space of a sweep's profile as the explorer saw it: the sweep's feasibility basis, its
// measured points winning over predicted ones (explore::measured_wins) and its choice rule (guard),
// so that a figure marks exactly the configurations that the sweep and the validation chose (and
// draws each point at the power that decided its feasibility).
struct FigureSpace {
  explore::Space space;
  explore::Index index;
  explore::DeviceWideCap device_cap;
  explore::ChoiceRule rule;
  FigureSpace(const traces::Store& store, const std::string& name, const traces::ProfileTable& prof,
              const traces::SweepResult& sweep)
      : space(space_of(store, name, prof, sweep)),
        index(space),
        device_cap(explore::device_wide_cap(store, prof.device, space)),  // as every command's
        rule(explore::recorded_rule(sweep, prof.workload)) {}
  static explore::Space space_of(const traces::Store& store, const std::string& name, const traces::ProfileTable& prof,
                                 const traces::SweepResult& sweep) {
    // nullopt (neither "peak ..." nor "mean ..."): the explorer's default, peak where every point has it
    auto space = explore::Space::from_profile(prof, explore::feasibility_basis(sweep.feasibility));
    explore::measured_wins(store, name, false, prof.workload, prof.device, space);
    return space;
  }
  double choose_w(double cap_w) const { return explore::guarded_cap_w(cap_w, rule.guard); }
  double tta(const explore::Relation& rel, size_t bi, size_t ki) const {
    return base::time_to_accuracy_s(space.time_per_batch_s(bi, ki), rel.samples_by_batch[bi], space.batch_sizes()[bi]);
  }
  explore::PolicyContext context(const explore::Relation& proxy, const explore::Relation* target) const {
    explore::PolicyContext c;
    c.index = &index;
    c.proxy = &proxy;
    c.target = target;
    c.device_cap = &device_cap;
    return c;
  }
};

// "cnn@1x28x28 on jetson-nano (emulated)" as words: a dataset label where one is given.
std::string subject(const traces::ProfileTable& prof, const Labels& labels) {
  return fmt::format("{} on {}{}", label_of(labels, prof.workload), prof.device, traces::emulated_mark(prof.emulated));
}

// Figure 1: time vs the feasibility power of every profiled (knob, b), the cap as a line, each
// policy's choice (the explorer's, under the sweep's basis and guard) marked; policies that choose
// the same configuration share one marker with a combined label, so that each stays visible.
//
// Beside the cap: the margin cap x (1 - guard) the policies chose under, and the measured peak of
// every validation run at this cap (`runs`: the store's validation rows of this workload), drawn at
// the height of its configuration, those above the cap apart.
void figure1(ReportOutput& out, const fs::path& dir, const std::string& prefix, const traces::ProfileTable& prof,
             const FigureSpace& fs, const explore::Relation& proxy, const explore::Relation* target, double cap_w,
             const std::vector<explore::Policy>& policies, const Labels& labels,
             const std::vector<traces::ValidationRow>& runs) {
  const explore::Space& space = fs.space;
  Plot p;
  p.name = safe(prefix + "-fig1-time-vs-power-" + fmt::format("{:.3g}W", cap_w));
  bool tta = target != nullptr;
  if (tta)
    tta = std::any_of(target->samples_by_batch.begin(), target->samples_by_batch.end(),
                      [](double n) { return !std::isnan(n); });
  p.title =
      fmt::format("Time against power of every configuration, cap {} ({})", cap_label(cap_w), subject(prof, labels));
  p.xlabel = fmt::format("{} power [W]", explore::to_string(space.basis()));
  p.ylabel = tta ? "predicted time to accuracy [s]" : "time per 1000 samples [s]";
  p.logy = true;
  auto y_of = [&](size_t bi, size_t ki) {
    return tta ? fs.tta(*target, bi, ki) : space.time_per_batch_s(bi, ki) / space.batch_sizes()[bi] * 1000;
  };
  for (size_t bi = 0; bi < space.num_batches(); ++bi) {
    PlotSeries s;
    s.title = fmt::format("b = {}", space.batch_sizes()[bi]);
    s.style = "linespoints pt 7 ps 0.8";
    for (size_t ki = 0; ki < space.num_knobs(); ++ki)
      if (space.has(bi, ki) && std::isfinite(y_of(bi, ki))) {
        s.x.push_back(space.power_w(bi, ki));
        s.y.push_back(y_of(bi, ki));
      }
    if (!s.x.empty()) p.series.push_back(std::move(s));
  }
  // One marker per chosen configuration, named by every policy that chose it.
  struct Choice {
    size_t bi, ki;
    std::string names;
    std::string what;
  };
  std::vector<Choice> choices;
  const auto ctx = fs.context(proxy, target);
  for (explore::Policy policy : policies) {
    const auto sel = explore::decide(policy, ctx, cap_w, fs.rule);
    if (!sel.feasible) continue;
    const std::string label(explore::info(policy).label);
    auto same = std::find_if(choices.begin(), choices.end(),
                             [&](const Choice& c) { return c.bi == sel.batch_index && c.ki == sel.knob_index; });
    if (same != choices.end()) {
      same->names += ", " + label;
      continue;
    }
    choices.push_back({sel.batch_index, sel.knob_index, label,
                       fmt::format("b={}, {}", sel.batch_size, space.describe_knob(sel.knob))});
  }
  int marker = 4;
  for (const auto& c : choices) {
    PlotSeries s;
    s.title = fmt::format("{}: {}", c.names, c.what);
    s.style = fmt::format("points pt {} ps 2.5 lw 2", marker);
    marker += 2;  // open square, open circle, open triangle, ...: markers that do not hide each other
    s.x = {space.power_w(c.bi, c.ki)};
    s.y = {y_of(c.bi, c.ki)};
    p.series.push_back(std::move(s));
  }
  // The measured validation peaks: under the cap, and above it.
  PlotSeries under, over;
  under.title = fmt::format("validation runs at {}: measured peak", cap_label(cap_w));
  under.style = "points pt 1 ps 2 lw 2";
  over.title = fmt::format("validation runs at {}: measured peak above the cap", cap_label(cap_w));
  over.style = "points pt 3 ps 2.5 lw 2";
  for (const auto& r : runs) {
    if (!traces::same(r.cap_w, cap_w) || r.batch_size == 0 || !std::isfinite(r.power_peak_w)) continue;
    const auto& bs = space.batch_sizes();
    const auto bit = std::find(bs.begin(), bs.end(), r.batch_size);
    if (bit == bs.end()) continue;
    const size_t bi = static_cast<size_t>(bit - bs.begin());
    for (size_t ki = 0; ki < space.num_knobs(); ++ki) {
      const auto& k = space.knob_settings()[ki];
      bool eq = k.size() == r.knob.size();
      for (size_t d = 0; eq && d < k.size(); ++d)
        eq = std::abs(k[d] - r.knob[d]) <= 1e-6 * std::max(1.0, std::abs(k[d]));
      if (!eq || !space.has(bi, ki) || !std::isfinite(y_of(bi, ki))) continue;
      PlotSeries& s = r.power_peak_w > cap_w || r.cap_exceeded ? over : under;
      s.x.push_back(r.power_peak_w);
      s.y.push_back(y_of(bi, ki));
    }
  }
  if (!under.x.empty()) p.series.push_back(std::move(under));
  if (!over.x.empty()) p.series.push_back(std::move(over));
  p.vlines = {cap_w};
  p.vline_titles = {"cap " + cap_label(cap_w)};
  if (fs.rule.guard > 0) {  // the margin the policies chose under
    p.vlines.push_back(fs.choose_w(cap_w));
    p.vline_titles.push_back(fmt::format("margin cap x (1 - {:g}) = {:.3g} W", fs.rule.guard, fs.choose_w(cap_w)));
    p.vline_colors = {"", "#e69f00"};
  }
  double lo = std::min(cap_w, fs.choose_w(cap_w)), hi = cap_w;
  for (const auto& s : p.series)
    for (double x : s.x) {
      lo = std::min(lo, x);
      hi = std::max(hi, x);
    }
  p.extra = fmt::format("set xrange [{:.4g}:{:.4g}]", lo - 0.05 * (hi - lo), hi + 0.05 * (hi - lo));  // cap in view
  add(out, render(p, dir), p.name + ": time vs power of every (f, b), cap line, chosen points (Figure 1 style)");
}

// The configuration (bi, ki) with the shortest time to accuracy under `rel` among those feasible at
// `cap_w` after the guard (the oracle's full search), at one batch size or over all; nullopt: none.
std::optional<std::pair<size_t, size_t>> fastest_under(const FigureSpace& fs, const explore::Relation& rel,
                                                       double cap_w, std::optional<size_t> bi = std::nullopt) {
  if (bi) {
    if (!rel.has(*bi)) return std::nullopt;
    const auto ki = fs.index.best_feasible_knob(*bi, fs.choose_w(cap_w), explore::Objective::Time);
    if (!ki) return std::nullopt;
    return std::make_pair(*bi, *ki);
  }
  const auto sel = explore::decide(explore::Policy::Oracle, fs.context(rel, &rel), cap_w, fs.rule);
  if (!sel.feasible) return std::nullopt;
  return std::make_pair(sel.batch_index, sel.knob_index);
}

// Figure 2: time to accuracy per batch size (each b at its fastest feasible knob) under several caps.
// Each point is labelled with its knob setting to its right; a label that repeats the one of a
// point of another cap drawn close by (same b, same setting, time within 8 %) is left out, and at
// each batch size the highest label sits above its point and the lowest below, so that the labels
// of close points do not overlap.
void figure2(ReportOutput& out, const fs::path& dir, const std::string& prefix, const traces::ProfileTable& prof,
             const FigureSpace& fs, const traces::RelationSet& rel_set, const std::vector<double>& caps,
             const Labels& labels) {
  const explore::Relation rel = explore::Relation::from_set(rel_set, fs.space);
  Plot p;
  p.name = safe(prefix + "-fig2-tta-per-batch");
  p.title = fmt::format("Time to accuracy per batch size on {} ({})", label_of(labels, rel_set.dataset),
                        subject(prof, labels));
  p.xlabel = "batch size (point labels: the fastest feasible knob setting)";
  p.ylabel = "time to accuracy [s]";
  p.logx = true;
  std::string xtics;
  for (int b : fs.space.batch_sizes()) xtics += fmt::format("{}{}", xtics.empty() ? "" : ", ", b);
  // The batch sizes as tics; room on the right for the labels of the largest b.
  const auto& bs = fs.space.batch_sizes();
  p.extra = fmt::format("set xtics ({})\nset mxtics 1", xtics);
  if (!bs.empty())
    p.extra += fmt::format("\nset xrange [{:.4g}:{:.4g}]", *std::min_element(bs.begin(), bs.end()) / 1.25,
                           *std::max_element(bs.begin(), bs.end()) * 1.7);
  std::vector<Plot::PointLabel> labels_at;  // every point's label, before placing
  for (const double cap : caps) {
    PlotSeries s;
    s.title = "cap " + cap_label(cap);
    s.style = "linespoints pt 7 ps 1 lw 2";
    for (size_t bi = 0; bi < fs.space.num_batches(); ++bi)
      if (const auto c = fastest_under(fs, rel, cap, bi)) {
        const double x = fs.space.batch_sizes()[bi], y = fs.tta(rel, c->first, c->second);
        s.x.push_back(x);
        s.y.push_back(y);
        const std::string label = fs.space.describe_knob(fs.space.knob_settings()[c->second]);
        const bool repeated = std::any_of(labels_at.begin(), labels_at.end(), [&](const Plot::PointLabel& q) {
          return q.x == x && q.text == label && std::abs(q.y - y) <= 0.08 * std::max(q.y, y);
        });
        if (!repeated) labels_at.push_back({x, y, label});
      }
    p.series.push_back(std::move(s));
  }
  // At each batch size: the highest point's label above it, the lowest's below, the others beside.
  for (auto& l : labels_at) {
    int above = 0, below = 0;
    for (const auto& q : labels_at)
      if (q.x == l.x) {
        above += q.y > l.y;
        below += q.y < l.y;
      }
    l.dy = above == 0 ? 0.9 : below == 0 ? -0.9 : 0;
  }
  p.point_labels = std::move(labels_at);
  add(out, render(p, dir), p.name + ": time to accuracy per batch size under several caps (Figure 2 style)");
}

// Figure 5: rows = the relation used to choose (proxy), columns = the relation that is trained
// (target); cell = % time over the target's fastest configuration at the cap.
void figure5(ReportOutput& out, const fs::path& dir, const std::string& prefix, const traces::ProfileTable& prof,
             const FigureSpace& fs, const std::vector<traces::RelationSet>& rel_sets, double cap_w,
             const Labels& labels) {
  Heatmap m;
  m.name = safe(prefix + "-fig5-proxy-x-target-" + fmt::format("{:.3g}W", cap_w));
  m.title = fmt::format("% time over the fastest configuration, cap {} ({})", cap_label(cap_w), subject(prof, labels));
  m.xlabel = "target data set (trained)";
  m.ylabel = "proxy data set (used to choose)";
  m.colorbar_label = "% time over the fastest configuration";
  std::vector<explore::Relation> rels;
  for (const auto& r : rel_sets) {
    const std::string name = label_of(labels, r.name);  // its label or its data set's (make_report), else its name
    m.xnames.push_back(name);
    m.ynames.push_back(name);
    rels.push_back(explore::Relation::from_set(r, fs.space));
  }
  for (const auto& proxy : rels) {
    std::vector<double> row;
    for (const auto& target : rels) {
      const auto chosen = fastest_under(fs, proxy, cap_w);
      const auto best = fastest_under(fs, target, cap_w);
      row.push_back(chosen && best ? 100.0 * (fs.tta(target, chosen->first, chosen->second) /
                                                  fs.tta(target, best->first, best->second) -
                                              1.0)
                                   : NAN);
    }
    m.values.push_back(std::move(row));
  }
  add(out, render(m, dir),
      m.name + ": proxy x target matrix of % time over the fastest configuration (Figure 5 style)");
}

// Figure 4: energy to accuracy per policy and cap (grouped bars, error bars one std over the seeds).
void figure4(ReportOutput& out, const fs::path& dir, const traces::ValidationResult& v, const Labels& labels) {
  std::vector<double> caps;
  std::set<std::string> pols;
  for (const auto& r : v.rows) {
    if (std::find_if(caps.begin(), caps.end(), [&](double c) { return traces::same(c, r.cap_w); }) == caps.end())
      caps.push_back(r.cap_w);
    pols.insert(r.policy);
  }
  std::sort(caps.begin(), caps.end(), [](double a, double b) {  // ascending, no cap last
    return units::is_no_cap(a) != units::is_no_cap(b) ? units::is_no_cap(b) : a < b;
  });
  std::vector<std::string> policies(pols.begin(), pols.end());
  std::stable_sort(policies.begin(), policies.end(),
                   [](auto& a, auto& b) { return explore::policy_rank(a) < explore::policy_rank(b); });
  Plot p;
  p.name = safe(v.name + "-fig4-energy");
  p.title = fmt::format("Energy to accuracy per policy and cap: {} on {}{}", label_of(labels, v.dataset), v.device,
                        traces::emulated_mark(v.emulated));
  p.xlabel = "power cap";
  p.ylabel = "energy to accuracy [J]";
  for (double c : caps) p.xtics.push_back(cap_label(c));
  const double width = 0.8 / static_cast<double>(std::max<size_t>(1, policies.size()));
  p.extra = fmt::format("set boxwidth {}\nset yrange [0:*]", width);
  for (size_t k = 0; k < policies.size(); ++k) {
    PlotSeries s;
    s.title = explore::policy_label(policies[k]);
    s.style = "boxes";
    for (size_t i = 0; i < caps.size(); ++i) {
      std::vector<double> e;
      for (const auto& r : v.rows)
        if (r.policy == policies[k] &&
            (traces::same(r.cap_w, caps[i]) || (units::is_no_cap(r.cap_w) && units::is_no_cap(caps[i]))) && r.reached &&
            std::isfinite(r.energy_j))
          e.push_back(r.energy_j);
      if (e.empty()) continue;
      s.x.push_back(static_cast<double>(i) - 0.4 + width * (static_cast<double>(k) + 0.5));
      s.y.push_back(base::mean(e));
      s.err.push_back(e.size() > 1 ? base::sample_std(e) : 0.0);
    }
    p.series.push_back(std::move(s));
  }
  add(out, render(p, dir), p.name + ": energy to accuracy per policy and cap (Figure 4 style)");
}

// Caps of the validation runs stored in `store`.
std::vector<double> validation_caps(traces::Store& store) {
  std::vector<double> caps;
  for (const auto& n : store.list<traces::ValidationResult>())
    for (const auto& r : store.read<traces::ValidationResult>(n).rows) caps.push_back(r.cap_w);
  std::sort(caps.begin(), caps.end());
  caps.erase(std::unique(caps.begin(), caps.end(), [](double a, double b) { return traces::same(a, b); }), caps.end());
  return caps;
}

// The caps a sweep's figures are drawn at: the sweep caps nearest to the validated caps, else the
// sweep's caps at one and two thirds of its range.
std::vector<double> figure_caps(const std::vector<double>& sweep_caps, const std::vector<double>& validated) {
  std::vector<double> pick;
  for (double v : validated) {
    const auto nearest = std::min_element(sweep_caps.begin(), sweep_caps.end(),
                                          [&](double a, double b) { return std::abs(a - v) < std::abs(b - v); });
    if (std::abs(*nearest - v) <= 0.02 * v) pick.push_back(*nearest);
  }
  if (pick.empty()) {
    pick.push_back(sweep_caps[sweep_caps.size() / 3]);
    if (sweep_caps.size() > 2) pick.push_back(sweep_caps[(2 * sweep_caps.size()) / 3]);
  }
  std::sort(pick.begin(), pick.end());
  pick.erase(std::unique(pick.begin(), pick.end()), pick.end());
  return pick;
}

// A power trace of a validation run with the cap drawn; the title says which run in words.
void trace_plot(ReportOutput& out, const fs::path& dir, const traces::PowerSeries& s, const traces::ValidationResult& v,
                const traces::ValidationRow* row, const Labels& labels) {
  Plot p;
  p.name = safe(s.name + "-power");
  const std::string run = row ? fmt::format("{} at b={}, {}, seed {}", explore::policy_label(row->policy),
                                            row->batch_size, v.knob.format(row->knob), row->seed)
                              : s.name;
  p.title = fmt::format("Power over time: {}, cap {} ({} on {}{})", run, cap_label(s.cap_w),
                        label_of(labels, v.dataset), v.device, traces::emulated_mark(s.emulated));
  p.xlabel = s.emulated ? "device time [s] (virtual)" : "time [s]";
  p.ylabel = "power [W]";
  PlotSeries total;
  total.title = "module power";
  total.style = "lines lw 1.5";
  total.x = s.time_s;
  total.y = s.power_w;
  p.series.push_back(total);
  if (!s.gpu_power_w.empty()) {
    PlotSeries gpu;
    gpu.title = "GPU rail";
    gpu.style = "lines lw 1";
    gpu.x = s.time_s;
    gpu.y = s.gpu_power_w;
    p.series.push_back(gpu);
  }
  double top = 0;
  for (double w : s.power_w) top = std::max(top, w);
  if (std::isfinite(s.cap_w)) {
    p.hlines = {s.cap_w};
    p.hline_titles = {"cap " + cap_label(s.cap_w)};
    top = std::max(top, s.cap_w);
  }
  p.extra = fmt::format("set yrange [0:{:.4g}]", top * 1.15 + 1e-9);  // the cap line stays in view
  add(out, render(p, dir), p.name + ": power over time of a validation run, cap drawn");
}

// The compute-versus-regret figure of a proxy-budget campaign (`pacer budget`): each policy's mean
// and max regret against the share of the proxy's compute its cut used, one point per cut (the
// adaptive campaign's replays of `pacer budget`, as a curve), and the same table as CSV.
void budget_figure(ReportOutput& out, const fs::path& dir, const std::string& prefix, const std::string& budget,
                   const std::vector<explore::BudgetPoint>& points) {
  Plot p;
  p.name = safe(prefix + "-" + budget + "-compute-vs-regret");
  p.title = fmt::format("Proxy compute vs regret ({})", budget);
  p.xlabel = "share of the proxy campaign's compute [%]";
  p.ylabel = "regret vs the oracle [%]";
  p.logx = true;
  std::vector<std::string> policies;
  for (const auto& pt : points)
    if (std::find(policies.begin(), policies.end(), pt.policy) == policies.end()) policies.push_back(pt.policy);
  // The fixed cuts as points; the adaptive campaign's replays (explore::is_adaptive_cut) as a curve
  // over compute beside them.
  for (const auto& policy : policies)
    for (const bool max : {false, true}) {
      PlotSeries s;
      s.title = fmt::format("{}: {} regret", policy_label(policy), max ? "max" : "mean");
      s.style = max ? "points pt 6 ps 1.2" : "points pt 7 ps 1.2";
      std::vector<std::pair<double, double>> adaptive;
      for (const auto& pt : points) {
        if (pt.policy != policy || std::isnan(pt.share)) continue;
        const double y = 100 * (max ? pt.max_regret : pt.mean_regret);
        if (explore::is_adaptive_cut(pt.cut)) {
          adaptive.emplace_back(100 * pt.share, y);
          continue;
        }
        s.x.push_back(100 * pt.share);
        s.y.push_back(y);
        if (!max && policy == policies.front()) s.labels.push_back(pt.cut);
      }
      p.series.push_back(std::move(s));
      if (adaptive.empty()) continue;
      std::sort(adaptive.begin(), adaptive.end());
      PlotSeries a;
      a.title = fmt::format("{}: {} regret, adaptive campaign", policy_label(policy), max ? "max" : "mean");
      a.style = max ? "linespoints dt 2 pt 4 ps 1" : "linespoints pt 5 ps 1";
      for (const auto& [x, y] : adaptive) {
        a.x.push_back(x);
        a.y.push_back(y);
      }
      p.series.push_back(std::move(a));
    }
  p.vlines = {10};
  p.vline_titles = {"10 %"};
  p.extra = "set xrange [2:130]\nset label 'point labels: the cut (pacer, mean)' at graph 0.02,graph 0.96 font ',9'";
  add(out, render(p, dir), p.name + ": regret against the share of the proxy's compute, one point per cut");
  traces::write_file_atomic(dir / (p.name + ".csv"), explore::budget_csv(points));
  out.files.push_back(dir / (p.name + ".csv"));
}

// Figures 1, 2 and 5 of one profile of a sweep (a sweep over several workloads names them all).
void sweep_figures(ReportOutput& out, const fs::path& out_dir, traces::Store& store, const fs::path& path,
                   const std::string& n, const traces::SweepResult& sweep, const std::string& pname,
                   const std::vector<double>& validated, const ReportOptions& opt) {
  std::vector<traces::ValidationRow> runs;  // the store's validation runs of this profile's workload (Figure 1)
  const auto profiles = traces::split_list(sweep.profile);
  if (!store.has<traces::ProfileTable>(pname)) {
    out.skipped.push_back(
        fmt::format("{}: figures for sweep '{}' need profile '{}' in the same store", path.string(), n, pname));
    return;
  }
  const auto prof = store.read<traces::ProfileTable>(pname);
  for (const auto& vn : store.list<traces::ValidationResult>()) {
    const auto v = store.read<traces::ValidationResult>(vn);
    if (v.workload == prof.workload || v.workload.empty()) runs.insert(runs.end(), v.rows.begin(), v.rows.end());
  }
  std::vector<traces::SweepRow> rows;
  for (const auto& r : sweep.rows)
    if (profiles.size() == 1 || r.workload == prof.workload) rows.push_back(r);
  // The sweep's target (else proxy) relation of this workload.
  const std::optional<traces::RelationSet> target = sweep_relation(store, sweep, sweep.target, prof.workload);
  const std::optional<traces::RelationSet> proxy = sweep_relation(store, sweep, sweep.relation, prof.workload);
  std::optional<traces::RelationSet> fig2_rel = target ? target : proxy;
  std::vector<double> caps;
  for (const auto& r : rows)
    if (std::isfinite(r.cap_w)) caps.push_back(r.cap_w);
  std::sort(caps.begin(), caps.end());
  caps.erase(std::unique(caps.begin(), caps.end()), caps.end());
  if (caps.empty()) return;
  const FigureSpace fs(store, pname, prof, sweep);
  std::vector<double> pick = opt.figure_caps_w.empty() ? figure_caps(caps, validated) : opt.figure_caps_w;
  std::sort(pick.begin(), pick.end());
  // The store's name first (several stores may hold a sweep of the same name), unless the
  // sweep's name already begins with it.
  const std::string stem = stem_of(path), sweep_part = profiles.size() == 1 ? n : n + "-" + pname;
  const std::string prefix = sweep_part.rfind(stem + "-", 0) == 0 ? sweep_part : stem + "-" + sweep_part;
  if (proxy) {
    // The paper's policies that the sweep ran, in the paper's order.
    std::vector<explore::Policy> policies = opt.policies;  // as given, in the given order
    if (policies.empty()) {
      for (const auto& r : rows)
        if (const auto pol = explore::policy_from_string(r.policy);
            pol && explore::policy_rank(r.policy) < 100 &&
            std::find(policies.begin(), policies.end(), *pol) == policies.end())
          policies.push_back(*pol);
      std::stable_sort(policies.begin(), policies.end(),
                       [](auto a, auto b) { return explore::info(a).paper_row < explore::info(b).paper_row; });
    }
    const explore::Relation proxy_rel = explore::proxy_relation(store, *proxy, fs.space, target ? &*target : nullptr);
    std::optional<explore::Relation> target_rel;
    if (target) target_rel = explore::Relation::from_set(*target, fs.space);
    for (double cap : pick)
      figure1(out, out_dir, prefix, prof, fs, proxy_rel, target_rel ? &*target_rel : nullptr, cap, policies, opt.labels,
              runs);
  } else {
    out.skipped.push_back(fmt::format("{}: Figure 1 for '{}' needs the sweep's proxy relation '{}' in the store",
                                      path.string(), prefix, sweep.relation));
  }
  if (fig2_rel && !fig2_rel->relation_vector().empty()) {
    std::vector<double> fig2_caps = pick;
    fig2_caps.push_back(caps.back());
    fig2_caps.erase(std::unique(fig2_caps.begin(), fig2_caps.end()), fig2_caps.end());
    figure2(out, out_dir, prefix, prof, fs, *fig2_rel, fig2_caps, opt.labels);
  }
  std::vector<traces::RelationSet> rels;
  for (const auto& rn : store.list<traces::RelationSet>()) {
    auto r = store.read<traces::RelationSet>(rn);
    if (r.workload == prof.workload && !r.relation_vector().empty()) rels.push_back(std::move(r));
  }
  if (rels.size() >= 2)
    for (double cap : pick) figure5(out, out_dir, prefix, prof, fs, rels, cap, opt.labels);
  else
    out.skipped.push_back(fmt::format("{}: Figure 5 for '{}' needs two relation sets of {} in the store", path.string(),
                                      prefix, prof.workload));
}

}  // namespace

std::string report_figures_help() {
  return "  Figure 1 (NAME-fig1-time-vs-power-CAP): time vs power of every (knob, b), the cap and the margin cap x (1 "
         "- guard), each policy's choice, the measured peaks of the validation runs\n"
         "  Figure 2 (NAME-fig2-tta-per-batch): time to accuracy per batch size under several caps, knob labels\n"
         "  Figure 4 (VALIDATION-fig4-energy): energy to accuracy per policy and cap, error bars one std\n"
         "  Figure 5 (NAME-fig5-proxy-x-target-CAP): % time over the fastest configuration, proxy x target\n"
         "  power trace (RUN-power): power over time of a validation run with its cap\n"
         "  proxy budget (NAME-BUDGET-compute-vs-regret): regret against the proxy's compute (pacer budget)\n";
}

namespace {

// A Markdown table cell: pipes escaped, line breaks as spaces.
std::string md_cell(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|')
      out += "\\|";
    else
      out += (c == '\n' || c == '\r') ? ' ' : c;
  }
  return out;
}

// provenance.md: per store, where each of its records came from (traces/provenance.hpp): the pacer
// version and commit, start time, host, threads, CPU kernels, seeds, options and the command line of
// the run that wrote it.
std::string provenance_markdown(const std::vector<std::pair<fs::path, const traces::Store*>>& stores) {
  std::string md = "# Provenance\n\nThe run that wrote each record of the stores this report was made from.\n";
  for (const auto& [path, store] : stores) {
    md += fmt::format("\n## {}\n\n", path.string());
    md +=
        "| record | pacer | commit | started (UTC) | host | threads | CPU kernels | seeds | options | command line |\n";
    md += "|---|---|---|---|---|---|---|---|---|---|\n";
    const auto row = [&](const std::string& record, const traces::Provenance& p) {
      md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | `{}` |\n", md_cell(record),
                        md_cell(p.pacer_version), md_cell(p.git_commit), md_cell(p.start_time), md_cell(p.host),
                        md_cell(p.threads), md_cell(p.cpu_kernels), md_cell(p.seeds), md_cell(p.options),
                        md_cell(p.command_line));
    };
    if (store->has_device()) row("device", store->read_provenance("device", ""));
    for (const char* g : traces::kStoreGroups)
      for (const auto& n : store->list(g)) row(fmt::format("{}/{}", g, n), store->read_provenance(g, n));
  }
  return md;
}

// index.html: every table and SVG figure of the report and the run's provenance (the report's
// provenance.md), written last.
fs::path write_index(const ReportOutput& out, const fs::path& dir, const fs::path& shown_dir) {
  IndexPage page;
  page.title = "pacer report: " + fs::absolute(shown_dir).lexically_normal().filename().string();
  for (size_t i = 0; i < out.table_stems.size(); ++i)
    page.tables.push_back({out.table_stems[i], out.tables_markdown[i]});
  page.figures = out.svgs;
  std::ifstream in(dir / "provenance.md");
  std::stringstream ss;
  ss << in.rdbuf();
  page.provenance_markdown = ss.str();
  traces::write_file_atomic(dir / "index.html", index_html(page));
  return dir / "index.html";
}

// `shown_dir`: the folder the report ends up in (it is written into a staging folder first).
ReportOutput write_report(const ReportOptions& opt, const fs::path& shown_dir) {
  for (double cap : opt.figure_caps_w)
    if (!std::isfinite(cap) || cap <= 0) throw OptionError("figure-caps", "Figures 1 and 5 need finite caps in W");
  ReportOutput out;
  std::vector<traces::ValidationResult> validations;
  std::vector<traces::SweepResult> sweeps;
  struct Loaded {
    fs::path path;
    traces::Store store;
  };
  std::vector<Loaded> stores;
  for (const auto& p : opt.stores) stores.push_back({p, traces::Store::open(p)});  // all inputs valid before writing
  // Named sweeps and power traces exist before anything is written.
  auto in_some_store = [&](auto tag, const std::string& name) {
    using R = typename decltype(tag)::type;
    return std::any_of(stores.begin(), stores.end(), [&](Loaded& l) { return l.store.template has<R>(name); });
  };
  for (const auto& n : opt.sweeps)
    if (!in_some_store(std::type_identity<traces::SweepResult>{}, n))
      throw OptionError("sweep", fmt::format("no sweep '{}' in the stores (pacer export STORE lists them)", n));
  for (const auto& n : opt.power_traces)
    if (!in_some_store(std::type_identity<traces::PowerSeries>{}, n))
      throw OptionError("power-trace",
                        fmt::format("no power trace '{}' under /runs in the stores (a validation row's series)", n));
  // A store of profiles and relations only gave an index of nothing, exit 0.
  const bool something = std::any_of(stores.begin(), stores.end(), [](Loaded& l) {
    return !l.store.list<traces::SweepResult>().empty() || !l.store.list<traces::ValidationResult>().empty();
  });
  if (!something && opt.power_traces.empty()) {
    std::vector<std::string> names;
    for (const auto& l : stores) names.push_back(l.path.string());
    throw Error(
        fmt::format("{}: nothing to report: no sweep and no validation (run pacer sweep or pacer validate "
                    "on the store first)",
                    fmt::join(names, ", ")));
  }
  auto drawn = [&](const std::string& sweep) {
    return opt.sweeps.empty() || std::find(opt.sweeps.begin(), opt.sweeps.end(), sweep) != opt.sweeps.end();
  };
  fs::create_directories(opt.out_dir);
  Labels labels = opt.labels;
  for (auto& [path, store] : stores) {
    for (const auto& n : store.list<traces::ValidationResult>())
      validations.push_back(store.read<traces::ValidationResult>(n));
    for (const auto& n : store.list<traces::SweepResult>()) {
      auto s = store.read<traces::SweepResult>(n);
      if (s.budget.empty() && drawn(n)) sweeps.push_back(std::move(s));  // a proxy-budget cut has its own figure
    }
    // A relation is named by its data set's label where one is given (a sweep's table group and
    // Figure 5 use it), else by its own name.
    for (const auto& n : store.list<traces::RelationSet>()) {
      const auto r = store.read<traces::RelationSet>(n);
      if (!labels.count(n) && opt.labels.count(r.dataset)) labels[n] = opt.labels.at(r.dataset);
    }
  }
  ReportOptions ropt = opt;
  ropt.labels = labels;
  if (!validations.empty()) {
    write_tables(out, time_table(validations, labels), opt.out_dir, "table-time-to-accuracy");
    write_tables(out, energy_table(validations, labels), opt.out_dir, "table-energy");
  }
  if (!sweeps.empty()) write_tables(out, sweep_table(sweeps, labels), opt.out_dir, "table-simulated");

  for (auto& [path, store] : stores) {
    // Figures 1, 2 and 5 per profile of each sweep (a sweep over several workloads names them all).
    const std::vector<double> validated = validation_caps(store);
    std::map<std::string, std::vector<traces::SweepResult>> budgets;
    for (const auto& n : store.list<traces::SweepResult>()) {
      auto sweep = store.read<traces::SweepResult>(n);
      if (!sweep.budget.empty()) {
        budgets[sweep.budget].push_back(std::move(sweep));
        continue;
      }
      if (!drawn(n)) continue;
      const auto profiles = traces::split_list(sweep.profile);
      for (const auto& pname : profiles) sweep_figures(out, opt.out_dir, store, path, n, sweep, pname, validated, ropt);
    }
    for (const auto& [budget, cut_sweeps] : budgets)
      budget_figure(out, opt.out_dir, stem_of(path), budget, explore::budget_points(cut_sweeps));
    std::set<std::string> traced;
    for (const auto& n : store.list<traces::ValidationResult>()) {
      const auto v = store.read<traces::ValidationResult>(n);
      figure4(out, opt.out_dir, v, labels);
      std::vector<const traces::ValidationRow*> runs;  // the runs whose power is drawn
      if (!opt.power_traces.empty()) {
        for (const auto& r : v.rows)
          if (!r.series.empty() && std::count(opt.power_traces.begin(), opt.power_traces.end(), r.series) &&
              !std::count_if(runs.begin(), runs.end(), [&](auto* q) { return q->series == r.series; }))
            runs.push_back(&r);
      } else {
        // One power trace: Ours at the lowest cap (the tightest), else the first stored run.
        const traces::ValidationRow* pick = nullptr;
        for (const auto& r : v.rows)
          if (!r.series.empty() && explore::is_policy(r.policy, explore::Policy::Ours) &&
              (!pick || r.cap_w < pick->cap_w))
            pick = &r;
        if (!pick)
          for (const auto& r : v.rows)
            if (!r.series.empty()) {
              pick = &r;
              break;
            }
        if (pick) runs.push_back(pick);
      }
      for (const auto* r : runs)
        if (store.has<traces::PowerSeries>(r->series)) {
          trace_plot(out, opt.out_dir, store.read<traces::PowerSeries>(r->series), v, r, labels);
          traced.insert(r->series);
        }
    }
    // A named trace that no validation row names: drawn by its own name.
    for (const auto& n : opt.power_traces)
      if (!traced.count(n) && store.has<traces::PowerSeries>(n))
        trace_plot(out, opt.out_dir, store.read<traces::PowerSeries>(n), traces::ValidationResult{}, nullptr, labels);
  }
  std::vector<std::pair<fs::path, const traces::Store*>> sources;
  for (const auto& [path, store] : stores) sources.emplace_back(path, &store);
  traces::write_file_atomic(opt.out_dir / "provenance.md", provenance_markdown(sources));
  out.files.push_back(opt.out_dir / "provenance.md");
  out.index = write_index(out, opt.out_dir, shown_dir);
  out.files.push_back(out.index);
  return out;
}

// The report's file `f` in `staging` as the same file in `out_dir`.
fs::path moved(const fs::path& f, const fs::path& staging, const fs::path& out_dir) {
  return out_dir / f.lexically_relative(staging);
}

// The files a report wrote into its folder, relative to it: `.pacer-report.files` in the folder.
constexpr std::string_view kReportFiles = ".pacer-report.files";
// The lock that makes reports into one folder take turns: `.pacer-report.lock` in the folder.
constexpr std::string_view kReportLock = ".pacer-report";

// Removes the files the folder's earlier report wrote (its list, kReportFiles) that this report did
// not write again, so that the folder holds one report, never a mix; files the user put there are
// not on the list and stay. Then records this report's list.
void replace_earlier_report(const fs::path& out_dir, const std::vector<fs::path>& files) {
  std::set<std::string> mine;
  for (const auto& f : files) mine.insert(f.lexically_relative(out_dir).generic_string());
  std::ifstream in(out_dir / kReportFiles);
  std::error_code ec;
  for (std::string line; std::getline(in, line);) {
    const fs::path rel = fs::path(line).lexically_normal();
    if (line.empty() || mine.count(rel.generic_string()) || rel.is_absolute() || (!rel.empty() && *rel.begin() == ".."))
      continue;
    const fs::path old = out_dir / rel;
    if (!fs::is_regular_file(fs::symlink_status(old, ec))) continue;
    fs::remove(old, ec);
    if (rel.has_parent_path()) fs::remove(old.parent_path(), ec);  // a sub-folder it emptied (not if it holds more)
  }
  std::string list;
  for (const auto& f : mine) list += f + "\n";
  traces::write_file_atomic(out_dir / kReportFiles, list);
}

}  // namespace

// The report is written into a folder of its own inside the output folder, then each file is
// renamed into place: a report that fails (a full disk, gnuplot) leaves no file of its own behind,
// and an output folder it had to create is removed again.
std::vector<explore::Selection> figure1_choices(const fs::path& path, const std::string& sweep_name,
                                                const std::string& profile, double cap_w,
                                                const std::vector<explore::Policy>& policies) {
  const auto store = traces::Store::open(path);
  const auto sweep = store.read<traces::SweepResult>(sweep_name);
  const auto prof = store.read<traces::ProfileTable>(profile);
  const FigureSpace fs(store, profile, prof, sweep);
  // This profile's workload's relations (as sweep_figures: a sweep of several lists each workload's).
  const auto proxy_set = sweep_relation(store, sweep, sweep.relation, prof.workload);
  const auto target_set = sweep_relation(store, sweep, sweep.target, prof.workload);
  if (!proxy_set) throw Error(fmt::format("sweep '{}' has no proxy relation in {}", sweep_name, path.string()));
  const explore::Relation proxy =
      explore::proxy_relation(store, *proxy_set, fs.space, target_set ? &*target_set : nullptr);
  std::optional<explore::Relation> target;
  if (target_set) target = explore::Relation::from_set(*target_set, fs.space);
  std::vector<explore::Selection> out;
  for (explore::Policy p : policies)
    out.push_back(explore::decide(p, fs.context(proxy, target ? &*target : nullptr), cap_w, fs.rule));
  return out;
}

ReportOutput make_report(const ReportOptions& opt) {
  if (opt.stores.empty()) throw OptionError("store", "name at least one trace store");
  traces::check_output_folder(opt.out_dir, "out");  // before any store is read
  std::error_code ec;
  const bool existed = fs::exists(opt.out_dir, ec);
  fs::create_directories(opt.out_dir);
  // Reports into one folder take turns (a second waits for the first, then replaces its files).
  std::optional<traces::file::WriteLock> lock(std::in_place, opt.out_dir / kReportLock);
  // A report killed mid-way (SIGKILL, SIGINT) left its staging folder: removed by the next report.
  constexpr std::string_view staging_prefix = ".pacer-report-";
  if (existed) traces::file::remove_stale_folders(opt.out_dir, staging_prefix);
  ReportOptions staged = opt;
  staged.out_dir = opt.out_dir / fmt::format("{}{}", staging_prefix, ::getpid());
  const auto clean_up = [&] {
    fs::remove_all(staged.out_dir, ec);
    if (!existed) {  // only when empty: what the report made
      lock.reset();
      fs::remove(traces::file::lock_path(opt.out_dir / kReportLock), ec);
      fs::remove(opt.out_dir, ec);
    }
  };
  try {
    ReportOutput out = write_report(staged, opt.out_dir);
    for (auto& f : out.files) {
      const fs::path to = moved(f, staged.out_dir, opt.out_dir);
      fs::create_directories(to.parent_path());
      fs::rename(f, to);
      f = to;
    }
    if (!out.index.empty()) out.index = moved(out.index, staged.out_dir, opt.out_dir);
    replace_earlier_report(opt.out_dir, out.files);  // index.html is among them
    for (auto& s : out.skipped)
      for (size_t at; (at = s.find(staged.out_dir.string())) != std::string::npos;)
        s.replace(at, staged.out_dir.string().size(), opt.out_dir.string());
    fs::remove_all(staged.out_dir, ec);
    return out;
  } catch (const Error& e) {
    clean_up();
    if (typeid(e) != typeid(Error)) throw;
    std::string what = e.what();  // the files it names are the output folder's, not the staging folder's
    for (size_t at; (at = what.find(staged.out_dir.string())) != std::string::npos;)
      what.replace(at, staged.out_dir.string().size(), opt.out_dir.string());
    throw Error(what + " (no report was written)");
  } catch (...) {
    clean_up();
    throw;
  }
}

}  // namespace pacer::experiments
