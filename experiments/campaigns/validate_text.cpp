// The text of a validation: its table and its verdict (what `pacer validate` and the demo print).
#include <fmt/format.h>

#include <cmath>
#include <map>

#include "base/stats.hpp"
#include "experiments/campaigns/validate.hpp"
#include "explore/policy.hpp"
#include "traces/emulated_label.hpp"

namespace pacer::experiments {

using explore::Policy;

std::string format_validation_table(const ValidateReport& report) {
  const traces::ValidationResult& v = report.result;
  std::string out = fmt::format("validation {} of {} on {}{} ({} >= {:.3f}; times are {}):\n", v.name, v.workload,
                                v.device, traces::emulated_mark(v.emulated), v.metric, v.target,
                                v.emulated ? "the emulated device's virtual time" : "measured device time");
  out +=
      fmt::format("{:>7} {:<23} {:<22} {:>16} {:>11} {:>8} {:>8} {:>10} {:>8} {:>6}\n", "cap", "policy",
                  "configuration", "measured [s]", "predicted", "error", "regret", "energy [J]", "peak [W]", "> cap");
  // A figure that was not measured (every run censored, no oracle time) is "-", never 0.
  const auto pct = [](double v) { return std::isfinite(v) ? fmt::format("{:.1f}%", v) : std::string("-"); };
  int censored = 0;
  for (const auto& s : report.summary) {
    if (s.config == "infeasible") {
      out += fmt::format("{:>6.2f}W {:<23} {:<22}\n", s.cap_w, explore::policy_label(s.policy), "infeasible");
      continue;
    }
    censored += s.runs - s.reached - s.stopped;
    const std::string measured = s.reached > 0 ? fmt::format("{:>9.1f} ± {:<4.1f}", s.measured_mean_s, s.measured_std_s)
                                               : fmt::format("{} of {} reached", s.reached, s.runs);
    out += fmt::format("{:>6.2f}W {:<23} {:<22} {:>16} {:>11.1f} {:>8} {:>8} {:>10} {:>8.2f} {:>6}\n", s.cap_w,
                       explore::policy_label(s.policy), s.config, measured, s.predicted_s, pct(s.error_pct),
                       pct(s.regret_pct),
                       std::isfinite(s.energy_j) ? fmt::format("{:.0f}", s.energy_j) : std::string("-"), s.peak_w,
                       s.stopped        ? "STOP"
                       : s.cap_exceeded ? "yes"
                                        : "no");
  }
  if (censored > 0)
    out += fmt::format(
        "censored: {} run(s) missed the target within the budget of {} samples; their times are left out of the "
        "means (raise the budget to measure them)\n",
        censored, report.budget_samples);
  if (report.watchdog_stops > 0)
    out += fmt::format(
        "power watchdog: {} run(s) stopped (STOP above; a row's status in the store says when and how "
        "high); their times are left out of the means\n",
        report.watchdog_stops);
  if (report.probes > 0)
    out += fmt::format("probe before commit: {} chosen configuration(s) the store had not measured were profiled on "
                       "the device first (added to its measured profile)\n",
                       report.probes);
  for (const auto& r : report.replaced) out += "replaced: " + r + "\n";
  return out;
}

std::string format_verdict(const ValidateReport& report) {
  std::string out;
  if (report.summary.empty()) return out;  // a stage or a shard: nothing to judge yet
  std::map<double, std::map<std::string, const ValidationSummaryRow*>> by_cap;
  for (const auto& s : report.summary) by_cap[s.cap_w][s.policy] = &s;
  std::vector<double> errors;
  for (const auto& [cap, m] : by_cap) {
    const auto row_of = [&](Policy p) {
      const auto it = m.find(std::string(to_string(p)));
      return it == m.end() ? nullptr : it->second;
    };
    // A policy's row with a measured time, else null.
    const auto get = [&](Policy p) -> const ValidationSummaryRow* {
      const auto* row = row_of(p);
      return row && row->measured_mean_s > 0 ? row : nullptr;
    };
    const auto* ours = get(Policy::Ours);
    std::string line = fmt::format("  cap {:g} W:", cap);
    if (!ours && row_of(Policy::Ours)) {
      const ValidationSummaryRow& o = *row_of(Policy::Ours);
      if (o.config == "infeasible")
        out += line + " Ours found no feasible configuration\n";
      else if (o.stopped > 0)
        out += line + " every run of Ours was stopped by the power watchdog: the model underestimates power here\n";
      else
        out += line + fmt::format(
                          " none of the {} runs of Ours reached the target within the budget of {} samples: "
                          "raise the budget (or lower the target) to compare it\n",
                          o.runs, report.budget_samples);
      continue;
    }
    if (!ours) {
      out += line + " Ours was not among the validated policies\n";
      continue;
    }
    if (const auto* b1 = get(Policy::Baseline1))
      line += fmt::format(" Ours {:.2f}x faster than Baseline 1;", b1->measured_mean_s / ours->measured_mean_s);
    if (const auto* b2 = get(Policy::Baseline2))
      line += fmt::format(" {:.2f}x vs Baseline 2;", b2->measured_mean_s / ours->measured_mean_s);
    if (get(Policy::Oracle)) line += fmt::format(" regret vs oracle {:.1f}%;", ours->regret_pct);
    line += fmt::format(" prediction error {:+.1f}%{}", ours->error_pct,
                        ours->stopped        ? fmt::format("; {} run(s) stopped by the power watchdog", ours->stopped)
                        : ours->cap_exceeded ? "; cap EXCEEDED on the trace"
                                             : "; cap held");
    errors.push_back(std::fabs(ours->error_pct));
    out += line + "\n";
  }
  if (!errors.empty()) out += fmt::format("  mean |prediction error| of Ours: {:.1f}%\n", base::mean(errors));
  return out;
}

}  // namespace pacer::experiments
