#include "explore/choose.hpp"

#include <fmt/format.h>

#include <cmath>

#include "base/error.hpp"
#include "base/json.hpp"
#include "base/stats.hpp"
#include "base/units.hpp"
#include "traces/json_rows.hpp"

namespace pacer::explore {
namespace {

std::string secs(double s) {
  return std::isnan(s) ? "-" : units::format(s, units::Dimension::Time);
}
std::string joules(double j) {
  return std::isnan(j) ? "-" : units::format(j, units::Dimension::Energy);
}
std::string watts(double w) {
  return std::isnan(w) ? "-" : units::format(w, units::Dimension::Power);
}

// Whether selection `s` stands on a predicted point (not a measured one: measured wins).
bool predicted_point(const Problem& pb, const Selection& s) {
  return s.feasible && (pb.origin.basis == PointBasis::Model ||
                        (pb.origin.basis == PointBasis::Mixed && !pb.space->overlaid(s.batch_index, s.knob_index)));
}

// The calibrated model's 1 sigma of a predicted choice's power (W); NaN: measured, or no model uncertainty.
double power_sigma_w(const Problem& pb, const Selection& s) {
  if (!pb.model_uncertainty || !predicted_point(pb, s)) return traces::kNaN;
  const auto& u = *pb.model_uncertainty;
  const bool peak = pb.space->basis() == PowerBasis::Peak && std::isfinite(u.power_peak_rel);
  return (peak ? u.power_peak_rel : u.power_mean_rel) * s.power_w;
}

// Whether a predicted choice's power lies within its 1 sigma of the cap (a measured run may exceed it).
bool within_sigma_of_cap(const Problem& pb, const Selection& s, double cap_w) {
  const double sigma = power_sigma_w(pb, s);
  return std::isfinite(sigma) && s.power_w + sigma > cap_w;
}

// The calibrated model's 1 sigma on the choice's figures (models/uncertainty.hpp), and a note when
// the choice's power is predicted and lies within it of the cap.
std::string uncertainty_lines(const Problem& pb, const models::ModelUncertainty& u, PowerBasis basis,
                              const Selection& choice, double cap_w) {
  const bool peak = basis == PowerBasis::Peak && std::isfinite(u.power_peak_rel);
  const double power_rel = peak ? u.power_peak_rel : u.power_mean_rel;
  const double spread_rel = peak ? u.floor.power_peak_rel : u.floor.power_mean_rel;
  if (!std::isfinite(power_rel) || !std::isfinite(u.time_rel)) return "";
  std::string out = fmt::format("model uncertainty (1 sigma{}): time per mini-batch ±{:.1f}%, power ±{}",
                                u.basis.empty() ? "" : ", " + u.basis + " error", 100 * u.time_rel,
                                watts(power_rel * choice.power_w));
  if (std::isfinite(spread_rel))
    out += fmt::format(" (±{} of it measurement spread{})", watts(spread_rel * choice.power_w),
                       u.floating_clocks.empty() ? "" : "; clocks that floated: " + u.floating_clocks);
  out += "\n";
  if (within_sigma_of_cap(pb, choice, cap_w))
    out += fmt::format(
        "note: its predicted power is within 1 sigma of the cap ({} + {} > {}): a measured run may exceed it\n",
        watts(choice.power_w), watts(power_sigma_w(pb, choice)), watts(cap_w));
  else if (!predicted_point(pb, choice))
    out += "(the choice's power is measured: the model's power error does not apply to it)\n";
  return out;
}

// A row's time to accuracy predicted from the proxy relation: the policy's own prediction, except
// the oracle's (made with the target's relation), re-predicted with the proxy's means.
double proxy_time_s(const Problem& pb, const Selection& s) {
  if (!s.feasible || s.policy != Policy::Oracle) return s.predicted_time_s;
  if (!pb.proxy.has(s.batch_index)) return traces::kNaN;
  return base::time_to_accuracy_s(pb.space->time_per_batch_s(s.batch_index, s.knob_index),
                                  pb.proxy.samples_by_batch[s.batch_index], s.batch_size);
}

std::string relative(double x, double ref) {
  return std::isnan(x) || !(ref > 0) ? "-" : fmt::format("{:+.1f}%", 100 * (x / ref - 1));
}

// The choice's 90 % interval of the target's time to accuracy, widened by the calibrated model's
// time-per-batch error (1 sigma, independent in log) where the space comes from a model.
std::string interval_line(const Problem& pb, const Selection& choice) {
  double lo = choice.predicted_time_lo_s, hi = choice.predicted_time_hi_s;
  const double transfer = pb.proxy.transfer_log_sd;
  std::string parts = fmt::format(
      "the proxy mean's uncertainty and the seeds' spread, x{:g} as calibrated on held-back Zeus runs; {}",
      kIntervalInflation,
      transfer > 0 ? fmt::format("the proxy->target transfer, a target data set learning faster or slower than the "
                                 "proxy: {:.0f}% (1 sd, from the shipped proxy/target pairs; docs/explore.md)",
                                 100 * std::expm1(transfer))
                   : std::string("no transfer term: the target is runs of the proxy's own data set"));
  const double t = pb.model_uncertainty ? pb.model_uncertainty->time_rel : traces::kNaN;
  if (std::isfinite(t) && t > 0 && lo > 0 && hi > lo) {
    const double centre = std::sqrt(lo * hi), half = std::log(hi / lo) / 2, add = kInterval90Z * std::log1p(t);
    const double wide = std::sqrt(half * half + add * add);
    lo = centre * std::exp(-wide);
    hi = centre * std::exp(wide);
    parts += fmt::format(", the model's time-per-batch error ±{:.1f}%", 100 * t);
  }
  return fmt::format(
      "90% interval of the target's TT_acc at this configuration (its mean over as many seeds as the "
      "proxy has at b={}{}): {} - {}\n  (from {})\n",
      choice.batch_size, transfer > 0 ? ", on another data set than the proxy's" : "", secs(lo), secs(hi), parts);
}

}  // namespace

ChoiceReport choose(const Problem& pb, const PolicyContext& ctx, Policy policy, double cap_w, const ChoiceRule& rule) {
  ChoiceReport r;
  r.policy = policy;
  r.cap_w = cap_w;
  r.rule = rule;
  r.choice = decide(policy, ctx, cap_w, rule, &r.ranked);
  if (!r.choice.feasible) throw Error(fmt::format("policy {}: {}", to_string(policy), r.choice.message));
  const Space& space = *pb.space;
  for (Policy p : all_policies()) {
    PolicyChoice c;
    c.selection = decide(p, ctx, cap_w, rule);
    const auto& s = c.selection;
    if (s.feasible && pb.target && pb.target->has(s.batch_index))
      c.target_time_s = base::time_to_accuracy_s(space.time_per_batch_s(s.batch_index, s.knob_index),
                                                 pb.target->samples_by_batch[s.batch_index], s.batch_size);
    r.others.push_back(std::move(c));
  }
  return r;
}

std::string describe_max_power(const Index& index) {
  return fmt::format("Zeus cost MAXPOWER {} ({})", watts(index.max_power_w()), index.max_power_source());
}

std::string format_choice(const Problem& pb, const ChoiceReport& r) {
  const Space& space = *pb.space;
  const Selection& choice = r.choice;
  std::string out =
      fmt::format("workload {}: {} | {} configurations ({} knob settings x {} batch sizes)\n", pb.workload,
                  space.source(), space.num_knobs() * space.num_batches(), space.num_knobs(), space.num_batches());
  out += fmt::format("feasibility: {} | proxy relation {}{} | {}\n",
                     std::isinf(r.cap_w) ? std::string("no cap")
                                         : fmt::format("{} power <= {} x (1 - {:g}) = {} ({} points; guard: {})",
                                                       to_string(space.basis()), watts(r.cap_w), r.rule.guard,
                                                       watts(guarded_cap_w(r.cap_w, r.rule.guard)),
                                                       to_string(r.rule.points), r.rule.guard_source),
                     pb.proxy_set.name, pb.target_set ? " | target " + pb.target_set->name : " | no target (no oracle)",
                     describe_max_power(*pb.index));
  out += fmt::format("\nchoice ({}, {}): {}, b={}: predicted TT_acc (proxy) {}, energy {}, power {}\n",
                     to_string(r.policy), choice.method, space.describe_knob(choice.knob), choice.batch_size,
                     secs(choice.predicted_time_s), joules(choice.predicted_energy_j), watts(choice.power_w));
  if (!choice.message.empty()) out += "note: " + choice.message + "\n";
  if (!std::isnan(choice.predicted_time_lo_s)) out += interval_line(pb, choice);
  if (pb.model_uncertainty) out += uncertainty_lines(pb, *pb.model_uncertainty, space.basis(), choice, r.cap_w);
  if (r.ranked.size() > 1) {
    const auto& s = r.ranked[1];
    out += fmt::format("runner-up: {}, b={}: predicted TT_acc {} ({:+.1f}%), energy {}\n", space.describe_knob(s.knob),
                       s.batch_size, secs(s.predicted_time_s), 100 * (s.predicted_time_s / choice.predicted_time_s - 1),
                       joules(s.predicted_energy_j));
  } else {
    out += "runner-up: none (one feasible batch size under this policy)\n";
  }
  // Proxy and target times in their own columns, each against the choice's time of the same kind.
  double choice_target = traces::kNaN;
  for (const auto& c : r.others)
    if (c.selection.policy == r.policy) choice_target = c.target_time_s;
  out += fmt::format("\n{:<12} {:>16} {:>7} {:>12} {:>12} {:>12} {:>12} {:>12}\n", "policy", "knob", "b", "proxy TT",
                     "proxy vs", "energy", "target TT", "target vs");
  for (const auto& c : r.others) {
    const auto& s = c.selection;
    if (!s.feasible) {
      out += fmt::format("{:<12} infeasible: {}\n", to_string(s.policy), s.message);
      continue;
    }
    const double proxy_t = proxy_time_s(pb, s);
    const double energy =
        s.policy == Policy::Oracle ? space.energy_power_w(s.batch_index, s.knob_index) * proxy_t : s.predicted_energy_j;
    out += fmt::format("{:<12} {:>16} {:>7} {:>12} {:>12} {:>12} {:>12} {:>12}\n", to_string(s.policy),
                       space.describe_knob(s.knob), s.batch_size, secs(proxy_t),
                       relative(proxy_t, choice.predicted_time_s), joules(energy), secs(c.target_time_s),
                       relative(c.target_time_s, choice_target));
  }
  out +=
      "(proxy TT: predicted from the proxy relation (pacer: its expected samples; the oracle's configuration with "
      "the proxy's means), energy with it; target TT: the same configuration with the target relation; each 'vs' "
      "column against the choice's time of its own kind)\n";
  return out;
}

std::string choice_json(const Problem& pb, const ChoiceReport& r) {
  const traces::KnobSpace& knob = pb.space->knob();
  std::string out;
  for (const PolicyChoice& c : r.others) {
    const Selection& s = c.selection;
    base::JsonObject o;
    o.add("workload", pb.workload).add("cap_w", r.cap_w).add("policy", to_string(s.policy));
    o.add("guard", r.rule.guard).add("feasibility", describe_feasibility(r.rule));
    o.add("chosen", s.policy == r.policy).add("feasible", s.feasible);
    for (size_t i = 0; i < knob.dims.size(); ++i)
      o.add(traces::json_key(knob.dims[i].name, knob.dims[i].unit),
            s.feasible && i < s.knob.size() ? s.knob[i] : traces::kNaN);
    o.add("batch_size", s.feasible ? s.batch_size : 0);
    o.add(traces::json_key("power", "W"), s.power_w);
    // a predicted choice's 1 sigma (null: measured, or no model uncertainty) and whether it reaches the cap
    o.add(traces::json_key("power_sigma", "W"), power_sigma_w(pb, s));
    o.add("within_1_sigma_of_cap", within_sigma_of_cap(pb, s, r.cap_w));
    o.add(traces::json_key("predicted_time", "s"), proxy_time_s(pb, s));  // from the proxy, the oracle's too
    o.add(traces::json_key("predicted_energy", "J"), s.predicted_energy_j);
    // 90 % interval of the target's time at the configuration (pacer; before the model's time error)
    o.add(traces::json_key("target_time_lo", "s"), s.predicted_time_lo_s);
    o.add(traces::json_key("target_time_hi", "s"), s.predicted_time_hi_s);
    o.add(traces::json_key("target_time", "s"), c.target_time_s);
    o.add("method", s.method).add("message", s.message);
    out += o.str() + "\n";
  }
  return out;
}

}  // namespace pacer::explore
