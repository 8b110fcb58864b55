#include "experiments/validate.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>

#include "experiments/campaign.hpp"
#include "experiments/tables.hpp"
#include "explore/policy.hpp"
#include "explore/space.hpp"
#include "hw/sampler.hpp"
#include "traces/error.hpp"
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
    message = fmt::format("stopped: power watchdog at t={:.2f} s: mean power {:.2f} W over the last {:g} s above "
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
    if (group != "relations" || (n.find("-true") == std::string::npos)) names.push_back(n);
  if (names.size() == 1) return names.front();
  throw OptionError(option, fmt::format("{} holds {} {} records; name one", store.path().string(),
                               names.empty() ? "no" : "several", names.empty() ? std::string("") : std::to_string(names.size()),
                                        what));
}

// Samples an emulated board on its sensor grid up to its current virtual time.
struct BoardSampler {
  hw::EmulatedJetson* board;
  int batch_size;
  double start_s;
  double period_s;
  double next_s;
  traces::PowerSeries series;
  Watchdog watchdog;
  int64_t samples_at_stop = 0;
  void catch_up() {
    while (next_s <= board->now_s() + 1e-12 && !watchdog.tripped()) {
      const auto r = board->power_at(next_s);
      series.time_s.push_back(next_s - start_s);
      series.power_w.push_back(r.total_w);
      if (std::isfinite(r.gpu_w)) series.gpu_power_w.push_back(r.gpu_w);
      series.freq_hz.push_back(board->effective_freq_hz(batch_size));
      watchdog.observe(next_s - start_s, r.total_w);
      next_s += period_s;
    }
  }
};

// Trapezoids between samples; the first sample holds from the start and the last to the end of a
// run of `duration_s` (a run shorter than the sensor period still gets power x time).
double energy_of(const traces::PowerSeries& s, double duration_s) {
  if (s.time_s.empty()) return traces::kNaN;
  double e = s.power_w.front() * std::max(0.0, s.time_s.front());
  for (size_t i = 1; i < s.time_s.size(); ++i) e += 0.5 * (s.power_w[i] + s.power_w[i - 1]) * (s.time_s[i] - s.time_s[i - 1]);
  if (std::isfinite(duration_s)) e += s.power_w.back() * std::max(0.0, duration_s - s.time_s.back());
  return e;
}

}  // namespace

