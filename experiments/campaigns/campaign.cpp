#include "experiments/campaigns/campaign.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <set>
#include <string_view>

#include "base/error.hpp"
#include "base/progress.hpp"
#include "dnn/nets.hpp"
#include "traces/store/store.hpp"
#include "traces/store/store_file.hpp"

namespace pacer::experiments {

traces::RelationSet relation_header(const RelationCampaign& c) {
  traces::RelationSet set;
  set.name = c.name;
  set.workload = c.train.workload;
  set.dataset = c.dataset;
  set.metric = c.metric;
  set.higher_is_better = c.train.higher_is_better;
  set.target = c.train.target;
  set.lr_rule = dnn::learning_rate_rule(c.train.base_lr, c.train.base_batch);
  set.base_lr = c.train.base_lr;
  set.base_batch = c.train.base_batch;
  set.optimizer = c.train.optimizer;
  return set;
}

std::string checkpoint_identity(const std::string& path) {
  if (path.empty()) return "none";
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("cannot read checkpoint {}: pre-train it again or name another", path));
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return fmt::format("crc32={:08x} bytes={}", traces::file::crc32(bytes.data(), bytes.size()), bytes.size());
}

traces::RelationSet relation_header(const RelationCampaign& c, const dnn::data::DataSplit* data) {
  traces::RelationSet set = relation_header(c);
  const dnn::TrainOptions& t = c.train;
  set.eval_every = t.eval_every_samples;
  set.eval_stop = t.eval_stop == t.kScreened ? fmt::format("{} (screen {} samples, margin {:g}, z {:g})", t.eval_stop,
                                                           t.screen_samples, t.screen_margin, t.eval_stop_z)
                                             : t.eval_stop;
  set.checkpoint = checkpoint_identity(t.init_checkpoint);
  if (data) {
    set.train_samples = data->train.size();
    set.eval_samples = t.eval_max_samples > 0 ? std::min<int64_t>(t.eval_max_samples, data->eval.size())
                                              : static_cast<int64_t>(data->eval.size());
    set.split_seed = static_cast<int64_t>(data->split_seed);
  }
  return set;
}

namespace {

// The training settings a relation records, with what "not recorded" is for each.
struct SettingField {
  std::string_view key, what;
  std::function<std::string(const traces::RelationSet&)> value;  // "": not recorded
  std::function<void(traces::RelationSet&)> unrecord;
};

const std::vector<SettingField>& setting_fields() {
  using S = traces::RelationSet;
  static const std::vector<SettingField> fields = {
      {"max-train", "training samples",
       [](const S& s) { return s.train_samples > 0 ? std::to_string(s.train_samples) : ""; },
       [](S& s) { s.train_samples = 0; }},
      {"split-seed", "split seed", [](const S& s) { return s.split_seed >= 0 ? std::to_string(s.split_seed) : ""; },
       [](S& s) { s.split_seed = -1; }},
      {"eval-samples", "held-out samples per evaluation",
       [](const S& s) { return s.eval_samples > 0 ? std::to_string(s.eval_samples) : ""; },
       [](S& s) { s.eval_samples = 0; }},
      {"eval-every", "evaluation every",
       [](const S& s) { return s.eval_every > 0 ? fmt::format("{} samples", s.eval_every) : ""; },
       [](S& s) { s.eval_every = 0; }},
      {"eval-stop", "evaluation stop", [](const S& s) { return s.eval_stop; }, [](S& s) { s.eval_stop.clear(); }},
      {"checkpoint", "checkpoint", [](const S& s) { return s.checkpoint; }, [](S& s) { s.checkpoint.clear(); }},
  };
  return fields;
}

// A stored run is the result a run under `budget` gives when it reached the target within that
// budget (its own budget may be larger: training does not depend on it), or it was censored at
// exactly that budget. A run that reached past it, or was censored at another budget, is not.
bool same_under_budget(const traces::RelationRun& r, int64_t budget) {
  return r.reached ? r.samples <= budget : r.budget_samples == budget;
}

}  // namespace

void keep_unrecorded(traces::RelationSet& header, const traces::RelationSet& stored) {
  if (stored.runs.empty()) return;
  for (const auto& f : setting_fields())
    if (f.value(stored).empty()) f.unrecord(header);
}

