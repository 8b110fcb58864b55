#include "explore/policy.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "base/error.hpp"
#include "base/stats.hpp"
#include "base/units.hpp"
#include "explore/pacer_policy.hpp"
#include "explore/relation_model.hpp"

namespace pacer::explore {
namespace {

struct Candidate {
  size_t bi = 0, ki = 0;
  double objective = 0, power_w = 0;
};

// Ties: lower objective, then lower power (more headroom under the cap), then larger b.
bool better(const Candidate& a, const Candidate& b) {
  if (a.objective != b.objective) return a.objective < b.objective;
  if (a.power_w != b.power_w) return a.power_w < b.power_w;
  return a.bi > b.bi;
}

double predicted_time(const Space& s, const Relation& r, size_t bi, size_t ki) {
  return base::time_to_accuracy_s(s.time_per_batch_s(bi, ki), r.samples_by_batch[bi], s.batch_sizes()[bi]);
}

Selection make_selection(Policy p, const Index& index, const Relation* rel, size_t bi, size_t ki, std::string method) {
  const Space& s = index.space();
  Selection sel;
  sel.policy = p;
  sel.feasible = true;
  sel.batch_index = bi;
  sel.knob_index = ki;
  sel.knob = s.knob_settings()[ki];
  sel.batch_size = s.batch_sizes()[bi];
  sel.power_w = s.power_w(bi, ki);
  if (rel && rel->has(bi)) {
    sel.predicted_time_s = predicted_time(s, *rel, bi, ki);
    sel.predicted_energy_j = s.energy_power_w(bi, ki) * sel.predicted_time_s;
  }
  sel.method = std::move(method);
  return sel;
}

Selection infeasible(Policy p, const Index& index, double cap_w, std::string why = "") {
  Selection sel;
  sel.policy = p;
  if (!why.empty()) {
    sel.message = std::move(why);
    return sel;
  }
  const Space& s = index.space();
  double lo = INFINITY;
  size_t lb = 0, lk = 0;
  for (size_t bi = 0; bi < s.num_batches(); ++bi)
    for (size_t ki = 0; ki < s.num_knobs(); ++ki)
      if (s.has(bi, ki) && s.power_w(bi, ki) < lo) {
        lo = s.power_w(bi, ki);
        lb = bi;
        lk = ki;
      }
  sel.message = fmt::format("no configuration draws at most {} ({} power); the lowest is {} at {}, b={}: raise the cap",
                            units::format(cap_w, units::Dimension::Power), to_string(s.basis()),
                            units::format(lo, units::Dimension::Power), s.describe_knob(s.knob_settings()[lk]),
                            s.batch_sizes()[lb]);
  return sel;
}

// Per-b search then argmin over b; `pick` returns the knob for one b, `objective` its value.
template <typename Pick, typename Obj>
Selection per_batch_policy(Policy p, const Index& index, const Relation& rel, double cap_w, Pick pick, Obj objective,
                           const std::string& method, std::vector<Selection>* per_batch) {
  const Space& s = index.space();
  std::optional<Candidate> best;
  std::vector<Candidate> all;
  for (size_t bi = 0; bi < s.num_batches(); ++bi) {
    if (!rel.has(bi)) continue;
    const std::optional<size_t> ki = pick(bi);
    if (!ki) continue;
    const Candidate c{bi, *ki, objective(bi, *ki), s.power_w(bi, *ki)};
    if (!best || better(c, *best)) best = c;
    if (per_batch) all.push_back(c);
  }
  if (!best) {
    // Configurations under the cap whose b the relation lacks: raising the cap is not what helps.
    std::vector<int> missing;
    for (size_t bi = 0; bi < s.num_batches(); ++bi)
      if (!rel.has(bi) && pick(bi)) missing.push_back(s.batch_sizes()[bi]);
    if (!missing.empty())
      return infeasible(
          p, index, cap_w,
          fmt::format("relation '{}' has no samples-to-target at b={} (the batch sizes under {}); it has b={}: choose "
                      "batch sizes it covers, or measure it at these",
                      rel.name, fmt::join(missing, ","), units::format(cap_w, units::Dimension::Power),
                      rel.measured_batch_sizes.empty() ? std::string("none")
                                                       : fmt::format("{}", fmt::join(rel.measured_batch_sizes, ","))));
    return infeasible(p, index, cap_w);
  }
  if (per_batch) {
    std::sort(all.begin(), all.end(), better);
    per_batch->clear();
    for (const auto& c : all) per_batch->push_back(make_selection(p, index, &rel, c.bi, c.ki, method));
  }
  return make_selection(p, index, &rel, best->bi, best->ki, method);
}

Selection baseline(Policy p, const PolicyContext& ctx, double cap_w, std::vector<Selection>* per_batch) {
  const Index& index = *ctx.index;
  const Space& s = index.space();
  const Relation& rel = *ctx.proxy;
  std::optional<std::vector<double>> knob;
  if (ctx.device_cap)
    knob = ctx.device_cap->knob_for(cap_w);
  else
    knob = DeviceWideCap({&s}).knob_for(cap_w);
  if (!knob)
    return infeasible(p, index, cap_w,
                      fmt::format("no {} setting keeps every profiled workload under {}: the device-wide cap is "
                                  "infeasible",
                                  s.knob().kind, units::format(cap_w, units::Dimension::Power)));
  const auto ki = s.knob_index(*knob);
  if (!ki)
    return infeasible(p, index, cap_w,
                      fmt::format("the device-wide cap {} was not profiled for this workload", s.describe_knob(*knob)));
  const std::string method = "device-wide cap " + s.describe_knob(*knob);
  if (p == Policy::Baseline1) {
    for (size_t bi = s.num_batches(); bi-- > 0;) {
      if (!s.has(bi, *ki) || !rel.has(bi)) continue;
      if (s.power_w(bi, *ki) > cap_w) break;  // the largest b does not fit: Baseline 1 has no fallback
      Selection sel = make_selection(p, index, &rel, bi, *ki, method);
      if (per_batch) *per_batch = {sel};
      return sel;
    }
    return infeasible(p, index, cap_w,
                      fmt::format("the largest batch size is not under the cap at {}", s.describe_knob(*knob)));
  }
  return per_batch_policy(
      p, index, rel, cap_w,
      [&](size_t bi) -> std::optional<size_t> {
        if (!s.has(bi, *ki) || s.power_w(bi, *ki) > cap_w) return std::nullopt;
        return *ki;
      },
      [&](size_t bi, size_t k) { return predicted_time(s, rel, bi, k); }, method, per_batch);
}

}  // namespace

Relation Relation::from_set(const traces::RelationSet& set, const Space& space, const traces::RelationSet* looser,
                            const RelationModelOptions& model_options) {
  Relation r;
  r.name = set.name;
  for (int b : set.batch_sizes())
    if (!std::isnan(set.mean_samples(b))) r.measured_batch_sizes.push_back(b);
  const RelationModel model = fit_relation_model(set, looser, model_options);
  r.depart_z = model_options.depart_z;
  r.transfer_shape_sd = model_options.transfer_shape_sd;
  r.depart_transfer_z = model_options.depart_transfer_z;
  r.transfer_log_sd = model_options.transfer_log_sd;
  for (int b : space.batch_sizes()) {
    r.samples_by_batch.push_back(set.mean_samples(b));
    const BatchPosterior* p = model.find(b);
    r.expected_samples_by_batch.push_back(p ? p->expected_samples() : traces::kNaN);
    r.samples_lo_by_batch.push_back(p ? p->lower_samples() : traces::kNaN);
    r.samples_hi_by_batch.push_back(p ? p->upper_samples() : traces::kNaN);
    r.proxy_log_mean_by_batch.push_back(p ? p->proxy_log_mean : traces::kNaN);
    r.proxy_log_var_by_batch.push_back(p ? p->proxy_log_var : traces::kNaN);
  }
  return r;
}

namespace {

Selection select_ours(Policy p, const PolicyContext& ctx, double cap_w, std::vector<Selection>* per_batch) {
  const Index& index = *ctx.index;
  const std::string method = index.one_dimensional() ? "binary search" : "scan";
  return per_batch_policy(
      p, index, *ctx.proxy, cap_w, [&](size_t bi) { return index.highest_feasible_knob(bi, cap_w); },
      [&](size_t bi, size_t ki) { return predicted_time(index.space(), *ctx.proxy, bi, ki); }, method, per_batch);
}

// Ours-robust (the time front with the proxy) and the Oracle (the same front with the target's r(b)).
Selection select_fastest_front(Policy p, const PolicyContext& ctx, double cap_w, std::vector<Selection>* per_batch) {
  const Index& index = *ctx.index;
  const Relation* rel = p == Policy::Oracle ? ctx.target : ctx.proxy;
  if (!rel)
    return infeasible(p, index, cap_w,
                      "no target relation: the oracle needs the target's own r(b); measure it on the target data "
                      "(pacer relation) and name it as the target relation");
  return per_batch_policy(
      p, index, *rel, cap_w, [&](size_t bi) { return index.best_feasible_knob(bi, cap_w, Objective::Time); },
      [&](size_t bi, size_t ki) { return predicted_time(index.space(), *rel, bi, ki); }, "front", per_batch);
}

Selection select_energy(Policy p, const PolicyContext& ctx, double cap_w, std::vector<Selection>* per_batch) {
  const Index& index = *ctx.index;
  const Space& s = index.space();
  return per_batch_policy(
      p, index, *ctx.proxy, cap_w, [&](size_t bi) { return index.best_feasible_knob(bi, cap_w, Objective::Energy); },
      [&](size_t bi, size_t ki) { return s.energy_power_w(bi, ki) * predicted_time(s, *ctx.proxy, bi, ki); }, "front",
      per_batch);
}

Selection select_zeus(Policy p, const PolicyContext& ctx, double cap_w, std::vector<Selection>* per_batch) {
  const Index& index = *ctx.index;
  const Space& s = index.space();
  return per_batch_policy(
      p, index, *ctx.proxy, cap_w, [&](size_t bi) { return index.best_feasible_knob(bi, cap_w, Objective::ZeusCost); },
      [&](size_t bi, size_t ki) {
        return base::time_to_accuracy_s(index.unit_cost(bi, ki, Objective::ZeusCost), ctx.proxy->samples_by_batch[bi],
                                        s.batch_sizes()[bi]);
      },
      "front", per_batch);
}

Selection select_powertrain(Policy p, const PolicyContext& ctx, double cap_w, std::vector<Selection>* per_batch) {
  const Index& index = *ctx.index;
  const Space& s = index.space();
  size_t bi = s.num_batches() - 1;
  if (ctx.powertrain_batch < 0)
    throw OptionError("powertrain-batch", fmt::format("{} is not a batch size: give one of the space's batch sizes, "
                                                      "or 0 for the largest",
                                                      ctx.powertrain_batch));
  if (ctx.powertrain_batch > 0) {
    const auto b = s.batch_index(ctx.powertrain_batch);
    if (!b) return infeasible(p, index, cap_w, fmt::format("batch size {} is not in the space", ctx.powertrain_batch));
    bi = *b;
  }
  const auto ki = index.best_feasible_knob(bi, cap_w, Objective::Time);
  if (!ki) return infeasible(p, index, cap_w);
  Selection sel = make_selection(p, index, ctx.proxy, bi, *ki, "time-power front at fixed b");
  if (per_batch) *per_batch = {sel};
  return sel;
}

Selection select_pacer_row(Policy, const PolicyContext& ctx, double cap_w, std::vector<Selection>* per_batch) {
  return select_pacer(ctx, cap_w, per_batch);
}

}  // namespace

const std::vector<PolicyInfo>& policy_table() {
  static const std::vector<PolicyInfo> table = {
      {Policy::Ours, "ours", "Ours", "Algorithm 1: per b the highest knob under the cap, then the fastest b", 2,
       select_ours},
      {Policy::OursRobust, "ours-robust", "Alg. 1 (time front)",
       "the fastest feasible knob per b (time front, no monotonicity assumed), then the fastest b", -1,
       select_fastest_front},
      {Policy::Baseline1, "baseline1", "Baseline 1", "device-wide knob cap at the largest batch size", 0, baseline},
      {Policy::Baseline2, "baseline2", "Baseline 2", "device-wide knob cap, the fastest batch size under it", 1,
       baseline},
      {Policy::Pacer, "pacer", "pacer (censoring-aware)",
       "expected time to accuracy under a shrunk, censoring-aware model of the proxy's samples-to-target per b "
       "(the default)",
       3, select_pacer_row},
      {Policy::Oracle, "oracle", "Fastest configuration",
       "the fastest feasible configuration under the target's own relation", 4, select_fastest_front},
      {Policy::EnergyOptimal, "energy-opt", "Energy-optimal", "the least energy to accuracy under the cap", -1,
       select_energy},
      {Policy::ZeusCost, "zeus-cost", "Zeus cost", "Zeus's cost eta*energy + (1-eta)*max_power*time under the cap", -1,
       select_zeus},
      {Policy::PowerTrain, "powertrain", "PowerTrain Pareto", "the time-power front at one fixed batch size", -1,
       select_powertrain},
  };
  return table;
}

const PolicyInfo& info(Policy p) {
  for (const auto& row : policy_table())
    if (row.policy == p) return row;
  throw Error("unknown policy");
}

std::vector<Policy> all_policies() {
  std::vector<Policy> out;
  for (const auto& row : policy_table()) out.push_back(row.policy);
  return out;
}

std::string_view to_string(Policy p) {
  return info(p).id;
}

std::optional<Policy> policy_from_string(std::string_view name) {
  for (const auto& row : policy_table())
    if (row.id == name) return row.policy;
  return std::nullopt;
}

Policy parse_policy(std::string_view name, const std::string& option) {
  if (const auto p = policy_from_string(name)) return *p;
  throw OptionError(option, fmt::format("unknown policy '{}' (one of {})", name, policy_names()));
}

bool is_policy(std::string_view id, Policy p) {
  return id == info(p).id;
}

std::vector<std::string> policy_ids(const std::vector<Policy>& policies) {
  std::vector<std::string> out;
  for (Policy p : policies) out.emplace_back(info(p).id);
  return out;
}

std::string policy_names() {
  std::string s;
  for (const auto& row : policy_table()) s += (s.empty() ? "" : ", ") + std::string(row.id);
  return s;
}

std::string policy_help() {
  std::string s;
  for (const auto& row : policy_table()) s += fmt::format("  {}: {}\n", row.id, row.description);
  return s;
}

std::string policy_label(std::string_view id) {
  const auto p = policy_from_string(id);
  return p ? std::string(info(*p).label) : std::string(id);
}

int policy_rank(std::string_view id) {
  const auto p = policy_from_string(id);
  return p && info(*p).paper_row >= 0 ? info(*p).paper_row : 100;
}

Selection select(Policy p, const PolicyContext& ctx, double cap_w, std::vector<Selection>* per_batch) {
  if (!ctx.index || !ctx.proxy) throw Error("policy selection needs a design space and a proxy relation");
  return info(p).select(p, ctx, cap_w, per_batch);
}

Selection scan_fastest(const Index& index, const Relation& rel, double cap_w) {
  const Space& s = index.space();
  std::optional<Candidate> best;
  for (size_t bi = 0; bi < s.num_batches(); ++bi) {
    if (!rel.has(bi)) continue;
    for (size_t ki = 0; ki < s.num_knobs(); ++ki) {
      if (!s.has(bi, ki) || s.power_w(bi, ki) > cap_w) continue;
      const Candidate c{bi, ki, predicted_time(s, rel, bi, ki), s.power_w(bi, ki)};
      // Same tie rule as the front (lower knob among equal time and power within one b).
      if (!best || better(c, *best) ||
          (best->bi == bi && c.objective == best->objective && c.power_w == best->power_w && ki < best->ki))
        best = c;
    }
  }
  if (!best) return infeasible(Policy::OursRobust, index, cap_w);
  return make_selection(Policy::OursRobust, index, &rel, best->bi, best->ki, "scan");
}

Selection scan_algorithm1(const Index& index, const Relation& rel, double cap_w) {
  const Space& s = index.space();
  return per_batch_policy(
      Policy::Ours, index, rel, cap_w, [&](size_t bi) { return index.highest_feasible_knob_scan(bi, cap_w); },
      [&](size_t bi, size_t ki) { return predicted_time(s, rel, bi, ki); }, "scan", nullptr);
}

}  // namespace pacer::explore
