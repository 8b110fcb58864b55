#include "experiments/bench/adaptive_train_bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "base/error.hpp"
#include "base/stats.hpp"
#include "dnn/data/datasets.hpp"
#include "explore/curve_fit.hpp"
#include "explore/decide.hpp"
#include "explore/policy.hpp"
#include "explore/problem.hpp"
#include "explore/space.hpp"
#include "explore/sweep.hpp"
#include "hw/executor.hpp"
#include "hw/open_device.hpp"
#include "hw/profiler.hpp"
#include "models/workloads/net_spec.hpp"
#include "models/workloads/workload.hpp"
#include "traces/catalog/catalog.hpp"
#include "traces/store/outputs.hpp"
#include "traces/store/store.hpp"

namespace pacer::experiments {

namespace fs = std::filesystem;

namespace {

double compute_of(const traces::RelationSet& set) {
  double s = 0;
  for (const auto& r : set.runs) s += static_cast<double>(r.samples);
  return s;
}

struct Row {
  std::string workload, dataset;
  double full_compute = 0, adaptive_compute = 0;
  ChoiceAgreement agreement;   // the adaptive campaign's choices against the full one's
  ChoiceAgreement seed_drop;   // the full campaign's choices kept when one of its seeds is left out
  ChoiceAgreement seed_alone;  // the full campaign's choices kept by each of its seeds alone
  int64_t budget = 0;          // the adaptive campaign's compute budget (0: none)
  std::string outcome;
  int rounds = 0;
  double full_s = 0, adaptive_s = 0;
};

// The workload's profile on the emulated board (virtual time), written into `store` once.
void profile(const AdaptiveTrainBenchOptions& o, const std::string& workload, const fs::path& store) {
  if (fs::exists(store) && !traces::Store::open(store).list<traces::ProfileTable>().empty()) return;
  hw::DeviceRequest req;
  req.spec = "emulated:" + o.device;
  req.workload = models::describe_workload(workload);
  hw::OpenedDevice board = hw::open_device(req);
  hw::VirtualExecutor executor(*board.emulated);
  hw::ProfileOptions p;
  p.workload = workload;
  p.batch_sizes = o.batch_sizes;
  p.store = store;
  p.device_spec = board.spec;
  p.source = "the adaptive campaigns benchmark";
  hw::run_profile(*board.device, executor, p);
}

RelationRequest request(const AdaptiveTrainBenchOptions& o, const std::string& workload, const std::string& dataset,
                        double target, const fs::path& store, const std::string& name) {
  RelationRequest r;
  r.workload = workload;
  r.dataset = dataset;
  r.checkpoint = "none";
  r.batch_sizes = o.batch_sizes;
  r.seeds = o.seeds;
  r.target = target;
  r.train.threads = o.threads;
  r.train.eval_every_samples = o.eval_every;
  r.train.eval_max_samples = o.eval_samples;
  r.train.budget_samples = o.budget;
  r.data.max_train = o.max_train;
  r.name = name;
  r.store = store;
  return r;
}

// The adaptive campaign's record: one per extrapolation and compute budget.
std::string adaptive_name(const AdaptiveTrainBenchOptions& o) {
  std::string name = "adaptive";
  if (o.adaptive.extrapolation != explore::kAdaptiveExtrapolation)
    name += fmt::format("-{}", explore::to_string(o.adaptive.extrapolation));
  if (!std::isnan(o.budget_of_full)) name += fmt::format("-budget-{:g}pct", 100 * o.budget_of_full);
  return name;
}

}  // namespace

ChoiceAgreement compare_adaptive(const explore::Space& space, const explore::ChoiceRule& rule,
                                 const std::vector<double>& caps_w, const traces::RelationSet& full,
                                 const RelationOutcome& adaptive) {
  if (!adaptive.decided)
    throw Error(fmt::format("relation '{}': no relation decided by an adaptive campaign to compare", adaptive.name));
  return compare_choices(space, rule, caps_w, full, *adaptive.decided);
}

void run_adaptive_train_bench(const AdaptiveTrainBenchOptions& o, std::ostream& out) {
  traces::check_output_folder(o.out, "out");  // a file there read "filesystem error: cannot create directories"
  fs::create_directories(o.out);
  out << fmt::format(
      "adaptive vs full relation campaign, real training on this machine ({} threads): b {} x seeds {}, {} training "
      "samples, {} held-out samples, run budget {} samples, {} caps on an emulated {} (virtual-time profile), "
      "tolerance {:g} %, extrapolation {}{}\n",
      o.threads, fmt::join(o.batch_sizes, ","), fmt::join(o.seeds, ","), o.max_train,
      o.eval_samples > 0 ? fmt::format("{}", o.eval_samples) : "all", o.budget, o.adaptive.caps, o.device,
      100 * o.adaptive.tolerance, explore::to_string(o.adaptive.extrapolation),
      std::isnan(o.budget_of_full)
          ? ""
          : fmt::format(", compute budget {:g} % of the full campaign's", 100 * o.budget_of_full));
  out << fmt::format("{:<24} {:<14} {:>12} {:>12} {:>8} {:>7} {:>10} {:>10} {:>10} {:>9} {:>9}\n", "workload",
                     "dataset", "full", "adaptive", "share", "same", "max regret", "mean regr", "end", "full s",
                     "adapt s");
  std::vector<Row> rows;
  for (const std::string& w : o.workloads) {
    const models::NetSpec spec = models::parse_workload(w);
    const std::string dataset = spec.task == "text" ? "austen-proxy" : "fmnist-proxy";
    const double target = spec.task == "text" ? o.text_target : o.image_target;
    const fs::path store = o.out / (spec.base + ".h5");
    Row row;
    row.workload = w;
    row.dataset = dataset;
    // The full campaign (every batch size and seed to the target or the budget).
    auto t0 = std::chrono::steady_clock::now();
    const RelationOutcome full = run_relation(request(o, w, dataset, target, store, "full"));
    row.full_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    profile(o, full.report.set.workload, store);
    // The adaptive one, on its own runs (trained again: nothing is shared with the full campaign).
    RelationRequest a = request(o, w, dataset, target, store, adaptive_name(o));
    a.adaptive = true;
    a.adaptive_settings = o.adaptive;
    a.adaptive_settings.profile_store = store;
    a.adaptive_settings.profile.clear();
    a.adaptive_settings.budget_share = NAN;
    a.adaptive_settings.budget_samples = 0;
    if (!std::isnan(o.budget_of_full)) {
      row.budget = std::max<int64_t>(1, std::llround(o.budget_of_full * compute_of(full.report.set)));
      a.adaptive_settings.budget_samples = row.budget;
    }
    t0 = std::chrono::steady_clock::now();
    const RelationOutcome adaptive = run_relation(a);
    row.adaptive_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    row.outcome = adaptive.decisions ? adaptive.decisions->outcome() : "";
    row.rounds = adaptive.decisions ? adaptive.decisions->rounds() : 0;
    row.full_compute = compute_of(full.report.set);
    row.adaptive_compute = compute_of(adaptive.report.set);

    // The pacer policy's choice at each cap on either relation; regret under the full relation.
    const auto st = traces::Store::open(store);
    const std::string profile_name = st.list<traces::ProfileTable>().front();
    const auto table = st.read<traces::ProfileTable>(profile_name);
    explore::Space space = explore::Space::from_profile(table);
    const explore::ChoiceRule rule = explore::choice_rule(
        space, explore::measured_wins(st, profile_name, false, table.workload, table.device, space), o.adaptive.guard);
    const auto caps_w = base::cap_grid_w(space.min_power_w(), space.max_power_w(), o.adaptive.caps);
    row.agreement = compare_adaptive(space, rule, caps_w, full.report.set, adaptive);
    row.seed_drop = leave_one_seed_out(space, rule, caps_w, full.report.set);
    row.seed_alone = each_seed_alone(space, rule, caps_w, full.report.set);
    out << fmt::format(
        "{:<24} {:<14} {:>12.0f} {:>12.0f} {:>7.1f}% {:>3}/{:<3} {:>9.2f}% {:>9.2f}% {:>10} {:>9.0f} {:>9.0f}\n",
        full.report.set.workload, dataset, row.full_compute, row.adaptive_compute,
        100 * row.adaptive_compute / std::max(1.0, row.full_compute), row.agreement.same, row.agreement.caps,
        100 * row.agreement.max_regret, 100 * row.agreement.mean_regret, row.outcome, row.full_s, row.adaptive_s);
    out << fmt::format("  b chosen at the caps: full {}, adaptive {}\n",
                       fmt::join(row.agreement.reference_choices, ","), fmt::join(row.agreement.other_choices, ","));
    if (row.seed_drop.caps > 0)
      out << fmt::format(
          "  the full campaign without one of its {} seeds keeps {} of {} (cap, seed) choices ({:.1f}%), "
          "max / mean regret {:.2f} / {:.2f}%\n",
          o.seeds.size(), row.seed_drop.same, row.seed_drop.caps, 100 * row.seed_drop.share(),
          100 * row.seed_drop.max_regret, 100 * row.seed_drop.mean_regret);
    if (row.seed_alone.caps > 0)
      out << fmt::format(
          "  each seed of the full campaign alone keeps {} of {} (cap, seed) choices ({:.1f}%), max / "
          "mean regret {:.2f} / {:.2f}%\n",
          row.seed_alone.same, row.seed_alone.caps, 100 * row.seed_alone.share(), 100 * row.seed_alone.max_regret,
          100 * row.seed_alone.mean_regret);
    out.flush();
    rows.push_back(row);
  }
  double full = 0, used = 0;
  ChoiceAgreement all, alone;
  for (const auto& r : rows) {
    full += r.full_compute;
    used += r.adaptive_compute;
    all += r.agreement;
    alone += r.seed_alone;
  }
  const double share = used / std::max(1.0, full), agree = all.share();
  out << fmt::format("same choices: {} of {} (task, cap) pairs, {:.1f}% (goal >= 95%): {}\n", all.same, all.caps,
                     100 * agree, agree >= 0.95 ? "PASS" : "FAIL");
  out << fmt::format("compute: {:.0f} of {:.0f} samples, {:.1f}% of the full campaigns' (goal <= 10%): {}\n", used,
                     full, 100 * share, share <= 0.10 ? "PASS" : "FAIL");
  if (alone.caps > 0)
    out << fmt::format(
        "each seed alone keeps {:.1f}% of the pooled choices ({} of {} (task, cap, seed)): the full "
        "campaigns' own stability, a ceiling for a campaign that buys about one seed's compute\n",
        100 * alone.share(), alone.same, alone.caps);
}

}  // namespace pacer::experiments
