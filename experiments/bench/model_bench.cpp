#include "experiments/bench/model_bench.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "base/error.hpp"
#include "base/stats.hpp"
#include "experiments/report/plot.hpp"
#include "hw/emulator/emulated.hpp"
#include "hw/executor.hpp"
#include "hw/profiler.hpp"
#include "models/interpolating.hpp"
#include "models/learned.hpp"
#include "models/planner.hpp"
#include "models/uncertainty.hpp"
#include "models/workloads/workload.hpp"
#include "traces/catalog/catalog.hpp"
#include "traces/emulated_label.hpp"
#include "traces/import/common.hpp"
#include "traces/import/loudva.hpp"
#include "traces/import/zeus.hpp"

namespace pacer::experiments {
namespace {

using traces::ModelKind;

ModelBenchRow row(std::string section, std::string device, std::string workload, ModelKind model) {
  ModelBenchRow r;
  r.section = std::move(section);
  r.device = std::move(device);
  r.workload = std::move(workload);
  r.model = model;
  return r;
}

std::string k_text(int k) {
  return k == kAllPoints ? "all" : std::to_string(k);
}
std::string cell(double v) {
  return std::isfinite(v) ? fmt::format("{:.2f}", v) : "-";
}

std::vector<traces::ProfilePoint> subset(const std::vector<traces::ProfilePoint>& all,
                                         const std::vector<models::PlanPoint>& chosen, bool in) {
  std::vector<traces::ProfilePoint> out;
  for (const auto& p : all) {
    const bool is = std::find(chosen.begin(), chosen.end(), models::PlanPoint{p.knob, p.batch_size}) != chosen.end();
    if (is == in) out.push_back(p);
  }
  return out;
}

struct Evaluation {
  const std::vector<traces::ProfilePoint>* points;
  models::PlannerOptions planner;
  models::FitFunction fit;
  int min_points = 1;
  int cv_folds = 0;
  models::FitFunction fit_all;  // for k = all when set (a choice made once instead of in every fold)
};

// One model on one table for every k: fit on the planner's k points, score on the rest; for
// "all", every point is predicted by a model that never saw it.
void evaluate(std::vector<ModelBenchRow>& rows, const ModelBenchRow& base, const Evaluation& ev,
              const std::vector<int>& ks) {
  const auto& points = *ev.points;
  std::vector<models::PlanPoint> cands;
  for (const auto& p : points) cands.push_back({p.knob, p.batch_size});
  for (int k : ks) {
    ModelBenchRow r = base;
    r.k = k;
    if (k == kAllPoints) {
      r.fit_points = static_cast<int>(points.size());
      r.error = models::cross_validate(points, ev.fit_all ? ev.fit_all : ev.fit, ev.cv_folds, ev.min_points);
      r.heldout_points = r.error.points;
    } else {
      if (k >= static_cast<int>(points.size()) || k < ev.min_points) continue;
      auto opt = ev.planner;
      opt.k = k;
      const auto chosen = models::plan_points(cands, opt);
      const auto train = subset(points, chosen, true);
      const auto test = subset(points, chosen, false);
      r.fit_points = static_cast<int>(train.size());
      r.heldout_points = static_cast<int>(test.size());
      try {
        r.error = models::mape(*ev.fit(train), test);
      } catch (const Error& e) {
        r.note = e.what();  // too few distinct settings among k points for this model
      }
    }
    spdlog::info("{} {} {} k={}: time {:.2f}% P mean {:.2f}% P peak {:.2f}%", base.device, base.workload, base.model,
                 k_text(k), r.error.time_mape, r.error.power_mean_mape, r.error.power_peak_mape);
    rows.push_back(r);
  }
}

// Mean over workloads of each error, per (model, k).
struct Agg {
  double t = 0, m = 0, p = 0;
  int nt = 0, nm = 0, np = 0, workloads = 0;
  void add(const models::ErrorSummary& e) {
    if (std::isfinite(e.time_mape)) t += e.time_mape, ++nt;
    if (std::isfinite(e.power_mean_mape)) m += e.power_mean_mape, ++nm;
    if (std::isfinite(e.power_peak_mape)) p += e.power_peak_mape, ++np;
    ++workloads;
  }
  double time() const { return nt ? t / nt : traces::kNaN; }
  double mean() const { return nm ? m / nm : traces::kNaN; }
  double peak() const { return np ? p / np : traces::kNaN; }
};

std::map<std::pair<ModelKind, int>, Agg> aggregate(const std::vector<ModelBenchRow>& rows, const std::string& section,
                                                   const std::string& device) {
  std::map<std::pair<ModelKind, int>, Agg> agg;
  for (const auto& r : rows)
    if (r.section == section && r.device == device) agg[{r.model, r.k}].add(r.error);
  return agg;
}

// The Markdown table of one (section, device): a row per k, for each model its time, mean-power and
// (where measured) peak-power MAPE; then the goal verdict per model, computed from the rows.
std::string table(const std::vector<ModelBenchRow>& rows, const std::string& section, const std::string& device,
                  const std::vector<ModelKind>& model_names, const std::vector<int>& ks, const ModelGoal& goal,
                  bool peak) {
  const auto agg = aggregate(rows, section, device);
  std::string md = "| k |";
  std::string rule = "|---|";
  for (const auto& m : model_names) {
    md += fmt::format(" {} time | {} P mean |", m, m);
    rule += "---|---|";
    if (peak) md += fmt::format(" {} P peak |", m), rule += "---|";
  }
  md += "\n" + rule + "\n";
  for (int k : ks) {
    std::string line = fmt::format("| {} |", k_text(k));
    bool any = false;
    for (const auto& m : model_names) {
      const auto it = agg.find({m, k});
      any = any || it != agg.end();
      const auto get = [&](double (Agg::*fn)() const) { return it == agg.end() ? traces::kNaN : (it->second.*fn)(); };
      line += fmt::format(" {} | {} |", cell(get(&Agg::time)), cell(get(&Agg::mean)));
      if (peak) line += fmt::format(" {} |", cell(get(&Agg::peak)));
    }
    if (any) md += line + "\n";
  }
  md += "\n";
  for (const auto& m : model_names) {
    const int k = goal_met_from(rows, section, device, m, goal);
    md += fmt::format("Goal (power MAPE <= {:g}%, time MAPE <= {:g}%, k <= {}), {}: {}\n", goal.power_mape,
                      goal.time_mape, goal.max_k, m, k ? fmt::format("met from k = {}", k) : std::string("NOT met"));
  }
  return md + "\n";
}

traces::ProfileTable emulated_profile(const traces::DeviceSpec& device, const std::string& workload,
                                      const ModelBenchOptions& o, uint64_t seed) {
  hw::EmulatorOptions eo;
  eo.sensor_noise_rel = o.sensor_noise_rel;
  eo.thermal_drift = o.thermal_drift;
  eo.seed = seed;
  auto dev = hw::EmulatedJetson::with_workload(device, models::describe_workload(workload), eo);
  hw::VirtualExecutor exec(*dev);
  hw::ProfileOptions po;
  po.workload = workload;
  po.batch_sizes = o.batch_sizes;
  po.device_spec = device;
  return hw::run_profile(*dev, exec, po).table;
}

std::vector<double> knob_maxima(const traces::ProfileTable& t) {
  std::vector<double> m(t.knob.dims.size(), 0.0);
  for (const auto& p : t.points)
    for (size_t d = 0; d < m.size() && d < p.knob.size(); ++d) m[d] = std::max(m[d], p.knob[d]);
  return m;
}

// The analytical model as pacer calibrate fits it: V(f) chosen by cross-validation on the fitted
// points. Nested inside the cross-validation of k = all that would cost folds x 2 x folds fits, so
// there the choice is made once on every point (analytical_fit_all).
models::FitFunction analytical_fit(const models::AnalyticalFitOptions& aopt) {
  return [aopt](const std::vector<traces::ProfilePoint>& p) -> std::unique_ptr<models::DeviceModel> {
    return models::fit_analytical(p, models::choose_voltage(p, aopt, 0));
  };
}

models::FitFunction analytical_fit_all(const std::vector<traces::ProfilePoint>& points,
                                       const models::AnalyticalFitOptions& aopt) {
  const auto chosen = models::choose_voltage(points, aopt, 0);
  return [chosen](const std::vector<traces::ProfilePoint>& p) -> std::unique_ptr<models::DeviceModel> {
    return models::fit_analytical(p, chosen);
  };
}

models::FitFunction learned_fit(std::shared_ptr<models::LearnedModel> reference, models::LearnedOptions lo) {
  return [reference, lo](const std::vector<traces::ProfilePoint>& p) -> std::unique_ptr<models::DeviceModel> {
    return models::transfer_learned(*reference, p, lo);
  };
}

models::FitFunction interpolating_fit(const traces::KnobSpace& knob) {
  return [knob](const std::vector<traces::ProfilePoint>& p) -> std::unique_ptr<models::DeviceModel> {
    return models::fit_interpolating(p, knob);
  };
}

std::string section_emulated(std::vector<ModelBenchRow>& rows, const ModelBenchOptions& o) {
  const auto device = traces::find_device(o.device);
  if (o.workloads.size() < 2)
    throw Error(
        "the emulated section needs 2 or more workloads (each is the next one's "
        "transfer reference)");
  std::map<std::string, traces::ProfileTable> tables;
  for (size_t i = 0; i < o.workloads.size(); ++i) {
    spdlog::info("profiling {} on the emulated {} ({} batch sizes x {} clocks)", o.workloads[i], device.name,
                 o.batch_sizes.size(), device.gpu_freqs_hz.size());
    tables[o.workloads[i]] = emulated_profile(device, o.workloads[i], o, o.seed + i);
  }
  models::LearnedOptions lo;
  lo.seed = o.seed;
  lo.knob_scale = {device.max_freq_hz()};
  models::AnalyticalFitOptions aopt;
  aopt.voltage_table = device.voltage_table;
  const std::string label = device.name + std::string(traces::emulated_mark(true));
  for (size_t i = 0; i < o.workloads.size(); ++i) {
    const auto points = models::usable_points(tables[o.workloads[i]], &device);
    const auto& ref_name = o.workloads[(i + 1) % o.workloads.size()];
    const auto reference = std::shared_ptr<models::LearnedModel>(
        models::train_learned(models::usable_points(tables[ref_name], &device), tables[ref_name].knob, lo));
    models::PlannerOptions planner;
    planner.voltage_table = device.voltage_table;
    const auto base = row("emulated", label, o.workloads[i], ModelKind::analytical);
    evaluate(rows, base, {&points, planner, analytical_fit(aopt), 4, 0, analytical_fit_all(points, aopt)}, o.ks);
    auto lb = base;
    lb.model = ModelKind::learned;
    evaluate(rows, lb, {&points, planner, learned_fit(reference, lo), 2, 10, {}}, o.ks);
  }
  return fmt::format(
             "### (a) Emulated {} ({} workloads: {}; sensor noise {:g}%, thermal drift {})\n\n"
             "MAPE [%] on held-out points, mean over workloads (k = all: cross-validated, the analytical V(f) "
             "chosen once on all points). Learned: transferred from the next workload's full profile.\n\n",
             device.name, o.workloads.size(), fmt::join(o.workloads, ", "), 100 * o.sensor_noise_rel,
             o.thermal_drift ? "on" : "off") +
         table(rows, "emulated", label, {ModelKind::analytical, ModelKind::learned}, o.ks, o.goal, true);
}

std::string section_zeus(std::vector<ModelBenchRow>& rows, const ModelBenchOptions& o) {
  std::string md;
  for (const auto& gpu : o.zeus_gpus) {
    traces::zeus::ImportOptions zo;
    zo.data_dir = o.zeus_dir;
    zo.gpu = gpu;
    zo.min_runs = 1;  // the power trace alone is benchmarked; the relation's target does not matter here
    if (!std::filesystem::exists(o.zeus_dir / fmt::format("summary_power_{}.csv", gpu))) {
      md += fmt::format("### (b) Zeus traces, {}: skipped, no summary_power_{}.csv under {}\n\n", gpu, gpu,
                        o.zeus_dir.string());
      continue;
    }
    const auto imported = traces::zeus::import_traces(zo);
    if (imported.workloads.size() < 2) continue;
    // Transfer reference: the workload with the most profiled points (the next one for itself).
    std::vector<const traces::zeus::Workload*> by_size;
    for (const auto& w : imported.workloads) by_size.push_back(&w);
    std::stable_sort(by_size.begin(), by_size.end(),
                     [](auto* a, auto* b) { return a->profile.points.size() > b->profile.points.size(); });
    std::map<std::string, std::shared_ptr<models::LearnedModel>> refs;
    models::PlannerOptions planner;
    planner.knob = traces::KnobSpace::power_limit();
    for (const auto& w : imported.workloads) {
      const auto* ref = by_size[0]->name == w.name ? by_size[1] : by_size[0];
      models::LearnedOptions lo;
      lo.seed = o.seed;
      if (!refs.count(ref->name)) {
        auto ro = lo;
        ro.knob_scale = knob_maxima(ref->profile);
        refs[ref->name] = models::train_learned(models::usable_points(ref->profile, nullptr), ref->profile.knob, ro);
      }
      lo.knob_scale = knob_maxima(w.profile);
      const auto points = models::usable_points(w.profile, nullptr);
      const auto base = row("zeus", gpu, w.name, ModelKind::interpolating);
      evaluate(rows, base, {&points, planner, interpolating_fit(w.profile.knob), 1, 0, {}}, o.ks);
      auto lb = base;
      lb.model = ModelKind::learned;
      lb.note = "reference " + ref->name;
      evaluate(rows, lb, {&points, planner, learned_fit(refs[ref->name], lo), 2, 10, {}}, o.ks);
    }
    md += fmt::format(
              "### (b) Zeus traces, {} ({} workloads, knob = power limit, no peak power in the traces)\n\n"
              "MAPE [%] on held-out points, mean over workloads (k = all: cross-validated). Learned: "
              "transferred from the workload with the most points ({}; the next largest for itself).\n\n",
              gpu, imported.workloads.size(), by_size[0]->name) +
          table(rows, "zeus", gpu, {ModelKind::interpolating, ModelKind::learned}, o.ks, o.goal, false);
  }
  return md;
}

struct RealTable {
  traces::DeviceSpec device;
  traces::ProfileTable table;
  std::vector<traces::ProfilePoint> points;
};

models::AnalyticalFitOptions board_fit_options(const RealTable& b) {
  models::AnalyticalFitOptions aopt;
  aopt.voltage_table = b.device.voltage_table;
  return aopt;
}

std::vector<double> board_freqs(const RealTable& b) {
  std::set<double> f;
  for (const auto& p : b.points) f.insert(p.knob.at(0));
  return {f.begin(), f.end()};
}

// The planner's k points of a board, the model fitted on them and the held-out rest.
struct PlannedFit {
  std::vector<traces::ProfilePoint> train, test;
};
PlannedFit plan_split(const RealTable& b, int k) {
  models::PlannerOptions planner;
  planner.voltage_table = b.device.voltage_table;
  planner.k = k;
  std::vector<models::PlanPoint> cands;
  for (const auto& p : b.points) cands.push_back({p.knob, p.batch_size});
  const auto chosen = models::plan_points(cands, planner);
  return {subset(b.points, chosen, true), subset(b.points, chosen, false)};
}

// predicted / measured - 1 of each point, time and mean power.
void rel_errors(const models::DeviceModel& m, const std::vector<traces::ProfilePoint>& pts, std::vector<double>& t,
                std::vector<double>& p) {
  for (const auto& q : pts) {
    const auto pred = m.predict(q.knob, q.batch_size);
    t.push_back(pred.time_per_batch_s / q.time_per_batch_mean_s - 1);
    p.push_back(pred.power_mean_w / q.power_mean_w - 1);
  }
}

double mean_abs_pct(const std::vector<double>& e) {
  double s = 0;
  for (double v : e) s += std::abs(v);
  return e.empty() ? traces::kNaN : 100 * s / static_cast<double>(e.size());
}

std::string yes_no(bool b) {
  return b ? "yes" : "no";
}

// The few-point sigma at each k of the coverage check, its power part unscaled (power_scale 1: the
// scale is what the leave-one-board-out pick below chooses), and the held-out errors of the model
// fitted on the planner's k points.
struct CoverageRun {
  int k = 0;
  models::TargetSigmas raw;
  std::vector<double> et, ep;  // predicted / measured - 1 of the held-out points
};
std::vector<CoverageRun> coverage_runs(const RealTable& b, const ModelBenchOptions& o) {
  const auto fit = analytical_fit(board_fit_options(b));
  std::vector<models::PlanPoint> grid;
  for (const auto& p : b.points) grid.push_back({p.knob, p.batch_size});
  std::vector<CoverageRun> runs;
  for (int k : o.coverage_ks) {
    if (k >= static_cast<int>(b.points.size())) continue;
    const auto split = plan_split(b, k);
    CoverageRun r;
    r.k = k;
    r.raw = models::few_point_sigma(split.train, fit, grid, 4, 1.0);
    rel_errors(*fit(split.train), split.test, r.et, r.ep);
    runs.push_back(std::move(r));
  }
  return runs;
}

// The power sigma scale that puts 68.3% of a board's held-out power errors inside 1 sigma: per k,
// the 68.3% quantile of |error| / raw sigma; the geometric mean over the k that have a sigma.
// `part`: the unscaled sigma (the default) or one of its two parts alone.
double power_scale_pick(const std::vector<CoverageRun>& runs,
                        double models::TargetSigmas::*part = &models::TargetSigmas::power_mean_rel) {
  const double inside_one_sigma = std::erf(1 / std::sqrt(2.0));  // 2 Phi(1) - 1 = 68.3%
  std::vector<double> picks;
  for (const auto& r : runs) {
    const double sigma = r.raw.*part;
    if (!(sigma > 0) || r.ep.empty()) continue;
    std::vector<double> z;
    for (double e : r.ep) z.push_back(std::abs(e) / sigma);
    picks.push_back(base::quantile(z, inside_one_sigma));
  }
  return base::geometric_mean(picks);
}

// Against the model's own every-point error: the goal lines at k = close.k, the k-curve, the
// coverage of the stated uncertainty, and transfer from the other board(s).
std::string close_to_every_point(std::vector<ModelBenchRow>& rows, const std::vector<RealTable>& boards, size_t bi,
                                 const ModelBenchOptions& o, const std::vector<std::vector<CoverageRun>>& cov_runs,
                                 const std::vector<double>& scale_picks, BoardCurve& out) {
  const auto& b = boards[bi];
  const auto& g = o.close;
  const auto aopt = board_fit_options(b);
  const auto fit = analytical_fit(aopt);
  // Every point, 10 interleaved folds: the errors and the residuals behind the coverage.
  const auto all_fit = analytical_fit_all(b.points, aopt);
  std::vector<double> cv_t, cv_p;
  constexpr int kFolds = 10;
  for (int fold = 0; fold < kFolds; ++fold) {
    std::vector<traces::ProfilePoint> train, test;
    for (size_t i = 0; i < b.points.size(); ++i)
      (static_cast<int>(i % kFolds) == fold ? test : train).push_back(b.points[i]);
    rel_errors(*all_fit(train), test, cv_t, cv_p);
  }
  const double all_t = mean_abs_pct(cv_t), all_p = mean_abs_pct(cv_p);
  const auto floor = models::noise_floor(b.points);
  std::string md = fmt::format(
      "#### {}: k points against every point (analytical model, planner's k points, "
      "held-out MAPE)\n\nEvery point, 10-fold cross-validated: time {:.2f}%, P mean {:.2f}%.\n\n",
      b.device.name, all_t, all_p);
  // The k-curve.
  struct CurvePoint {
    int k;
    double t, p;
  };
  std::vector<CurvePoint> curve;
  for (int k : o.curve_ks) {
    if (k < 4 || k >= static_cast<int>(b.points.size())) continue;
    const auto split = plan_split(b, k);
    ModelBenchRow r = row("real-curve", b.device.name, b.table.workload, ModelKind::analytical);
    r.k = k;
    r.fit_points = static_cast<int>(split.train.size());
    r.heldout_points = static_cast<int>(split.test.size());
    try {
      r.error = models::mape(*fit(split.train), split.test);
    } catch (const Error& e) {
      r.note = e.what();
    }
    rows.push_back(r);
    curve.push_back({k, r.error.time_mape, r.error.power_mean_mape});
  }
  const auto at_k = [&](int k) {
    for (const auto& c : curve)
      if (c.k == k) return c;
    return CurvePoint{k, traces::kNaN, traces::kNaN};
  };
  out.device = b.device.name;
  for (const auto& c : curve) out.k.push_back(c.k), out.time_mape.push_back(c.t), out.power_mape.push_back(c.p);
  out.all_time = all_t;
  out.all_power = all_p;
  for (const auto& p : b.points) out.grid.emplace_back(p.knob[0], p.batch_size);
  for (const auto& p : plan_split(b, g.k).train) out.planned.emplace_back(p.knob[0], p.batch_size);
  const auto k8 = at_k(g.k);
  const auto verdict = [](bool ok) { return std::string(ok ? "PASS" : "FAIL"); };
  out.goals += fmt::format(
      "goal {}: {} power MAPE at k = {} within {:g} pp of every point: {:.2f}% <= {:.2f}% + {:g} = {:.2f}%?\n",
      verdict(k8.p <= all_p + g.power_pp), b.device.name, g.k, g.power_pp, k8.p, all_p, g.power_pp, all_p + g.power_pp);
  out.goals += fmt::format(
      "goal {}: {} time MAPE at k = {} within {:g} pp of every point: {:.2f}% <= {:.2f}% + {:g} = {:.2f}%?\n",
      verdict(k8.t <= all_t + g.time_pp), b.device.name, g.k, g.time_pp, k8.t, all_t, g.time_pp, all_t + g.time_pp);
  md += out.goals + "\n";
  // The power fit's loss (models::AnalyticalFitOptions::power_loss): each loss on the same planner's
  // points, held out the same, so the default's choice shows in one run.
  {
    const auto split = plan_split(b, g.k);
    std::string line = fmt::format("power loss ({}): held-out P mean MAPE at k = {}", b.device.name, g.k);
    for (const char* loss : {"absolute", "squared"}) {
      auto lopt = aopt;
      lopt.power_loss = loss;
      line += fmt::format(", {} {:.2f}%", loss,
                          models::mape(*analytical_fit(lopt)(split.train), split.test).power_mean_mape);
    }
    md += line + fmt::format(" (the default: {})\n\n", models::AnalyticalFitOptions{}.power_loss);
  }
  // The first k from which the curve stays within close_pp (to the end of the curve).
  const auto settles = [&](bool power) {
    int from = 0;
    for (const auto& c : curve) {
      const double v = power ? c.p : c.t;
      const double ref = power ? all_p : all_t;
      if (v <= ref + g.close_pp) {
        if (!from) from = c.k;
      } else {
        from = 0;
      }
    }
    return from;
  };
  const int kp = settles(true), kt = settles(false);
  md += fmt::format("k-curve ({}): within {:g} pp of every point from k = {} (power), k = {} (time){}\n\n",
                    b.device.name, g.close_pp, kp ? std::to_string(kp) : "none <= 50",
                    kt ? std::to_string(kt) : "none <= 50", " (and at every larger k of the curve)");
  md += "| k |";
  std::string t_line = "| time [%] |", p_line = "| P mean [%] |", rule = "|---|";
  for (const auto& c : curve) {
    md += fmt::format(" {} |", c.k);
    rule += "---|";
    t_line += " " + cell(c.t) + " |";
    p_line += " " + cell(c.p) + " |";
  }
  md += "\n" + rule + "\n" + t_line + "\n" + p_line + "\n\n";
  // Coverage of the stated uncertainty: at each k, the sigma pacer calibrate states from the k points
  // alone (models::few_point_sigma: leverage-corrected leave-one-out noise plus the jackknife
  // variance over the board's grid, the power part times models::kFewPointPowerSigmaScale), the
  // same with the scale the other board picks (leave-one-board-out), and for comparison the plain
  // leave-one-out MAPE read as a sigma (the rule before issue 25); with every point, from the
  // cross-validated MAPE and the spread.
  {
    std::string cov_line;
    std::vector<double> others;
    for (size_t oi = 0; oi < scale_picks.size(); ++oi)
      if (oi != bi && std::isfinite(scale_picks[oi])) others.push_back(scale_picks[oi]);
    const double other_pick = base::geometric_mean(others);
    md += fmt::format(
        "coverage ({}; nominal 68% inside 1 sigma, 90% inside the 90% interval; held-out points). Power "
        "sigma scale {:g} (models::kFewPointPowerSigmaScale); this board alone would pick {:.2f}, the "
        "other board(s) {:.2f} (leave-one-board-out column):\n\n",
        b.device.name, models::kFewPointPowerSigmaScale, scale_picks[bi], other_pick);
    md +=
        "| k | sigma time / P mean | inside 1 sigma time / P | inside 90% time / P | P inside 1 sigma / 90%, other "
        "board's scale | unscaled P sigma | plain LOO sigma time / P | inside 1 sigma | inside 90% |\n"
        "|---|---|---|---|---|---|---|---|---|\n";
    const auto fit_k = analytical_fit(aopt);
    for (const auto& run : cov_runs[bi]) {
      const double st = run.raw.time_rel, sp = run.raw.power_mean_rel * models::kFewPointPowerSigmaScale;
      const auto split = plan_split(b, run.k);
      const auto cv = models::cross_validate(split.train, fit_k, 0, 4);
      const double lt = models::prediction_sigma(cv.time_mape, traces::kNaN);
      const double lp = models::prediction_sigma(cv.power_mean_mape, traces::kNaN);
      const auto ct = models::coverage(run.et, st), cp = models::coverage(run.ep, sp);
      const auto co = models::coverage(run.ep, run.raw.power_mean_rel * other_pick);
      const auto lct = models::coverage(run.et, lt), lcp = models::coverage(run.ep, lp);
      md += fmt::format(
          "| {} | {:.1f} / {:.1f} % | {:.0f} / {:.0f} % | {:.0f} / {:.0f} % | {:.0f} / {:.0f} % | {:.1f} % | "
          "{:.1f} / {:.1f} % | {:.0f} / {:.0f} % | {:.0f} / {:.0f} % |\n",
          run.k, 100 * st, 100 * sp, 100 * ct.within_1sigma, 100 * cp.within_1sigma, 100 * ct.within_90,
          100 * cp.within_90, 100 * co.within_1sigma, 100 * co.within_90, 100 * run.raw.power_mean_rel, 100 * lt,
          100 * lp, 100 * lct.within_1sigma, 100 * lcp.within_1sigma, 100 * lct.within_90, 100 * lcp.within_90);
      if (run.k != g.k) continue;
      const auto b68 = models::coverage_band(1.0, run.k), b90 = models::coverage_band(models::kZ90, run.k);
      const auto in = [](double v, std::pair<double, double> band) { return v >= band.first && v <= band.second; };
      const bool ok_t = in(ct.within_1sigma, b68) && in(ct.within_90, b90);
      const bool ok_p = in(cp.within_1sigma, b68) && in(cp.within_90, b90);
      const bool ok_o = in(co.within_1sigma, b68) && in(co.within_90, b90);
      cov_line = fmt::format(
          "goal {}: {} stated sigma at k = {} covers held-out points at the nominal rate (1 sigma in {:.0f}-{:.0f}%, "
          "90% interval in {:.0f}-{:.0f}%: what a sigma from {} points can promise): time {:.0f} / {:.0f} %, P mean "
          "{:.0f} / {:.0f} % ({}; leave-one-board-out scale {:.2f}: {:.0f} / {:.0f} % {})\n",
          verdict(ok_t && ok_p), b.device.name, run.k, 100 * b68.first, 100 * b68.second, 100 * b90.first,
          100 * b90.second, run.k, 100 * ct.within_1sigma, 100 * ct.within_90, 100 * cp.within_1sigma,
          100 * cp.within_90, ok_p ? "in" : "out", other_pick, 100 * co.within_1sigma, 100 * co.within_90,
          ok_o ? "in" : "out");
    }
    const double ast = models::prediction_sigma(all_t, floor.time_rel);
    const double asp = models::prediction_sigma(all_p, floor.power_mean_rel);
    const auto act = models::coverage(cv_t, ast), acp = models::coverage(cv_p, asp);
    md += fmt::format("| all (CV) | {:.1f} / {:.1f} % | {:.0f} / {:.0f} % | {:.0f} / {:.0f} % | | | | | |\n\n",
                      100 * ast, 100 * asp, 100 * act.within_1sigma, 100 * acp.within_1sigma, 100 * act.within_90,
                      100 * acp.within_90);
    // Which part of the unscaled power sigma carries the board's own error level: each part at
    // each k, and the scale each part alone would need on this board (a part that reads the level
    // needs the same scale on every board).
    std::string parts;
    for (const auto& run : cov_runs[bi])
      if (std::isfinite(run.raw.power_mean_noise_rel))
        parts += fmt::format("{}k = {}: {:.1f} / {:.1f} %", parts.empty() ? "" : ", ", run.k,
                             100 * run.raw.power_mean_noise_rel, 100 * run.raw.power_mean_jackknife_rel);
    md += fmt::format(
        "power sigma's parts ({}, unscaled, noise / jackknife): {}; the scale alone: noise part {:.2f}, "
        "jackknife part {:.2f}, both {:.2f}\n\n",
        b.device.name, parts, power_scale_pick(cov_runs[bi], &models::TargetSigmas::power_mean_noise_rel),
        power_scale_pick(cov_runs[bi], &models::TargetSigmas::power_mean_jackknife_rel), scale_picks[bi]);
    const auto split = plan_split(b, g.k);
    std::string pts;
    for (const auto& p : split.train)
      pts += fmt::format("{}({:.1f} MHz, b={})", pts.empty() ? "" : ", ", p.knob[0] / 1e6, p.batch_size);
    md += fmt::format("planner's k = {} points ({}): {}\n\n", g.k, b.device.name, pts);
    md += cov_line + "\n";
    out.goals += cov_line;
  }
  // Transfer: the other board's full sweep as the prior, plus this board's k points; the gate
  // (models::choose_transfer) decides by leave-one-out on the k points between them alone, the prior
  // and the prior with its b axis scaled, each for time and power or for time only, each prior at each
  // weight of models::transfer_weight_grid() (as pacer calibrate does); the prior always (the ungated
  // fit, at --transfer-weight) is printed beside it.
  for (size_t oi = 0; oi < boards.size(); ++oi) {
    if (oi == bi) continue;
    const auto& other = boards[oi];
    models::TransferPrior prior;
    prior.model =
        models::fit_analytical(other.points, models::choose_voltage(other.points, board_fit_options(other), 0));
    prior.knob_max_hz = other.device.max_freq_hz();
    prior.weight = o.transfer_weight;
    for (const auto& p : other.points) prior.batch_max = std::max(prior.batch_max, p.batch_size);
    const auto freqs = board_freqs(b);
    const auto bs = b.table.batch_sizes();
    for (int k : o.transfer_ks) {
      if (k < 4 || k >= static_cast<int>(b.points.size())) continue;
      const auto split = plan_split(b, k);
      const auto chosen = models::choose_voltage(split.train, aopt, 0);
      const auto gate = models::choose_transfer(split.train, chosen, prior, b.device.max_freq_hz(), freqs, bs,
                                                models::TransferGateMode::joint, models::transfer_weight_grid());
      const auto always = models::fit_transfer_candidate(models::TransferChoice::prior, split.train, chosen, prior,
                                                         b.device.max_freq_hz(), freqs, bs);
      ModelBenchRow r = row("real-transfer", b.device.name, b.table.workload, ModelKind::analytical);
      r.k = k;
      r.fit_points = static_cast<int>(split.train.size());
      r.heldout_points = static_cast<int>(split.test.size());
      ModelBenchRow u = r;
      r.note = fmt::format("prior {}, gated: {} ({:g} points)", other.device.name, gate.label(), gate.weight);
      r.error = models::mape(*gate.model, split.test);
      u.note = fmt::format("prior {}, always", other.device.name);
      u.error = models::mape(*always, split.test);
      rows.push_back(r);
      rows.push_back(u);
      const auto alone = at_k(k);
      std::string loo;
      for (const auto& [c, e] : gate.loo)
        loo += fmt::format("{}{} {:.2f} + {:.2f}%", loo.empty() ? "" : ", ", models::to_string(c), e.time_mape,
                           e.power_mean_mape);
      const bool beats = r.error.time_mape + r.error.power_mean_mape < alone.t + alone.p;
      md += fmt::format(
          "transfer {} -> {}, k = {}: gated ({}; leave-one-out time + P mean: {}) time {:.2f}% / P mean {:.2f}%; the "
          "prior always {:.2f}% / {:.2f}%; the same k points alone {:.2f}% / {:.2f}%: gated beats k-only {}\n",
          other.device.name, b.device.name, k, gate.label(),
          gate.trusted ? loo : fmt::format("below {} points, the prior kept", models::kMinTransferGatePoints),
          r.error.time_mape, r.error.power_mean_mape, u.error.time_mape, u.error.power_mean_mape, alone.t, alone.p,
          yes_no(beats));
      if (k == g.k)
        out.goals += fmt::format(
            "goal {}: transfer {} -> {} at k = {} beats the same k points alone (gated: {}; time + P mean MAPE): "
            "{:.2f}% + {:.2f}% < {:.2f}% + {:.2f}%?\n",
            verdict(beats), other.device.name, b.device.name, k, gate.label(), r.error.time_mape,
            r.error.power_mean_mape, alone.t, alone.p);
    }
  }
  return md + "\n";
}

std::string section_real(std::vector<ModelBenchRow>& rows, const ModelBenchOptions& o,
                         std::vector<BoardCurve>& curves) {
  std::string md;
  std::vector<RealTable> boards;
  for (const auto& b : o.boards) {
    if (!std::filesystem::is_directory(o.loudva_dir / b.folder)) {
      md += fmt::format("### (c) Real {}: skipped, {} not found\n\n", b.device, (o.loudva_dir / b.folder).string());
      continue;
    }
    traces::loudva::ImportOptions lo;
    lo.dir = o.loudva_dir / b.folder;
    lo.device = traces::find_device(b.device);
    auto imported = traces::loudva::import_dir(lo);
    RealTable t{lo.device, std::move(imported.profiles.at(0).table), {}};
    t.points = models::usable_points(t.table, &t.device);
    boards.push_back(std::move(t));
  }
  // Learned: trained on the other board's whole sweep, re-trained on this board's k points.
  std::vector<std::shared_ptr<models::LearnedModel>> refs;
  for (const auto& b : boards) {
    if (!o.learned_real) break;
    models::LearnedOptions lo;
    lo.seed = o.seed;
    lo.knob_scale = {b.device.max_freq_hz()};
    refs.push_back(models::train_learned(b.points, b.table.knob, lo));
  }
  // The few-point sigma's coverage runs of every board first: each board's power sigma scale is
  // judged with the other board's pick.
  std::vector<std::vector<CoverageRun>> cov_runs;
  std::vector<double> scale_picks;
  for (const auto& b : boards) {
    cov_runs.push_back(coverage_runs(b, o));
    scale_picks.push_back(power_scale_pick(cov_runs.back()));
  }
  curves.resize(boards.size());
  for (size_t i = 0; i < boards.size(); ++i) {
    const auto& b = boards[i];
    models::PlannerOptions planner;
    planner.voltage_table = b.device.voltage_table;
    models::AnalyticalFitOptions aopt;
    aopt.voltage_table = b.device.voltage_table;
    const auto base = row("real", b.device.name, b.table.workload, ModelKind::analytical);
    evaluate(rows, base, {&b.points, planner, analytical_fit(aopt), 4, 10, analytical_fit_all(b.points, aopt)}, o.ks);
    auto ib = base;
    ib.model = ModelKind::interpolating;
    if (o.learned_real) evaluate(rows, ib, {&b.points, planner, interpolating_fit(b.table.knob), 1, 10, {}}, o.ks);
    if (boards.size() > 1 && o.learned_real) {
      models::LearnedOptions lo;
      lo.seed = o.seed;
      lo.knob_scale = {b.device.max_freq_hz()};
      auto lb = base;
      lb.model = ModelKind::learned;
      const size_t ref = (i + 1) % boards.size();
      lb.note = "reference " + boards[ref].device.name;
      evaluate(rows, lb, {&b.points, planner, learned_fit(refs[ref], lo), 2, 10, {}}, o.ks);
    }
    std::set<double> freqs;
    for (const auto& p : b.points) freqs.insert(p.knob[0]);
    md += fmt::format(
              "### (c) Real {} (LoudVA sweep, {} clocks x {} concurrencies = {} points; inference, power "
              "mean only)\n\nMAPE [%] on held-out points (k = all: 10-fold cross-validation, the analytical V(f) "
              "chosen once on all points). Learned: "
              "transferred from the other board's whole sweep.\n\n",
              b.device.name, freqs.size(), b.table.batch_sizes().size(), b.points.size()) +
          table(rows, "real", b.device.name, {ModelKind::analytical, ModelKind::learned, ModelKind::interpolating},
                o.ks, o.goal, false);
    // The floor no model of the GPU clock and b goes below (models/uncertainty.hpp).
    const auto floor = models::noise_floor(b.points);
    md += fmt::format(
        "Measurement spread no model smooth in b can follow (model-free, {} triples of neighbouring b): time {:.2f}%, "
        "P mean {:.2f}% (1 sigma); a perfect model's MAPE: time {:.2f}%, P mean {:.2f}%. Clocks that floated while "
        "measuring: {}.\n\n",
        floor.terms, 100 * floor.time_rel, 100 * floor.power_mean_rel,
        models::NoiseFloor::mape_floor_pct(floor.time_rel), models::NoiseFloor::mape_floor_pct(floor.power_mean_rel),
        b.table.floating_clocks.empty() ? "not recorded" : b.table.floating_clocks);
    md += close_to_every_point(rows, boards, i, o, cov_runs, scale_picks, curves[i]);
  }
  if (curves.empty()) return md;
  // The closing summary: k = 4, 8, 12 and every point, and every goal line.
  md +=
      "#### Few points against every point: summary (analytical model, held-out time / P mean MAPE)\n\n"
      "| board | k = 4 | k = 8 | k = 12 | every point (CV) |\n|---|---|---|---|---|\n";
  for (const auto& c : curves) {
    const auto at = [&](int k) {
      for (size_t j = 0; j < c.k.size(); ++j)
        if (c.k[j] == k) return fmt::format("{} / {} %", cell(c.time_mape[j]), cell(c.power_mape[j]));
      return std::string("-");
    };
    md += fmt::format("| {} | {} | {} | {} | {} / {} % |\n", c.device, at(4), at(8), at(12), cell(c.all_time),
                      cell(c.all_power));
  }
  md += "\n";
  for (const auto& c : curves) md += c.goals;
  return md + "\n";
}

// The figures of the real-board section: held-out MAPE against k per board and target, with each
// board's every-point error as a dashed line of the same colour; and the first board's grid with the
// planner's close.k points.
std::vector<std::filesystem::path> draw_k_curves(const std::vector<BoardCurve>& curves, const CloseGoal& close,
                                                 const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  std::vector<std::filesystem::path> files;
  Plot p;
  p.name = "models-k-curve";
  p.title = "Held-out MAPE with the planner's k points (analytical model, LoudVA sweeps)";
  p.xlabel = "k (profiled points)";
  p.ylabel = "held-out MAPE [%]";
  const char* colors[] = {"#1f77b4", "#2ca02c", "#d62728", "#ff7f0e", "#9467bd", "#8c564b"};
  size_t ci = 0;
  for (const auto& c : curves)
    for (const bool power : {true, false}) {
      const std::string color = colors[ci++ % std::size(colors)];
      PlotSeries s, every;
      s.title = fmt::format("{} {}", c.device, power ? "P mean" : "time");
      s.style = fmt::format("linespoints pt 7 lc rgb '{}'", color);
      for (size_t j = 0; j < c.k.size(); ++j) {
        const double v = power ? c.power_mape[j] : c.time_mape[j];
        if (std::isfinite(v)) s.x.push_back(c.k[j]), s.y.push_back(v);
      }
      if (s.x.empty()) continue;
      every.title = fmt::format("{} {}, every point (CV)", c.device, power ? "P mean" : "time");
      every.style = fmt::format("lines dt 2 lw 2 lc rgb '{}'", color);
      every.x = {s.x.front(), s.x.back()};
      every.y.assign(2, power ? c.all_power : c.all_time);
      p.series.push_back(s);
      p.series.push_back(every);
    }
  p.vlines.push_back(close.k);
  p.vline_titles.push_back(fmt::format("k = {}", close.k));
  p.vline_colors.push_back("gray");
  const auto r = render(p, dir);
  files.insert(files.end(), r.files.begin(), r.files.end());
  const auto& c = curves.front();
  Plot q;
  q.name = "models-planner-points";
  q.title = fmt::format("The planner's k = {} points on the {} grid", close.k, c.device);
  q.xlabel = "GPU clock [MHz]";
  q.ylabel = "batch size b (concurrency)";
  q.logy = true;
  PlotSeries all, chosen;
  all.title = "grid (held out)";
  all.style = "points pt 7 ps 0.5 lc rgb 'gray'";
  chosen.title = fmt::format("planner's {} points", close.k);
  chosen.style = "points pt 5 ps 1.5 lc rgb 'red'";
  for (const auto& [f, b] : c.grid) all.x.push_back(f / 1e6), all.y.push_back(b);
  for (const auto& [f, b] : c.planned) chosen.x.push_back(f / 1e6), chosen.y.push_back(b);
  q.series = {all, chosen};
  const auto r2 = render(q, dir);
  files.insert(files.end(), r2.files.begin(), r2.files.end());
  return files;
}

}  // namespace

int goal_met_from(const std::vector<ModelBenchRow>& rows, const std::string& section, const std::string& device,
                  ModelKind model, const ModelGoal& goal) {
  const auto agg = aggregate(rows, section, device);
  int best = 0;
  for (const auto& [key, a] : agg) {
    const auto& [m, k] = key;
    if (m != model || k == kAllPoints || k > goal.max_k) continue;
    const bool ok = a.time() <= goal.time_mape && a.mean() <= goal.power_mape &&
                    (!std::isfinite(a.peak()) || a.peak() <= goal.power_mape);
    if (ok && (best == 0 || k < best)) best = k;
  }
  return best;
}

ModelBenchResult run_model_bench(const ModelBenchOptions& options) {
  ModelBenchOptions o = options;
  if (o.zeus && o.zeus_dir.empty()) o.zeus_dir = traces::zeus::default_data_dir();
  // A folder without one of the GPUs' traces wrote a CSV of 0 rows, exit 0 (one missing GPU of
  // several is skipped in its section).
  if (o.zeus && std::none_of(o.zeus_gpus.begin(), o.zeus_gpus.end(), [&](const std::string& gpu) {
        return std::filesystem::exists(o.zeus_dir / fmt::format("summary_power_{}.csv", gpu));
      }))
    throw SettingError("zeus-dir", fmt::format("{}: no Zeus power traces (summary_power_<gpu>.csv of {}) here; give "
                                               "the folder of the Zeus traces (pacer's data/zeus)",
                                               o.zeus_dir.string(), fmt::join(o.zeus_gpus, ", ")));
  if (o.real && o.loudva_dir.empty()) o.loudva_dir = traces::import::data_dir("loudva-dir") / "jetson" / "loudva";
  ModelBenchResult r;
  if (o.emulated) r.markdown += section_emulated(r.rows, o);
  if (o.zeus) r.markdown += section_zeus(r.rows, o);
  if (o.real) r.markdown += section_real(r.rows, o, r.curves);
  if (!o.figure_dir.empty() && !r.curves.empty()) r.figures = draw_k_curves(r.curves, o.close, o.figure_dir);
  return r;
}

std::string ModelBenchResult::csv() const {
  std::string csv =
      "section,device,workload,model,k,fit_points,heldout_points,time_mape[%],power_mean_mape[%],power_peak_mape[%],"
      "note\n";
  for (const auto& r : rows) {
    std::string note = r.note;
    std::replace(note.begin(), note.end(), ',', ';');
    std::replace(note.begin(), note.end(), '\n', ' ');
    csv += fmt::format("{},{},{},{},{},{},{},{},{},{},{}\n", r.section, r.device, r.workload, r.model, k_text(r.k),
                       r.fit_points, r.heldout_points, cell(r.error.time_mape), cell(r.error.power_mean_mape),
                       cell(r.error.power_peak_mape), note);
  }
  return csv;
}

}  // namespace pacer::experiments
