#include "traces/records.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "base/stats.hpp"
#include "base/units.hpp"
#include "traces/columns.hpp"

namespace pacer::traces {

std::string KnobSpace::format(const std::vector<double>& values) const {
  if (kind == KnobKind::power_mode && values.size() == dims.size()) {
    // "4 CPU@1.479 GHz, GPU 921.6 MHz, EMC 1.6 GHz (3 TPC)": a mode's caps, read as a sentence.
    std::string s;
    for (size_t i = 0; i < values.size(); ++i) {
      const auto& n = dims[i].name;
      const std::string f = units::format(values[i], units::Dimension::Frequency);
      if (n == "cpu_cores")
        s += fmt::format("{:g} CPU", values[i]);
      else if (n == "cpu_freq")
        s += "@" + f;
      else if (n == "gpu_freq")
        s += ", GPU " + f;
      else if (n == "mem_freq")
        s += ", EMC " + f;
      else if (n == "gpu_tpcs")
        s += fmt::format(" ({:g} TPC)", values[i]);
      else
        s += fmt::format(" {:g}({})", values[i], n);
    }
    return s;
  }
  std::string s;
  for (size_t i = 0; i < values.size() && i < dims.size(); ++i) {
    if (i) s += " ";
    const auto& d = dims[i];
    if (d.unit == "Hz")
      s += units::format(values[i], units::Dimension::Frequency);
    else if (d.unit == "W")
      s += units::format(values[i], units::Dimension::Power);
    else
      s += fmt::format("{:g}", values[i]);
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

bool same(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || a == b;
}

bool same(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](double x, double y) { return same(x, y); });
}

bool ProfilePoint::operator==(const ProfilePoint& o) const {
  return fields_equal(kProfilePointColumns, *this, o);
}

bool ProfileTable::operator==(const ProfileTable& o) const {
  return fields_equal(kProfileTableAttributes, *this, o) && knob == o.knob && points == o.points;
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
  return fields_equal(kRelationRunColumns, *this, o);
}

bool RelationSet::operator==(const RelationSet& o) const {
  return fields_equal(kRelationSetAttributes, *this, o) && runs == o.runs;
}

bool SweepResult::operator==(const SweepResult& o) const {
  return fields_equal(kSweepResultAttributes, *this, o) && knob == o.knob && rows == o.rows;
}

bool CurvePoint::operator==(const CurvePoint& o) const {
  return fields_equal(kCurvePointColumns, *this, o);
}

bool LearningCurve::operator==(const LearningCurve& o) const {
  return fields_equal(kLearningCurveAttributes, *this, o) && points == o.points;
}

bool AdaptiveLogRow::operator==(const AdaptiveLogRow& o) const {
  return fields_equal(kAdaptiveLogRowColumns, *this, o);
}

bool AdaptiveLog::operator==(const AdaptiveLog& o) const {
  return fields_equal(kAdaptiveLogAttributes, *this, o) && decisions == o.decisions;
}

std::string AdaptiveLog::outcome() const {
  for (const auto& d : decisions)
    if (d.action == "decided" || d.action == "budget" || d.action == "rounds") return d.action;
  return "";
}

int AdaptiveLog::rounds() const {
  int r = 0;
  for (const auto& d : decisions) r = std::max(r, d.round);
  return r;
}

int64_t LearningCurve::first_reaching(int batch_size, int seed, double level) const {
  int64_t first = 0;
  for (const auto& p : points)
    if (p.batch_size == batch_size && p.seed == seed && (higher_is_better ? p.metric >= level : p.metric <= level) &&
        (first == 0 || p.samples < first))
      first = p.samples;
  return first;
}

std::vector<int> RelationSet::batch_sizes() const {
  std::set<int> s;
  for (const auto& r : runs) s.insert(r.batch_size);
  return {s.begin(), s.end()};
}

namespace {
// Samples to the target of the runs at b that reached it.
std::vector<double> reached_samples(const std::vector<RelationRun>& runs, int b) {
  std::vector<double> v;
  for (const auto& r : runs)
    if (r.batch_size == b && r.reached) v.push_back(static_cast<double>(r.samples));
  return v;
}
}  // namespace

double RelationSet::mean_samples(int b) const {
  return base::mean(reached_samples(runs, b));
}

double RelationSet::std_samples(int b) const {
  return base::sample_std(reached_samples(runs, b));
}

std::string true_relation_name(const std::string& dataset_record) {
  return dataset_record + "-true";
}

bool is_true_relation(const std::string& relation_name) {
  const std::string suffix = true_relation_name("");
  return relation_name.size() > suffix.size() &&
         relation_name.compare(relation_name.size() - suffix.size(), suffix.size(), suffix) == 0;
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
         settings == o.settings && blob == o.blob && transfer_gate == o.transfer_gate &&
         transfer_choice == o.transfer_choice;
}

bool SweepRow::operator==(const SweepRow& o) const {
  return fields_equal(kSweepRowColumns, *this, o);
}

bool ValidationRow::operator==(const ValidationRow& o) const {
  return fields_equal(kValidationRowColumns, *this, o);
}

bool ValidationResult::operator==(const ValidationResult& o) const {
  return fields_equal(kValidationResultAttributes, *this, o) && knob == o.knob && rows == o.rows;
}

ValidationRowKey row_key(const ValidationRow& r) {
  return {r.cap_w, r.policy, r.seed, r.knob, r.batch_size};
}

void sort_rows(ValidationResult& v) {
  std::stable_sort(v.rows.begin(), v.rows.end(),
                   [](const ValidationRow& a, const ValidationRow& b) { return row_key(a) < row_key(b); });
}

}  // namespace pacer::traces