std::optional<traces::RelationSet> stored_relation(const std::filesystem::path& path, const traces::RelationSet& header,
                                                   int64_t budget) {
  const traces::Store s = traces::Store::open(path);
  if (!s.has<traces::RelationSet>(header.name)) return std::nullopt;
  traces::RelationSet old = s.read<traces::RelationSet>(header.name);
  struct Mismatch {
    std::string key, text;
  };
  std::vector<Mismatch> out;
  auto differs = [&](std::string_view key, std::string_view what, const std::string& a, const std::string& b) {
    if (a != b) out.push_back({std::string(key), fmt::format("{} {} (asked: {})", what, a, b)});
  };
  differs("name", "workload", old.workload, header.workload);
  differs("name", "dataset", old.dataset, header.dataset);
  differs("name", "target", fmt::format("{:g}", old.target), fmt::format("{:g}", header.target));
  differs("name", "learning-rate rule", old.lr_rule, header.lr_rule);
  differs("name", "optimizer", old.optimizer, header.optimizer);
  for (const auto& f : setting_fields()) {
    const std::string a = f.value(old), b = f.value(header);
    if (!a.empty() && !b.empty()) differs(f.key, f.what, a, b);
  }
  if (budget > 0) {
    std::vector<std::string> runs;
    std::set<int64_t> budgets;
    for (const auto& r : old.runs)
      if (!same_under_budget(r, budget)) {
        budgets.insert(r.budget_samples);
        runs.push_back(r.reached ? fmt::format("b={} seed={} reached after {}", r.batch_size, r.seed, r.samples)
                                 : fmt::format("b={} seed={} censored at {}", r.batch_size, r.seed, r.budget_samples));
      }
    if (!runs.empty())
      out.push_back(
          {"budget",
           fmt::format("budget {} samples (asked: {}; {} {} not the asked budget's result: {}{})",
                       fmt::join(budgets, ", "), budget, runs.size(), runs.size() == 1 ? "run is" : "runs are",
                       fmt::join(runs.begin(), runs.begin() + std::min<long>(3, std::ssize(runs)), ", "),
                       runs.size() > 3 ? ", ..." : "")});
  }
  if (out.empty()) return old;
  std::vector<std::string> texts;
  for (const auto& m : out) texts.push_back(m.text);
  throw SettingError(out.front().key,
                     fmt::format("{} holds relation '{}' trained with {}: resume it with the stored setting{}, or "
                                 "train it into another store (or under another relation name)",
                                 path.string(), header.name, fmt::join(texts, ", "), out.size() == 1 ? "" : "s"));
}

CampaignReport run_relation_campaign(const RelationCampaign& c, const dnn::data::DataSplit& data,
                                     const dnn::TrainHooks& hooks,
                                     const std::function<void(const traces::RelationRun&)>& on_run,
                                     base::Progress* progress) {
  if (c.batch_sizes.empty() || c.seeds.empty()) throw Error("a relation campaign needs batch sizes and seeds");
  CampaignReport report;
  traces::RelationSet& set = report.set;
  set = relation_header(c, &data);
  traces::LearningCurve& curve = report.curve;
  curve.name = set.name;
  curve.metric = set.metric;
  curve.higher_is_better = set.higher_is_better;
  curve.source = "evaluations";

  std::optional<traces::Store> store;
  std::set<std::pair<int, int>> done;
  // Checked before any run trains or anything is written: every stored run must be this
  // campaign's result (its settings, and its budget run by run).
  const traces::RelationSet asked = set;
  auto stored = [&](const std::filesystem::path& path) {
    auto old = stored_relation(path, asked, c.train.budget_samples);
    if (old) keep_unrecorded(set, *old);
    return old;
  };
  std::error_code ec;
  const bool other_home = !c.resume_from.empty() && std::filesystem::exists(c.resume_from) &&
                          !std::filesystem::equivalent(c.resume_from, c.store, ec);
  const auto from_home = other_home ? stored(c.resume_from) : std::nullopt;
  if (!c.store.empty()) {
    store = traces::Store::open_or_create(c.store);
    if (const auto old = stored(c.store)) {
      set.runs = old->runs;
      for (const auto& r : old->runs) done.insert({r.batch_size, r.seed});
      // Points of runs the relation does not hold were cut off mid-way.
      if (store->has<traces::LearningCurve>(set.name))
        for (const auto& p : store->read<traces::LearningCurve>(set.name).points)
          if (done.count({p.batch_size, p.seed})) curve.points.push_back(p);
      if (!done.empty())
        spdlog::info("resuming relation '{}': {} runs already in {}", set.name, done.size(), c.store.string());
    }
  }
  if (from_home)
    for (const auto& r : from_home->runs) done.insert({r.batch_size, r.seed});
  report.resumed_runs = static_cast<int>(done.size());
  size_t to_run = 0;
  for (const int b : c.batch_sizes)
    for (const int seed : c.seeds) to_run += !done.count({b, seed});
  base::Progress own_progress(to_run);
  if (!progress) progress = &own_progress;
  for (const int b : c.batch_sizes)
    for (const int seed : c.seeds) {
      if (done.count({b, seed})) continue;
      dnn::TrainOptions t = c.train;
      t.batch_size = b;
      t.seed = seed;
      // The run's own memory of the held-out margins: a memory shared with the runs before it made
      // the learning curve's estimates of stopped evaluations depend on them.
      const auto r = dnn::train_to_target(t, data, hooks);
      traces::RelationRun run;
      run.batch_size = b;
      run.seed = seed;
      run.reached = r.reached;
      run.samples = r.samples;
      run.budget_samples = t.budget_samples;
      run.wall_time_s = r.wall_time_s;
      run.final_metric = r.final_metric;
      run.learning_rate = r.learning_rate;
      run.threads = r.threads;
      set.runs.push_back(run);
      for (const auto& e : r.history) curve.points.push_back({b, seed, e.samples, e.metric});
      if (store) {  // after every run: an interruption loses at most one run
        // Added under the writers' lock to what the store holds now: another campaign training
        // other seeds into this relation may have written runs since this one read it.
        set = store->add_rows(set);
        curve = store->add_rows(curve);  // the runs' points, as the relation's runs
      }
      ++report.new_runs;
      report.train_time_s += r.wall_time_s;
      report.eval_time_s += r.eval_time_s;
      spdlog::info("{} {}: b={:<4} seed={:<3} {} after {} samples ({} {:.4f}, lr {:.3g}, {:.1f} s, {:.0f} samples/s)",
                   progress->next(), set.name, b, seed, r.reached ? "reached" : "CENSORED", r.samples, set.metric,
                   r.final_metric, r.learning_rate, r.wall_time_s,
                   (r.samples - r.resumed_samples) / std::max(1e-9, r.wall_time_s - r.eval_time_s));
      if (on_run) on_run(run);
    }
  return report;
}

