#include "traces/records.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "traces/units.hpp"

namespace pacer::traces {

std::string KnobSpace::format(const std::vector<double>& values) const {
  std::string s;
  for (size_t i = 0; i < values.size() && i < dims.size(); ++i) {
    if (i) s += " ";
    const auto& d = dims[i];
    if (d.unit == "Hz") s += units::format(values[i], units::Dimension::Frequency);
    else if (d.unit == "W") s += units::format(values[i], units::Dimension::Power);
    else s += fmt::format("{:g}", values[i]);
    if (values.size() > 1) s += "(" + d.name + ")";
  }
  return s;
}

std::string KnobSpace::heading(size_t dim) const {
  if (dim >= dims.size()) return "";
  const auto& d = dims[dim];
  if (d.name == "gpu_freq") return "f [MHz]";
  if (d.name == "power_limit") return "P_limit [W]";
  if (d.unit == "Hz") return d.name + " [MHz]";
  if (d.unit == "W") return d.name + " [W]";
  return d.name;
}

bool same(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

bool same(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](double x, double y) { return same(x, y); });
}

bool ProfilePoint::operator==(const ProfilePoint& o) const {
  return same(knob, o.knob) && batch_size == o.batch_size && same(time_per_batch_mean_s, o.time_per_batch_mean_s) &&
         same(time_per_batch_std_s, o.time_per_batch_std_s) && same(power_peak_w, o.power_peak_w) &&
         same(power_mean_w, o.power_mean_w) && same(energy_j, o.energy_j) && samples == o.samples &&
         power_samples == o.power_samples && same(sensor_rate_hz, o.sensor_rate_hz) &&
         same(temperature_c, o.temperature_c) && status == o.status;
}

bool ProfileTable::operator==(const ProfileTable& o) const {
  return workload == o.workload && device == o.device && emulated == o.emulated && virtual_time == o.virtual_time &&
         source == o.source && knob == o.knob && samples_per_epoch == o.samples_per_epoch &&
         warmup_batches == o.warmup_batches && measured_batches == o.measured_batches &&
         same(profiling_cost_s, o.profiling_cost_s) && points == o.points;
}

std::vector<int> ProfileTable::batch_sizes() const {
  std::set<int> s;
  for (const auto& p : points) s.insert(p.batch_size);
  return {s.begin(), s.end()};
}

const ProfilePoint* ProfileTable::find(const std::vector<double>& k, int batch_size) const {
  for (const auto& p : points)
    if (p.batch_size == batch_size && p.knob == k) return &p;
  return nullptr;
}

bool RelationRun::operator==(const RelationRun& o) const {
  return batch_size == o.batch_size && seed == o.seed && reached == o.reached && samples == o.samples &&
         budget_samples == o.budget_samples && same(wall_time_s, o.wall_time_s) && same(final_metric, o.final_metric) &&
         same(learning_rate, o.learning_rate);
}

bool RelationSet::operator==(const RelationSet& o) const {
  return name == o.name && workload == o.workload && dataset == o.dataset && metric == o.metric &&
         higher_is_better == o.higher_is_better && same(target, o.target) && lr_rule == o.lr_rule &&
         same(base_lr, o.base_lr) && base_batch == o.base_batch && optimizer == o.optimizer &&
         samples_per_epoch == o.samples_per_epoch && runs == o.runs;
}

std::vector<int> RelationSet::batch_sizes() const {
  std::set<int> s;
  for (const auto& r : runs) s.insert(r.batch_size);
  return {s.begin(), s.end()};
}

double RelationSet::mean_samples(int b) const {
  double sum = 0;
  int n = 0;
  for (const auto& r : runs)
    if (r.batch_size == b && r.reached) {
      sum += static_cast<double>(r.samples);
      ++n;
    }
  return n ? sum / n : kNaN;
}

double RelationSet::std_samples(int b) const {
  const double m = mean_samples(b);
  double ss = 0;
  int n = 0;
  for (const auto& r : runs)
    if (r.batch_size == b && r.reached) {
      ss += (r.samples - m) * (r.samples - m);
      ++n;
    }
  return n > 1 ? std::sqrt(ss / (n - 1)) : (n == 1 ? 0.0 : kNaN);
}

std::map<int, double> RelationSet::relation_vector() const {
  std::map<int, double> r;
  const auto bs = batch_sizes();
  double ref = kNaN;
  for (auto it = bs.rbegin(); it != bs.rend(); ++it) {
    ref = mean_samples(*it);
    if (!std::isnan(ref)) break;
  }
  if (std::isnan(ref) || ref <= 0) return r;
  for (int b : bs) {
    const double m = mean_samples(b);
    if (!std::isnan(m)) r[b] = m / ref;
  }
  return r;
}

bool ModelRecord::operator==(const ModelRecord& o) const {
  if (metrics.size() != o.metrics.size()) return false;
  for (const auto& [k, v] : metrics) {
    const auto it = o.metrics.find(k);
    if (it == o.metrics.end() || !same(v, it->second)) return false;
  }
  return name == o.name && kind == o.kind && workload == o.workload && device == o.device &&
         param_names == o.param_names && same(param_values, o.param_values) && same(param_stderr, o.param_stderr) &&
         settings == o.settings && blob == o.blob;
}

bool SweepRow::operator==(const SweepRow& o) const {
  return same(cap_w, o.cap_w) && workload == o.workload && policy == o.policy && feasible == o.feasible &&
         same(knob, o.knob) && batch_size == o.batch_size && same(predicted_time_s, o.predicted_time_s) &&
         same(predicted_energy_j, o.predicted_energy_j) && same(replayed_time_mean_s, o.replayed_time_mean_s) &&
         same(replayed_time_std_s, o.replayed_time_std_s) && same(replayed_energy_j, o.replayed_energy_j) &&
         same(regret, o.regret);
}

bool ValidationRow::operator==(const ValidationRow& o) const {
  return same(cap_w, o.cap_w) && policy == o.policy && same(knob, o.knob) && batch_size == o.batch_size &&
         seed == o.seed && reached == o.reached && samples == o.samples && same(device_time_s, o.device_time_s) &&
         same(wall_time_s, o.wall_time_s) && same(energy_j, o.energy_j) && same(power_peak_w, o.power_peak_w) &&
         same(power_mean_w, o.power_mean_w) && cap_exceeded == o.cap_exceeded &&
         same(time_over_cap_s, o.time_over_cap_s) && same(predicted_time_s, o.predicted_time_s) &&
         same(predicted_energy_j, o.predicted_energy_j) && same(final_metric, o.final_metric) && series == o.series &&
         status == o.status;
}

bool ValidationResult::operator==(const ValidationResult& o) const {
  return name == o.name && workload == o.workload && device == o.device && dataset == o.dataset &&
         metric == o.metric && same(target, o.target) && emulated == o.emulated && feasibility == o.feasibility &&
         same(guard, o.guard) && knob == o.knob && rows == o.rows;
}

}  // namespace pacer::traces
