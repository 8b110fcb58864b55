#include "experiments/cluster/shard.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

#include "base/error.hpp"
#include "base/process.hpp"
#include "base/units.hpp"
#include "hw/device.hpp"
#include "traces/store/merge.hpp"
#include "traces/store/store.hpp"
#include "traces/store/store_file.hpp"

namespace pacer::experiments {

namespace fs = std::filesystem;

Shard parse_shard(const std::string& text) {
  static const std::regex form(R"((\d{1,6})/(\d{1,6}))");
  std::smatch m;
  if (!std::regex_match(text, m, form))
    throw UsageError(fmt::format("shard '{}' is not I/N (shard I of N, counted from 0)", text));
  // At most six digits each (the pattern): they fit an int.
  const Shard s{static_cast<int>(units::to_integer(m[1].str()).value_or(0)),
                static_cast<int>(units::to_integer(m[2].str()).value_or(0))};
  if (s.count < 1 || s.index >= s.count)
    throw UsageError(fmt::format("shard '{}': I must be at least 0 and below N", text));
  return s;
}

std::vector<size_t> shard_jobs(size_t job_count, Shard s) {
  std::vector<size_t> out;
  for (size_t j = static_cast<size_t>(s.index); j < job_count; j += static_cast<size_t>(s.count)) out.push_back(j);
  return out;
}

fs::path shard_store(const fs::path& store, Shard s, const std::string& stage) {
  fs::path p = store;
  p.replace_filename(fmt::format("{}.{}shard-{}-of-{}{}", store.stem().string(), stage.empty() ? "" : stage + "-",
                                 s.index, s.count, store.has_extension() ? store.extension().string() : ".h5"));
  return p;
}

std::vector<fs::path> shard_stores(const fs::path& store, int count, const std::string& stage) {
  std::vector<fs::path> out;
  for (int i = 0; i < count; ++i) out.push_back(shard_store(store, {i, count}, stage));
  return out;
}

// The job-list format: header lines "KEY: value", then "job J: LABEL" per job.
std::string format_job_list(const JobList& list) {
  std::string s = fmt::format("campaign: {}\n{}{}record: {}\nstore: {}\njobs: {}\n", list.campaign,
                              list.stage.empty() ? "" : fmt::format("stage: {}\n", list.stage),
                              list.decide ? "decide: yes\n" : "", list.record, list.store.string(), list.jobs.size());
  for (size_t j = 0; j < list.jobs.size(); ++j) s += fmt::format("job {}: {}\n", j, list.jobs[j]);
  return s;
}

std::string format_job_lists(const std::vector<JobList>& stages) {
  std::string s;
  for (size_t k = 0; k < stages.size(); ++k) {
    if (k > 0) s += '\n';  // an empty line between stages
    s += format_job_list(stages[k]);
  }
  return s;
}

std::vector<JobList> parse_job_lists(const std::string& text) {
  std::vector<std::string> parts;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("campaign: ", 0) == 0 || parts.empty()) parts.emplace_back();
    parts.back() += line + "\n";
  }
  std::vector<JobList> out;
  for (const auto& part : parts) out.push_back(parse_job_list(part));
  if (out.empty()) out.push_back(parse_job_list(text));  // the error of an empty list
  return out;
}

const JobList& find_stage(const std::vector<JobList>& stages, const std::string& stage) {
  std::vector<std::string> names;
  for (const auto& s : stages) {
    if (s.stage == stage) return s;
    names.push_back(s.stage.empty() ? "(one stage)" : s.stage);
  }
  throw UsageError(fmt::format("{} campaign has no stage '{}' (its stages: {})",
                               stages.empty() ? "the" : stages.front().campaign, stage, fmt::join(names, ", ")));
}

const std::vector<std::string>& validate_stages() {
  static const std::vector<std::string> stages = {kStageOracle, kStageRuns};
  return stages;
}

const std::vector<std::string>& experiment_stages() {
  static const std::vector<std::string> stages = [] {
    std::vector<std::string> out = {kStagePrepare, kStageProxy};
    out.insert(out.end(), validate_stages().begin(), validate_stages().end());
    return out;
  }();
  return stages;
}

