#include "experiments/campaigns/adaptive_relation.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <regex>

#include "base/error.hpp"
#include "base/stats.hpp"
#include "base/units.hpp"
#include "explore/adaptive.hpp"
#include "explore/decide.hpp"
#include "explore/problem.hpp"
#include "explore/proxy_budget.hpp"
#include "explore/space.hpp"
#include "traces/store/store.hpp"

namespace pacer::experiments {

namespace fs = std::filesystem;

namespace {

constexpr const char* kTrain = "train";
constexpr const char* kRoundsSpent = "rounds";

bool is_end(const std::string& action) {
  return action == explore::to_string(explore::AdaptiveVerdict::Decided) ||
         action == explore::to_string(explore::AdaptiveVerdict::Budget) || action == kRoundsSpent;
}

// The store that holds the campaign's log and runs: the campaign's (a shard writes its own beside it).
fs::path home_store(const RelationCampaign& c) {
  return c.resume_from.empty() ? c.store : c.resume_from;
}

// True when the runs of round `round` are known: its "train" rows are in the log, or the campaign
// ended before it.
bool planned(const traces::AdaptiveLog& log, int round) {
  return std::any_of(log.decisions.begin(), log.decisions.end(), [&](const traces::AdaptiveLogRow& d) {
    return (d.action == kTrain && d.round == round) || (is_end(d.action) && d.round < round);
  });
}

struct Order {
  int batch_size = 0;
  int seed = 0;
  int64_t to = 0;
};

std::vector<Order> orders_of(const traces::AdaptiveLog& log, int round) {
  std::vector<Order> out;
  for (const auto& d : log.decisions)
    if (d.action == kTrain && d.round == round) out.push_back({d.batch_size, d.seed, d.budget_samples});
  return out;
}

const traces::RelationRun* find_run(const traces::RelationSet& set, int b, int seed) {
  for (const auto& r : set.runs)
    if (r.batch_size == b && r.seed == seed) return &r;
  return nullptr;
}

// An order is done when its run reached the target or trained (at least) to the order's samples.
bool done(const traces::RelationRun* r, const Order& o) {
  return r && (r->reached || r->budget_samples >= o.to);
}

// The device whose caps the campaign decides for.
struct Device {
  std::string profile;
  std::unique_ptr<explore::Space> space;
  std::unique_ptr<explore::Index> index;
  std::vector<double> caps_w;
  explore::ChoiceRule rule;  // the one choice rule, for this profile
};

Device load_device(const fs::path& home, const std::vector<int>& batch_sizes, const AdaptiveSettings& s) {
  const fs::path path = s.profile_store.empty() ? home : s.profile_store;
  if (!fs::exists(path))
    throw SettingError("profile-store",
                       fmt::format("{} does not exist: an adaptive campaign needs the device's profile (pacer profile "
                                   "writes one) to know which batch sizes can win under its caps",
                                   path.string()));
  const auto store = traces::Store::open(path);
  const auto profiles = store.list<traces::ProfileTable>();
  std::string name = s.profile;
  if (name.empty()) {
    if (profiles.size() != 1)
      throw SettingError(
          "profile", fmt::format("{} holds {} profiles ({}): name the device's profile", path.string(), profiles.size(),
                                 profiles.empty() ? "none" : fmt::format("{}", fmt::join(profiles, ", "))));
    name = profiles.front();
  }
  if (!store.has<traces::ProfileTable>(name))
    throw SettingError("profile", fmt::format("{} has no profile '{}' (profiles: {})", path.string(), name,
                                              fmt::join(profiles, ", ")));
  traces::ProfileTable table = store.read<traces::ProfileTable>(name);
  const auto profiled = table.batch_sizes();
  std::vector<int> missing;
  for (const int b : batch_sizes)
    if (!std::binary_search(profiled.begin(), profiled.end(), b)) missing.push_back(b);
  if (!missing.empty())
    throw SettingError("profile", fmt::format("profile '{}' has no point at batch size{} {} (it has {}): profile the "
                                              "campaign's batch sizes, or train only those it has",
                                              name, missing.size() == 1 ? "" : "s", fmt::join(missing, ", "),
                                              fmt::join(profiled, ", ")));
  // The candidates are the campaign's batch sizes.
  std::erase_if(table.points, [&](const traces::ProfilePoint& p) {
    return !std::binary_search(batch_sizes.begin(), batch_sizes.end(), p.batch_size);
  });
  Device d;
  d.profile = name;
  d.space = std::make_unique<explore::Space>(explore::Space::from_profile(table));
  d.index = std::make_unique<explore::Index>(*d.space);
  d.rule = explore::choice_rule(
      *d.space, explore::measured_wins(store, name, false, table.workload, table.device, *d.space), s.guard);
  if (s.caps < 1) throw SettingError("caps", "an adaptive campaign needs at least one cap");
  d.caps_w = base::cap_grid_w(d.space->min_power_w(), d.space->max_power_w(), s.caps);
  return d;
}

int64_t compute_budget(const RelationCampaign& c, const AdaptiveSettings& s) {
  if (s.budget_samples > 0) return s.budget_samples;
  if (std::isnan(s.budget_share)) return 0;
  return std::llround(s.budget_share * static_cast<double>(c.batch_sizes.size() * c.seeds.size()) *
                      static_cast<double>(c.train.budget_samples));
}

explore::AdaptiveOptions engine_options(const RelationCampaign& c, const AdaptiveSettings& s) {
  explore::AdaptiveOptions o;
  o.run_budget_samples = c.train.budget_samples;
  o.compute_budget_samples = static_cast<double>(compute_budget(c, s));
  o.tolerance = s.tolerance;
  o.initial_fraction = s.initial_fraction;
  o.budget_first_share = s.budget_first_share;
  o.initial_seeds = 1;
  o.max_seeds = static_cast<int>(c.seeds.size());
  o.extrapolation = s.extrapolation;
  return o;
}

// The settings that change the decisions when a campaign resumes with others: each stored one that
// differs from the asked one (a setting not recorded, in stores written before it was, is not
// checked; a missing extrapolation is the default, the ratio). One SettingError lists them all.
void check_resume(const fs::path& path, const traces::AdaptiveLog& stored, const traces::AdaptiveLog& asked) {
  struct Mismatch {
    std::string key, what, stored, asked;
  };
  std::vector<Mismatch> out;
  const auto pct = [](double x) { return fmt::format("{:g} %", 100 * x); };
  const auto budget = [](int64_t x) { return x > 0 ? fmt::format("{} samples", x) : std::string("none"); };
  if (!traces::same(stored.tolerance, asked.tolerance))
    out.push_back({"tolerance", "tolerance", pct(stored.tolerance), pct(asked.tolerance)});
  // The compute budget as asked (samples, or a share of the full campaign's most) where the store
  // records it, else the samples it came to; then the run budget, which the engine's orders and
  // round 1 follow (a share of the most follows it too, an absolute budget does not).
  const auto as_asked = [&](const traces::AdaptiveLog& l) {
    const std::string samples = budget(l.compute_budget);
    if (l.compute_budget_asked.empty() || l.compute_budget_asked == samples) return samples;
    return l.compute_budget > 0 ? fmt::format("{} ({})", l.compute_budget_asked, samples) : l.compute_budget_asked;
  };
  if (stored.compute_budget != asked.compute_budget ||
      (!stored.compute_budget_asked.empty() && stored.compute_budget_asked != asked.compute_budget_asked))
    out.push_back({"adaptive-budget", "compute budget", as_asked(stored), as_asked(asked)});
  if (stored.run_budget > 0 && stored.run_budget != asked.run_budget)
    out.push_back({"budget", "run budget", budget(stored.run_budget), budget(asked.run_budget)});
  if (!asked.profile.empty() && stored.profile != asked.profile)
    out.push_back({"profile", "profile", stored.profile, asked.profile});
  const std::string extrapolation = stored.extrapolation.empty()
                                        ? std::string(explore::to_string(explore::AdaptiveExtrapolation::ratio))
                                        : stored.extrapolation;
  if (extrapolation != asked.extrapolation)
    out.push_back(
        {"extrapolation", "extrapolation",
         stored.extrapolation.empty() ? extrapolation + " (not recorded in this store: the default)" : extrapolation,
         asked.extrapolation});
  // Round 1 (explore::plan_round): with a compute budget and a share of it, that share; else the
  // fraction of the run budget. Only the one that applies is compared (the compute budgets are equal here).
  const auto of_budget = [](const traces::AdaptiveLog& l) {
    return explore::round_one_spends_budget(static_cast<double>(l.compute_budget), l.budget_first_share);
  };
  if (!std::isnan(stored.budget_first_share) && !std::isnan(stored.first_round) &&
      stored.compute_budget == asked.compute_budget) {
    if (of_budget(stored) || of_budget(asked)) {
      if (!traces::same(stored.budget_first_share, asked.budget_first_share))
        out.push_back({"first-round", "round 1 of the compute budget", pct(stored.budget_first_share),
                       pct(asked.budget_first_share)});
    }
    if (!(of_budget(stored) && of_budget(asked)) && !traces::same(stored.first_round, asked.first_round))
      out.push_back({"first-round", "round 1 of the run budget", pct(stored.first_round), pct(asked.first_round)});
  }
  if (stored.caps > 0 && stored.caps != asked.caps)
    out.push_back({"caps", "caps", std::to_string(stored.caps), std::to_string(asked.caps)});
  if (!stored.guard.empty() && stored.guard != asked.guard)
    out.push_back({"guard", "guard", stored.guard, asked.guard});
  if (out.empty()) return;
  std::vector<std::string> lines;
  for (const auto& m : out) lines.push_back(fmt::format("{} {} (asked: {})", m.what, m.stored, m.asked));
  throw SettingError(out.front().key,
                     fmt::format("{} holds the adaptive campaign '{}' decided with {}: resume it with the stored "
                                 "setting{}, or train it into a fresh store (or under another relation name)",
                                 path.string(), stored.name, fmt::join(lines, ", "), out.size() == 1 ? "" : "s"));
}

// The campaign's log in the store at `path` (checked against the settings, check_resume), or a new
// one with the settings. `profile` "": not known here (not checked).
traces::AdaptiveLog read_log(const fs::path& path, const RelationCampaign& c, const AdaptiveSettings& s,
                             const std::string& profile) {
  traces::AdaptiveLog log;
  log.name = c.name;
  log.tolerance = s.tolerance;
  log.compute_budget = compute_budget(c, s);
  log.compute_budget_asked = s.budget_samples > 0 ? fmt::format("{} samples", s.budget_samples)
                             : std::isnan(s.budget_share)
                                 ? std::string("none")
                                 : fmt::format("{:g} % of the full campaign's most", 100 * s.budget_share);
  log.run_budget = c.train.budget_samples;
  log.profile = profile;
  log.extrapolation = std::string(explore::to_string(s.extrapolation));
  log.first_round = s.initial_fraction;
  log.budget_first_share = s.budget_first_share;
  log.caps = s.caps;
  log.guard = s.guard ? fmt::format("{}", *s.guard) : std::string("auto");
  if (!fs::exists(path)) return log;
  const auto store = traces::Store::open(path);
  if (!store.has<traces::AdaptiveLog>(c.name)) return log;
  traces::AdaptiveLog old = store.read<traces::AdaptiveLog>(c.name);
  check_resume(path, old, log);
  // A store written before these were recorded: recorded from now on (the log's next rows write them).
  old.extrapolation = log.extrapolation;
  old.first_round = log.first_round;
  old.budget_first_share = log.budget_first_share;
  old.caps = log.caps;
  old.guard = log.guard;
  old.compute_budget_asked = log.compute_budget_asked;
  old.run_budget = log.run_budget;
  return old;
}

// Engine seeds are 0, 1, ... : the campaign's seeds in the order given.
int engine_seed(const RelationCampaign& c, int seed) {
  const auto it = std::find(c.seeds.begin(), c.seeds.end(), seed);
  return it == c.seeds.end() ? -1 : static_cast<int>(it - c.seeds.begin());
}

std::vector<explore::AdaptiveRun> engine_runs(const RelationCampaign& c, const traces::RelationSet& set,
                                              const traces::LearningCurve& curve, const traces::AdaptiveLog& log) {
  std::vector<explore::AdaptiveRun> out;
  for (const auto& r : set.runs) {
    const int seed = engine_seed(c, r.seed);
    if (seed < 0 || !std::binary_search(c.batch_sizes.begin(), c.batch_sizes.end(), r.batch_size)) continue;
    explore::AdaptiveRun a;
    a.batch_size = r.batch_size;
    a.seed = seed;
    a.samples = r.samples;
    a.reached = r.reached;
    a.exhausted = !r.reached && r.budget_samples >= c.train.budget_samples;
    for (const auto& p : curve.points)
      if (p.batch_size == r.batch_size && p.seed == r.seed) a.curve.emplace_back(p.samples, p.metric);
    std::sort(a.curve.begin(), a.curve.end());
    for (const auto& d : log.decisions)
      if (d.action == kTrain && d.batch_size == r.batch_size && d.seed == r.seed)
        a.last_round = std::max(a.last_round, d.round);
    out.push_back(std::move(a));
  }
  return out;
}

explore::AdaptivePlan plan(const RelationCampaign& c, const AdaptiveSettings& s, const Device& d,
                           const traces::RelationSet& set, const traces::LearningCurve& curve,
                           const traces::AdaptiveLog& log, int round) {
  explore::AdaptiveProblem problem;
  problem.index = d.index.get();
  problem.caps_w = d.caps_w;
  problem.rule = d.rule;
  problem.relation = relation_header(c);
  // problem.transfer stays the identity {0, 0}: this campaign decides on the proxy's runs alone (the
  // budget's replays carry the transfer); `pacer select` adds it where the store holds a target of
  // another data set, so there the two may differ by the transfer margin (docs/explore.md).
  const auto runs = round == 0 ? std::vector<explore::AdaptiveRun>{} : engine_runs(c, set, curve, log);
  return explore::plan_round(problem, runs, round, engine_options(c, s));
}

traces::LearningCurve curve_header(const traces::RelationSet& set) {
  traces::LearningCurve curve;
  curve.name = set.name;
  curve.metric = set.metric;
  curve.higher_is_better = set.higher_is_better;
  curve.source = "evaluations";
  return curve;
}

// Where a continued run keeps its state: beside the campaign's store, STEM.adaptive/NAME/b<B>-seed<S>.pt.
fs::path state_path(const RelationCampaign& c, int b, int seed) {
  const fs::path home = home_store(c);
  return home.parent_path() / (home.stem().string() + ".adaptive") / c.name / fmt::format("b{}-seed{}.pt", b, seed);
}

// A round never trains past the compute budget: its orders, most-needed first (the engine's order),
// keep while they fit in what the budget leaves (a run's cost rounded up to whole batches); the
// first that does not is shortened to the whole batches left when that is at least one batch (and
// the budget is then spent), else it is dropped and the later, cheaper orders may still fit. Nothing left to train: the
// campaign ends on its budget. Returns the log lines of the orders cut or dropped.
std::vector<std::pair<int, std::string>> fit_to_budget(explore::AdaptivePlan& p, const traces::RelationSet& set,
                                                       int64_t budget, const std::vector<int>& seeds) {
  std::vector<std::pair<int, std::string>> cut;
  if (budget <= 0 || p.verdict != explore::AdaptiveVerdict::Continue) return cut;
  auto left = static_cast<int64_t>(std::floor(static_cast<double>(budget) - p.compute_used));
  std::vector<explore::AdaptiveOrder> kept;
  for (auto o : p.orders) {
    const traces::RelationRun* r = find_run(set, o.batch_size, seeds.at(static_cast<size_t>(o.seed)));
    const int64_t from = r && !o.new_seed ? r->samples : 0;
    // A run trains whole batches until it has its samples: its cost is rounded up to one.
    const int64_t b = o.batch_size;
    const int64_t cost = (o.train_to_samples + b - 1) / b * b - from;
    if (cost <= left) {
      left -= cost;
      kept.push_back(o);
      continue;
    }
    const int64_t fits = left / b * b;
    if (fits >= b) {
      cut.emplace_back(o.batch_size,
                       fmt::format("seed {} trains to {} samples, not {}: the compute budget leaves {} samples",
                                   seeds.at(static_cast<size_t>(o.seed)), from + fits, o.train_to_samples, left));
      o.train_to_samples = from + fits;
      left = 0;
      kept.push_back(o);
    } else {
      cut.emplace_back(o.batch_size, fmt::format("seed {} not trained: the compute budget leaves {} samples",
                                                 seeds.at(static_cast<size_t>(o.seed)), left));
    }
  }
  p.orders = std::move(kept);
  if (p.orders.empty()) {
    p.verdict = explore::AdaptiveVerdict::Budget;
    p.reason = fmt::format("compute budget spent: {:.4g} of {} samples, too little left for the next round's runs",
                           p.compute_used, budget);
  }
  return cut;
}

}  // namespace

void check_adaptive_device(const fs::path& home, const std::vector<int>& batch_sizes, const AdaptiveSettings& s) {
  load_device(home, batch_sizes, s);
}

std::string round_stage(int round) {
  return fmt::format("round-{}", round);
}

int stage_round(const std::string& stage, int max_rounds) {
  static const std::regex form(R"(round-([1-9][0-9]{0,3}))");
  std::smatch m;
  if (std::regex_match(stage, m, form)) {
    const int k = static_cast<int>(units::to_integer(m[1].str(), 1).value_or(0));
    if (k <= max_rounds) return k;
  }
  throw OptionError(
      "stage", fmt::format("'{}' is not a round of this campaign (round-1 to {})", stage, round_stage(max_rounds)));
}

std::vector<JobList> adaptive_job_lists(const std::string& record, const fs::path& store,
                                        const std::vector<int>& batch_sizes, const std::vector<int>& seeds,
                                        int max_rounds) {
  if (max_rounds < 1) throw SettingError("max-rounds", "an adaptive campaign needs at least one round");
  std::vector<JobList> out;
  for (int k = 1; k <= max_rounds; ++k) {
    JobList l = relation_job_list(record, store, batch_sizes, seeds);
    l.stage = round_stage(k);
    l.decide = true;
    out.push_back(std::move(l));
  }
  return out;
}

traces::AdaptiveLog decide_adaptive_round(const RelationCampaign& c, const AdaptiveSettings& s, int round) {
  const traces::RelationSet header = relation_header(c, nullptr);  // no data here: its sizes are not checked
  const Device d = load_device(home_store(c), c.batch_sizes, s);
  auto store = traces::Store::open_or_create(c.store);
  traces::AdaptiveLog log = read_log(c.store, c, s, d.profile);
  for (int k = 0; k <= round; ++k) {
    if (planned(log, k + 1)) continue;  // the decision after round k is made
    if (!is_end(log.outcome()) && k > s.max_rounds) break;
    const traces::RelationSet set = stored_relation(c.store, header).value_or(header);
    const traces::LearningCurve curve =
        store.has<traces::LearningCurve>(c.name) ? store.read<traces::LearningCurve>(c.name) : curve_header(set);
    if (k > 0) {  // every run of round k must be in the store
      std::vector<std::string> missing;
      for (const auto& o : orders_of(log, k))
        if (!done(find_run(set, o.batch_size, o.seed), o))
          missing.push_back(fmt::format("b={} seed={}", o.batch_size, o.seed));
      if (!missing.empty())
        throw Error(
            fmt::format("round {} of '{}' is not complete in {} ({} not trained to its samples yet): run "
                        "the round (or merge its shards) before its decision",
                        k, c.name, c.store.string(), fmt::join(missing, ", ")));
    }
    explore::AdaptivePlan p = plan(c, s, d, set, curve, log, k);
    const auto cut = fit_to_budget(p, set, compute_budget(c, s), c.seeds);
    traces::AdaptiveLog add = log;
    add.decisions.clear();
    const auto compute = static_cast<int64_t>(p.compute_used);
    for (const auto& e : p.decisions)
      add.decisions.push_back({k, e.action, e.batch_size, -1, 0, compute, traces::kNaN, e.why});
    double worst = 0;
    for (const auto& cap : p.caps) worst = std::max(worst, cap.expected_regret);
    if (p.verdict == explore::AdaptiveVerdict::Continue && k >= s.max_rounds) {
      add.decisions.push_back({k, kRoundsSpent, 0, -1, 0, compute, worst,
                               fmt::format("the last round ({}) ran; {}", s.max_rounds, p.reason)});
    } else if (p.verdict == explore::AdaptiveVerdict::Continue) {
      for (const auto& o : p.orders)
        add.decisions.push_back({k + 1, kTrain, o.batch_size, c.seeds.at(static_cast<size_t>(o.seed)),
                                 o.train_to_samples, compute, traces::kNaN,
                                 o.new_seed ? "a new seed" : "continued from where it stopped"});
    } else {
      add.decisions.push_back({k, std::string(explore::to_string(p.verdict)), 0, -1, 0, compute, worst, p.reason});
    }
    for (const auto& [b, why] : cut) add.decisions.push_back({k, "budget-cut", b, -1, 0, compute, traces::kNaN, why});
    for (const auto& row : add.decisions)
      if (row.action != kTrain || k == 0)
        spdlog::info("{}: round {} {:<8} {}{}", c.name, row.round, row.action,
                     row.batch_size > 0 ? fmt::format("b={} ", row.batch_size) : "", row.reason);
    if (k > 0 && p.verdict == explore::AdaptiveVerdict::Continue && k < s.max_rounds)
      spdlog::info("{}: round {} trains {} runs ({})", c.name, k + 1, p.orders.size(), p.reason);
    log = store.add_rows(add);
    if (is_end(log.outcome())) break;
  }
  return log;
}

CampaignReport run_adaptive_round(const RelationCampaign& c, const dnn::data::DataSplit& data,
                                  const AdaptiveSettings& s, int round, std::optional<Shard> shard,
                                  const dnn::TrainHooks& hooks) {
  traces::RelationSet header = relation_header(c, &data);
  const fs::path home = home_store(c);
  traces::AdaptiveLog log = read_log(home, c, s, "");
  std::vector<Order> orders;
  if (planned(log, round)) {
    orders = orders_of(log, round);
  } else if (round == 1) {  // round 1 needs no decision: every batch size for a short budget
    const Device d = load_device(home_store(c), c.batch_sizes, s);
    explore::AdaptivePlan p = plan(c, s, d, header, curve_header(header), log, 0);
    fit_to_budget(p, header, compute_budget(c, s), c.seeds);  // as its decision would
    for (const auto& o : p.orders)
      orders.push_back({o.batch_size, c.seeds.at(static_cast<size_t>(o.seed)), o.train_to_samples});
  } else {
    throw Error(
        fmt::format("round {} of '{}' is not planned yet: {} has no decision after round {} (make that "
                    "decision first)",
                    round, c.name, home.string(), round - 1));
  }
  if (shard) {
    std::vector<Order> mine;
    for (const size_t j : shard_jobs(orders.size(), *shard)) mine.push_back(orders[j]);
    orders = std::move(mine);
  }
  CampaignReport report;
  report.set = header;
  report.curve = curve_header(header);
  // Checked before any run trains (each run's budget is its order's, so budgets are not compared).
  std::optional<traces::RelationSet> at_home = fs::exists(home) ? stored_relation(home, header) : std::nullopt;
  auto store = traces::Store::open_or_create(c.store);
  std::optional<traces::RelationSet> here = stored_relation(c.store, header);
  if (at_home) keep_unrecorded(header, *at_home);
  if (here) keep_unrecorded(header, *here);
  base::Progress progress(orders.size());
  for (const Order& o : orders) {
    const traces::RelationRun* before = here ? find_run(*here, o.batch_size, o.seed) : nullptr;
    if (!done(before, o) && at_home) {
      const traces::RelationRun* h = find_run(*at_home, o.batch_size, o.seed);
      if (done(h, o) || !before) before = h;
    }
    if (done(before, o)) {
      progress.next();
      ++report.resumed_runs;
      continue;
    }
    RelationCampaign one = c;
    one.batch_sizes = {o.batch_size};
    one.seeds = {o.seed};
    one.store.clear();  // trained here, written below: the run replaces its shorter self
    one.resume_from.clear();
    one.train.budget_samples = o.to;
    // The run continues from its state when it has one (a copy: the state moves on once the run is stored).
    const fs::path state = state_path(c, o.batch_size, o.seed);
    const fs::path part = fs::path(state.string() + ".part");
    fs::create_directories(state.parent_path());
    if (before && fs::exists(state))
      fs::copy_file(state, part, fs::copy_options::overwrite_existing);
    else
      fs::remove(part);
    one.train.run_state = part.string();
    const CampaignReport r = run_relation_campaign(one, data, hooks, {}, &progress);
    traces::RelationRun run = r.set.runs.at(0);
    if (before && fs::exists(state) && !std::isnan(before->wall_time_s)) run.wall_time_s += before->wall_time_s;
    traces::RelationSet add = header;
    add.runs = {run};
    here = store.add_rows(add);
    // The points after what the store holds of the run (a run trained again from the start, its
    // state lost, repeats the earlier ones, whose estimates may differ in their last digits).
    traces::LearningCurve points = r.curve;
    const int64_t stored_to = before ? before->samples : -1;
    std::erase_if(points.points, [&](const traces::CurvePoint& p) { return p.samples <= stored_to; });
    if (!points.points.empty()) store.add_rows(points);
    fs::rename(part, state);
    ++report.new_runs;
    report.train_time_s += r.train_time_s;
    report.eval_time_s += r.eval_time_s;
  }
  if (here) report.set = *here;
  if (store.has<traces::LearningCurve>(c.name)) report.curve = store.read<traces::LearningCurve>(c.name);
  return report;
}

AdaptiveReport run_adaptive_campaign(const RelationCampaign& c, const dnn::data::DataSplit& data,
                                     const AdaptiveSettings& s, const dnn::TrainHooks& hooks,
                                     const std::function<void(int round)>& run_round) {
  if (c.store.empty()) throw Error("an adaptive relation campaign needs a store for its decisions");
  AdaptiveReport out;
  CampaignReport& total = out.campaign;
  for (int round = 1;; ++round) {
    const traces::AdaptiveLog log = decide_adaptive_round(c, s, round - 1);
    if (is_end(log.outcome()) || round > s.max_rounds) break;
    if (run_round) {
      run_round(round);
      continue;
    }
    const CampaignReport r = run_adaptive_round(c, data, s, round, std::nullopt, hooks);
    total.new_runs += r.new_runs;
    total.train_time_s += r.train_time_s;
    total.eval_time_s += r.eval_time_s;
  }
  const auto store = traces::Store::open(c.store);
  out.log = store.read<traces::AdaptiveLog>(c.name);
  const traces::RelationSet header = relation_header(c);
  total.set = stored_relation(c.store, header).value_or(header);
  total.curve =
      store.has<traces::LearningCurve>(c.name) ? store.read<traces::LearningCurve>(c.name) : curve_header(header);
  out.decided =
      plan(c, s, load_device(home_store(c), c.batch_sizes, s), total.set, total.curve, out.log, out.log.rounds())
          .relation;
  for (const auto& r : total.set.runs) out.compute_used += static_cast<double>(explore::run_compute_samples(r));
  out.compute_most =
      static_cast<double>(c.batch_sizes.size() * c.seeds.size()) * static_cast<double>(c.train.budget_samples);
  return out;
}

std::string format_adaptive_log(const traces::AdaptiveLog& log) {
  std::string s = fmt::format(
      "decisions of the adaptive campaign '{}' (tolerance {:g} % expected regret{}):\n", log.name, 100 * log.tolerance,
      log.compute_budget > 0 ? fmt::format(", compute budget {} samples", log.compute_budget) : "");
  for (const auto& d : log.decisions) {
    if (d.action == kTrain) {
      s += fmt::format("  round {:<2} train    b={:<5} seed={:<3} to {} samples ({})\n", d.round, d.batch_size, d.seed,
                       d.budget_samples, d.reason);
    } else if (is_end(d.action)) {
      s += fmt::format("  round {:<2} {:<8} after {} samples: {}\n", d.round, d.action, d.compute_samples, d.reason);
    } else {
      s += fmt::format("  round {:<2} {:<8} b={:<5} {}\n", d.round, d.action, d.batch_size, d.reason);
    }
  }
  const std::string end = log.outcome();
  s += end.empty() ? "  (the campaign has not ended yet)\n"
                   : fmt::format("ended: {} after round {}\n",
                                 end == "decided"  ? "decided"
                                 : end == "budget" ? "compute budget spent"
                                                   : "last round ran",
                                 log.rounds());
  return s;
}

}  // namespace pacer::experiments