std::string record_name(std::string dataset) {
  std::replace(dataset.begin(), dataset.end(), '/', '_');
  return dataset;
}

std::string default_checkpoint(const std::string& workload) {
  const auto spec = models::parse_workload(workload);
  return fmt::format("pacer-out/{}-{}-pretrain.pt", spec.base, spec.task == "text" ? "austen" : "fmnist");
}

std::string format_relation(const traces::RelationSet& set) {
  const auto r = set.relation_vector();
  std::string os = fmt::format("relation {} ({} on {}, {} >= {:.4f}, {}, {})\n", set.name, set.workload, set.dataset,
                               set.metric, set.target, set.optimizer, set.lr_rule);
  os += fmt::format("{:>6} {:>5} {:>8} {:>14} {:>12} {:>8} {:>10} {:>10}\n", "b", "runs", "reached", "mean samples",
                    "std", "r(b)", "mean s", "lr");
  for (const int b : set.batch_sizes()) {
    int runs = 0, reached = 0;
    double wall = 0, lr = NAN;
    for (const auto& run : set.runs)
      if (run.batch_size == b) {
        ++runs;
        reached += run.reached;
        wall += run.wall_time_s;
        lr = run.learning_rate;
      }
    const auto it = r.find(b);
    os += fmt::format("{:>6} {:>5} {:>8} {:>14.0f} {:>12.0f} {:>8} {:>10.1f} {:>10.3g}\n", b, runs, reached,
                      set.mean_samples(b), set.std_samples(b),
                      it == r.end() ? std::string("n/a") : fmt::format("{:.3f}", it->second), wall / runs, lr);
  }
  return os;
}

CampaignReport run_relation_jobs(const RelationCampaign& c, const dnn::data::DataSplit& data,
                                 const std::vector<size_t>& jobs, const dnn::TrainHooks& hooks) {
  const auto all = relation_jobs(c.batch_sizes, c.seeds);
  CampaignReport report;
  if (!c.store.empty()) traces::Store::open_or_create(c.store);  // a shard without jobs still leaves a store
  base::Progress progress(jobs.size());  // [k/N] over the jobs (one already stored counts as done at once)
  for (const size_t j : jobs) {
    // One job is a campaign of one (b, seed); the lr rule and base batch come from the whole
    // campaign (c.train), so every shard trains exactly as the serial campaign would.
    RelationCampaign one = c;
    one.batch_sizes = {all.at(j).first};
    one.seeds = {all.at(j).second};
    const CampaignReport r = run_relation_campaign(one, data, hooks, {}, &progress);
    if (r.new_runs == 0) progress.next();  // stored before: done without a line
    report.set = r.set;
    report.resumed_runs += r.new_runs == 0;
    report.new_runs += r.new_runs;
    report.train_time_s += r.train_time_s;
    report.eval_time_s += r.eval_time_s;
  }
  return report;
}

CampaignReport run_relation_shard(const RelationCampaign& c, const dnn::data::DataSplit& data, Shard s,
                                  const dnn::TrainHooks& hooks) {
  CampaignReport report;
  record_shard_outcome(c.store, [&] {
    report = run_relation_jobs(c, data, shard_jobs(relation_jobs(c.batch_sizes, c.seeds).size(), s), hooks);
  });
  return report;
}

}  // namespace pacer::experiments
