#include "experiments/shard.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

#include "traces/error.hpp"
#include "traces/merge.hpp"
#include "traces/store.hpp"

namespace pacer::experiments {

namespace fs = std::filesystem;

Shard parse_shard(const std::string& text) {
  static const std::regex form(R"((\d{1,6})/(\d{1,6}))");
  std::smatch m;
  if (!std::regex_match(text, m, form))
    throw UsageError(fmt::format("shard '{}' is not I/N (shard I of N, counted from 0)", text));
  const Shard s{std::stoi(m[1].str()), std::stoi(m[2].str())};
  if (s.count < 1 || s.index >= s.count)
    throw UsageError(fmt::format("shard '{}': I must be at least 0 and below N", text));
  return s;
}

std::vector<size_t> shard_jobs(size_t job_count, Shard s) {
  std::vector<size_t> out;
  for (size_t j = static_cast<size_t>(s.index); j < job_count; j += static_cast<size_t>(s.count)) out.push_back(j);
  return out;
}

fs::path shard_store(const fs::path& store, Shard s) {
  fs::path p = store;
  p.replace_filename(fmt::format("{}.shard-{}-of-{}{}", store.stem().string(), s.index, s.count,
                                 store.has_extension() ? store.extension().string() : ".h5"));
  return p;
}

std::vector<fs::path> shard_stores(const fs::path& store, int count) {
  std::vector<fs::path> out;
  for (int i = 0; i < count; ++i) out.push_back(shard_store(store, {i, count}));
  return out;
}

// The job-list format: header lines "KEY: value", then "job J: LABEL" per job.
std::string format_job_list(const JobList& list) {
  std::string s = fmt::format("campaign: {}\nrecord: {}\nstore: {}\njobs: {}\n", list.campaign, list.record,
                              list.store.string(), list.jobs.size());
  for (size_t j = 0; j < list.jobs.size(); ++j) s += fmt::format("job {}: {}\n", j, list.jobs[j]);
  return s;
}

JobList parse_job_list(const std::string& text) {
  JobList list;
  std::istringstream in(text);
  std::string line;
  long declared = -1;
  static const std::regex header(R"((campaign|record|store|jobs): (.*))"), job(R"(job (\d+): (.*))");
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, m, job)) {
      if (std::stoul(m[1].str()) != list.jobs.size()) throw Error(fmt::format("job list out of order at '{}'", line));
      list.jobs.push_back(m[2].str());
    } else if (std::regex_match(line, m, header)) {
      const std::string key = m[1].str(), value = m[2].str();
      if (key == "campaign") list.campaign = value;
      if (key == "record") list.record = value;
      if (key == "store") list.store = value;
      if (key == "jobs") declared = std::stol(value);
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
  JobList list{"relation", record, store, {}};
  for (const auto& [b, seed] : relation_jobs(batch_sizes, seeds))
    list.jobs.push_back(fmt::format("b={} seed={}", b, seed));
  return list;
}

JobList profile_job_list(const std::string& record, const fs::path& store, const std::vector<int>& batch_sizes) {
  JobList list{"profile", record, store, {}};
  for (const int b : batch_sizes) list.jobs.push_back(fmt::format("b={}", b));
  return list;
}

std::vector<int> shard_items(const std::vector<int>& items, Shard s) {
  std::vector<int> out;
  for (const size_t j : shard_jobs(items.size(), s)) out.push_back(items[j]);
  return out;
}

namespace {

std::string node_name() {
  if (const char* n = std::getenv("SLURMD_NODENAME"); n && *n) return n;
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0 && host[0]) return host;
  return "unknown";
}

}  // namespace

fs::path outcome_path(const fs::path& shard_store) {
  return fs::path(shard_store.string() + ".outcome");
}

void write_shard_outcome(const fs::path& shard_store, bool ok, const std::string& message) {
  std::string line =
      ok ? fmt::format("done on {}", node_name()) : fmt::format("failed on {}: {}", node_name(), message);
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

CampaignReport run_relation_shard(const RelationCampaign& c, const models::data::DataSplit& data, Shard s,
                                  const models::TrainHooks& hooks) {
  const auto jobs = relation_jobs(c.batch_sizes, c.seeds);
  CampaignReport report;
  models::HeldOutMargins margins;  // the shard's runs share one held-out split
  record_shard_outcome(c.store, [&] {
    traces::Store::open_or_create(c.store);  // a shard without jobs still leaves a store to merge
    for (const size_t j : shard_jobs(jobs.size(), s)) {
      // One job is a campaign of one (b, seed); the lr rule and base batch come from the whole
      // campaign (c.train), so every shard trains exactly as the serial campaign would.
      RelationCampaign one = c;
      one.batch_sizes = {jobs[j].first};
      one.seeds = {jobs[j].second};
      const CampaignReport r = run_relation_campaign(one, data, hooks, {}, &margins);
      report.set = r.set;
      report.resumed_runs += r.new_runs == 0;
      report.new_runs += r.new_runs;
      report.train_time_s += r.train_time_s;
      report.eval_time_s += r.eval_time_s;
    }
  });
  return report;
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

namespace {

pid_t spawn(const fs::path& exe, const std::vector<std::string>& args) {
  std::vector<std::string> copy = args;
  std::string bin = exe.string();
  std::vector<char*> argv{bin.data()};
  for (auto& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw Error("cannot start a shard process (fork failed: too many processes?)");
  if (pid == 0) {
    ::execv(bin.c_str(), argv.data());
    ::_exit(127);
  }
  return pid;
}

}  // namespace

LocalShardsReport run_local_shards(const fs::path& exe, const std::vector<std::string>& args, int n,
                                   const fs::path& store) {
  if (n < 1) throw UsageError("the number of local shard processes must be at least 1");
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<pid_t> pids;
  for (int i = 0; i < n; ++i) {
    auto a = args;
    a.push_back("--shard");
    a.push_back(fmt::format("{}/{}", i, n));
    pids.push_back(spawn(exe, a));
  }
  std::vector<std::string> failed;
  for (int i = 0; i < n; ++i) {
    int status = 0;
    while (::waitpid(pids[i], &status, 0) < 0 && errno == EINTR) {
    }
    if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
      const auto outcome = read_shard_outcome(shard_store(store, {i, n}));
      const std::string how = WIFEXITED(status) ? fmt::format("exit status {}", WEXITSTATUS(status))
                                                : fmt::format("killed by signal {}", WTERMSIG(status));
      failed.push_back(fmt::format("{}/{} ({})", i, n, outcome.value_or(how)));
    }
  }
  if (!failed.empty())
    throw Error(
        fmt::format("shards {} failed; the finished jobs are kept in their stores: run the same command again "
                    "to complete the campaign",
                    fmt::join(failed, ", ")));
  const auto t1 = std::chrono::steady_clock::now();
  LocalShardsReport report;
  report.merge_text = traces::format_merge_report(traces::merge_stores(store, shard_stores(store, n)), store);
  const auto t2 = std::chrono::steady_clock::now();
  report.wall_time_s = std::chrono::duration<double>(t2 - t0).count();
  report.merge_time_s = std::chrono::duration<double>(t2 - t1).count();
  return report;
}

}  // namespace pacer::experiments