void check_stage(const std::string& campaign, const std::vector<std::string>& stages, const std::string& stage,
                 bool part) {
  if (!stage.empty() && std::find(stages.begin(), stages.end(), stage) == stages.end())
    throw OptionError("stage", fmt::format("'{}' is not a stage of {} ({})", stage, campaign, fmt::join(stages, ", ")));
  if (part && stage.empty())
    throw OptionError("stage",
                      fmt::format("a shard of {} runs one of its stages ({})", campaign, fmt::join(stages, ", then ")));
}

JobList parse_job_list(const std::string& text) {
  JobList list;
  std::istringstream in(text);
  std::string line;
  long declared = -1;
  static const std::regex header(R"((campaign|stage|decide|record|store|jobs): (.*))"), job(R"(job (\d+): (.*))");
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, m, job)) {
      if (units::to_integer(m[1].str()) != static_cast<int64_t>(list.jobs.size()))
        throw Error(fmt::format("job list out of order at '{}'", line));
      list.jobs.push_back(m[2].str());
    } else if (std::regex_match(line, m, header)) {
      const std::string key = m[1].str(), value = m[2].str();
      if (key == "campaign") list.campaign = value;
      if (key == "stage") list.stage = value;
      if (key == "decide") list.decide = value == "yes";
      if (key == "record") list.record = value;
      if (key == "store") list.store = value;
      if (key == "jobs") declared = units::to_integer(value, 0, INT32_MAX).value_or(-1);
    }
  }
  if (list.campaign.empty() || list.store.empty() || declared != static_cast<long>(list.jobs.size()))
    throw Error(
        fmt::format("not a complete job list (expected 'campaign:', 'store:', 'jobs: N' and N job lines):\n{}", text));
  return list;
}

std::vector<std::pair<int, int>> relation_jobs(const std::vector<int>& batch_sizes, const std::vector<int>& seeds) {
  std::vector<std::pair<int, int>> jobs;
  for (const int b : batch_sizes)
    for (const int seed : seeds) jobs.emplace_back(b, seed);
  return jobs;
}

JobList relation_job_list(const std::string& record, const fs::path& store, const std::vector<int>& batch_sizes,
                          const std::vector<int>& seeds) {
  JobList list{"relation", record, store, {}, ""};
  for (const auto& [b, seed] : relation_jobs(batch_sizes, seeds))
    list.jobs.push_back(fmt::format("b={} seed={}", b, seed));
  return list;
}

JobList profile_job_list(const std::string& record, const fs::path& store, const std::vector<int>& batch_sizes) {
  JobList list{"profile", record, store, {}, ""};
  for (const int b : batch_sizes) list.jobs.push_back(fmt::format("b={}", b));
  return list;
}

namespace {

std::vector<std::string> bs_seed_labels(const std::string& prefix, const std::vector<int>& batch_sizes,
                                        const std::vector<int>& seeds) {
  std::vector<std::string> out;
  for (const auto& [b, seed] : relation_jobs(batch_sizes, seeds))
    out.push_back(fmt::format("{}b={} seed={}", prefix, b, seed));
  return out;
}

}  // namespace

std::vector<JobList> validate_job_lists(const std::string& record, const std::string& oracle_record,
                                        const fs::path& store, const std::vector<int>& batch_sizes,
                                        const std::vector<int>& seeds) {
  return {
      JobList{"validate", oracle_record, store, bs_seed_labels("", batch_sizes, seeds), kStageOracle},
      JobList{"validate", record, store, bs_seed_labels("configurations chosen at ", batch_sizes, seeds), kStageRuns}};
}

std::vector<JobList> experiment_job_lists(const std::string& name, const fs::path& store,
                                          const std::vector<std::string>& targets, const std::vector<int>& batch_sizes,
                                          const std::vector<int>& seeds) {
  JobList prepare{"experiment", name, store, {"pre-train, profile, calibrate"}, kStagePrepare};
  JobList proxy{"experiment", name, store, bs_seed_labels("", batch_sizes, seeds), kStageProxy};
  JobList oracle{"experiment", name, store, {}, kStageOracle};
  JobList runs{"experiment", name, store, {}, kStageRuns};
  for (const auto& t : targets) {
    for (auto& label : bs_seed_labels(t + " ", batch_sizes, seeds)) oracle.jobs.push_back(label);
    for (auto& label : bs_seed_labels(t + " configurations chosen at ", batch_sizes, seeds)) runs.jobs.push_back(label);
  }
  return {prepare, proxy, oracle, runs};
}

