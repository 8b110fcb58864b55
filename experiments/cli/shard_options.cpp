#include "experiments/cli/shard_options.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <iostream>

#include "base/error.hpp"
#include "traces/store/store.hpp"

namespace pacer::cli {

void add_shard_options(po::options_description& d, const std::vector<std::string>& stages) {
  d.add_options()("list-jobs", po::bool_switch()->default_value(false),
                  "print the campaign's independent jobs (one per line, numbered from 0) and exit")(
      "shard", po::value<std::string>()->value_name("I/N"),
      stages.empty()
          ? "run only shard I of N (the jobs whose number mod N is I) into a store of its own, "
            "STORE.shard-I-of-N.h5; merge the shards with `pacer merge --update STORE SHARDS...`"
          : "run only shard I of N of --stage (the stage's jobs whose number mod N is I) into a store of its own, "
            "STORE.STAGE-shard-I-of-N.h5; merge the shards with `pacer merge --update STORE SHARDS...` before the "
            "next stage")(
      "jobs", po::value<int>()->default_value(1),
      "run the campaign as N local processes (1 to 4096), one shard each, then merge them into the store; "
      "never more processes than the campaign (or stage) has jobs [processes]");
  if (!stages.empty())
    d.add_options()("stage", po::value<std::string>(),
                    fmt::format("run only this stage of the campaign: {} (in this order; each needs the ones "
                                "before it in the store); default: all",
                                fmt::join(stages, ", "))
                        .c_str());
}

std::optional<experiments::Shard> shard_option(const po::variables_map& vm) {
  if (!vm.count("shard")) return std::nullopt;
  try {
    return experiments::parse_shard(vm["shard"].as<std::string>());
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("--shard: {}", e.what()));
  }
}

std::string stage_option(const po::variables_map& vm) {
  return vm.count("stage") ? vm["stage"].as<std::string>() : "";
}

std::filesystem::path store_for(const po::variables_map& vm, const std::filesystem::path& store) {
  const auto shard = shard_option(vm);
  return shard ? experiments::shard_store(store, *shard, stage_option(vm)) : store;
}

// Runs one stage as n local shard processes, each this command again with --shard i/n (and
// --stage when the campaign has stages), and merges them into the campaign's store. Each shard
// trains on the threads this command was given (its own default when none: base::kTrainingThreads),
// never on a share of the CPUs free now: a result does not depend on the machine's load.
// This command's arguments without its --jobs ("--jobs N", "--jobs=N"), then "--jobs 1", which also
// wins over a config file's `jobs`: a shard process runs its shard, it never shards again (and --jobs
// beside --shard is refused, run_shard_front).
std::vector<std::string> shard_process_args() {
  std::vector<std::string> a;
  const auto& given = invocation_args();
  for (size_t i = 0; i < given.size(); ++i) {
    if (given[i] == "--jobs") {
      ++i;  // and its value
      continue;
    }
    if (given[i].rfind("--jobs=", 0) == 0) continue;
    a.push_back(given[i]);
  }
  a.insert(a.end(), {"--jobs", "1"});
  return a;
}

double run_stage_locally(const experiments::JobList& list, int jobs, bool add_stage) {
  const int n = experiments::local_shard_count(jobs, list.jobs.size());
  std::vector<std::vector<std::string>> args;
  for (int i = 0; i < n; ++i) {
    auto a = shard_process_args();
    if (add_stage) a.insert(a.end(), {"--stage", list.stage});
    a.insert(a.end(), {"--shard", fmt::format("{}/{}", i, n)});
    args.push_back(std::move(a));
  }
  spdlog::info("{} campaign{}: {} jobs in {} local shard processes{}", list.campaign,
               list.stage.empty() ? "" : ", stage " + list.stage, list.jobs.size(), n,
               n < jobs ? fmt::format(" (--jobs {}: one process per job at most)", jobs) : "");
  const auto r = experiments::run_local_shards(experiments::self_executable(), args, list.store, list.stage);
  std::cout << r.merge_text;
  std::cout << fmt::format("{}{} shards in {:.1f} s (merge {:.2f} s)\n",
                           list.stage.empty() ? "" : "stage " + list.stage + ": ", n, r.wall_time_s, r.merge_time_s);
  return r.wall_time_s;  // its shards and their merge
}

std::optional<int> run_shard_front(const po::variables_map& vm, const std::vector<experiments::JobList>& stages,
                                   double* shards_wall_time_s) {
  const bool staged = stages.size() > 1 || (!stages.empty() && !stages.front().stage.empty());
  const std::string stage = stage_option(vm);
  const experiments::JobList* only = stage.empty() ? nullptr : &experiments::find_stage(stages, stage);
  if (vm["list-jobs"].as<bool>()) {
    std::cout << (only ? experiments::format_job_list(*only) : experiments::format_job_lists(stages));
    return 0;
  }
  const int n = vm["jobs"].as<int>();
  if (n < 1 || n > 4096) throw UsageError("--jobs must be between 1 and 4096");
  if (const auto shard = shard_option(vm)) {
    if (n > 1)
      throw UsageError(fmt::format(
          "--jobs {} and --shard {}/{} exclude each other: --jobs runs every shard here, --shard one of them (as "
          "a Slurm task does); give one",
          n, shard->index, shard->count));
    if (staged && !only)
      throw UsageError(
          fmt::format("--shard needs --stage: this campaign runs in stages, one after the other ({})", [&] {
            std::vector<std::string> names;
            for (const auto& s : stages) names.push_back(s.stage);
            return fmt::format("{}", fmt::join(names, ", "));
          }()));
    const experiments::JobList& list = only ? *only : stages.front();
    if (!experiments::shard_jobs(list.jobs.size(), *shard).empty()) return std::nullopt;
    // More shards than jobs: this one has nothing to run, but leaves a store to merge.
    const auto store = experiments::shard_store(list.store, *shard, list.stage);
    experiments::record_shard_outcome(store, [&] { traces::Store::open_or_create(store); });
    std::cout << fmt::format("shard {}/{} of {} jobs has none to run; empty store {}\n", shard->index, shard->count,
                             list.jobs.size(), store.string());
    return 0;
  }
  if (n == 1) return std::nullopt;
  if (only) {
    run_stage_locally(*only, n, false);
    return 0;
  }
  double seconds = 0;
  for (const auto& list : stages) seconds += run_stage_locally(list, n, staged);
  if (!staged) return 0;
  if (shards_wall_time_s) *shards_wall_time_s = seconds;
  spdlog::info("every stage merged into {}: completing the campaign from it", stages.front().store.string());
  return std::nullopt;
}

}  // namespace pacer::cli
