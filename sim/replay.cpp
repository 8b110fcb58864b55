#include "sim/replay.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "base/error.hpp"
#include "base/stats.hpp"

namespace pacer::sim {

ReplayResult replay(const PointCost& cost, int batch_size, const traces::RelationSet& target) {
  ReplayResult r;
  r.batch_size = batch_size;
  std::vector<double> times, energies;
  for (const auto& run : target.runs) {
    if (run.batch_size != batch_size) continue;
    SeedOutcome s;
    s.seed = run.seed;
    s.reached = run.reached;
    ++r.seeds_total;
    if (run.reached) {
      s.time_s = base::time_to_accuracy_s(cost.time_per_batch_s, static_cast<double>(run.samples), batch_size);
      s.energy_j = cost.energy_power_w() * s.time_s;
      times.push_back(s.time_s);
      energies.push_back(s.energy_j);
      ++r.seeds_reached;
    }
    r.seeds.push_back(s);
  }
  if (r.seeds_total == 0) {
    std::string have;
    for (int b : target.batch_sizes()) have += (have.empty() ? "" : ", ") + std::to_string(b);
    throw Error(
        fmt::format("relation '{}' has no run at batch size {} (it has {}): the profile and the relation "
                    "must be recorded at the same batch sizes; record the relation at b={} or leave that "
                    "batch size out of the profile",
                    target.name, batch_size, have.empty() ? "none" : have, batch_size));
  }
  if (r.seeds_reached == 0) return r;  // every seed censored: no time to accuracy
  r.time_mean_s = base::mean(times);
  r.energy_mean_j = base::mean(energies);
  r.time_std_s = base::sample_std(times);
  r.energy_std_j = base::sample_std(energies);
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
    throw Error(
        fmt::format("profile '{}' has no point at {} and b={}: choose a profiled configuration or use a "
                    "calibrated model",
                    table_.workload, k, batch_size));
  }
  return {p->time_per_batch_mean_s, p->power_peak_w, p->power_mean_w};
}

traces::ModelRecord TableModel::to_record() const {
  traces::ModelRecord r;
  r.name = table_.workload + "@" + table_.device + ":table";
  r.kind = to_string(traces::ModelKind::table);
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
