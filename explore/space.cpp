#include "explore/space.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>

#include "base/error.hpp"
#include "base/stats.hpp"
#include "base/units.hpp"
#include "models/uncertainty.hpp"
#include "traces/emulated_label.hpp"

namespace pacer::explore {

std::string_view to_string(PowerBasis basis) {
  return basis == PowerBasis::Peak ? "peak" : "mean";
}

double max_of_normals_quantile(double k, double q) {
  if (!(k >= 1) || !(q > 0 && q < 1)) return traces::kNaN;
  // Phi(z) = q^(1/k); a probability that rounds to 1 is kept just below it.
  return models::normal_quantile(std::min(std::pow(q, 1 / k), std::nextafter(1.0, 0.0)));
}

double projected_run_peak_w(double peak_w, double mean_w, double power_samples) {
  if (!(power_samples >= 2) || !std::isfinite(peak_w) || !std::isfinite(mean_w) || !(peak_w > mean_w)) return peak_w;
  const double sigma = (peak_w - mean_w) / max_of_normals_quantile(power_samples, 0.5);
  return std::max(peak_w,
                  mean_w + kRunPeakSpreadFactor * sigma *
                               max_of_normals_quantile(kRunSamplesPerProfileSample * power_samples, kRunPeakQuantile));
}

double feasibility_power_w(const traces::ProfilePoint& p, PowerBasis basis) {
  return basis == PowerBasis::Peak
             ? projected_run_peak_w(p.power_peak_w, p.power_mean_w, static_cast<double>(p.power_samples))
             : p.power_mean_w;
}

Measurement measurement_of(const traces::ProfilePoint& p, PowerBasis basis) {
  if (p.status.starts_with("skipped: power sensor") || p.status.starts_with("skipped: cur_freq"))
    return Measurement::Nothing;
  if (p.status != "ok" || !std::isfinite(p.time_per_batch_mean_s)) return Measurement::Failed;
  // Measured, but without a power on this basis (a mean-only profile on a peak-basis space): it says
  // nothing here, as before the measurement's meaning had one home.
  return std::isfinite(feasibility_power_w(p, basis)) ? Measurement::Power : Measurement::Nothing;
}

std::string describe_basis(PowerBasis basis) {
  return basis == PowerBasis::Peak
             ? fmt::format(
                   "peak power (a measured peak projected to a run of {:g}x its samples, {:g}th percentile, "
                   "spread x {:g})",
                   kRunSamplesPerProfileSample, 100 * kRunPeakQuantile, kRunPeakSpreadFactor)
             : std::string("mean power");
}

Space Space::from_profile(const traces::ProfileTable& table, std::optional<PowerBasis> basis) {
  std::set<std::vector<double>> knobs;
  std::set<int> batches;
  bool all_peak = true, any = false;
  for (const auto& p : table.points) {
    if (p.status != "ok" || std::isnan(p.time_per_batch_mean_s)) continue;
    knobs.insert(p.knob);
    batches.insert(p.batch_size);
    all_peak = all_peak && !std::isnan(p.power_peak_w);
    any = true;
  }
  if (!any)
    throw Error(fmt::format("profile '{}' has no usable point (status ok with a time): profile the device first",
                            table.workload));
  Arrays a;
  a.knob = table.knob;
  a.knob_settings.assign(knobs.begin(), knobs.end());
  a.batch_sizes.assign(batches.begin(), batches.end());
  a.basis = basis.value_or(all_peak ? PowerBasis::Peak : PowerBasis::Mean);
  if (a.basis == PowerBasis::Peak && !all_peak)
    throw Error(
        fmt::format("profile '{}' lacks peak power at some points: use mean-power feasibility", table.workload));
  a.source = fmt::format("profile {} ({}{})", table.workload, table.device,
                         traces::emulated_mark(table.emulated, traces::EmulatedMark::Item));
  const size_t nk = a.knob_settings.size(), n = nk * a.batch_sizes.size();
  a.time_per_batch_s.assign(n, traces::kNaN);
  a.power_w.assign(n, traces::kNaN);
  a.power_mean_w.assign(n, traces::kNaN);
  for (const auto& p : table.points) {
    if (p.status != "ok" || std::isnan(p.time_per_batch_mean_s)) continue;
    const size_t bi = static_cast<size_t>(std::lower_bound(a.batch_sizes.begin(), a.batch_sizes.end(), p.batch_size) -
                                          a.batch_sizes.begin());
    const size_t ki = static_cast<size_t>(std::lower_bound(a.knob_settings.begin(), a.knob_settings.end(), p.knob) -
                                          a.knob_settings.begin());
    const size_t i = bi * nk + ki;
    a.time_per_batch_s[i] = p.time_per_batch_mean_s;
    a.power_w[i] = feasibility_power_w(p, a.basis);
    a.power_mean_w[i] = p.power_mean_w;
  }
  return from_arrays(std::move(a));
}

Space Space::from_model(const models::DeviceModel& model, const Grid& grid, const std::string& source,
                        double power_samples) {
  Arrays a;
  a.knob = model.knob();
  a.knob_settings = grid.knob_settings;
  std::sort(a.knob_settings.begin(), a.knob_settings.end());
  a.knob_settings.erase(std::unique(a.knob_settings.begin(), a.knob_settings.end()), a.knob_settings.end());
  a.batch_sizes = grid.batch_sizes;
  std::sort(a.batch_sizes.begin(), a.batch_sizes.end());
  a.batch_sizes.erase(std::unique(a.batch_sizes.begin(), a.batch_sizes.end()), a.batch_sizes.end());
  a.source = source;
  const size_t nk = a.knob_settings.size(), n = nk * a.batch_sizes.size();
  a.time_per_batch_s.assign(n, traces::kNaN);
  a.power_w.assign(n, traces::kNaN);
  a.power_mean_w.assign(n, traces::kNaN);
  std::vector<models::Prediction> preds(n);
  bool all_peak = true;
  for (size_t bi = 0; bi < a.batch_sizes.size(); ++bi)
    for (size_t ki = 0; ki < nk; ++ki) {
      try {
        preds[bi * nk + ki] = model.predict(a.knob_settings[ki], a.batch_sizes[bi]);
      } catch (const Error&) {
        continue;  // e.g. a batch size that does not fit in memory
      }
      const auto& p = preds[bi * nk + ki];
      if (!std::isnan(p.time_per_batch_s)) all_peak = all_peak && !std::isnan(p.power_peak_w);
    }
  a.basis = all_peak ? PowerBasis::Peak : PowerBasis::Mean;
  for (size_t i = 0; i < n; ++i) {
    const auto& p = preds[i];
    if (std::isnan(p.time_per_batch_s)) continue;
    a.time_per_batch_s[i] = p.time_per_batch_s;
    a.power_w[i] = all_peak ? projected_run_peak_w(p.power_peak_w, p.power_mean_w, power_samples) : p.power_mean_w;
    a.power_mean_w[i] = p.power_mean_w;
  }
  return from_arrays(std::move(a));
}

Space Space::from_arrays(Arrays a) {
  Space s;
  s.source_ = std::move(a.source);
  s.knob_ = std::move(a.knob);
  s.basis_ = a.basis;
  s.knobs_ = std::move(a.knob_settings);
  s.batches_ = std::move(a.batch_sizes);
  s.time_ = std::move(a.time_per_batch_s);
  s.power_ = std::move(a.power_w);
  s.mean_ = a.power_mean_w.empty() ? std::vector<double>(s.time_.size(), traces::kNaN) : std::move(a.power_mean_w);
  s.validate();
  return s;
}

void Space::validate() {
  const size_t n = knobs_.size() * batches_.size();
  if (knobs_.empty() || batches_.empty()) throw Error("the design space is empty (no knob setting or batch size)");
  if (time_.size() != n || power_.size() != n || mean_.size() != n)
    throw Error(
        fmt::format("design space '{}': arrays must hold {} x {} values", source_, batches_.size(), knobs_.size()));
  if (!std::is_sorted(knobs_.begin(), knobs_.end()) || !std::is_sorted(batches_.begin(), batches_.end()))
    throw Error(fmt::format("design space '{}': knob settings and batch sizes must be ascending", source_));
  for (const auto& k : knobs_)
    if (k.size() != knob_.dims.size())
      throw Error(fmt::format("design space '{}': a knob setting has {} values for {} dimensions", source_, k.size(),
                              knob_.dims.size()));
  for (size_t i = 0; i < n; ++i) {
    if (std::isnan(time_[i])) continue;
    if (!(time_[i] > 0) || std::isnan(power_[i]))
      throw Error(
          fmt::format("design space '{}': configuration {} has time {} s and power {} W (need time > 0 and a "
                      "power)",
                      source_, i, time_[i], power_[i]));
  }
}

std::optional<size_t> Space::batch_index(int batch_size) const {
  const auto it = std::lower_bound(batches_.begin(), batches_.end(), batch_size);
  if (it == batches_.end() || *it != batch_size) return std::nullopt;
  return static_cast<size_t>(it - batches_.begin());
}

std::optional<size_t> Space::knob_index(const std::vector<double>& knob) const {
  const auto it = std::lower_bound(knobs_.begin(), knobs_.end(), knob);
  if (it == knobs_.end() || *it != knob) return std::nullopt;
  return static_cast<size_t>(it - knobs_.begin());
}

size_t Space::overlay_measured(const traces::ProfileTable& measured) {
  const auto same = [](const std::vector<double>& a, const std::vector<double>& b) {
    if (a.size() != b.size()) return false;
    for (size_t d = 0; d < a.size(); ++d)
      if (std::abs(a[d] - b[d]) > 1e-6 * std::max(std::abs(a[d]), std::abs(b[d]))) return false;
    return true;
  };
  std::vector<bool> replaced(time_.size(), false);
  for (const auto& p : measured.points) {
    const Measurement m = measurement_of(p, basis_);
    if (m == Measurement::Nothing) continue;
    const auto bi = batch_index(p.batch_size);
    if (!bi) continue;
    for (size_t ki = 0; ki < knobs_.size(); ++ki) {
      if (!same(knobs_[ki], p.knob) || !has(*bi, ki)) continue;
      const size_t i = at(*bi, ki);
      if (m == Measurement::Failed) {  // measured and failed: in no command's space
        time_[i] = power_[i] = mean_[i] = traces::kNaN;
        replaced[i] = false;
        continue;
      }
      power_[i] = feasibility_power_w(p, basis_);
      if (std::isfinite(p.power_mean_w)) mean_[i] = p.power_mean_w;
      replaced[i] = true;
    }
  }
  overlaid_ = replaced;
  return static_cast<size_t>(std::count(replaced.begin(), replaced.end(), true));
}

size_t Space::num_points() const {
  return static_cast<size_t>(std::count_if(time_.begin(), time_.end(), [](double t) { return !std::isnan(t); }));
}

// The basis power stands in for a missing mean: the peak in a peak-basis space; in a mean-basis
// space given no separate means (from_arrays), the basis power is the mean.
double Space::energy_power_w(size_t bi, size_t ki) const {
  return base::energy_power_w(mean_[at(bi, ki)], power_[at(bi, ki)]);
}

double Space::max_power_w() const {
  double m = 0;
  for (size_t i = 0; i < time_.size(); ++i)
    if (!std::isnan(time_[i])) m = std::max(m, power_[i]);
  return m;
}

double Space::min_power_w() const {
  double m = INFINITY;
  for (size_t i = 0; i < time_.size(); ++i)
    if (!std::isnan(time_[i])) m = std::min(m, power_[i]);
  return m;
}

std::string Space::describe_knob(const std::vector<double>& knob) const {
  return knob_.format(knob);
}

// ------------------------------------------------------------------------------------------------

Index::Index(const Space& space, IndexOptions options) : space_(&space), options_(options) {
  if (!std::isnan(options_.max_power_w)) {
    max_power_w_ = options_.max_power_w;
    max_power_source_ = "given";
  } else if (space.knob().kind == traces::KnobKind::power_limit && space.knob().dims.size() == 1) {
    max_power_w_ = space.knob_settings().back().at(0);  // Zeus: the GPU's highest power limit
    max_power_source_ = "the highest power limit, as Zeus";
  } else {
    max_power_w_ = space.max_power_w();
    max_power_source_ = fmt::format("the highest {} power of the space", to_string(space.basis()));
  }
  per_b_.resize(space.num_batches());
  for (size_t bi = 0; bi < space.num_batches(); ++bi) {
    PerBatch& pb = per_b_[bi];
    for (size_t ki = 0; ki < space.num_knobs(); ++ki)
      if (space.has(bi, ki)) {
        pb.knob_order.push_back(static_cast<uint32_t>(ki));
        pb.knob_power.push_back(space.power_w(bi, ki));
      }
    pb.monotone = std::is_sorted(pb.knob_power.begin(), pb.knob_power.end());
    pb.power_order = pb.knob_order;
    std::stable_sort(pb.power_order.begin(), pb.power_order.end(),
                     [&](uint32_t a, uint32_t b) { return space.power_w(bi, a) < space.power_w(bi, b); });
    for (uint32_t ki : pb.power_order) pb.sorted_power.push_back(space.power_w(bi, ki));
    auto prefix = [&](Objective o, std::vector<uint32_t>& best) {
      best.resize(pb.power_order.size());
      for (size_t i = 0; i < pb.power_order.size(); ++i) {
        const uint32_t ki = pb.power_order[i];
        // Strict <: among equal costs the earlier (lower-power, then lower-knob) setting stays.
        best[i] = (i == 0 || unit_cost(bi, ki, o) < unit_cost(bi, best[i - 1], o)) ? ki : best[i - 1];
      }
    };
    prefix(Objective::Time, pb.best_time);
    prefix(Objective::Energy, pb.best_energy);
    prefix(Objective::ZeusCost, pb.best_zeus);
  }
}

double Index::unit_cost(size_t bi, size_t ki, Objective objective) const {
  const double t = space_->time_per_batch_s(bi, ki);
  switch (objective) {
    case Objective::Time:
      return t;
    case Objective::Energy:
      return space_->energy_power_w(bi, ki) * t;
    case Objective::ZeusCost:
      return options_.eta * space_->energy_power_w(bi, ki) * t + (1 - options_.eta) * max_power_w_ * t;
  }
  return t;
}

std::optional<size_t> Index::highest_feasible_knob(size_t bi, double cap_w) const {
  const PerBatch& pb = per_b_[bi];
  if (pb.monotone && one_dimensional()) {
    const auto it = std::upper_bound(pb.knob_power.begin(), pb.knob_power.end(), cap_w);
    if (it == pb.knob_power.begin()) return std::nullopt;
    return pb.knob_order[static_cast<size_t>(it - pb.knob_power.begin()) - 1];
  }
  return highest_feasible_knob_scan(bi, cap_w);
}

std::optional<size_t> Index::highest_feasible_knob_scan(size_t bi, double cap_w) const {
  const PerBatch& pb = per_b_[bi];
  for (size_t i = pb.knob_order.size(); i-- > 0;)
    if (pb.knob_power[i] <= cap_w) return pb.knob_order[i];
  return std::nullopt;
}

std::optional<size_t> Index::best_feasible_knob(size_t bi, double cap_w, Objective objective) const {
  const PerBatch& pb = per_b_[bi];
  const auto it = std::upper_bound(pb.sorted_power.begin(), pb.sorted_power.end(), cap_w);
  if (it == pb.sorted_power.begin()) return std::nullopt;
  const size_t i = static_cast<size_t>(it - pb.sorted_power.begin()) - 1;
  switch (objective) {
    case Objective::Time:
      return pb.best_time[i];
    case Objective::Energy:
      return pb.best_energy[i];
    case Objective::ZeusCost:
      return pb.best_zeus[i];
  }
  return std::nullopt;
}

// ------------------------------------------------------------------------------------------------

DeviceWideCap::DeviceWideCap(const std::vector<const Space*>& spaces) {
  std::map<std::vector<double>, double> worst;
  for (const Space* s : spaces)
    for (size_t ki = 0; ki < s->num_knobs(); ++ki)
      for (size_t bi = 0; bi < s->num_batches(); ++bi) {
        if (!s->has(bi, ki)) continue;
        auto [it, inserted] = worst.emplace(s->knob_settings()[ki], s->power_w(bi, ki));
        if (!inserted) it->second = std::max(it->second, s->power_w(bi, ki));
      }
  std::vector<std::pair<double, std::vector<double>>> v;
  for (auto& [k, p] : worst) v.emplace_back(p, k);
  std::sort(v.begin(), v.end());
  const bool one_dim = !v.empty() && v.front().second.size() == 1;
  for (size_t i = 0; i < v.size(); ++i) {
    worst_power_.push_back(v[i].first);
    knobs_.push_back(v[i].second);
    // "Highest": the largest value for a 1-D knob; for a multi-dim mode, the one drawing the most
    // power (the latest in this order), lexicographic among equal power.
    uint32_t best = static_cast<uint32_t>(i);
    if (i > 0) {
      const uint32_t prev = best_prefix_.back();
      const bool prev_higher = one_dim ? knobs_[prev] > knobs_[i]
                                       : (worst_power_[prev] > worst_power_[i] ||
                                          (worst_power_[prev] == worst_power_[i] && knobs_[prev] > knobs_[i]));
      if (prev_higher) best = prev;
    }
    best_prefix_.push_back(best);
  }
}

std::optional<std::vector<double>> DeviceWideCap::knob_for(double cap_w) const {
  const auto it = std::upper_bound(worst_power_.begin(), worst_power_.end(), cap_w);
  if (it == worst_power_.begin()) return std::nullopt;
  return knobs_[best_prefix_[static_cast<size_t>(it - worst_power_.begin()) - 1]];
}

}  // namespace pacer::explore