ValidateReport run_validate(const ValidateOptions& opt) {
  const auto t_start = Clock::now();
  if (opt.caps_w.empty()) throw OptionError("power-limits", "give at least one cap");
  if (opt.seeds.empty()) throw OptionError("seeds", "give at least one seed");
  ValidateReport report;
  traces::Store store = traces::Store::open(opt.store);
  const std::string profile_name = pick_record(store, "profiles", opt.profile, "profile", "profile");
  const std::string proxy_name = pick_record(store, "relations", opt.proxy, "relation", "proxy");
  const traces::ProfileTable profile = store.read_profile(profile_name);
  const traces::RelationSet proxy_set = store.read_relation(proxy_name);
  if (profile.knob.kind != "gpu_freq")
    throw Error(fmt::format("profile '{}' has knob '{}': validate pins GPU frequencies", profile_name, profile.knob.kind));

  // The design space, as the policies see it.
  const explore::Space space = explore::Space::from_profile(profile);
  const explore::Index index(space);
  const explore::DeviceWideCap device_cap({&space});
  const explore::Relation proxy = explore::Relation::from_set(proxy_set, space);
  for (double cap : opt.caps_w)
    if (cap <= 0 || !std::isfinite(cap)) throw OptionError("power-limits", fmt::format("{:g} W is not a cap", cap));
  if (!(opt.guard >= 0 && opt.guard < 0.5))
    throw OptionError("guard", fmt::format("{:g} is not a fraction in [0, 0.5)", opt.guard));

  // Target data and the oracle's true relation: train the target at every batch size.
  const auto info = models::data::dataset_info(opt.target_dataset);
  const auto data = models::data::load_dataset(opt.target_dataset, opt.data);
  models::TrainOptions train = opt.train;
  if (train.workload.empty()) train.workload = profile.workload;
  if (train.init_checkpoint == "default") {
    train.init_checkpoint = default_checkpoint(train.workload);
    if (!std::filesystem::exists(train.init_checkpoint))
      throw MissingCheckpoint(train.init_checkpoint, train.workload,
                              fmt::format("checkpoint {} not found: pre-train {} to create it, or name another "
                                          "checkpoint, or none to train from scratch",
                                          train.init_checkpoint, train.workload));
  }
  if (std::isnan(train.target)) train.target = info.default_target;
  train.base_batch = space.batch_sizes().back();
  RelationCampaign campaign;
  campaign.name = record_name(opt.target_dataset) + "-true";
  campaign.dataset = opt.target_dataset;
  campaign.metric = info.metric;
  campaign.train = train;
  campaign.batch_sizes = space.batch_sizes();
  campaign.seeds = opt.seeds;
  campaign.store = opt.store;
  spdlog::info("oracle: training {} on {} at every batch size ({} x {} runs)", train.workload, opt.target_dataset,
               campaign.batch_sizes.size(), campaign.seeds.size());
  const auto target_report = run_relation_campaign(campaign, data);
  report.training_runs += target_report.new_runs;
  report.target_relation = target_report.set;
  const explore::Relation target = explore::Relation::from_set(report.target_relation, space);

  // Every policy's choice at every cap.
  struct Choice {
    double cap_w;
    std::string policy;
    explore::Selection selection;
  };
  std::vector<Choice> choices;
  std::set<Config> configs;
  for (double cap : opt.caps_w)
    for (const auto& pname : opt.policies) {
      const auto policy = explore::policy_from_string(pname);
      if (!policy) throw OptionError("policies", fmt::format("unknown policy '{}' ({})", pname, explore::policy_names()));
      explore::PolicyContext ctx;
      ctx.index = &index;
      ctx.proxy = &proxy;
      ctx.target = &target;
      ctx.device_cap = &device_cap;
      auto sel = explore::select(*policy, ctx, cap * (1 - opt.guard));
      if (!sel.feasible) spdlog::warn("cap {:g} W, {}: {}", cap, pname, sel.message);
      else configs.insert({sel.knob, sel.batch_size});
      choices.push_back({cap, pname, sel});
    }

  if (!(opt.watchdog_margin_w >= 0) || !(opt.watchdog_duration_s >= 0))
    throw UsageError("the watchdog margin and time must be >= 0");
  // The watchdog of a configuration guards the lowest cap it was chosen for.
  std::map<Config, double> config_cap;
  for (const auto& ch : choices)
    if (ch.selection.feasible) {
      const Config c{ch.selection.knob, ch.selection.batch_size};
      const auto it = config_cap.find(c);
      if (it == config_cap.end() || ch.cap_w < it->second) config_cap[c] = ch.cap_w;
    }
  auto watchdog_for = [&](const Config& c) {
    Watchdog w;
    w.cap_w = config_cap.at(c);
    w.margin_w = opt.watchdog_margin_w;
    w.w = hw::PowerWatchdog(w.cap_w + w.margin_w, opt.watchdog_duration_s);
    return w;
  };

  // Run every chosen configuration for every seed.
  std::map<std::pair<Config, int>, RunResult> runs;
  hw::DeviceRequest request = opt.device;
  request.workload = models::describe_workload(train.workload);
  hw::OpenedDevice first = hw::open_device(request);
  const bool emulated = first.emulated != nullptr;
  const double period_s = 1.0 / opt.sensor_rate_hz;
  report.result.device = first.spec.name.empty() ? first.device->name() : first.spec.name;
  if (emulated) {
    first.device.reset();
    std::set<int> batch_sizes;
    for (const auto& c : configs) batch_sizes.insert(c.batch_size);
    for (int b : batch_sizes)
      for (int seed : opt.seeds) {
        // One emulated board per frequency chosen at this b, all driven by the same real run.
        std::vector<Config> here;
        for (const auto& c : configs)
          if (c.batch_size == b) here.push_back(c);
        std::vector<hw::OpenedDevice> boards;
        std::vector<BoardSampler> samplers;
        for (size_t k = 0; k < here.size(); ++k) {
          hw::DeviceRequest r = request;
          r.emulator.seed = request.emulator.seed + 7919 * static_cast<uint64_t>(seed) + 104729 * k + static_cast<uint64_t>(b);
          boards.push_back(hw::open_device(r));
          boards.back().emulated->pin(here[k].knob);
        }
        for (size_t k = 0; k < boards.size(); ++k) {
          auto& bd = boards[k];
          BoardSampler s{bd.emulated, b, bd.emulated->now_s(), period_s, bd.emulated->now_s(), {}, watchdog_for(here[k])};
          s.series.emulated = true;
          samplers.push_back(std::move(s));
        }
        models::TrainOptions t = train;
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
              spdlog::warn("validate: {} seed={}: {}", config_text(space, here[k]), seed, s.watchdog.message);
            } else {
              running = true;
            }
          }
          return running;  // every board stopped: so is the training
        };
        spdlog::info("validate: b={} seed={} driving {} emulated board(s): {}", b, seed, here.size(),
                     fmt::join([&] {
                       std::vector<std::string> v;
                       for (const auto& c : here) v.push_back(space.describe_knob(c.knob));
                       return v;
                     }(), ", "));
        const auto res = models::train_to_target(t, data, hooks);
        ++report.training_runs;
        for (size_t k = 0; k < here.size(); ++k) {
          RunResult rr;
          const bool stopped = samplers[k].watchdog.tripped();
          rr.reached = res.reached && !stopped;
          rr.samples = stopped ? samplers[k].samples_at_stop : res.samples;
          rr.wall_time_s = res.wall_time_s;
          rr.final_metric = stopped ? traces::kNaN : res.final_metric;
          rr.device_time_s = samplers[k].board->now_s() - samplers[k].start_s;
          rr.series = std::move(samplers[k].series);
          rr.status = samplers[k].watchdog.message;
          if (stopped) ++report.watchdog_stops;
          runs[{here[k], seed}] = std::move(rr);
        }
        for (auto& bd : boards) bd.device->restore();
      }
  } else {
    hw::Device& device = *first.device;
    for (const auto& c : configs)
      for (int seed : opt.seeds) {
        device.pin(c.knob);
        Watchdog watchdog = watchdog_for(c);
        hw::SamplerOptions so;
        so.rate_hz = opt.sensor_rate_hz;
        so.watchdog_w = watchdog.w.limit_w();
        so.watchdog_window_s = watchdog.w.window_s();
        hw::PowerSampler sampler(device.power_reader(), so);  // owns what it reads: a blocked read may outlive it
        models::TrainOptions t = train;
        t.batch_size = c.batch_size;
        t.seed = seed;
        spdlog::info("validate: {} seed={} on {}", config_text(space, c), seed, device.name());
        int64_t samples_at_stop = 0;
        models::TrainHooks hooks;
        hooks.on_batch = [&](int64_t seen, int) {
          if (!sampler.watchdog_trip().tripped) return true;
          samples_at_stop = seen;
          return false;
        };
        sampler.start();
        const auto res = models::train_to_target(t, data, hooks);
        sampler.stop();
        ++report.training_runs;
        RunResult rr;
        rr.series = sampler.series();
        if (samples_at_stop > 0) {
          device.restore();  // at once: the next configuration pins its own setting
          watchdog.record(sampler.watchdog_trip());
          spdlog::warn("validate: {} seed={}: {}", config_text(space, c), seed, watchdog.message);
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

  // Rows: one per (cap, policy, seed); a configuration chosen twice is the same run.
  traces::ValidationResult& v = report.result;
  v.name = opt.name.empty() ? "validate-" + record_name(opt.target_dataset) : opt.name;
  v.workload = train.workload;
  v.dataset = opt.target_dataset;
  v.metric = info.metric;
  v.target = train.target;
  v.emulated = emulated;
  v.feasibility = fmt::format("{}, chosen under cap x (1 - {:g})", explore::to_string(space.basis()), opt.guard);
  v.knob = profile.knob;
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
      row.knob = c.knob;
      row.batch_size = c.batch_size;
      row.reached = rr.reached;
      row.samples = rr.samples;
      row.device_time_s = rr.device_time_s;
      row.wall_time_s = rr.wall_time_s;
      row.final_metric = rr.final_metric;
      row.status = rr.status;
      row.energy_j = energy_of(rr.series, rr.device_time_s);
      double peak = traces::kNaN, sum = 0;
      for (size_t i = 0; i < rr.series.power_w.size(); ++i) {
        const double w = rr.series.power_w[i];
        peak = std::isnan(peak) ? w : std::max(peak, w);
        sum += w;
        if (w > ch.cap_w) {
          row.cap_exceeded = true;
          row.time_over_cap_s += period_s;
        }
      }
      row.power_peak_w = peak;
      row.power_mean_w = rr.series.power_w.empty() ? traces::kNaN : sum / static_cast<double>(rr.series.power_w.size());
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
  store.write_validation(v);

  // Summary per (cap, policy).
  std::map<double, double> oracle_mean;
  for (const auto& ch : choices) {
    ValidationSummaryRow s;
    s.cap_w = ch.cap_w;
    s.policy = ch.policy;
    s.predicted_s = ch.selection.predicted_time_s;
    if (!ch.selection.feasible) {
      s.config = "infeasible";
      report.summary.push_back(s);
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
      double m = 0;
      for (double t : times) m += t;
      m /= static_cast<double>(times.size());
      double ss = 0;
      for (double t : times) ss += (t - m) * (t - m);
      s.measured_mean_s = m;
      s.measured_std_s = times.size() > 1 ? std::sqrt(ss / static_cast<double>(times.size() - 1)) : 0;
      s.energy_j = energy / static_cast<double>(times.size());
      s.error_pct = 100 * (s.predicted_s - m) / m;
    }
    s.peak_w = peak;
    if (ch.policy == "oracle") oracle_mean[ch.cap_w] = s.measured_mean_s;
    report.summary.push_back(s);
  }
  for (auto& s : report.summary)
    if (oracle_mean.count(s.cap_w) && oracle_mean[s.cap_w] > 0 && s.measured_mean_s > 0)
      s.regret_pct = 100 * (s.measured_mean_s / oracle_mean[s.cap_w] - 1);
  report.wall_time_s = std::chrono::duration<double>(Clock::now() - t_start).count();

  std::string& out = report.text;
  out += fmt::format("validation {} of {} on {}{} ({} >= {:.3f}; times are {}):\n", v.name, v.workload, v.device,
                     emulated ? " (emulated)" : "", v.metric, v.target,
                     emulated ? "the emulated device's virtual time" : "measured device time");
  out += fmt::format("{:>7} {:<22} {:<22} {:>16} {:>11} {:>8} {:>8} {:>10} {:>8} {:>6}\n", "cap", "policy", "configuration",
                     "measured [s]", "predicted", "error", "regret", "energy [J]", "peak [W]", "> cap");
  for (const auto& s : report.summary) {
    if (s.config == "infeasible") {
      out += fmt::format("{:>6.2f}W {:<22} {:<22}\n", s.cap_w, policy_label(s.policy), "infeasible");
      continue;
    }
    out += fmt::format("{:>6.2f}W {:<22} {:<22} {:>9.1f} ± {:<4.1f} {:>11.1f} {:>7.1f}% {:>7.1f}% {:>10.0f} {:>8.2f} {:>6}\n",
                       s.cap_w, policy_label(s.policy), s.config, s.measured_mean_s, s.measured_std_s, s.predicted_s,
                       s.error_pct, s.regret_pct, s.energy_j, s.peak_w,
                       s.stopped ? "STOP" : s.cap_exceeded ? "yes" : "no");
  }
  if (report.watchdog_stops > 0)
    out += fmt::format("power watchdog: {} run(s) stopped (STOP above; a row's status in the store says when and how "
                       "high); their times are left out of the means\n", report.watchdog_stops);
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
    if (const auto* b1 = get("baseline1")) line += fmt::format(" Ours {:.2f}x faster than Baseline 1;", b1->measured_mean_s / ours->measured_mean_s);
    if (const auto* b2 = get("baseline2")) line += fmt::format(" {:.2f}x vs Baseline 2;", b2->measured_mean_s / ours->measured_mean_s);
    if (get("oracle")) line += fmt::format(" regret vs oracle {:.1f}%;", ours->regret_pct);
    line += fmt::format(" prediction error {:+.1f}%{}", ours->error_pct,
                        ours->stopped ? fmt::format("; {} run(s) stopped by the power watchdog", ours->stopped)
                        : ours->cap_exceeded ? "; cap EXCEEDED on the trace" : "; cap held");
    errors.push_back(std::fabs(ours->error_pct));
    out += line + "\n";
  }
  if (!errors.empty()) {
    double m = 0;
    for (double e : errors) m += e;
    out += fmt::format("  mean |prediction error| of Ours: {:.1f}%\n", m / static_cast<double>(errors.size()));
  }
  return out;
}

}  // namespace pacer::experiments
