#include "experiments/slurm.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <map>
#include <regex>

#include "traces/error.hpp"
#include "traces/store.hpp"

namespace pacer::experiments {

namespace fs = std::filesystem;

namespace {

std::string quote(const std::string& s) {
  if (!s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) ||
               std::string_view("/._-+:=,@%").find(c) != std::string_view::npos;
      }))
    return s;
  std::string q = "'";
  for (const char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

struct Captured {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

Captured run_capture(const std::string& command) {
  Captured c;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (!pipe) throw Error(fmt::format("cannot run '{}'", command));
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) c.output.append(buf, n);
  const int status = ::pclose(pipe);
  c.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return c;
}

fs::path pacer_binary(const SlurmOptions& o) {
  return fs::absolute(o.pacer.empty() ? self_executable() : o.pacer);
}

fs::path slurm_dir(const JobList& jobs) {
  return fs::absolute(jobs.store.has_parent_path() ? jobs.store.parent_path() : fs::path(".")) / "slurm";
}

std::string stem(const JobList& jobs) {
  return jobs.store.stem().string();
}

std::string sbatch_header(const SlurmOptions& o, const JobList& jobs, const std::string& job_name,
                          const std::string& log_name, int cpus) {
  std::string s = "#!/bin/bash\n";
  s += fmt::format("#SBATCH --job-name={}\n", job_name);
  s += fmt::format("#SBATCH --chdir={}\n", fs::current_path().string());
  s += fmt::format("#SBATCH --output={}\n", (slurm_dir(jobs) / "logs" / log_name).string());
  s += fmt::format("#SBATCH --cpus-per-task={}\n", cpus);
  if (!o.partition.empty()) s += fmt::format("#SBATCH --partition={}\n", o.partition);
  if (!o.time_limit.empty()) s += fmt::format("#SBATCH --time={}\n", o.time_limit);
  return s;
}

// Ids of the last submission, to cancel a merge job left waiting on shards that failed.
fs::path submitted_path(const JobList& jobs) {
  return slurm_dir(jobs) / (stem(jobs) + ".submitted");
}

std::string submit_script(const fs::path& script, const std::string& dependency) {
  const std::string cmd =
      fmt::format("sbatch --parsable{} {}", dependency.empty() ? "" : " --dependency=afterok:" + dependency,
                  quote(script.string()));
  const Captured c = run_capture(cmd);
  static const std::regex id(R"((\d+)(;\S+)?\s*)");
  std::smatch m;
  if (c.exit_code != 0 || !std::regex_match(c.output, m, id))
    throw Error(fmt::format("`{}` failed (exit {}): {}: is Slurm reachable from this machine (sinfo)?", cmd,
                            c.exit_code, c.output.empty() ? "no output" : c.output.substr(0, c.output.find('\n'))));
  return m[1].str();
}

}  // namespace

JobList read_job_list(const SlurmOptions& o) {
  if (o.spec.empty()) throw Error("a Slurm campaign needs its spec file (the INI file of the campaign)");
  const std::string cmd = fmt::format("{} {} --config {} --list-jobs", quote(pacer_binary(o).string()),
                                      quote(o.campaign), quote(fs::absolute(o.spec).string()));
  const Captured c = run_capture(cmd);
  if (c.exit_code != 0)
    throw Error(
        fmt::format("the campaign's job list could not be read (`{}` exit {}): {}", cmd, c.exit_code, c.output));
  return parse_job_list(c.output);
}

int shard_count(const SlurmOptions& o, const JobList& jobs) {
  const int n = static_cast<int>(jobs.jobs.size());
  return std::max(1, o.shards > 0 ? std::min(o.shards, n) : n);
}

std::string array_ranges(const std::vector<int>& tasks) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < tasks.size();) {
    size_t j = i;
    while (j + 1 < tasks.size() && tasks[j + 1] == tasks[j] + 1) ++j;
    parts.push_back(j == i ? fmt::format("{}", tasks[i]) : fmt::format("{}-{}", tasks[i], tasks[j]));
    i = j + 1;
  }
  return fmt::format("{}", fmt::join(parts, ","));
}

SlurmStatus slurm_status(const SlurmOptions& o) {
  SlurmStatus st;
  st.jobs = read_job_list(o);
  st.shards = shard_count(o, st.jobs);
  st.merged = fs::exists(st.jobs.store);
  std::map<std::string, int> counts;
  for (int i = 0; i < st.shards; ++i) {
    ShardState s;
    s.index = i;
    s.jobs = shard_jobs(st.jobs.jobs.size(), {i, st.shards}).size();
    const fs::path store = shard_store(st.jobs.store, {i, st.shards});
    const auto outcome = read_shard_outcome(store);
    s.detail = outcome.value_or("");
    s.state =
        outcome ? (outcome->rfind("done", 0) == 0 ? "done" : "failed") : (fs::exists(store) ? "incomplete" : "missing");
    ++counts[s.state];
    st.text += fmt::format("shard {}/{} ({} job{}): {}\n", i, st.shards, s.jobs, s.jobs == 1 ? "" : "s",
                           outcome                   ? *outcome
                           : s.state == "incomplete" ? "incomplete (running, or stopped before "
                                                       "its end)"
                                                     : "missing");
    st.states.push_back(s);
  }
  std::vector<std::string> summary;
  for (const auto& [state, n] : counts) summary.push_back(fmt::format("{} {}", n, state));
  st.text =
      fmt::format("{} campaign '{}': {} jobs in {} shards; merged store {} ({})\n", st.jobs.campaign, st.jobs.record,
                  st.jobs.jobs.size(), st.shards, st.jobs.store.string(), st.merged ? "written" : "not written yet") +
      st.text + fmt::format("{}\n", fmt::join(summary, ", "));
  return st;
}

