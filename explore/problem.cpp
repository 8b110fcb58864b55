#include "explore/problem.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/error.hpp"
#include "base/units.hpp"
#include "explore/transfer.hpp"
#include "models/calibrate.hpp"
#include "sim/replay.hpp"
#include "traces/catalog/catalog.hpp"
#include "traces/catalog/power_modes.hpp"
#include "traces/import/zeus.hpp"
#include "traces/workload.hpp"

namespace pacer::explore {
namespace {

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s.empty() ? "none" : s;
}

// A relation that plays a role of its own: a target (<workload>.target, a validation's true
// relation) or the looser-level runs of another relation.
bool is_role_relation(const std::string& name) {
  const std::string target = traces::zeus::target_name(""), looser = traces::zeus::looser_name("");
  auto ends_with = [&](const std::string& suffix) {
    return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return traces::is_true_relation(name) || ends_with(target) || ends_with(looser);
}

// Whether relation `name` could go with `workload`: of that workload, or of one it does not say.
bool of_workload(const traces::Store& store, const std::string& name, const std::string& workload) {
  const std::string w = store.read<traces::RelationSet>(name).workload;
  return w.empty() || workload.empty() || w == workload;
}

// The proxy when none is named: <workload>.proxy, or the store's one relation of the workload with
// no other role.
std::string default_proxy(const traces::Store& store, const std::string& workload) {
  if (store.has<traces::RelationSet>(traces::zeus::proxy_name(workload))) return traces::zeus::proxy_name(workload);
  std::vector<std::string> plain, others;
  for (const auto& n : store.list<traces::RelationSet>())
    if (!is_role_relation(n)) (of_workload(store, n, workload) ? plain : others).push_back(n);
  if (plain.size() == 1) return plain.front();
  throw OptionError(
      "relation",
      fmt::format("no '{}' in {} and {} relations of workload {} that could be the proxy ({}){}; name one",
                  traces::zeus::proxy_name(workload), store.path().string(), plain.size(), workload, join(plain),
                  others.empty() ? "" : fmt::format(" (of other workloads: {})", join(others))));
}

// The target when none is named: <workload>.target, or the store's one true relation (made by
// `pacer validate`) of the workload; "" when there is none. Several true relations: name one.
std::string default_target(const traces::Store& store, const std::string& workload, const std::string& proxy) {
  if (store.has<traces::RelationSet>(traces::zeus::target_name(workload))) return traces::zeus::target_name(workload);
  std::vector<std::string> trues;
  for (const auto& n : store.list<traces::RelationSet>())
    if (traces::is_true_relation(n) && n != proxy && of_workload(store, n, workload)) trues.push_back(n);
  if (trues.size() > 1)
    throw OptionError("target", fmt::format("{} holds {} target relations ({}); name one", store.path().string(),
                                            trues.size(), join(trues)));
  return trues.empty() ? std::string() : trues.front();
}

}  // namespace

PointOrigin measured_wins(const traces::Store& store, const std::string& name, bool from_model,
                          const std::string& workload, const std::string& device, Space& space) {
  PointOrigin o;
  o.points = space.num_points();
  const bool predicted = from_model || models::is_predicted_profile_name(name);
  if (!predicted) {
    o.measured = o.points;
    return o;
  }
  // The model behind the prediction: its held-out peak error (the largest of the store's models of
  // this workload and device when several could be it).
  if (from_model) {
    const auto record = store.read<traces::ModelRecord>(name);
    o.model_power_error = models::peak_error_quantile(record, space.basis() == PowerBasis::Peak);
    o.model = name;
  } else {
    for (const auto& m : store.list<traces::ModelRecord>()) {
      const auto record = store.read<traces::ModelRecord>(m);
      if (record.workload != workload || record.device != device) continue;
      const double e = models::peak_error_quantile(record, space.basis() == PowerBasis::Peak);
      if (o.model.empty() || (std::isfinite(e) && !(e <= o.model_power_error))) {
        o.model_power_error = e;
        o.model = m;
      }
    }
  }
  std::optional<std::string> measured;
  if (!from_model) {
    if (store.has<traces::ProfileTable>(models::measured_profile_name(name)))
      measured = models::measured_profile_name(name);
  } else {
    std::vector<std::string> candidates;
    for (const auto& n : store.list<traces::ProfileTable>()) {
      if (models::is_predicted_profile_name(n)) continue;
      const auto t = store.read<traces::ProfileTable>(n);
      if (t.workload == workload && (device.empty() || t.device == device)) candidates.push_back(n);
    }
    if (candidates.size() == 1) measured = candidates.front();
  }
  if (measured) {
    const auto table = store.read<traces::ProfileTable>(*measured);
    o.measured = space.overlay_measured(table);
    o.points = space.num_points();  // less the configurations whose measurement failed
  }
  o.basis = o.measured == o.points ? PointBasis::Measured : o.measured == 0 ? PointBasis::Model : PointBasis::Mixed;
  return o;
}

PolicyContext Problem::context() const {
  PolicyContext c;
  c.index = index.get();
  c.proxy = &proxy;
  c.target = target ? &*target : nullptr;
  c.device_cap = device_cap ? &*device_cap : nullptr;
  return c;
}

DeviceWideCap device_wide_cap(const traces::Store& store, const std::string& device, const Space& space) {
  std::vector<std::unique_ptr<Space>> others;
  for (const auto& n : store.list<traces::ProfileTable>()) {
    if (models::is_predicted_profile_name(n)) continue;
    const auto table = store.read<traces::ProfileTable>(n);
    if (table.device != device || table.knob != space.knob()) continue;
    // Nothing measured, or nothing measured in the space's power basis (a mean-only profile, e.g. an
    // imported LoudVA sweep, beside a model that predicts peaks): it bounds no setting on that basis.
    const bool usable = std::any_of(table.points.begin(), table.points.end(), [&](const traces::ProfilePoint& p) {
      return p.status == "ok" && !std::isnan(p.time_per_batch_mean_s) &&
             std::isfinite(feasibility_power_w(p, space.basis()));
    });
    if (!usable) continue;
    try {
      others.push_back(std::make_unique<Space>(Space::from_profile(table, space.basis())));
    } catch (const Error& e) {
      throw Error(fmt::format("the device-wide cap of Baselines 1 and 2 spans every profile of {} in {}: {}", device,
                              store.path().string(), e.what()));
    }
  }
  std::vector<const Space*> spaces{&space};
  for (const auto& s : others) spaces.push_back(s.get());
  return DeviceWideCap(spaces);
}

Relation proxy_relation(const traces::RelationSet& proxy, const Space& space, const traces::RelationSet* looser,
                        const traces::RelationSet* target) {
  // The transfer's terms unless the target is the proxy's own data set.
  return proxy_relation(proxy, space, looser, transfer_sd(proxy, target));
}

Relation proxy_relation(const traces::RelationSet& proxy, const Space& space, const traces::RelationSet* looser,
                        const TransferSd& transfer) {
  RelationModelOptions model_options;
  model_options.transfer_log_sd = transfer.level;
  model_options.transfer_shape_sd = transfer.shape;
  return Relation::from_set(proxy, space, looser, model_options);
}

Relation proxy_relation(const traces::Store& store, const traces::RelationSet& proxy, const Space& space,
                        const traces::RelationSet* target) {
  const std::string looser = traces::zeus::looser_name(proxy.name);
  if (!store.has<traces::RelationSet>(looser)) return proxy_relation(proxy, space, nullptr, target);
  const auto set = store.read<traces::RelationSet>(looser);
  return proxy_relation(proxy, space, &set, target);
}

std::unique_ptr<Problem> load_problem(const traces::Store& store, const ProblemSpec& spec) {
  auto pb = std::make_unique<Problem>();
  std::string pb_device;           // the profile's or model's device
  double model_power_samples = 0;  // a calibrated model's stated power samples
  if (!spec.model.empty()) {
    if (!store.has<traces::ModelRecord>(spec.model))
      throw Error(fmt::format("{} has no model '{}' (models: {}): run pacer calibrate first", store.path().string(),
                              spec.model, join(store.list<traces::ModelRecord>())));
    const auto record = store.read<traces::ModelRecord>(spec.model);
    pb->model = models::model_from_record(record);
    pb->model_uncertainty = models::read_uncertainty(record);
    model_power_samples = static_cast<double>(models::stated_power_samples(record));
    pb->workload = record.workload;
    pb_device = record.device;
    pb->profile_name = spec.model;
  } else {
    std::string name = spec.profile;
    const auto profiles = store.list<traces::ProfileTable>();
    if (name.empty()) {
      if (profiles.size() != 1)
        throw OptionError("profile", fmt::format("{} holds {} profiles ({}); name one", store.path().string(),
                                                 profiles.size(), join(profiles)));
      name = profiles.front();
    }
    if (!store.has<traces::ProfileTable>(name))
      throw Error(fmt::format("{} has no profile '{}' (profiles: {})", store.path().string(), name, join(profiles)));
    auto table = store.read<traces::ProfileTable>(name);
    pb->workload = table.workload;
    pb_device = table.device;
    pb->profile_name = name;
    pb->space = std::make_unique<Space>(Space::from_profile(table, spec.basis));
    pb->model = std::make_unique<sim::TableModel>(std::move(table));
  }

  const auto relations = store.list<traces::RelationSet>();
  const std::string proxy = spec.relation.empty() ? default_proxy(store, pb->workload) : spec.relation;
  if (!store.has<traces::RelationSet>(proxy))
    throw Error(fmt::format("{} has no relation '{}' (relations: {}): run pacer relation or pacer import first",
                            store.path().string(), proxy, join(relations)));
  pb->proxy_set = store.read<traces::RelationSet>(proxy);
  const std::string paired = fmt::format("{} '{}'", spec.model.empty() ? "profile" : "model", pb->profile_name);
  traces::check_workload_match(paired, pb->workload, pb->proxy_set, spec.allow_workload_mismatch);
  if (store.has<traces::RelationSet>(traces::zeus::looser_name(proxy)))
    pb->proxy_looser_set = store.read<traces::RelationSet>(traces::zeus::looser_name(proxy));
  if (!spec.read_target && !spec.target.empty())
    throw Error(fmt::format("target relation '{}' named where none is read", spec.target));
  const std::string target = !spec.read_target     ? std::string()
                             : spec.target.empty() ? default_target(store, pb->workload, proxy)
                                                   : spec.target;
  if (!target.empty()) {
    if (!store.has<traces::RelationSet>(target))
      throw Error(
          fmt::format("{} has no relation '{}' (relations: {})", store.path().string(), target, join(relations)));
    pb->target_set = store.read<traces::RelationSet>(target);
    traces::check_workload_match(paired, pb->workload, *pb->target_set, spec.allow_workload_mismatch);
  }

  if (!pb->space) {  // a model: evaluate it on the device's grid
    const traces::KnobKind kind = pb->model->knob().kind;
    if (kind != traces::KnobKind::gpu_freq && kind != traces::KnobKind::power_mode)
      throw Error(
          fmt::format("model '{}' has a {} knob: only GPU-frequency and power-mode models have a catalog grid; "
                      "use a profile",
                      spec.model, kind));
    traces::DeviceSpec device;
    if (!spec.device.empty())
      device = traces::find_device(spec.device);
    else if (store.has_device())
      device = store.read_device();
    else
      throw OptionError("device", "name the device whose frequency table or power modes the model is evaluated on");
    Space::Grid grid;
    if (kind == traces::KnobKind::power_mode) {
      grid.knob_settings = traces::mode_settings(device);  // every nvpmodel mode of the board
      if (!(traces::power_mode_knob(device) == pb->model->knob()))
        throw Error(fmt::format("model '{}' has a {}-dimensional power-mode knob but {}'s modes have {}", spec.model,
                                pb->model->knob().dims.size(), device.name,
                                traces::power_mode_knob(device).dims.size()));
    } else {
      for (double f : device.gpu_freqs_hz) grid.knob_settings.push_back({f});
    }
    grid.batch_sizes = spec.batch_sizes.empty() ? pb->proxy_set.batch_sizes() : spec.batch_sizes;
    if (grid.batch_sizes.empty()) throw OptionError("batch-sizes", "the relation has no batch sizes; give them");
    pb->space = std::make_unique<Space>(Space::from_model(
        *pb->model, grid, fmt::format("model {} on {}", spec.model, device.name), model_power_samples));
    if (spec.basis && *spec.basis != pb->space->basis())
      throw Error(fmt::format("model '{}' does not predict {} power", spec.model, to_string(*spec.basis)));
  }
  pb->origin = measured_wins(store, pb->profile_name, !spec.model.empty(), pb->workload, pb_device, *pb->space);
  // A predicted table's points are its model's (the one measured_wins names): select states that
  // model's uncertainty and warns where a predicted choice lies within 1 sigma of the cap, as with --model.
  if (!pb->model_uncertainty && pb->origin.basis != PointBasis::Measured && !pb->origin.model.empty())
    pb->model_uncertainty = models::read_uncertainty(store.read<traces::ModelRecord>(pb->origin.model));
  pb->index = std::make_unique<Index>(*pb->space, spec.index);
  pb->device = pb_device;
  pb->device_cap = device_wide_cap(store, pb_device, *pb->space);
  pb->proxy = proxy_relation(pb->proxy_set, *pb->space, pb->proxy_looser_set ? &*pb->proxy_looser_set : nullptr,
                             pb->target_set ? &*pb->target_set : nullptr);
  if (pb->target_set) pb->target = Relation::from_set(*pb->target_set, *pb->space);
  return pb;
}

std::vector<std::unique_ptr<Problem>> load_problems(const traces::Store& store, const ProblemSpec& spec) {
  std::vector<std::string> names;
  if (!spec.model.empty())
    names = {spec.model};
  else if (spec.profile.empty())
    names = store.list<traces::ProfileTable>();
  else
    names = {spec.profile};
  if (names.empty())
    throw Error(
        fmt::format("{} has no profile to sweep: run pacer profile or pacer import first", store.path().string()));
  if (names.size() > 1 && (!spec.relation.empty() || !spec.target.empty()))
    throw UsageError(
        "a named proxy or target relation needs one profile: with several profiles each workload uses "
        "its own <workload>.proxy and <workload>.target");
  std::vector<std::unique_ptr<Problem>> problems;
  for (const auto& n : names) {
    auto s = spec;
    if (spec.model.empty()) s.profile = n;
    problems.push_back(load_problem(store, s));
  }
  return problems;
}

std::map<int, double> samples_to_target(const Problem& pb, std::optional<int> seed) {
  const traces::RelationSet& rel = pb.target_set ? *pb.target_set : pb.proxy_set;
  std::map<int, double> out;
  for (int b : pb.space->batch_sizes()) {
    double n = traces::kNaN;
    if (!seed)
      n = rel.mean_samples(b);
    else
      for (const auto& r : rel.runs)
        if (r.batch_size == b && r.seed == *seed && r.reached) n = static_cast<double>(r.samples);
    if (!std::isnan(n)) out[b] = n;
  }
  if (out.empty())
    throw Error(fmt::format("relation '{}' has no reached run for seed '{}' at any batch size of the space", rel.name,
                            seed ? std::to_string(*seed) : std::string("mean")));
  return out;
}

std::vector<double> parse_knob(const std::string& text, const traces::KnobSpace& knob, const std::string& option) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t slash = text.find('/', start);
    parts.push_back(text.substr(start, slash == std::string::npos ? std::string::npos : slash - start));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  if (parts.size() != knob.dims.size()) {
    std::string dims;
    for (const auto& d : knob.dims) dims += (dims.empty() ? "" : "/") + d.name;
    throw UsageError(fmt::format("{}: '{}' has {} values; this {} knob needs {} ({})", option, text, parts.size(),
                                 knob.kind, knob.dims.size(), dims));
  }
  std::vector<double> out;
  for (size_t i = 0; i < parts.size(); ++i) {
    const auto& unit = knob.dims[i].unit;
    if (unit == "Hz")
      out.push_back(units::parse(parts[i], units::Dimension::Frequency, "MHz", option));
    else if (unit == "W")
      out.push_back(units::parse(parts[i], units::Dimension::Power, "W", option));
    else {
      const auto v = units::to_number(parts[i]);
      if (!v) throw UsageError(fmt::format("{}: '{}' is not a number", option, parts[i]));
      out.push_back(*v);
    }
  }
  return out;
}

size_t match_knob(const Space& space, const std::vector<double>& knob, const std::string& option) {
  for (size_t ki = 0; ki < space.num_knobs(); ++ki) {
    const auto& k = space.knob_settings()[ki];
    bool eq = k.size() == knob.size();
    for (size_t d = 0; eq && d < k.size(); ++d) eq = std::abs(k[d] - knob[d]) <= 1e-6 * std::max(1.0, std::abs(k[d]));
    if (eq) return ki;
  }
  std::string have;
  for (size_t ki = 0; ki < space.num_knobs() && ki < 20; ++ki)
    have += (have.empty() ? "" : ", ") + space.describe_knob(space.knob_settings()[ki]);
  if (space.num_knobs() > 20) have += ", ...";
  throw UsageError(
      fmt::format("{}: {} is not a setting of this space (settings: {})", option, space.describe_knob(knob), have));
}

}  // namespace pacer::explore
