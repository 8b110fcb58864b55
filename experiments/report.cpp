#include "experiments/report.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "experiments/plot.hpp"
#include "experiments/tables.hpp"
#include "traces/csv.hpp"
#include "traces/error.hpp"
#include "traces/store.hpp"

namespace pacer::experiments {
namespace fs = std::filesystem;
namespace {

std::string stem_of(const fs::path& store) { return store.stem().string(); }

// "614.4 MHz", "250 W", or the values of a multi-dimensional knob.
std::string knob_label(const traces::KnobSpace& knob, const std::vector<double>& v) {
  if (knob.kind == "gpu_freq" && v.size() == 1) return fmt::format("{:g} MHz", v[0] / 1e6);
  if (knob.kind == "power_limit" && v.size() == 1) return fmt::format("{:g} W", v[0]);
  return fmt::format("{}", fmt::join(v, "/"));
}

std::string safe(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '-';
  return s;
}

void add(ReportOutput& out, const RenderResult& r, const std::string& what) {
  out.files.insert(out.files.end(), r.files.begin(), r.files.end());
  out.figures.push_back(what + (r.rendered ? "" : " (script and data only: gnuplot missing)"));
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
}

double power_of(const traces::ProfilePoint& p) { return std::isfinite(p.power_peak_w) ? p.power_peak_w : p.power_mean_w; }

// Figure 1: time vs (peak) power of every profiled (knob, b), the cap as a line, each policy's
// choice marked.
void figure1(ReportOutput& out, const fs::path& dir, const std::string& prefix, const traces::ProfileTable& prof,
             const traces::RelationSet* rel, double cap_w,
             const std::vector<std::pair<std::string, std::pair<std::vector<double>, int>>>& chosen) {
  Plot p;
  p.name = safe(prefix + "-fig1-time-vs-power-" + fmt::format("{:.3g}W", cap_w));
  const bool tta = rel != nullptr && !rel->relation_vector().empty();
  p.title = fmt::format("{} on {}{}: every configuration, cap {:g} W", prof.workload, prof.device,
                        prof.emulated ? " (emulated)" : "", cap_w);
  p.xlabel = std::string(std::isfinite(prof.points.empty() ? NAN : prof.points[0].power_peak_w) ? "peak" : "mean") +
             " power [W]";
  p.ylabel = tta ? "predicted time to accuracy [s]" : "time per 1000 samples [s]";
  p.logy = true;
  auto y_of = [&](const traces::ProfilePoint& pt) {
    const double per_sample = pt.time_per_batch_mean_s / pt.batch_size;
    return tta ? per_sample * rel->mean_samples(pt.batch_size) : per_sample * 1000;
  };
  for (int b : prof.batch_sizes()) {
    PlotSeries s;
    s.title = fmt::format("b = {}", b);
    s.style = "linespoints pt 7 ps 0.8";
    for (const auto& pt : prof.points)
      if (pt.batch_size == b && pt.status == "ok" && std::isfinite(y_of(pt))) {
        s.x.push_back(power_of(pt));
        s.y.push_back(y_of(pt));
      }
    if (!s.x.empty()) p.series.push_back(std::move(s));
  }
  int marker = 4;
  for (const auto& [policy, config] : chosen) {
    const auto* pt = prof.find(config.first, config.second);
    if (!pt) continue;
    PlotSeries s;
    s.title = fmt::format("{}: b={}, {}", policy_label(policy), config.second, knob_label(prof.knob, config.first));
    s.style = fmt::format("points pt {} ps 2.5 lw 2", marker++);
    s.x = {power_of(*pt)};
    s.y = {y_of(*pt)};
    p.series.push_back(std::move(s));
  }
  p.vlines = {cap_w};
  p.vline_titles = {fmt::format("cap {:g} W", cap_w)};
  double lo = cap_w, hi = cap_w;
  for (const auto& s : p.series)
    for (double x : s.x) {
      lo = std::min(lo, x);
      hi = std::max(hi, x);
    }
  p.extra = fmt::format("set xrange [{:.4g}:{:.4g}]", lo - 0.05 * (hi - lo), hi + 0.05 * (hi - lo));  // cap in view
  add(out, render(p, dir), p.name + ": time vs power of every (f, b), cap line, chosen points (Figure 1 style)");
}

// Time to accuracy of configuration `pt` under relation `rel` (NaN when b never reached the target).
double tta_of(const traces::ProfilePoint& pt, const traces::RelationSet& rel) {
  return pt.time_per_batch_mean_s / pt.batch_size * rel.mean_samples(pt.batch_size);
}

// The configuration with the shortest time to accuracy under `rel` among those feasible at `cap_w`
// (full search: the optimum that Algorithm 1 finds), or nullptr when none is feasible.
const traces::ProfilePoint* fastest_under(const traces::ProfileTable& prof, const traces::RelationSet& rel, double cap_w,
                                          std::optional<int> batch = std::nullopt) {
  const traces::ProfilePoint* best = nullptr;
  for (const auto& pt : prof.points) {
    if (pt.status != "ok" || power_of(pt) > cap_w || (batch && pt.batch_size != *batch)) continue;
    const double t = tta_of(pt, rel);
    if (std::isfinite(t) && (!best || t < tta_of(*best, rel))) best = &pt;
  }
  return best;
}

// Figure 2: time to accuracy per batch size (each b at its fastest feasible knob) under several caps.
void figure2(ReportOutput& out, const fs::path& dir, const std::string& prefix, const traces::ProfileTable& prof,
             const traces::RelationSet& rel, const std::vector<double>& caps) {
  Plot p;
  p.name = safe(prefix + "-fig2-tta-per-batch");
  p.title = fmt::format("{} ({}) on {}{}: time to accuracy per batch size", prof.workload, rel.dataset, prof.device,
                        prof.emulated ? " (emulated)" : "");
  p.xlabel = "batch size";
  p.ylabel = "time to accuracy [s]";
  p.logx = true;
  for (double cap : caps) {
    PlotSeries s;
    s.title = fmt::format("cap {:g} W", cap);
    s.style = "linespoints pt 7 ps 1 lw 2";
    for (int b : prof.batch_sizes())
      if (const auto* pt = fastest_under(prof, rel, cap, b)) {
        s.x.push_back(b);
        s.y.push_back(tta_of(*pt, rel));
        s.labels.push_back(knob_label(prof.knob, pt->knob));
      }
    p.series.push_back(std::move(s));
  }
  p.extra = "set label 'point labels: the fastest feasible knob setting' at graph 0.02,graph 0.04 font ',9'";
  add(out, render(p, dir), p.name + ": time to accuracy per batch size under several caps (Figure 2 style)");
}

// Figure 5: rows = the relation used to choose (proxy), columns = the relation that is trained
// (target); cell = % time over the target's fastest configuration at the cap.
void figure5(ReportOutput& out, const fs::path& dir, const std::string& prefix, const traces::ProfileTable& prof,
             const std::vector<traces::RelationSet>& rels, double cap_w) {
  Heatmap m;
  m.name = safe(prefix + "-fig5-proxy-x-target-" + fmt::format("{:.3g}W", cap_w));
  m.title = fmt::format("% time over the fastest configuration, cap {:g} W ({} on {}{})", cap_w, prof.workload,
                        prof.device, prof.emulated ? ", emulated" : "");
  m.xlabel = "target (trained)";
  m.ylabel = "proxy (used to choose)";
  for (const auto& r : rels) {
    m.xnames.push_back(r.name);
    m.ynames.push_back(r.name);
  }
  for (const auto& proxy : rels) {
    std::vector<double> row;
    for (const auto& target : rels) {
      const auto* chosen = fastest_under(prof, proxy, cap_w);
      const auto* best = fastest_under(prof, target, cap_w);
      row.push_back(chosen && best ? 100.0 * (tta_of(*chosen, target) / tta_of(*best, target) - 1.0) : NAN);
    }
    m.values.push_back(std::move(row));
  }
  add(out, render(m, dir), m.name + ": proxy x target matrix of % time over the fastest configuration (Figure 5 style)");
}

// Figure 4: energy to accuracy per policy and cap (grouped bars).
void figure4(ReportOutput& out, const fs::path& dir, const traces::ValidationResult& v) {
  std::vector<double> caps;
  std::set<std::string> pols;
  for (const auto& r : v.rows) {
    if (std::find_if(caps.begin(), caps.end(), [&](double c) { return traces::same(c, r.cap_w); }) == caps.end())
      caps.push_back(r.cap_w);
    pols.insert(r.policy);
  }
  std::sort(caps.begin(), caps.end());
  std::vector<std::string> policies(pols.begin(), pols.end());
  std::stable_sort(policies.begin(), policies.end(), [](auto& a, auto& b) { return policy_rank(a) < policy_rank(b); });
  Plot p;
  p.name = safe(v.name + "-fig4-energy");
  p.title = fmt::format("Energy to accuracy: {} on {}{}", v.dataset, v.device, v.emulated ? " (emulated)" : "");
  p.xlabel = "power cap";
  p.ylabel = "energy to accuracy [J]";
  for (double c : caps) p.xtics.push_back(cap_label(c));
  const double width = 0.8 / static_cast<double>(std::max<size_t>(1, policies.size()));
  p.extra = fmt::format("set boxwidth {}\nset yrange [0:*]\nset key outside right top noopaque nobox", width);
  for (size_t k = 0; k < policies.size(); ++k) {
    PlotSeries s;
    s.title = policy_label(policies[k]);
    s.style = "boxes";
    for (size_t i = 0; i < caps.size(); ++i) {
      double sum = 0;
      int n = 0;
      for (const auto& r : v.rows)
        if (r.policy == policies[k] && traces::same(r.cap_w, caps[i]) && r.reached && std::isfinite(r.energy_j)) {
          sum += r.energy_j;
          ++n;
        }
      if (!n) continue;
      s.x.push_back(static_cast<double>(i) - 0.4 + width * (static_cast<double>(k) + 0.5));
      s.y.push_back(sum / n);
    }
    p.series.push_back(std::move(s));
  }
  add(out, render(p, dir), p.name + ": energy to accuracy per policy and cap (Figure 4 style)");
}

// Caps of the validation runs stored in `store`.
std::vector<double> validation_caps(traces::Store& store) {
  std::vector<double> caps;
  for (const auto& n : store.list("validations"))
    for (const auto& r : store.read_validation(n).rows) caps.push_back(r.cap_w);
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

// A power trace of a validation run with the cap drawn.
void trace_plot(ReportOutput& out, const fs::path& dir, const traces::PowerSeries& s) {
  Plot p;
  p.name = safe(s.name + "-power");
  p.title = fmt::format("Power during {}{}", s.name, s.emulated ? " (emulated device, virtual time)" : "");
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
    p.hline_titles = {fmt::format("cap {:g} W", s.cap_w)};
    top = std::max(top, s.cap_w);
  }
  p.extra = fmt::format("set yrange [0:{:.4g}]", top * 1.15 + 1e-9);  // the cap line stays in view
  add(out, render(p, dir), p.name + ": power over time of a validation run, cap drawn");
}

}  // namespace

ReportOutput make_report(const ReportOptions& opt) {
  if (opt.stores.empty()) throw OptionError("store", "name at least one trace store");
  ReportOutput out;
  std::vector<traces::ValidationResult> validations;
  std::vector<traces::SweepResult> sweeps;
  struct Loaded {
    fs::path path;
    traces::Store store;
  };
  std::vector<Loaded> stores;
  for (const auto& p : opt.stores) stores.push_back({p, traces::Store::open(p)});  // all inputs valid before writing
  fs::create_directories(opt.out_dir);
  for (auto& [path, store] : stores) {
    for (const auto& n : store.list("validations")) validations.push_back(store.read_validation(n));
    for (const auto& n : store.list("sweeps")) sweeps.push_back(store.read_sweep(n));
  }
  if (!validations.empty()) {
    write_tables(out, time_table(validations), opt.out_dir, "table-time-to-accuracy");
    write_tables(out, energy_table(validations), opt.out_dir, "table-energy");
  }
  if (!sweeps.empty()) write_tables(out, sweep_table(sweeps), opt.out_dir, "table-simulated");

  for (auto& [path, store] : stores) {
    // Figures 1, 2 and 5 per profile of each sweep (a sweep over several workloads names them all).
    const std::vector<double> validated = validation_caps(store);
    for (const auto& n : store.list("sweeps")) {
      const auto sweep = store.read_sweep(n);
      const auto profiles = traces::split_list(sweep.profile);
      for (const auto& pname : profiles) {
        if (!store.has("profiles", pname)) {
          out.skipped.push_back(fmt::format("{}: figures for sweep '{}' need profile '{}' in the same store",
                                            path.string(), n, pname));
          continue;
        }
        const auto prof = store.read_profile(pname);
        std::vector<traces::SweepRow> rows;
        for (const auto& r : sweep.rows)
          if (profiles.size() == 1 || r.workload == prof.workload) rows.push_back(r);
        // The sweep's target (else proxy) relation of this workload.
        auto relation_named = [&](const std::string& list) -> std::optional<traces::RelationSet> {
          for (const auto& rn : traces::split_list(list))
            if (store.has("relations", rn)) {
              auto r = store.read_relation(rn);
              if (profiles.size() == 1 || r.workload == prof.workload) return r;
            }
          return std::nullopt;
        };
        const std::optional<traces::RelationSet> target = relation_named(sweep.target);
        std::optional<traces::RelationSet> fig2_rel = target ? target : relation_named(sweep.relation);
        std::vector<double> caps;
        for (const auto& r : rows)
          if (std::isfinite(r.cap_w)) caps.push_back(r.cap_w);
        std::sort(caps.begin(), caps.end());
        caps.erase(std::unique(caps.begin(), caps.end()), caps.end());
        if (caps.empty()) continue;
        const std::vector<double> pick = figure_caps(caps, validated);
        // The store's name first (several stores may hold a sweep of the same name), unless the
        // sweep's name already begins with it.
        const std::string stem = stem_of(path), sweep_part = profiles.size() == 1 ? n : n + "-" + pname;
        const std::string prefix = sweep_part.rfind(stem + "-", 0) == 0 ? sweep_part : stem + "-" + sweep_part;
        for (double cap : pick) {
          std::vector<std::pair<std::string, std::pair<std::vector<double>, int>>> chosen;
          for (const auto& r : rows)
            if (traces::same(r.cap_w, cap) && r.feasible && policy_rank(r.policy) < 100)
              chosen.push_back({r.policy, {r.knob, r.batch_size}});
          figure1(out, opt.out_dir, prefix, prof, target ? &*target : nullptr, cap, chosen);
        }
        if (fig2_rel && !fig2_rel->relation_vector().empty()) {
          std::vector<double> fig2_caps = pick;
          fig2_caps.push_back(caps.back());
          fig2_caps.erase(std::unique(fig2_caps.begin(), fig2_caps.end()), fig2_caps.end());
          figure2(out, opt.out_dir, prefix, prof, *fig2_rel, fig2_caps);
        }
        std::vector<traces::RelationSet> rels;
        for (const auto& rn : store.list("relations")) {
          auto r = store.read_relation(rn);
          if (r.workload == prof.workload && !r.relation_vector().empty()) rels.push_back(std::move(r));
        }
        if (rels.size() >= 2)
          for (double cap : pick) figure5(out, opt.out_dir, prefix, prof, rels, cap);
        else
          out.skipped.push_back(fmt::format("{}: Figure 5 for '{}' needs two relation sets of {} in the store",
                                            path.string(), prefix, prof.workload));
      }
    }
    for (const auto& n : store.list("validations")) {
      const auto v = store.read_validation(n);
      figure4(out, opt.out_dir, v);
      // One power trace: Ours at the lowest cap (the tightest), else the first stored run.
      std::string series;
      double lowest = INFINITY;
      for (const auto& r : v.rows)
        if (!r.series.empty() && r.policy == "ours" && r.cap_w < lowest) {
          lowest = r.cap_w;
          series = r.series;
        }
      if (series.empty())
        for (const auto& r : v.rows)
          if (!r.series.empty()) {
            series = r.series;
            break;
          }
      if (!series.empty() && store.has("runs", series)) trace_plot(out, opt.out_dir, store.read_series(series));
    }
  }
  return out;
}

}  // namespace pacer::experiments