SlurmScripts write_slurm_scripts(const SlurmOptions& o, const JobList& jobs, int shards,
                                 const std::vector<int>& tasks) {
  SlurmScripts s;
  s.tasks = tasks;
  if (s.tasks.empty())
    for (int i = 0; i < shards; ++i) s.tasks.push_back(i);
  const fs::path dir = slurm_dir(jobs);
  fs::create_directories(dir / "logs");
  const std::string name = stem(jobs);
  const std::string pacer = quote(pacer_binary(o).string());

  std::string array =
      sbatch_header(o, jobs, fmt::format("pacer-{}-{}", o.campaign, name), name + "-%A_%a.out", o.cpus_per_task);
  array += fmt::format("#SBATCH --array={}{}\n", array_ranges(s.tasks),
                       o.array_limit > 0 ? fmt::format("%{}", o.array_limit) : "");
  if (!o.gres.empty()) array += fmt::format("#SBATCH --gres={}\n", o.gres);
  array += fmt::format(
      "# pacer {} campaign '{}': {} jobs in {} shards; shard I runs the jobs whose number mod {} is I\n"
      "# (the campaign's --list-jobs numbers them) and writes its own store ({} for shard 0).\n"
      "# Written by `pacer slurm submit`; `pacer slurm status` reads the shard stores.\n",
      o.campaign, jobs.record, jobs.jobs.size(), shards, shards, shard_store(jobs.store, {0, shards}).string());
  array += fmt::format("exec {} {} --config {} --shard \"${{SLURM_ARRAY_TASK_ID}}/{}\"\n", pacer, quote(o.campaign),
                       quote(fs::absolute(o.spec).string()), shards);

  std::string merge = sbatch_header(o, jobs, fmt::format("pacer-merge-{}", name), name + "-merge-%j.out", 1);
  merge += fmt::format("# Merges the {} shard stores into {} once every array task succeeded.\n", shards,
                       jobs.store.string());
  merge += fmt::format("exec {} merge {}", pacer, quote(jobs.store.string()));
  for (const auto& p : shard_stores(jobs.store, shards)) merge += " " + quote(p.string());
  merge += "\n";

  s.array = dir / (name + "-array.sbatch");
  s.merge = dir / (name + "-merge.sbatch");
  traces::write_file_atomic(s.array, array);
  traces::write_file_atomic(s.merge, merge);
  fs::permissions(s.array, fs::perms::owner_exec, fs::perm_options::add);
  fs::permissions(s.merge, fs::perms::owner_exec, fs::perm_options::add);
  return s;
}

SubmitReport slurm_submit(const SlurmOptions& o) {
  const SlurmStatus st = slurm_status(o);
  std::vector<int> todo;
  for (const auto& s : st.states)
    if (s.state != "done") todo.push_back(s.index);
  SubmitReport r;
  if (todo.empty())
    r.text = fmt::format("every shard of {} is done: only the merge is submitted\n", st.jobs.record);
  else if (static_cast<int>(todo.size()) < st.shards)
    r.text = fmt::format("{} of {} shards are done: submitting shards {}\n", st.shards - todo.size(), st.shards,
                         array_ranges(todo));
  r.scripts = write_slurm_scripts(o, st.jobs, st.shards, todo.empty() ? std::vector<int>{} : todo);
  r.text += fmt::format("scripts: {} and {}\n", r.scripts.array.string(), r.scripts.merge.string());
  if (o.dry_run) {
    r.text += "dry run: nothing submitted (submit the array with sbatch, then the merge job depending on it with afterok)\n";
    return r;
  }
  // A merge job of an earlier submission may still wait on shards that failed: it can never run.
  if (std::ifstream old(submitted_path(st.jobs)); old) {
    std::string array_id, merge_id;
    if (old >> array_id >> merge_id) run_capture("scancel " + quote(merge_id));
  }
  if (!todo.empty()) r.array_job = submit_script(r.scripts.array, "");
  r.merge_job = submit_script(r.scripts.merge, r.array_job);
  traces::write_file_atomic(submitted_path(st.jobs),
                            fmt::format("{} {}\n", r.array_job.empty() ? "-" : r.array_job, r.merge_job));
  if (!todo.empty())
    r.text += fmt::format("submitted array job {} ({} tasks) and merge job {} (after the array succeeds)\n",
                          r.array_job, todo.size(), r.merge_job);
  else
    r.text += fmt::format("submitted merge job {}\n", r.merge_job);
  r.text += fmt::format("result: {} campaign '{}' in {} once the merge job ends\n", st.jobs.campaign, st.jobs.record,
                        st.jobs.store.string());
  return r;
}

}  // namespace pacer::experiments