std::vector<int> shard_items(const std::vector<int>& items, Shard s) {
  std::vector<int> out;
  for (const size_t j : shard_jobs(items.size(), s)) out.push_back(items[j]);
  return out;
}

fs::path outcome_path(const fs::path& shard_store) {
  return fs::path(shard_store.string() + ".outcome");
}

void write_shard_outcome(const fs::path& shard_store, bool ok, const std::string& message) {
  std::string line =
      ok ? fmt::format("done on {}", hw::node_name()) : fmt::format("failed on {}: {}", hw::node_name(), message);
  for (char& c : line)
    if (c == '\n') c = ' ';
  traces::write_file_atomic(outcome_path(shard_store), line + "\n");
}

std::optional<std::string> read_shard_outcome(const fs::path& shard_store) {
  std::ifstream in(outcome_path(shard_store));
  std::string line;
  if (!in || !std::getline(in, line) || line.empty()) return std::nullopt;
  return line;
}

void record_shard_outcome(const fs::path& shard_store, const std::function<void()>& body) {
  if (shard_store.has_parent_path()) fs::create_directories(shard_store.parent_path());
  std::error_code ec;
  fs::remove(outcome_path(shard_store), ec);  // a rerun is neither done nor failed until it ends
  try {
    body();
  } catch (const std::exception& e) {
    write_shard_outcome(shard_store, false, e.what());
    throw;
  }
  write_shard_outcome(shard_store, true);
}

int local_shard_count(int requested, size_t job_count) {
  return static_cast<int>(std::clamp<size_t>(job_count, 1, static_cast<size_t>(std::max(1, requested))));
}

fs::path self_executable() {
  std::error_code ec;
  std::string p = fs::read_symlink("/proc/self/exe", ec).string();
  if (ec) throw Error("cannot find this program's own path (/proc/self/exe) to start the shards");
  // Rebuilt or reinstalled while running: the new binary at the same path is the one to start.
  const std::string deleted = " (deleted)";
  if (p.size() > deleted.size() && p.ends_with(deleted)) p.resize(p.size() - deleted.size());
  return p;
}

LocalShardsReport run_local_shards(const fs::path& exe, const std::vector<std::vector<std::string>>& shard_args,
                                   const fs::path& store, const std::string& stage) {
  const int n = static_cast<int>(shard_args.size());
  if (n < 1) throw UsageError("the number of local shard processes must be at least 1");
  const auto t0 = std::chrono::steady_clock::now();
  // One process group, stopped with this process however it ends (a signal, or kill -9: the
  // shards' parent-death signal), so no shard goes on writing after its front is gone.
  base::ChildGroup group;
  for (const auto& args : shard_args) group.start(exe.string(), args);  // a failure stops those started
  const std::vector<int> statuses = group.wait_all();
  std::vector<std::string> failed;
  for (int i = 0; i < n; ++i) {
    const int status = statuses[static_cast<size_t>(i)];
    if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
      const auto outcome = read_shard_outcome(shard_store(store, {i, n}, stage));
      const std::string how = WIFEXITED(status) ? fmt::format("exit status {}", WEXITSTATUS(status))
                                                : fmt::format("killed by signal {}", WTERMSIG(status));
      failed.push_back(fmt::format("{}{}/{} ({})", stage.empty() ? "" : stage + " ", i, n, outcome.value_or(how)));
    }
  }
  if (!failed.empty())
    throw Error(
        fmt::format("shards {} failed; the finished jobs are kept in their stores: run the same command again "
                    "to complete the campaign",
                    fmt::join(failed, ", ")));
  const auto t1 = std::chrono::steady_clock::now();
  LocalShardsReport report;
  const auto shards = shard_stores(store, n, stage);
  report.merge_text = traces::format_merge_report(traces::merge_into(store, shards), store);
  // Merged: the shards' stores, their writers' locks and outcomes are copies or scaffolding now.
  // (A failed run above keeps them all, so that the same command completes the campaign.)
  for (const auto& shard : shards) {
    std::error_code ec;
    for (const fs::path& p : {shard, traces::file::lock_path(shard), outcome_path(shard)}) fs::remove(p, ec);
  }
  const auto t2 = std::chrono::steady_clock::now();
  report.wall_time_s = std::chrono::duration<double>(t2 - t0).count();
  report.merge_time_s = std::chrono::duration<double>(t2 - t1).count();
  return report;
}

}  // namespace pacer::experiments
