#include "explore/simulate.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <memory>
#include <vector>

#include "base/error.hpp"
#include "base/units.hpp"
#include "explore/choose.hpp"

namespace pacer::explore {
namespace {

std::string secs(double s) {
  return std::isnan(s) ? "-" : units::format(s, units::Dimension::Time);
}
std::string watts(double w) {
  return std::isnan(w) ? "none" : units::format(w, units::Dimension::Power);
}

}  // namespace

Simulation simulate(const Problem& pb, const SimulateRequest& req) {
  const Space& space = *pb.space;
  Simulation out;
  out.relation = (pb.target_set ? *pb.target_set : pb.proxy_set).name;
  sim::RunInput in;
  in.samples_to_target = samples_to_target(pb, req.seed);
  in.knob_settings = space.knob_settings();
  in.caps = req.caps;
  if (req.knob) {
    const size_t ki = match_knob(space, *req.knob, "the fixed knob setting");
    const auto bi = space.batch_index(req.batch_size);
    if (!bi || !space.has(*bi, ki)) {
      std::vector<int> there;  // the batch sizes the space has at this setting
      for (size_t b = 0; b < space.num_batches(); ++b)
        if (space.has(b, ki)) there.push_back(space.batch_sizes()[b]);
      throw UsageError(fmt::format("the fixed batch size b={} is not in the space at {}: give one of b={}",
                                   req.batch_size, space.describe_knob(space.knob_settings()[ki]),
                                   fmt::join(there, ",")));
    }
    const sim::Choice c{space.knob_settings()[ki], req.batch_size};
    in.select = [c](double) { return std::optional<sim::Choice>(c); };
    out.what = fmt::format("fixed configuration {}, b={}", space.describe_knob(c.knob), req.batch_size);
  } else {
    if (in.caps.empty())
      throw UsageError("a policy needs a cap (a constant cap or a cap schedule), or give a fixed configuration");
    PolicyContext ctx = pb.context();
    ctx.powertrain_batch = req.powertrain_batch;
    const Policy policy = req.policy;
    const ChoiceRule rule = choice_rule(pb, req.guard);
    out.rule = rule;
    // The first selection starts the run: when the policy has nothing, its own reason (a cap below
    // every configuration, no target relation for the oracle, ...) is the error. At a later cap
    // change nothing feasible means the governor throttles.
    auto first = std::make_shared<bool>(true);
    in.select = [ctx, policy, rule, first](double cap) -> std::optional<sim::Choice> {
      const auto s = decide(policy, ctx, cap, rule);
      const bool starting = *first;
      *first = false;
      if (!s.feasible && starting) throw Error(fmt::format("policy {}: {}", to_string(policy), s.message));
      if (!s.feasible) return std::nullopt;
      return sim::Choice{s.knob, s.batch_size};
    };
    out.what = fmt::format("policy {} re-selecting at every cap change under cap x (1 - {:g})", to_string(policy),
                           rule.guard);
    if (policy == Policy::ZeusCost) out.what += " (" + describe_max_power(*pb.index) + ")";
  }
  out.capped = !in.caps.empty();
  out.result = sim::run(*pb.model, in, req.run);
  return out;
}

std::string format_simulation(const Problem& pb, const SimulateRequest& req, const Simulation& sim) {
  const Space& space = *pb.space;
  const sim::RunResult& r = sim.result;
  const sim::RunOptions& o = req.run;
  std::string out =
      fmt::format("simulated {} on {} ({} power) to the target of relation {} ({} seed)\n", sim.what, space.source(),
                  to_string(space.basis()), sim.relation, req.seed ? std::to_string(*req.seed) : std::string("mean"));
  if (sim.rule) out += "feasibility: " + describe_feasibility(*sim.rule) + "\n";
  out += fmt::format("time to accuracy {} | energy {} (sampled at {}: {}) | {} mini-batches\n", secs(r.time_s),
                     units::format(r.energy_j, units::Dimension::Energy),
                     secs(r.series.time_s.size() > 1 ? r.series.time_s[1] - r.series.time_s[0] : o.sample_period_s),
                     units::format(r.energy_sampled_j, units::Dimension::Energy), r.batches);
  out += fmt::format(
      "power: max true {} | max measured {} (noise {}) | governor {} | throttled batches {} | time above the cap {}\n",
      watts(r.max_true_power_w), watts(r.max_measured_power_w), watts(o.noise_std_w), o.governor ? "on" : "off",
      r.throttled_batches, secs(r.time_over_cap_s));
  out += fmt::format("\n{:>10} {:>10} {:>10} {:>16} {:>7} {:>9} {:>10}\n", "start", "end", "cap", "requested", "b",
                     "batches", "progress");
  for (const auto& s : r.segments)
    out += fmt::format("{:>10} {:>10} {:>10} {:>16} {:>7} {:>9} {:>9.1f}%\n", secs(s.start_s), secs(s.end_s),
                       units::format_cap(s.cap_w), space.describe_knob(s.requested.knob), s.requested.batch_size, s.batches,
                       100 * (s.progress_end - s.progress_start));
  if (sim.capped)
    out += r.time_over_cap_s > 0 ? "CAP EXCEEDED: the true power was above the cap (the lowest setting does not fit)\n"
                                 : "never above P_max on the (noise-free) power trace\n";
  return out;
}

}  // namespace pacer::explore
