#include "experiments/campaigns/validate_probe.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <set>

#include "base/error.hpp"
#include "experiments/campaigns/profiling.hpp"
#include "experiments/campaigns/validate.hpp"
#include "explore/problem.hpp"
#include "explore/sweep.hpp"
#include "models/calibrate.hpp"
#include "models/workloads/workload.hpp"
#include "traces/store/store.hpp"

namespace pacer::experiments::validate_detail {
namespace fs = std::filesystem;

std::string measured_profile_name(const std::string& profile_name) {
  if (!models::is_predicted_profile_name(profile_name)) return profile_name;
  return profile_name.substr(0, profile_name.size() - models::predicted_profile_name("").size());
}

namespace {

// A point of a measured profile that counts as measured: anything but a fault's skip, which a
// profile run measures again (hw/profiler.cpp).
bool counts_as_measured(const traces::ProfilePoint& p, explore::PowerBasis basis) {
  return explore::measurement_of(p, basis) != explore::Measurement::Nothing;
}

bool usable(const traces::ProfilePoint& p, explore::PowerBasis basis) {
  return explore::measurement_of(p, basis) == explore::Measurement::Power;
}

// The power that decides the point's feasibility (a measured peak projected to a run): the Space's.
double basis_power(const traces::ProfilePoint& p, explore::PowerBasis basis) {
  return explore::feasibility_power_w(p, basis);
}

Config config_of(const explore::Selection& s) {
  return {s.knob, s.batch_size};
}

// The same configuration: the same b and knob settings equal to 1e-6 (a catalog's and a device's
// spelling of one frequency may differ in the last bits).
bool same_config(const std::vector<double>& knob, int b, const Config& c) {
  if (b != c.batch_size || knob.size() != c.knob.size()) return false;
  for (size_t d = 0; d < knob.size(); ++d)
    if (std::abs(knob[d] - c.knob[d]) > 1e-6 * std::max(1.0, std::abs(c.knob[d]))) return false;
  return true;
}

const traces::ProfilePoint* find_point(const std::vector<traces::ProfilePoint>& points, const Config& c) {
  for (const auto& p : points)
    if (same_config(p.knob, p.batch_size, c)) return &p;
  return nullptr;
}

// The points measured before: the measured profile in the campaign's store and in `out`.
std::vector<traces::ProfilePoint> stored_points(const std::string& name, const std::vector<fs::path>& stores,
                                                explore::PowerBasis basis) {
  std::vector<traces::ProfilePoint> out;
  for (const auto& path : stores) {
    if (!fs::exists(path)) continue;
    const traces::Store s = traces::Store::open(path);
    if (!s.has<traces::ProfileTable>(name)) continue;
    for (const auto& p : s.read<traces::ProfileTable>(name).points)
      if (counts_as_measured(p, basis)) out.push_back(p);
  }
  return out;
}

// A short profile of configuration `c` on the validation's device, added to profile `name` in `out`.
traces::ProfilePoint probe(const ValidateOptions& opt, const ChoiceInputs& in, const traces::ProfileTable& table,
                           const std::string& name, const Config& c, double cap_w, const fs::path& out) {
  ProfileRequest r;
  r.device = opt.device;
  r.device.workload = models::describe_workload(in.workload);
  r.train_device = in.train_device;
  r.threads = in.threads;
  hw::ProfileOptions& p = r.profile;
  p.workload = table.workload;
  p.batch_sizes = {c.batch_size};
  p.knob_values = c.knob;
  p.measured_batches = opt.probe_batches;
  p.sensor_rate_hz = opt.sensor_rate_hz;
  p.power_limit_w = cap_w;  // arms the profiler's watchdog at the cap the configuration was chosen for
  p.watchdog_margin_w = opt.watchdog_margin_w;
  p.watchdog_duration_s = opt.watchdog_duration_s;
  p.store = out;
  p.profile_name = name;
  p.source = "pacer validate: probe of a chosen configuration";
  ProfileRun run;
  try {
    run = run_profile(r);
  } catch (const SettingError& e) {  // the measured profile is of another board or workload
    throw Error(
        fmt::format("cannot store the probe of b={} in profile '{}': {}; validate on the profile's device, "
                    "or validate with no probe",
                    c.batch_size, name, e.what()));
  }
  const traces::ProfilePoint* point = find_point(run.report.table.points, c);
  if (!point) throw Error(fmt::format("the probe of b={} left no point in profile '{}'", c.batch_size, name));
  return *point;
}

// The space every command chooses from (explore::load_problem's): the predicted table with the
// measured points winning (Space::overlay_measured: their power, the model's times; a failed
// measurement out).
explore::Space measured_wins_space(const traces::ProfileTable& predicted,
                                   const std::map<Config, traces::ProfilePoint>& measured, explore::PowerBasis basis) {
  explore::Space space = explore::Space::from_profile(predicted, basis);
  traces::ProfileTable table;
  table.workload = predicted.workload;
  table.knob = predicted.knob;
  for (const auto& [c, m] : measured) {
    traces::ProfilePoint p = m;
    p.knob = c.knob;  // the space's spelling of the setting
    p.batch_size = c.batch_size;
    table.points.push_back(std::move(p));
  }
  space.overlay_measured(table);
  return space;
}

struct Chooser {
  explore::Space space;
  explore::Index index;
  explore::DeviceWideCap device_cap;
  explore::Relation proxy, target;
  // Baselines 1 and 2: the device-wide cap over this space and every profile of `device` in the
  // store (explore::device_wide_cap, as select, sweep and simulate).
  Chooser(explore::Space s, const ChoiceInputs& in, const traces::Store& store, const std::string& device)
      : space(std::move(s)),
        index(space),
        device_cap(explore::device_wide_cap(store, device, space)),
        proxy(explore::proxy_relation(*in.proxy, space, in.proxy_looser, in.target)),
        target(explore::Relation::from_set(*in.target, space)) {}
  std::vector<Choice> choose(const ValidateOptions& opt, const ChoiceInputs& in) const {
    explore::PolicyContext ctx;
    ctx.index = &index;
    ctx.proxy = &proxy;
    ctx.target = &target;
    ctx.device_cap = &device_cap;
    ctx.powertrain_batch = in.powertrain_batch;
    std::vector<Choice> out;
    for (double cap : opt.caps_w)
      for (const auto& pname : opt.policies) {
        const auto policy = explore::policy_from_string(pname);  // known: checked before
        out.push_back({cap, pname, explore::decide(*policy, ctx, cap, in.rule), ""});
      }
    return out;
  }
};

}  // namespace

std::vector<Choice> choose_measured(const ValidateOptions& opt, const ChoiceInputs& in, const fs::path& out,
                                    int& probes) {
  const traces::ProfileTable predicted = traces::Store::open(opt.store).read<traces::ProfileTable>(in.profile_name);
  auto chooser_of = [&](explore::Space space) {
    return Chooser(std::move(space), in, traces::Store::open(opt.store), predicted.device);
  };
  const std::string measured_name = measured_profile_name(in.profile_name);
  // A measured profile's points are all measured: nothing to replace or probe.
  const bool twin = measured_name != in.profile_name;
  const bool probing = opt.probe_batches > 0 && twin;
  std::vector<traces::ProfilePoint> stored =
      twin ? stored_points(measured_name, {opt.store, out}, in.basis) : std::vector<traces::ProfilePoint>{};
  // The points whose measurement replaces the prediction (explore::Space::overlay_measured, as in
  // every command): a measured one with its power, a failed one out of the space.
  std::map<Config, traces::ProfilePoint> measured;
  auto substitute = [&](const Config& c, const traces::ProfilePoint& m) {
    auto [it, fresh] = measured.emplace(c, m);
    if (!fresh && usable(it->second, in.basis)) it->second = m;  // a failure stays: as overlay_measured
  };
  // Measured points win over the prediction from the start (the points of the space alone).
  for (const auto& m : stored)
    for (const auto& p : predicted.points)
      if (same_config(p.knob, p.batch_size, {m.knob, m.batch_size})) {
        substitute({p.knob, p.batch_size}, m);  // the space's spelling of the setting
        break;
      }
  // The choices from the prediction alone: what a moved choice is reported against.
  const std::vector<Choice> first = chooser_of(explore::Space::from_profile(predicted, in.basis)).choose(opt, in);
  std::vector<Choice> choices;
  for (;;) {
    const Chooser chooser = chooser_of(measured_wins_space(predicted, measured, in.basis));
    choices = chooser.choose(opt, in);
    if (!probing) break;
    // The chosen configurations that stand on a prediction, each with the lowest cap it was chosen at.
    std::map<Config, double> pending;
    for (const auto& ch : choices) {
      if (!ch.selection.feasible) continue;
      const Config c = config_of(ch.selection);
      if (measured.count(c)) continue;
      auto [it, fresh] = pending.emplace(c, ch.cap_w);
      if (!fresh) it->second = std::min(it->second, ch.cap_w);
    }
    if (pending.empty()) break;
    for (const auto& [c, cap] : pending) {
      spdlog::info("validate: probing {} (chosen at cap {:g} W, never measured) with {} mini-batches",
                   config_text(chooser.space, c), cap, opt.probe_batches);
      traces::ProfilePoint m = probe(opt, in, predicted, measured_name, c, cap, out);
      ++probes;
      // A probe that measured nothing (a sensor fault) does not stand for the configuration: it is
      // not trained on its prediction (a later validation probes it again).
      if (explore::measurement_of(m, in.basis) == explore::Measurement::Nothing) m.status = "probe: " + m.status;
      substitute(c, m);
    }
  }
  // A choice that moved from the prediction's: which configuration it left, and why. A function of
  // the measured points alone, so a validation run again (its probes stored) records the same.
  const explore::Space space = explore::Space::from_profile(predicted, in.basis);
  for (size_t k = 0; k < choices.size(); ++k) {
    const auto& was = first[k].selection;
    const auto& now = choices[k].selection;
    const Config c = config_of(was);
    if (!was.feasible || (now.feasible && same_config(now.knob, now.batch_size, c))) continue;
    const double limit = explore::guarded_cap_w(choices[k].cap_w, in.rule.guard);
    const auto it = measured.find(c);
    std::string why;
    if (it == measured.end()) {
      why = "never measured; the measured points changed the policy's ranking";
    } else if (const traces::ProfilePoint& m = it->second; !usable(m, in.basis)) {
      why = m.status == "ok" ? std::string("measured without power") : m.status;
    } else if (basis_power(m, in.basis) > limit) {
      why = fmt::format("measured {} {:.3f} W above cap x (1 - {:g}) = {:.3f} W (predicted {:.3f} W)",
                        explore::describe_basis(in.basis), basis_power(m, in.basis), in.rule.guard, limit, was.power_w);
    } else {
      why = fmt::format(
          "measured {} {:.3f} W, under cap x (1 - {:g}) = {:.3f} W (predicted {:.3f} W); the measured "
          "points changed the policy's ranking",
          explore::describe_basis(in.basis), basis_power(m, in.basis), in.rule.guard, limit, was.power_w);
    }
    choices[k].replaced = fmt::format("{}: {}; now {}", config_text(space, c), why,
                                      now.feasible ? config_text(space, config_of(now)) : "infeasible");
  }
  return choices;
}

}  // namespace pacer::experiments::validate_detail
