#include "experiments/campaigns/validate.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "base/error.hpp"
#include "base/progress.hpp"
#include "base/stats.hpp"
#include "experiments/campaigns/campaign.hpp"
#include "experiments/campaigns/validate_probe.hpp"
#include "experiments/campaigns/validate_runs.hpp"
#include "experiments/report/tables.hpp"
#include "explore/policy.hpp"
#include "explore/problem.hpp"
#include "explore/space.hpp"
#include "explore/sweep.hpp"
#include "hw/sampler.hpp"
#include "traces/store/outputs.hpp"
#include "traces/store/store.hpp"

namespace pacer::experiments {
namespace {

namespace fs = std::filesystem;

using Clock = std::chrono::steady_clock;

std::string pick_record(const traces::Store& store, const std::string& group, const std::string& wanted,
                        const std::string& what, const std::string& option) {
  if (!wanted.empty()) return wanted;
  std::vector<std::string> names;
  for (const auto& n : store.list(group))
    if (group != "relations" || !traces::is_true_relation(n)) names.push_back(n);
  if (names.size() == 1) return names.front();
  if (names.empty()) throw OptionError(option, fmt::format("{} holds no {} record", store.path().string(), what));
  throw OptionError(option, fmt::format("{} holds {} {} records ({}); name one", store.path().string(), names.size(),
                                        what, fmt::join(names, ", ")));
}

// The problem as the policies see it, and what validate needs beside it.
struct Setup {
  std::unique_ptr<explore::Problem> problem;  // profile, proxy relation, space, index
  explore::ChoiceRule rule;                   // the one choice rule (guard, basis) every policy chooses by
  dnn::data::DatasetInfo info;
  dnn::TrainOptions train;
};

Setup load_setup(const ValidateOptions& opt) {
  if (opt.caps_w.empty()) throw OptionError("power-limits", "give at least one cap");
  if (opt.seeds.empty()) throw OptionError("seeds", "give at least one seed");
  for (double cap : opt.caps_w)
    if (cap <= 0 || !std::isfinite(cap)) throw OptionError("power-limits", fmt::format("{:g} W is not a cap", cap));
  if (opt.guard) check_guard(*opt.guard);
  if (!(opt.watchdog_margin_w >= 0) || !(opt.watchdog_duration_s >= 0))
    throw OptionError("watchdog-margin", "the watchdog margin and time must be >= 0");
  Setup su;
  const traces::Store store = traces::Store::open(opt.store);
  explore::ProblemSpec spec;
  spec.profile = pick_record(store, "profiles", opt.profile, "profile", "profile");
  spec.relation = pick_record(store, "relations", opt.proxy, "relation", "proxy");
  spec.allow_workload_mismatch = opt.allow_workload_mismatch;
  // Validation measures its own target relation: the store's true relations of earlier targets are
  // not this one's (with two of them, choosing the default target refused the campaign).
  spec.read_target = false;
  su.problem = explore::load_problem(store, spec);
  const explore::Space& space = *su.problem->space;
  if (space.knob().kind != traces::KnobKind::gpu_freq)
    throw Error(
        fmt::format("profile '{}' has knob '{}': validate pins GPU frequencies", spec.profile, space.knob().kind));
  su.rule = explore::choice_rule(*su.problem, opt.guard);
  su.info = dnn::data::dataset_info(opt.target_dataset);
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

using validate_detail::Config;
using validate_detail::config_text;
using validate_detail::RunPlan;
using validate_detail::RunResult;
using validate_detail::Runs;

std::string validation_name(const ValidateOptions& opt) {
  return opt.name.empty() ? "validate-" + record_name(opt.target_dataset) : opt.name;
}

// Before any training: the policies are known, the store `out` reads and takes a rewrite, and a
// whole validation's record has a valid name and would not replace a larger one unasked. Its rows
// are known now: one per (cap, policy, seed). A stage or a shard writes its own store (or the oracle
// relation only) and leaves the record's size to the merge.
void check_outputs(const ValidateOptions& opt, const fs::path& out) {
  if (opt.policies.empty())
    throw OptionError("policies", fmt::format("give at least one policy ({})", explore::policy_names()));
  for (const auto& p : opt.policies) explore::parse_policy(p, "policies");
  traces::check_store_output(opt.store, "store", traces::StoreCreation::must_exist);
  if (out != opt.store)
    traces::check_store_output(out, opt.out.empty() ? "shard" : "out", traces::StoreCreation::file_and_folder);
  // Stage "runs" on its own writes the whole record too; the oracle stage writes none.
  const bool whole = !opt.shard && !opt.only_jobs && opt.stage != kStageOracle && out == opt.store;
  traces::check_record_output(out, {"validations", validation_name(opt), "name",
                                    whole ? opt.caps_w.size() * opt.policies.size() * opt.seeds.size() : 0,
                                    opt.replace ? traces::Replace::always : traces::Replace::if_not_smaller});
}

// The batch sizes of the space must fit the device being validated and this computer, which trains.
void check_memory(const ValidateOptions& opt, const Setup& su) {
  const auto workload = models::describe_workload(su.train.workload);
  const auto& batch_sizes = su.problem->space->batch_sizes();
  const std::string profile = su.problem->profile_name;
  const hw::DeviceMemory device = hw::training_memory(opt.device);
  traces::check_batches_fit(workload, batch_sizes, device.bytes,
                            fmt::format("{} (profile '{}')", device.owner, profile));
  traces::check_batches_fit(workload, batch_sizes, traces::host_memory_bytes(),
                            fmt::format("this computer, which trains (profile '{}')", profile));
}

// The oracle's true relation: the target trained at every batch size, as a relation campaign.
RelationCampaign target_campaign(const ValidateOptions& opt, const Setup& su) {
  RelationCampaign campaign;
  campaign.name = traces::true_relation_name(record_name(opt.target_dataset));
  campaign.dataset = opt.target_dataset;
  campaign.metric = su.info.metric;
  campaign.train = su.train;
  campaign.batch_sizes = su.problem->space->batch_sizes();
  campaign.seeds = opt.seeds;
  campaign.store = opt.store;
  return campaign;
}

// The oracle's relation as the runs stage reads it: complete, and of this validation's settings,
// in the campaign's store.
traces::RelationSet complete_target(const ValidateOptions& opt, const RelationCampaign& c,
                                    const dnn::data::DataSplit& data) {
  const auto stored = stored_relation(opt.store, relation_header(c, &data), c.train.budget_samples);
  if (!stored)
    throw Error(
        fmt::format("{} holds no oracle relation '{}': run the validation's oracle stage first (and merge "
                    "its shards into the store)",
                    opt.store.string(), c.name));
  const traces::RelationSet& set = *stored;
  std::vector<std::string> missing;
  for (const auto& [b, seed] : relation_jobs(c.batch_sizes, c.seeds))
    if (std::none_of(set.runs.begin(), set.runs.end(),
                     [&](const traces::RelationRun& r) { return r.batch_size == b && r.seed == seed; }))
      missing.push_back(fmt::format("b={} seed={}", b, seed));
  if (!missing.empty())
    throw Error(
        fmt::format("oracle relation '{}' in {} lacks {} of its runs ({}{}): complete the validation's oracle "
                    "stage (and merge its shards into the store) first",
                    c.name, opt.store.string(), missing.size(),
                    fmt::join(missing.begin(), missing.begin() + std::min<long>(3, std::ssize(missing)), ", "),
                    missing.size() > 3 ? ", ..." : ""));
  return set;
}

using validate_detail::Choice;

// Every policy's choice at every cap, by the choice rule (under cap x (1 - guard)), each on a measured point: a chosen
// configuration the store never measured is probed first (validate_probe.hpp), into `out`.
std::vector<Choice> choose_all(const ValidateOptions& opt, const Setup& su, const traces::RelationSet& target,
                               const fs::path& out, ValidateReport& report) {
  validate_detail::ChoiceInputs in;
  in.profile_name = su.problem->profile_name;
  in.workload = su.train.workload;
  in.basis = su.problem->space->basis();
  in.rule = su.rule;
  in.proxy = &su.problem->proxy_set;
  in.proxy_looser = su.problem->proxy_looser_set ? &*su.problem->proxy_looser_set : nullptr;
  in.target = &target;
  in.powertrain_batch = su.problem->context().powertrain_batch;
  in.threads = su.train.threads;
  in.train_device = su.train.device;
  std::vector<Choice> choices = validate_detail::choose_measured(opt, in, out, report.probes);
  for (const auto& ch : choices) {
    if (!ch.selection.feasible) spdlog::warn("cap {:g} W, {}: {}", ch.cap_w, ch.policy, ch.selection.message);
    if (!ch.replaced.empty())
      report.replaced.push_back(fmt::format("cap {:g} W, {}: {}", ch.cap_w, ch.policy, ch.replaced));
  }
  return choices;
}

// The configurations to run (every feasible choice) and the cap each one's watchdog guards.
RunPlan make_plan(const ValidateOptions& opt, const Setup& su, const std::vector<Choice>& choices,
                  const dnn::data::DataSplit& data) {
  RunPlan plan;
  plan.opt = &opt;
  plan.space = su.problem->space.get();
  plan.data = &data;
  plan.train = su.train;
  plan.request = opt.device;
  plan.request.workload = models::describe_workload(su.train.workload);
  for (const auto& ch : choices)
    if (ch.selection.feasible) {
      const Config c{ch.selection.knob, ch.selection.batch_size};
      plan.configs.insert(c);
      const auto it = plan.config_cap.find(c);
      if (it == plan.config_cap.end() || ch.cap_w < it->second) plan.config_cap[c] = ch.cap_w;
    }
  return plan;
}

traces::ValidationResult validation_header(const ValidateOptions& opt, const Setup& su, const std::string& device,
                                           bool emulated) {
  const explore::Space& space = *su.problem->space;
  traces::ValidationResult v;
  v.name = validation_name(opt);
  v.workload = su.train.workload;
  v.device = device;
  v.dataset = opt.target_dataset;
  v.metric = su.info.metric;
  v.target = su.train.target;
  v.emulated = emulated;
  v.feasibility = explore::describe_feasibility(su.rule);
  v.guard = su.rule.guard;
  v.knob = space.knob();
  return v;
}

// The row of choice `ch` at `seed`, from the run of its configuration (nullptr: infeasible).
traces::ValidationRow make_row(const ValidateOptions& opt, const Choice& ch, int seed, const RunResult* rr,
                               const std::string& validation) {
  traces::ValidationRow row;
  row.cap_w = ch.cap_w;
  row.policy = ch.policy;
  row.seed = seed;
  row.predicted_time_s = ch.selection.predicted_time_s;
  row.predicted_energy_j = ch.selection.predicted_energy_j;
  row.probe = ch.replaced;
  if (!rr) return row;
  const auto& power = rr->series.power_w;
  row.knob = ch.selection.knob;
  row.batch_size = ch.selection.batch_size;
  row.reached = rr->reached;
  row.samples = rr->samples;
  row.device_time_s = rr->device_time_s;
  row.wall_time_s = rr->wall_time_s;
  row.final_metric = rr->final_metric;
  row.status = rr->status;
  row.node = rr->node;
  row.board_model = rr->board_model;
  row.threads = rr->threads;
  row.energy_j =
      rr->series.time_s.empty() ? traces::kNaN : base::trapezoid_energy_j(rr->series.time_s, power, rr->device_time_s);
  row.power_peak_w = power.empty() ? traces::kNaN : *std::max_element(power.begin(), power.end());
  row.power_mean_w = base::mean(power);
  const double period_s = 1.0 / opt.sensor_rate_hz;
  for (double w : power)
    if (w > ch.cap_w) {
      row.cap_exceeded = true;
      row.time_over_cap_s += period_s;
    }
  row.series = fmt::format("{}-b{}-{:.0f}MHz-s{}", validation, row.batch_size, row.knob.at(0) / 1e6, seed);
  return row;
}

// Rows stored before by this validation (same header) in any of `stores`: they need not run again;
// with the provenance of the record each was stored in.
struct StoredRows {
  std::map<traces::ValidationRowKey, std::pair<traces::ValidationRow, traces::Provenance>> rows;
  const traces::ValidationRow* find(const traces::ValidationRowKey& key) const {
    const auto it = rows.find(key);
    return it == rows.end() ? nullptr : &it->second.first;
  }
};

StoredRows stored_rows(const traces::ValidationResult& header, const std::vector<fs::path>& stores) {
  StoredRows out;
  for (const auto& path : stores) {
    if (!fs::exists(path)) continue;
    const traces::Store s = traces::Store::open(path);
    if (!s.has<traces::ValidationResult>(header.name)) continue;
    traces::ValidationResult old = s.read<traces::ValidationResult>(header.name);
    std::vector<traces::ValidationRow> rows = std::move(old.rows);
    old.rows.clear();
    if (!(old == header)) continue;  // another validation under this name: nothing to resume
    const traces::Provenance from =
        s.read_provenance(std::string(traces::RecordTraits<traces::ValidationResult>::group), header.name);
    for (auto& r : rows) {
      const traces::ValidationRowKey key = traces::row_key(r);  // before r is moved from
      out.rows.emplace(key, std::pair{std::move(r), from});
    }
  }
  return out;
}

// Stage "runs": the jobs `jobs` (indices of (b, seed) in the space's order), each writing its rows
// (and the first seed's power traces) to `out` when it ends; jobs whose rows are stored are not run.
traces::ValidationResult run_jobs(const ValidateOptions& opt, const Setup& su, const dnn::data::DataSplit& data,
                                  const std::vector<Choice>& choices, const std::vector<size_t>& jobs,
                                  const fs::path& out, ValidateReport& report) {
  RunPlan plan = make_plan(opt, su, choices, data);
  hw::OpenedDevice device = hw::open_device(plan.request);
  const bool emulated = device.emulated != nullptr;
  traces::ValidationResult v =
      validation_header(opt, su, device.spec.name.empty() ? device.device->name() : device.spec.name, emulated);
  if (emulated) device.device.reset();  // every job opens its own boards
  const auto stored = stored_rows(v, {out, opt.store});
  traces::Store store = traces::Store::open_or_create(out);
  const bool whole = jobs.size() == su.problem->space->batch_sizes().size() * opt.seeds.size() && out == opt.store;
  for (const auto& ch : choices)  // infeasible: a row without a run, the same in every shard
    if (!ch.selection.feasible)
      for (int seed : opt.seeds) v.rows.push_back(make_row(opt, ch, seed, nullptr, v.name));
  // First the jobs whose rows are stored (kept in every write below), then the others, in order.
  const auto all = relation_jobs(su.problem->space->batch_sizes(), opt.seeds);
  auto chosen_at = [&](int b) {
    std::vector<const Choice*> here;
    for (const auto& ch : choices)
      if (ch.selection.feasible && ch.selection.batch_size == b) here.push_back(&ch);
    return here;
  };
  std::vector<size_t> pending;
  std::optional<traces::Provenance> earlier;  // of the runs that measured the rows kept
  for (const size_t j : jobs) {
    const auto [b, seed] = all.at(j);
    ++report.jobs;
    const auto here = chosen_at(b);
    std::vector<traces::ValidationRow> rows;
    for (const Choice* ch : here) {
      const traces::ValidationRowKey key{ch->cap_w, ch->policy, seed, ch->selection.knob, b};
      if (const auto* row = stored.find(key);
          row && traces::same(row->predicted_time_s, ch->selection.predicted_time_s)) {
        rows.push_back(*row);
        const traces::Provenance& from = stored.rows.at(key).second;
        earlier = earlier ? traces::combine_provenance(*earlier, from) : from;
      }
    }
    if (rows.size() < here.size()) {
      pending.push_back(j);
      continue;
    }
    report.resumed_jobs += !here.empty();
    v.rows.insert(v.rows.end(), rows.begin(), rows.end());
  }
  // The record holds the rows of the runs before this one and this run's: it carries all of their
  // provenance (traces::combine_provenance), not this run's alone.
  const traces::Provenance stamp =
      earlier ? traces::combine_provenance(*earlier, traces::current_run()) : traces::current_run();
  base::Progress progress(pending.size());
  for (const size_t j : pending) {
    const auto [b, seed] = all.at(j);
    Runs runs;
    report.training_runs +=
        emulated ? validate_detail::run_emulated_job(plan, b, seed, runs, report.watchdog_stops)
                 : validate_detail::run_real_job(plan, *device.device, b, seed, runs, report.watchdog_stops);
    std::set<std::string> series_written;
    for (const Choice* ch : chosen_at(b)) {
      const RunResult& rr = runs.at({Config{ch->selection.knob, b}, seed});
      traces::ValidationRow row = make_row(opt, *ch, seed, &rr, v.name);
      if (seed != opt.seeds.front()) {
        row.series.clear();  // only the first seed's trace is kept
      } else if (series_written.insert(row.series).second) {
        traces::PowerSeries s = rr.series;
        s.name = row.series;
        s.cap_w = ch->cap_w;
        store.write(s);
      }
      v.rows.push_back(row);
    }
    traces::sort_rows(v);
    store.write_from(v, "", stamp, traces::Replace::always);  // after every job: an interruption loses one job
    spdlog::info("validate: {} b={} seed={} done", progress.next(), b, seed);
  }
  traces::sort_rows(v);
  store.write_from(v, "", stamp, whole ? traces::Replace::always : traces::Replace::if_not_smaller);
  return v;
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
    if (!times.empty()) {  // else every run was censored: no time to compare
      const double m = base::mean(times);
      s.measured_mean_s = m;
      s.measured_std_s = base::sample_std(times);
      s.energy_j = energy / static_cast<double>(times.size());
      s.error_pct = 100 * (s.predicted_s - m) / m;
    }
    s.peak_w = peak;
    if (explore::is_policy(ch.policy, explore::Policy::Oracle)) oracle_mean[ch.cap_w] = s.measured_mean_s;
    summary.push_back(s);
  }
  for (auto& s : summary)
    if (oracle_mean.count(s.cap_w) && oracle_mean[s.cap_w] > 0 && s.measured_mean_s > 0)
      s.regret_pct = 100 * (s.measured_mean_s / oracle_mean[s.cap_w] - 1);
  return summary;
}

}  // namespace

std::vector<JobList> validate_jobs(const ValidateOptions& opt) {
  check_outputs(opt, opt.store);  // before the store is read: the shards' merge writes it
  const Setup su = load_setup(opt);
  return validate_job_lists(validation_name(opt), target_campaign(opt, su).name, opt.store,
                            su.problem->space->batch_sizes(), opt.seeds);
}

namespace {

// The jobs of `stage` this call runs: all, a shard's, or the ones a campaign dealt.
std::vector<size_t> selected_jobs(const ValidateOptions& opt, size_t count) {
  if (opt.only_jobs) return *opt.only_jobs;
  if (opt.shard) return shard_jobs(count, *opt.shard);
  std::vector<size_t> all(count);
  for (size_t j = 0; j < count; ++j) all[j] = j;
  return all;
}

}  // namespace

ValidateReport run_validate(const ValidateOptions& opt) {
  const auto t_start = Clock::now();
  check_stage("a validation", validate_stages(), opt.stage, opt.shard || opt.only_jobs);
  ValidateReport report;
  report.out = !opt.out.empty() ? opt.out : opt.shard ? shard_store(opt.store, *opt.shard, opt.stage) : opt.store;
  check_outputs(opt, report.out);
  const Setup su = load_setup(opt);
  check_memory(opt, su);
  report.budget_samples = su.train.budget_samples;
  const explore::Space& space = *su.problem->space;
  const size_t job_count = space.batch_sizes().size() * opt.seeds.size();
  const std::vector<size_t> jobs = selected_jobs(opt, job_count);
  if (report.out.has_parent_path()) fs::create_directories(report.out.parent_path());
  RelationCampaign oracle = target_campaign(opt, su);
  auto body = [&] {
    const auto data = dnn::data::load_dataset(opt.target_dataset, opt.data);
    if (opt.stage == kStageRuns) {
      report.target_relation = complete_target(opt, oracle, data);
    } else {
      spdlog::info("oracle: training {} on {} at every batch size ({} x {} runs)", su.train.workload,
                   opt.target_dataset, oracle.batch_sizes.size(), oracle.seeds.size());
      oracle.store = report.out;
      if (report.out != opt.store) oracle.resume_from = opt.store;
      const CampaignReport r =
          opt.stage == kStageOracle ? run_relation_jobs(oracle, data, jobs) : run_relation_campaign(oracle, data);
      report.training_runs += r.new_runs;
      report.target_relation = r.set;
      if (opt.stage == kStageOracle) {
        report.jobs = static_cast<int>(jobs.size());
        report.resumed_jobs = report.jobs - r.new_runs;
        return;
      }
    }
    const std::vector<Choice> choices = choose_all(opt, su, report.target_relation, report.out, report);
    report.result = run_jobs(opt, su, data, choices, jobs, report.out, report);
    if (jobs.size() == job_count && report.out == opt.store)
      report.summary = summarize_runs(choices, space, report.result);
  };
  if (opt.shard)
    record_shard_outcome(report.out, body);
  else
    body();
  report.wall_time_s = std::chrono::duration<double>(Clock::now() - t_start).count();
  if (!report.summary.empty()) {
    report.text = format_validation_table(report);
  } else {
    report.text = fmt::format("validation {}, stage {}{}: {} jobs ({} done before), {} training runs; in {}\n",
                              validation_name(opt), opt.stage.empty() ? "all" : opt.stage,
                              opt.shard ? fmt::format(", shard {}/{}", opt.shard->index, opt.shard->count) : "",
                              report.jobs, report.resumed_jobs, report.training_runs, report.out.string());
  }
  return report;
}

}  // namespace pacer::experiments
