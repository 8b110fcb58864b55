#include "experiments/validate.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <set>

#include "experiments/campaign.hpp"
#include "experiments/tables.hpp"
#include "explore/policy.hpp"
#include "explore/problem.hpp"
#include "explore/space.hpp"
#include "explore/sweep.hpp"
#include "hw/sampler.hpp"
#include "traces/error.hpp"
#include "traces/stats.hpp"
#include "traces/store.hpp"

namespace pacer::experiments {
namespace {

using Clock = std::chrono::steady_clock;

struct Config {
  std::vector<double> knob;
  int batch_size = 0;
  bool operator<(const Config& o) const { return std::tie(batch_size, knob) < std::tie(o.batch_size, o.knob); }
};

// What one (configuration, seed) run measured.
struct RunResult {
  bool reached = false;
  int64_t samples = 0;
  double device_time_s = traces::kNaN;
  double wall_time_s = traces::kNaN;
  double final_metric = traces::kNaN;
  traces::PowerSeries series;  // the power samples, device time since the start of training
  std::string status;          // "stopped: ..." when the watchdog stopped the run
};

// The power watchdog of a run (hw::PowerWatchdog) and the cap it guards; once it tripped, the
// message says when and how high.
struct Watchdog {
  double cap_w = 0, margin_w = 0;
  hw::PowerWatchdog w;
  std::string message;
  bool tripped() const { return !message.empty(); }
  void observe(double t_s, double total_w) {
    if (w.observe(t_s, total_w)) record(w.trip());
  }
  void record(const hw::WatchdogTrip& trip) {
    message = fmt::format(
        "stopped: power watchdog at t={:.2f} s: mean power {:.2f} W over the last {:g} s above "
        "the cap {:g} W + {:g} W margin; the GPU clock was restored",
        trip.at_s, trip.mean_w, w.window_s(), cap_w, margin_w);
  }
};

std::string config_text(const explore::Space& space, const Config& c) {
  return fmt::format("b={}, {}", c.batch_size, space.describe_knob(c.knob));
}

std::string pick_record(const traces::Store& store, const std::string& group, const std::string& wanted,
                        const std::string& what, const std::string& option) {
  if (!wanted.empty()) return wanted;
  std::vector<std::string> names;
  for (const auto& n : store.list(group))
    if (group != "relations" || !traces::is_true_relation(n)) names.push_back(n);
  if (names.size() == 1) return names.front();
  throw OptionError(option, fmt::format("{} holds {} {} records; name one", store.path().string(),
                                        names.empty() ? "no" : "several",
                                        names.empty() ? std::string("") : std::to_string(names.size()), what));
}

// Samples an emulated board on its sensor grid up to its current virtual time; the accumulator
// feeds the run's power watchdog.
struct BoardSampler {
  hw::EmulatedJetson* board;
  int batch_size;
  double start_s;
  double period_s;
  double next_s;
  hw::PowerAccumulator power;
  Watchdog watchdog;
  std::vector<double> freq_hz;
  int64_t samples_at_stop = 0;
  void catch_up() {
    while (next_s <= board->now_s() + 1e-12 && !watchdog.tripped()) {
      power.add(next_s - start_s, board->power_at(next_s));
      freq_hz.push_back(board->effective_freq_hz(batch_size));
      if (power.watchdog().tripped()) watchdog.record(power.watchdog().trip());
      next_s += period_s;
    }
  }
  traces::PowerSeries series() const {
    traces::PowerSeries s = power.series();
    s.freq_hz = freq_hz;
    s.emulated = true;
    return s;
  }
};

// The problem as the policies see it, and what validate needs beside it.
struct Setup {
  std::unique_ptr<explore::Problem> problem;  // profile, proxy relation, space, index
  std::unique_ptr<explore::DeviceWideCap> device_cap;
  models::data::DatasetInfo info;
  models::TrainOptions train;
};

Setup load_setup(const ValidateOptions& opt) {
  if (opt.caps_w.empty()) throw OptionError("power-limits", "give at least one cap");
  if (opt.seeds.empty()) throw OptionError("seeds", "give at least one seed");
  for (double cap : opt.caps_w)
    if (cap <= 0 || !std::isfinite(cap)) throw OptionError("power-limits", fmt::format("{:g} W is not a cap", cap));
  if (!(opt.guard >= 0 && opt.guard < 0.5))
    throw OptionError("guard", fmt::format("{:g} is not a fraction in [0, 0.5)", opt.guard));
  if (!(opt.watchdog_margin_w >= 0) || !(opt.watchdog_duration_s >= 0))
    throw OptionError("watchdog-margin", "the watchdog margin and time must be >= 0");
  Setup su;
  const traces::Store store = traces::Store::open(opt.store);
  explore::ProblemSpec spec;
  spec.profile = pick_record(store, "profiles", opt.profile, "profile", "profile");
  spec.relation = pick_record(store, "relations", opt.proxy, "relation", "proxy");
  su.problem = explore::load_problem(store, spec);
  su.problem->target.reset();
  su.problem->target_set.reset();
  const explore::Space& space = *su.problem->space;
  if (space.knob().kind != "gpu_freq")
    throw Error(
        fmt::format("profile '{}' has knob '{}': validate pins GPU frequencies", spec.profile, space.knob().kind));
  su.device_cap = std::make_unique<explore::DeviceWideCap>(std::vector<const explore::Space*>{&space});
  su.info = models::data::dataset_info(opt.target_dataset);
  su.train = opt.train;
  if (su.train.workload.empty()) su.train.workload = su.problem->workload;
  if (su.train.init_checkpoint == "default") {
    su.train.init_checkpoint = default_checkpoint(su.train.workload);
    if (!std::filesystem::exists(su.train.init_checkpoint))
      throw MissingCheckpoint(su.train.init_checkpoint, su.train.workload,
                              fmt::format("checkpoint {} not found: pre-train {} to create it, or name another "
                                          "checkpoint, or none to train from scratch",
                                          su.train.init_checkpoint, su.train.workload));
  }
  if (std::isnan(su.train.target)) su.train.target = su.info.default_target;
  su.train.base_batch = space.batch_sizes().back();
  return su;
}

// The oracle's true relation: the target trained at every batch size.
CampaignReport train_target(const ValidateOptions& opt, const Setup& su, const models::data::DataSplit& data) {
  RelationCampaign campaign;
  campaign.name = traces::true_relation_name(record_name(opt.target_dataset));
  campaign.dataset = opt.target_dataset;
  campaign.metric = su.info.metric;
  campaign.train = su.train;
  campaign.batch_sizes = su.problem->space->batch_sizes();
  campaign.seeds = opt.seeds;
  campaign.store = opt.store;
  spdlog::info("oracle: training {} on {} at every batch size ({} x {} runs)", su.train.workload, opt.target_dataset,
               campaign.batch_sizes.size(), campaign.seeds.size());
  return run_relation_campaign(campaign, data);
}

struct Choice {
  double cap_w;
  std::string policy;
  explore::Selection selection;
};

// Every policy's choice at every cap, under cap x (1 - guard).
std::vector<Choice> choose_all(const ValidateOptions& opt, const Setup& su, const explore::Relation& target) {
  std::vector<Choice> choices;
  for (double cap : opt.caps_w)
    for (const auto& pname : opt.policies) {
      const auto policy = explore::policy_from_string(pname);
      if (!policy)
        throw OptionError("policies", fmt::format("unknown policy '{}' ({})", pname, explore::policy_names()));
      explore::PolicyContext ctx = su.problem->context();
      ctx.target = &target;
      ctx.device_cap = su.device_cap.get();
      auto sel = explore::select(*policy, ctx, explore::guarded_cap_w(cap, opt.guard));
      if (!sel.feasible) spdlog::warn("cap {:g} W, {}: {}", cap, pname, sel.message);
      choices.push_back({cap, pname, sel});
    }
  return choices;
}

// What the runs share: the configurations to run, the cap each one's watchdog guards (the lowest
// it was chosen for), the data, the training options and the space for messages.
struct RunPlan {
  const ValidateOptions* opt;
  const explore::Space* space;
  std::set<Config> configs;
  std::map<Config, double> config_cap;
  const models::data::DataSplit* data;
  models::TrainOptions train;
  hw::DeviceRequest request;
  Watchdog watchdog_for(const Config& c) const {
    Watchdog w;
    w.cap_w = config_cap.at(c);
    w.margin_w = opt->watchdog_margin_w;
    w.w = hw::PowerWatchdog(w.cap_w + w.margin_w, opt->watchdog_duration_s);
    return w;
  }
};

using Runs = std::map<std::pair<Config, int>, RunResult>;

// On the emulated device: one real training run at (b, seed) drives one emulated board per
// configuration chosen at that b.
void run_emulated(const RunPlan& plan, Runs& runs, ValidateReport& report) {
  const ValidateOptions& opt = *plan.opt;
  const double period_s = 1.0 / opt.sensor_rate_hz;
  std::set<int> batch_sizes;
  for (const auto& c : plan.configs) batch_sizes.insert(c.batch_size);
  for (int b : batch_sizes)
    for (int seed : opt.seeds) {
      std::vector<Config> here;
      for (const auto& c : plan.configs)
        if (c.batch_size == b) here.push_back(c);
      std::vector<hw::OpenedDevice> boards;
      std::vector<BoardSampler> samplers;
      for (size_t k = 0; k < here.size(); ++k) {
        hw::DeviceRequest r = plan.request;
        r.emulator.seed =
            plan.request.emulator.seed + 7919 * static_cast<uint64_t>(seed) + 104729 * k + static_cast<uint64_t>(b);
        boards.push_back(hw::open_device(r));
        boards.back().emulated->pin(here[k].knob);
      }
      for (size_t k = 0; k < boards.size(); ++k) {
        auto& bd = boards[k];
        Watchdog w = plan.watchdog_for(here[k]);
        samplers.push_back(BoardSampler{bd.emulated,
                                        b,
                                        bd.emulated->now_s(),
                                        period_s,
                                        bd.emulated->now_s(),
                                        hw::PowerAccumulator(0, w.w),
                                        w,
                                        {},
                                        0});
      }
      models::TrainOptions t = plan.train;
      t.batch_size = b;
      t.seed = seed;
      models::TrainHooks hooks;
      hooks.on_batch = [&](int64_t seen, int batch) {
        bool running = false;
        for (size_t k = 0; k < samplers.size(); ++k) {
          auto& s = samplers[k];
          if (s.watchdog.tripped()) continue;
          s.board->run_batch(batch);
          s.catch_up();
          if (s.watchdog.tripped()) {
            s.samples_at_stop = seen;
            boards[k].device->restore();
            spdlog::warn("validate: {} seed={}: {}", config_text(*plan.space, here[k]), seed, s.watchdog.message);
          } else {
            running = true;
          }
        }
        return running;  // every board stopped: so is the training
      };
      std::vector<std::string> knobs;
      for (const auto& c : here) knobs.push_back(plan.space->describe_knob(c.knob));
      spdlog::info("validate: b={} seed={} driving {} emulated board(s): {}", b, seed, here.size(),
                   fmt::join(knobs, ", "));
      const auto res = models::train_to_target(t, *plan.data, hooks);
      ++report.training_runs;
      for (size_t k = 0; k < here.size(); ++k) {
        RunResult rr;
        const bool stopped = samplers[k].watchdog.tripped();
        rr.reached = res.reached && !stopped;
        rr.samples = stopped ? samplers[k].samples_at_stop : res.samples;
        rr.wall_time_s = res.wall_time_s;
        rr.final_metric = stopped ? traces::kNaN : res.final_metric;
        rr.device_time_s = samplers[k].board->now_s() - samplers[k].start_s;
        rr.series = samplers[k].series();
        rr.status = samplers[k].watchdog.message;
        if (stopped) ++report.watchdog_stops;
        runs[{here[k], seed}] = std::move(rr);
      }
      for (auto& bd : boards) bd.device->restore();
    }
}

// On a real device: every (configuration, seed) is its own run, timed by the wall clock.
void run_real(const RunPlan& plan, hw::Device& device, Runs& runs, ValidateReport& report) {
  const ValidateOptions& opt = *plan.opt;
  for (const auto& c : plan.configs)
    for (int seed : opt.seeds) {
      device.pin(c.knob);
      Watchdog watchdog = plan.watchdog_for(c);
      hw::SamplerOptions so;
      so.rate_hz = opt.sensor_rate_hz;
      so.watchdog_w = watchdog.w.limit_w();
      so.watchdog_window_s = watchdog.w.window_s();
      hw::PowerSampler sampler(device.power_reader(), so);  // owns what it reads: a blocked read may outlive it
      models::TrainOptions t = plan.train;
      t.batch_size = c.batch_size;
      t.seed = seed;
      spdlog::info("validate: {} seed={} on {}", config_text(*plan.space, c), seed, device.name());
      int64_t samples_at_stop = 0;
      models::TrainHooks hooks;
      hooks.on_batch = [&](int64_t seen, int) {
        if (!sampler.watchdog_trip().tripped) return true;
        samples_at_stop = seen;
        return false;
      };
      sampler.start();
      const auto res = models::train_to_target(t, *plan.data, hooks);
      sampler.stop();
      ++report.training_runs;
      RunResult rr;
      rr.series = sampler.series();
      if (samples_at_stop > 0) {
        device.restore();  // at once: the next configuration pins its own setting
        watchdog.record(sampler.watchdog_trip());
        spdlog::warn("validate: {} seed={}: {}", config_text(*plan.space, c), seed, watchdog.message);
        ++report.watchdog_stops;
      }
      rr.reached = res.reached && samples_at_stop == 0;
      rr.samples = samples_at_stop > 0 ? samples_at_stop : res.samples;
      rr.wall_time_s = res.wall_time_s;
      rr.final_metric = samples_at_stop > 0 ? traces::kNaN : res.final_metric;
      rr.device_time_s = res.wall_time_s - res.eval_time_s;
      rr.status = watchdog.message;
      runs[{c, seed}] = std::move(rr);
    }
  device.restore();
}

// One row per (cap, policy, seed), a configuration chosen twice being the same run; the first
// seed's power trace of each configuration is written to the store.
void fill_rows(const ValidateOptions& opt, const std::vector<Choice>& choices, const Runs& runs,
               traces::ValidationResult& v, traces::Store& store) {
  const double period_s = 1.0 / opt.sensor_rate_hz;
  std::set<std::string> series_written;
  for (const auto& ch : choices) {
    for (int seed : opt.seeds) {
      traces::ValidationRow row;
      row.cap_w = ch.cap_w;
      row.policy = ch.policy;
      row.seed = seed;
      row.predicted_time_s = ch.selection.predicted_time_s;
      row.predicted_energy_j = ch.selection.predicted_energy_j;
      if (!ch.selection.feasible) {
        v.rows.push_back(row);
        continue;
      }
      const Config c{ch.selection.knob, ch.selection.batch_size};
      const RunResult& rr = runs.at({c, seed});
      const auto& power = rr.series.power_w;
      row.knob = c.knob;
      row.batch_size = c.batch_size;
      row.reached = rr.reached;
      row.samples = rr.samples;
      row.device_time_s = rr.device_time_s;
      row.wall_time_s = rr.wall_time_s;
      row.final_metric = rr.final_metric;
      row.status = rr.status;
      row.energy_j = rr.series.time_s.empty() ? traces::kNaN
                                              : traces::trapezoid_energy_j(rr.series.time_s, power, rr.device_time_s);
      row.power_peak_w = power.empty() ? traces::kNaN : *std::max_element(power.begin(), power.end());
      row.power_mean_w = traces::mean(power);
      for (double w : power)
        if (w > ch.cap_w) {
          row.cap_exceeded = true;
          row.time_over_cap_s += period_s;
        }
      row.series = fmt::format("{}-b{}-{:.0f}MHz-s{}", v.name, c.batch_size, c.knob.at(0) / 1e6, seed);
      if (!series_written.count(row.series) && seed == opt.seeds.front()) {
        traces::PowerSeries s = rr.series;
        s.name = row.series;
        s.cap_w = ch.cap_w;
        store.write_series(s);
        series_written.insert(row.series);
      } else if (!series_written.count(row.series)) {
        row.series.clear();  // only the first seed's trace is kept
      }
      v.rows.push_back(row);
    }
  }
}

// Summary per (cap, policy): measured mean and spread over the seeds that reached the target,
// prediction error, energy, peak; then the regret versus the oracle's measured time.
std::vector<ValidationSummaryRow> summarize_runs(const std::vector<Choice>& choices, const explore::Space& space,
                                                 const traces::ValidationResult& v) {
  std::vector<ValidationSummaryRow> summary;
  std::map<double, double> oracle_mean;
  for (const auto& ch : choices) {
    ValidationSummaryRow s;
    s.cap_w = ch.cap_w;
    s.policy = ch.policy;
    s.predicted_s = ch.selection.predicted_time_s;
    if (!ch.selection.feasible) {
      s.config = "infeasible";
      summary.push_back(s);
      continue;
    }
    s.config = config_text(space, {ch.selection.knob, ch.selection.batch_size});
    std::vector<double> times;
    double energy = 0, peak = 0;
    for (const auto& r : v.rows)
      if (r.policy == ch.policy && traces::same(r.cap_w, ch.cap_w)) {
        ++s.runs;
        if (!r.status.empty()) ++s.stopped;
        if (r.reached) {
          ++s.reached;
          times.push_back(r.device_time_s);
          energy += r.energy_j;
        }
        peak = std::max(peak, std::isfinite(r.power_peak_w) ? r.power_peak_w : 0.0);
        s.cap_exceeded = s.cap_exceeded || r.cap_exceeded;
      }
    if (!times.empty()) {
      const double m = traces::mean(times);
      s.measured_mean_s = m;
      s.measured_std_s = traces::sample_std(times);
      s.energy_j = energy / static_cast<double>(times.size());
      s.error_pct = 100 * (s.predicted_s - m) / m;
    }
    s.peak_w = peak;
    if (ch.policy == "oracle") oracle_mean[ch.cap_w] = s.measured_mean_s;
    summary.push_back(s);
  }
  for (auto& s : summary)
    if (oracle_mean.count(s.cap_w) && oracle_mean[s.cap_w] > 0 && s.measured_mean_s > 0)
      s.regret_pct = 100 * (s.measured_mean_s / oracle_mean[s.cap_w] - 1);
  return summary;
}

std::string format_summary(const ValidateReport& report) {
  const traces::ValidationResult& v = report.result;
  std::string out = fmt::format("validation {} of {} on {}{} ({} >= {:.3f}; times are {}):\n", v.name, v.workload,
                                v.device, v.emulated ? " (emulated)" : "", v.metric, v.target,
                                v.emulated ? "the emulated device's virtual time" : "measured device time");
  out +=
      fmt::format("{:>7} {:<22} {:<22} {:>16} {:>11} {:>8} {:>8} {:>10} {:>8} {:>6}\n", "cap", "policy",
                  "configuration", "measured [s]", "predicted", "error", "regret", "energy [J]", "peak [W]", "> cap");
  for (const auto& s : report.summary) {
    if (s.config == "infeasible") {
      out += fmt::format("{:>6.2f}W {:<22} {:<22}\n", s.cap_w, explore::policy_label(s.policy), "infeasible");
      continue;
    }
    out += fmt::format(
        "{:>6.2f}W {:<22} {:<22} {:>9.1f} ± {:<4.1f} {:>11.1f} {:>7.1f}% {:>7.1f}% {:>10.0f} {:>8.2f} {:>6}\n", s.cap_w,
        explore::policy_label(s.policy), s.config, s.measured_mean_s, s.measured_std_s, s.predicted_s, s.error_pct,
        s.regret_pct, s.energy_j, s.peak_w,
        s.stopped        ? "STOP"
        : s.cap_exceeded ? "yes"
                         : "no");
  }
  if (report.watchdog_stops > 0)
    out += fmt::format(
        "power watchdog: {} run(s) stopped (STOP above; a row's status in the store says when and how "
        "high); their times are left out of the means\n",
        report.watchdog_stops);
  return out;
}

}  // namespace

ValidateReport run_validate(const ValidateOptions& opt) {
  const auto t_start = Clock::now();
  ValidateReport report;
  const Setup su = load_setup(opt);
  const explore::Space& space = *su.problem->space;
  const auto data = models::data::load_dataset(opt.target_dataset, opt.data);
  const auto target_report = train_target(opt, su, data);
  report.training_runs += target_report.new_runs;
  report.target_relation = target_report.set;
  const explore::Relation target = explore::Relation::from_set(report.target_relation, space);
  const std::vector<Choice> choices = choose_all(opt, su, target);

  RunPlan plan{&opt, &space, {}, {}, &data, su.train, opt.device};
  plan.request.workload = models::describe_workload(su.train.workload);
  for (const auto& ch : choices)
    if (ch.selection.feasible) {
      const Config c{ch.selection.knob, ch.selection.batch_size};
      plan.configs.insert(c);
      const auto it = plan.config_cap.find(c);
      if (it == plan.config_cap.end() || ch.cap_w < it->second) plan.config_cap[c] = ch.cap_w;
    }
  Runs runs;
  hw::OpenedDevice first = hw::open_device(plan.request);
  const bool emulated = first.emulated != nullptr;
  report.result.device = first.spec.name.empty() ? first.device->name() : first.spec.name;
  if (emulated) {
    first.device.reset();
    run_emulated(plan, runs, report);
  } else {
    run_real(plan, *first.device, runs, report);
  }

  traces::ValidationResult& v = report.result;
  v.name = opt.name.empty() ? "validate-" + record_name(opt.target_dataset) : opt.name;
  v.workload = su.train.workload;
  v.dataset = opt.target_dataset;
  v.metric = su.info.metric;
  v.target = su.train.target;
  v.emulated = emulated;
  v.feasibility = fmt::format("{}, chosen under cap x (1 - {:g})", explore::to_string(space.basis()), opt.guard);
  v.guard = opt.guard;
  v.knob = space.knob();
  traces::Store store = traces::Store::open(opt.store);
  fill_rows(opt, choices, runs, v, store);
  store.write_validation(v, opt.replace ? traces::Replace::always : traces::Replace::if_not_smaller);
  report.summary = summarize_runs(choices, space, v);
  report.wall_time_s = std::chrono::duration<double>(Clock::now() - t_start).count();
  report.text = format_summary(report);
  return report;
}

std::string format_verdict(const ValidateReport& report) {
  std::string out;
  std::map<double, std::map<std::string, const ValidationSummaryRow*>> by_cap;
  for (const auto& s : report.summary) by_cap[s.cap_w][s.policy] = &s;
  std::vector<double> errors;
  for (const auto& [cap, m] : by_cap) {
    auto get = [&](const char* p) -> const ValidationSummaryRow* {
      const auto it = m.find(p);
      return it == m.end() || it->second->measured_mean_s <= 0 ? nullptr : it->second;
    };
    const auto* ours = get("ours");
    std::string line = fmt::format("  cap {:g} W:", cap);
    if (!ours && m.count("ours") && m.at("ours")->stopped > 0) {
      out += line + " every run of Ours was stopped by the power watchdog: the model underestimates power here\n";
      continue;
    }
    if (!ours) {
      out += line + " Ours found no feasible configuration\n";
      continue;
    }
    if (const auto* b1 = get("baseline1"))
      line += fmt::format(" Ours {:.2f}x faster than Baseline 1;", b1->measured_mean_s / ours->measured_mean_s);
    if (const auto* b2 = get("baseline2"))
      line += fmt::format(" {:.2f}x vs Baseline 2;", b2->measured_mean_s / ours->measured_mean_s);
    if (get("oracle")) line += fmt::format(" regret vs oracle {:.1f}%;", ours->regret_pct);
    line += fmt::format(" prediction error {:+.1f}%{}", ours->error_pct,
                        ours->stopped        ? fmt::format("; {} run(s) stopped by the power watchdog", ours->stopped)
                        : ours->cap_exceeded ? "; cap EXCEEDED on the trace"
                                             : "; cap held");
    errors.push_back(std::fabs(ours->error_pct));
    out += line + "\n";
  }
  if (!errors.empty()) out += fmt::format("  mean |prediction error| of Ours: {:.1f}%\n", traces::mean(errors));
  return out;
}

}  // namespace pacer::experiments
