#include "sim/replay.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "traces/error.hpp"

namespace pacer::sim {

ReplayResult replay(const PointCost& cost, int batch_size, const traces::RelationSet& target) {
  ReplayResult r;
  r.batch_size = batch_size;
  double sum_t = 0, sum_e = 0;
  for (const auto& run : target.runs) {
    if (run.batch_size != batch_size) continue;
    SeedOutcome s;
    s.seed = run.seed;
    s.reached = run.reached;
    ++r.seeds_total;
    if (run.reached) {
      s.time_s = cost.time_per_batch_s * static_cast<double>(run.samples) / batch_size;
      s.energy_j = cost.energy_power_w() * s.time_s;
      sum_t += s.time_s;
      sum_e += s.energy_j;
      ++r.seeds_reached;
    }
    r.seeds.push_back(s);
  }
  if (r.seeds_reached == 0) return r;
  const double n = r.seeds_reached;
  r.time_mean_s = sum_t / n;
  r.energy_mean_j = sum_e / n;
  double ss_t = 0, ss_e = 0;
  for (const auto& s : r.seeds)
    if (s.reached) {
      ss_t += (s.time_s - r.time_mean_s) * (s.time_s - r.time_mean_s);
      ss_e += (s.energy_j - r.energy_mean_j) * (s.energy_j - r.energy_mean_j);
    }
  r.time_std_s = n > 1 ? std::sqrt(ss_t / (n - 1)) : 0.0;
  r.energy_std_j = n > 1 ? std::sqrt(ss_e / (n - 1)) : 0.0;
  return r;
}

ReplayResult replay(const models::DeviceModel& model, const std::vector<double>& knob, int batch_size,
                    const traces::RelationSet& target) {
  const auto p = model.predict(knob, batch_size);
  return replay(PointCost{p.time_per_batch_s, p.power_mean_w, p.power_peak_w}, batch_size, target);
}

TableModel::TableModel(traces::ProfileTable table) : table_(std::move(table)) {}

models::Prediction TableModel::predict(const std::vector<double>& knob, int batch_size) const {
  const auto* p = table_.find(knob, batch_size);
  if (!p) {
    std::string k;
    for (size_t i = 0; i < knob.size(); ++i)
      k += fmt::format("{}{}={:g} {}", i ? ", " : "", i < table_.knob.dims.size() ? table_.knob.dims[i].name : "?",
                       knob[i], i < table_.knob.dims.size() ? table_.knob.dims[i].unit : "");
    throw Error(fmt::format("profile '{}' has no point at {} and b={}: choose a profiled configuration or use a "
                            "calibrated model",
                            table_.workload, k, batch_size));
  }
  return {p->time_per_batch_mean_s, p->power_peak_w, p->power_mean_w};
}

traces::ModelRecord TableModel::to_record() const {
  traces::ModelRecord r;
  r.name = table_.workload + "@" + table_.device + ":table";
  r.kind = "table";
  r.workload = table_.workload;
  r.device = table_.device;
  r.settings["source"] = "profile table lookup (no fit)";
  return r;
}

std::vector<std::vector<double>> knob_settings(const traces::ProfileTable& table) {
  std::set<std::vector<double>> s;
  for (const auto& p : table.points) s.insert(p.knob);
  return {s.begin(), s.end()};
}

}  // namespace pacer::sim
