#include "experiments/cli/shard_options.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <iostream>

#include "traces/cpu_threads.hpp"
#include "traces/error.hpp"
#include "traces/store.hpp"

namespace pacer::cli {

void add_shard_options(po::options_description& d) {
  d.add_options()("list-jobs", po::bool_switch()->default_value(false),
                  "print the campaign's independent jobs (one per line, numbered from 0) and exit")(
      "shard", po::value<std::string>()->value_name("I/N"),
      "run only shard I of N (the jobs whose number mod N is I) into a store of its own, STORE.shard-I-of-N.h5; "
      "merge the shards with `pacer merge`")(
      "jobs", po::value<int>()->default_value(1),
      "run the campaign as N local processes, one shard each, then merge them into the store");
}

std::optional<experiments::Shard> shard_option(const po::variables_map& vm) {
  if (!vm.count("shard")) return std::nullopt;
  try {
    return experiments::parse_shard(vm["shard"].as<std::string>());
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("--shard: {}", e.what()));
  }
}

std::filesystem::path store_for(const po::variables_map& vm, const std::filesystem::path& store) {
  const auto shard = shard_option(vm);
  return shard ? experiments::shard_store(store, *shard) : store;
}

std::optional<int> run_shard_front(const po::variables_map& vm, const experiments::JobList& jobs) {
  if (vm["list-jobs"].as<bool>()) {
    std::cout << experiments::format_job_list(jobs);
    return 0;
  }
  const int n = vm["jobs"].as<int>();
  if (n < 1) throw UsageError("--jobs must be at least 1");
  if (const auto shard = shard_option(vm)) {
    if (!experiments::shard_jobs(jobs.jobs.size(), *shard).empty()) return std::nullopt;
    // More shards than jobs: this one has nothing to run, but leaves a store to merge.
    const auto store = experiments::shard_store(jobs.store, *shard);
    experiments::record_shard_outcome(store, [&] { traces::Store::open_or_create(store); });
    std::cout << fmt::format("shard {}/{} of {} jobs has none to run; empty store {}\n", shard->index, shard->count,
                             jobs.jobs.size(), store.string());
    return 0;
  }
  if (n == 1) return std::nullopt;
  auto args = invocation_args();
  // The shards share this machine's free CPUs, unless the threads are given.
  if (vm.count("threads") && vm["threads"].defaulted()) {
    args.push_back("--threads");
    args.push_back(std::to_string(std::max(1, traces::free_cpu_threads() / n)));
  }
  spdlog::info("{} campaign: {} jobs in {} local shard processes", jobs.campaign, jobs.jobs.size(), n);
  const auto r = experiments::run_local_shards(experiments::self_executable(), args, n, jobs.store);
  std::cout << r.merge_text;
  std::cout << fmt::format("{} shards in {:.1f} s (merge {:.2f} s)\n", n, r.wall_time_s, r.merge_time_s);
  return 0;
}

}  // namespace pacer::cli
