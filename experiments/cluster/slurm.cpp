#include "experiments/cluster/slurm.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>

#include "base/error.hpp"
#include "base/process.hpp"
#include "base/shell.hpp"
#include "base/text.hpp"
#include "traces/store/store.hpp"

namespace pacer::experiments {

namespace fs = std::filesystem;
using base::shell_quote;

namespace {

// sbatch and scancel: the Slurm client, found on PATH.
base::ProgramResult run_slurm(const std::string& program, const std::vector<std::string>& args) {
  base::RunOptions o;
  o.missing_hint = "install Slurm's client (apt-get install slurm-wlm), or submit from a machine of the cluster";
  return base::run_program(program, args, o);
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

// A value of an #SBATCH line that pacer makes (a path, a job name): sbatch splits such a line at
// blanks and ends it at an unquoted '#', but reads a double-quoted part as one word with \" and \\
// escaped; so a value with a blank, a quote, '#', '$' or a backquote is written in double quotes. A control character
// (a newline) cannot be written on one line: refused.
std::string sbatch_word(const std::string& value, const std::string& what) {
  const bool plain =
      !value.empty() && value.front() != '-' && value.find_first_of(" \t\"\\#'$`") == std::string::npos &&
      std::none_of(value.begin(), value.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; });
  if (plain) return value;  // as is: what every usual path and name is
  std::string out = "\"";
  for (const char c : value) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      throw Error(fmt::format("the {} '{}' holds a control character, which an #SBATCH line cannot hold: rename it",
                              what, base::printable(value)));
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// The settings copied as given onto #SBATCH lines (--partition, --time, --gres): names, times and
// resource lists only, so that sbatch reads the one option meant (no blank that starts another
// option, no quote, '#', '$(' or backquote, no leading '-'). Throws SettingError for the setting.
void check_sbatch_settings(const SlurmOptions& o) {
  static const std::regex plain(R"([A-Za-z0-9_.,:+/@=%][A-Za-z0-9_.,:+/@=%-]*)");
  for (const auto& [key, value] :
       {std::pair<std::string, std::string>{"partition", o.partition}, {"time", o.time_limit}, {"gres", o.gres}})
    if (!value.empty() && !std::regex_match(value, plain))
      throw SettingError(key, fmt::format("'{}' is not a plain Slurm value (letters, digits and _ . , : + / @ = % -, "
                                          "not starting with -): sbatch would split or misread it on an #SBATCH line",
                                          base::printable(value)));
}

std::string sbatch_header(const SlurmOptions& o, const JobList& jobs, const std::string& job_name,
                          const std::string& log_name, int cpus) {
  std::string s = "#!/bin/bash\n";
  s += fmt::format("#SBATCH --job-name={}\n", sbatch_word(job_name, "job name"));
  s += fmt::format("#SBATCH --chdir={}\n", sbatch_word(fs::current_path().string(), "working folder"));
  s += fmt::format("#SBATCH --output={}\n", sbatch_word((slurm_dir(jobs) / "logs" / log_name).string(), "log folder"));
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
  std::vector<std::string> args = {"--parsable"};
  if (!dependency.empty()) args.push_back("--dependency=afterok:" + dependency);
  args.push_back(script.string());
  const auto c = run_slurm("sbatch", args);
  static const std::regex id(R"((\d+)(;\S+)?\s*)");
  std::smatch m;
  if (c.exit_code != 0 || !std::regex_match(c.output, m, id))
    throw Error(fmt::format("`{}` failed (exit {}): {}: is Slurm reachable from this machine (sinfo)?",
                            base::command_line("sbatch", args), c.exit_code,
                            c.output.empty() ? "no output" : c.output.substr(0, c.output.find('\n'))));
  return m[1].str();
}

}  // namespace

std::vector<JobList> read_job_lists(const SlurmOptions& o) {
  if (o.spec.empty()) throw Error("a Slurm campaign needs its spec file (the INI file of the campaign)");
  const std::string pacer = pacer_binary(o).string();
  const std::vector<std::string> args = {o.campaign, "--config", fs::absolute(o.spec).string(), "--list-jobs"};
  base::ProgramResult c;
  try {
    c = base::run_program(pacer, args);
  } catch (const Error& e) {  // a --pacer that is not a program
    if (o.pacer.empty()) throw;
    throw SettingError("pacer", e.what());
  }
  if (c.exit_code != 0)
    throw Error(fmt::format("the campaign's job list could not be read (`{}` exit {}): {}",
                            base::command_line(pacer, args), c.exit_code, c.output));
  return parse_job_lists(c.output);
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

std::vector<int> StageStatus::not_done() const {
  std::vector<int> out;
  for (const auto& s : states)
    if (s.state != "done") out.push_back(s.index);
  return out;
}

bool SlurmStatus::done() const {
  return std::all_of(stages.begin(), stages.end(), [](const StageStatus& s) { return s.not_done().empty(); });
}

namespace {

StageStatus stage_status(const SlurmOptions& o, const JobList& jobs, std::map<std::string, int>& counts,
                         std::string& text) {
  StageStatus st;
  st.jobs = jobs;
  st.shards = shard_count(o, jobs);
  for (int i = 0; i < st.shards; ++i) {
    ShardState s;
    s.index = i;
    s.jobs = shard_jobs(jobs.jobs.size(), {i, st.shards}).size();
    const fs::path store = shard_store(jobs.store, {i, st.shards}, jobs.stage);
    const auto outcome = read_shard_outcome(store);
    s.detail = outcome.value_or("");
    s.state =
        outcome ? (outcome->rfind("done", 0) == 0 ? "done" : "failed") : (fs::exists(store) ? "incomplete" : "missing");
    ++counts[s.state];
    text += fmt::format("{}shard {}/{} ({} job{}): {}\n", jobs.stage.empty() ? "" : jobs.stage + " ", i, st.shards,
                        s.jobs, s.jobs == 1 ? "" : "s",
                        outcome                   ? base::printable(*outcome)
                        : s.state == "incomplete" ? "incomplete (running, or stopped before its end)"
                                                  : "missing");
    st.states.push_back(s);
  }
  return st;
}

}  // namespace

SlurmStatus slurm_status(const SlurmOptions& o) {
  SlurmStatus st;
  const auto lists = read_job_lists(o);
  const JobList& first = lists.front();
  st.merged = fs::exists(first.store);
  std::map<std::string, int> counts;
  std::string shards;
  for (const auto& list : lists) {
    if (!list.stage.empty())
      shards += fmt::format("stage {} (record {}): {} jobs in {} shards\n", list.stage, list.record, list.jobs.size(),
                            shard_count(o, list));
    st.stages.push_back(stage_status(o, list, counts, shards));
  }
  std::vector<std::string> summary;
  for (const auto& [state, n] : counts) summary.push_back(fmt::format("{} {}", n, state));
  const std::string merged =
      fmt::format("merged store {} ({})", first.store.string(), st.merged ? "written" : "not written yet");
  st.text = lists.size() == 1 && first.stage.empty()
                ? fmt::format("{} campaign '{}': {} jobs in {} shards; {}\n", first.campaign, first.record,
                              first.jobs.size(), st.stages.front().shards, merged)
                : fmt::format("{} campaign '{}' in {} stages; store {}\n", first.campaign, lists.back().record,
                              lists.size(), first.store.string());
  st.text += shards + fmt::format("{}\n", fmt::join(summary, ", "));
  return st;
}

namespace {

std::string script_stem(const JobList& jobs) {
  return stem(jobs) + (jobs.stage.empty() ? "" : "-" + jobs.stage);
}

// The array script of one stage: task I runs shard I of the stage.
std::string array_script(const SlurmOptions& o, const JobList& jobs, int shards, const std::vector<int>& tasks) {
  const std::string name = script_stem(jobs);
  std::string array =
      sbatch_header(o, jobs, fmt::format("pacer-{}-{}", o.campaign, name), name + "-%A_%a.out", o.cpus_per_task);
  array += fmt::format("#SBATCH --array={}{}\n", array_ranges(tasks),
                       o.array_limit > 0 ? fmt::format("%{}", o.array_limit) : "");
  if (!o.gres.empty()) array += fmt::format("#SBATCH --gres={}\n", o.gres);
  array += fmt::format(
      "# pacer {} campaign '{}'{}: {} jobs in {} shards; shard I runs the jobs whose number mod {} is I\n"
      "# (the campaign's --list-jobs numbers them) and writes its own store ({} for shard 0).\n"
      "# Written by `pacer slurm submit`; `pacer slurm status` reads the shard stores.\n",
      o.campaign, base::printable(jobs.record), jobs.stage.empty() ? "" : ", stage " + jobs.stage, jobs.jobs.size(),
      shards, shards, base::printable(shard_store(jobs.store, {0, shards}, jobs.stage).string()));
  const std::string stage = jobs.stage.empty() ? "" : fmt::format(" --stage {}", shell_quote(jobs.stage));
  // --jobs 1 after the shard: a task runs its shard (a spec's `jobs`, for local runs, would be refused
  // beside --shard).
  array += fmt::format("exec {} {} --config {}{} --shard \"${{SLURM_ARRAY_TASK_ID}}/{}\" --jobs 1\n",
                       shell_quote(pacer_binary(o).string()), shell_quote(o.campaign),
                       shell_quote(fs::absolute(o.spec).string()), stage, shards);
  return array;
}

// The merge script of one stage: the shard stores into the campaign's store, keeping what it holds.
std::string merge_script(const SlurmOptions& o, const JobList& jobs, int shards) {
  const std::string name = script_stem(jobs);
  std::string merge = sbatch_header(o, jobs, fmt::format("pacer-merge-{}", name), name + "-merge-%j.out", 1);
  merge +=
      fmt::format("# Merges the {} shard stores{} into {} (keeping what it holds) once every array task succeeded.\n",
                  shards, jobs.stage.empty() ? "" : " of stage " + jobs.stage, base::printable(jobs.store.string()));
  merge +=
      fmt::format("exec {} merge --update {}", shell_quote(pacer_binary(o).string()), shell_quote(jobs.store.string()));
  for (const auto& p : shard_stores(jobs.store, shards, jobs.stage)) merge += " " + shell_quote(p.string());
  return merge + "\n";
}

// The decision after a round of an adaptive campaign (JobList::decide): what the next round trains.
std::string decide_script(const SlurmOptions& o, const JobList& jobs) {
  const std::string name = script_stem(jobs);
  std::string s = sbatch_header(o, jobs, fmt::format("pacer-decide-{}", name), name + "-decide-%j.out", 1);
  s += fmt::format("# Once {} is merged into {}: the campaign's decision after it (the next round's runs, or its end).\n",
                   jobs.stage, base::printable(jobs.store.string()));
  s += fmt::format("exec {} {} --config {} --stage {} --decide\n", shell_quote(pacer_binary(o).string()),
                   shell_quote(o.campaign), shell_quote(fs::absolute(o.spec).string()), shell_quote(jobs.stage));
  return s;
}

// A campaign of several stages ends with its whole command: every job is done, it completes and reports.
std::string finish_script(const SlurmOptions& o, const JobList& jobs) {
  std::string s = sbatch_header(o, jobs, fmt::format("pacer-{}-{}-finish", o.campaign, stem(jobs)),
                                stem(jobs) + "-finish-%j.out", o.cpus_per_task);
  if (!o.gres.empty()) s += fmt::format("#SBATCH --gres={}\n", o.gres);
  s += fmt::format("# Once every stage is merged into {}: the whole campaign, which finds every job done.\n",
                   base::printable(jobs.store.string()));
  s += fmt::format("exec {} {} --config {}\n", shell_quote(pacer_binary(o).string()), shell_quote(o.campaign),
                   shell_quote(fs::absolute(o.spec).string()));
  return s;
}

void write_script(const fs::path& path, const std::string& text) {
  traces::write_file_atomic(path, text);
  fs::permissions(path, fs::perms::owner_exec, fs::perm_options::add);
}

}  // namespace

SlurmScripts write_slurm_scripts(const SlurmOptions& o, const SlurmStatus& st,
                                 const std::vector<std::vector<int>>& tasks) {
  check_sbatch_settings(o);  // before any script is written
  SlurmScripts out;
  const JobList& first = st.stages.front().jobs;
  const fs::path dir = slurm_dir(first);
  fs::create_directories(dir / "logs");
  for (size_t k = 0; k < st.stages.size(); ++k) {
    const StageStatus& stage = st.stages[k];
    StageScripts s;
    s.stage = stage.jobs.stage;
    s.tasks = k < tasks.size() ? tasks[k] : std::vector<int>{};
    if (s.tasks.empty())
      for (int i = 0; i < stage.shards; ++i) s.tasks.push_back(i);
    s.array = dir / (script_stem(stage.jobs) + "-array.sbatch");
    s.merge = dir / (script_stem(stage.jobs) + "-merge.sbatch");
    write_script(s.array, array_script(o, stage.jobs, stage.shards, s.tasks));
    write_script(s.merge, merge_script(o, stage.jobs, stage.shards));
    if (stage.jobs.decide) {
      s.decide = dir / (script_stem(stage.jobs) + "-decide.sbatch");
      write_script(s.decide, decide_script(o, stage.jobs));
    }
    out.stages.push_back(s);
  }
  if (st.stages.size() > 1 || !first.stage.empty()) {
    out.finish = dir / (stem(first) + "-finish.sbatch");
    write_script(out.finish, finish_script(o, first));
  }
  return out;
}

SubmitReport slurm_submit(const SlurmOptions& o) {
  check_sbatch_settings(o);
  const SlurmStatus st = slurm_status(o);
  const bool staged = st.stages.size() > 1 || !st.stages.front().jobs.stage.empty();
  SubmitReport r;
  std::vector<std::vector<int>> todo;
  for (const auto& stage : st.stages) {
    todo.push_back(stage.not_done());
    const std::string prefix = stage.jobs.stage.empty() ? "" : fmt::format("stage {}: ", stage.jobs.stage);
    if (todo.back().empty())
      r.text += fmt::format("{}every shard of {} is done: only the merge is submitted\n", prefix, stage.jobs.record);
    else if (static_cast<int>(todo.back().size()) < stage.shards)
      r.text += fmt::format("{}{} of {} shards are done: submitting shards {}\n", prefix,
                            stage.shards - todo.back().size(), stage.shards, array_ranges(todo.back()));
  }
  const JobList& first = st.stages.front().jobs;
  const fs::path dir = slurm_dir(first);
  const bool made_dir = !fs::exists(dir), made_logs = !fs::exists(dir / "logs");
  std::vector<fs::path> before;  // scripts an earlier submit or dry run wrote: kept on a failure
  if (!made_dir)
    for (const auto& e : fs::directory_iterator(dir)) before.push_back(e.path());
  r.scripts = write_slurm_scripts(o, st, todo);
  std::vector<std::string> files;
  for (const auto& s : r.scripts.stages) {
    files.insert(files.end(), {s.array.string(), s.merge.string()});
    if (!s.decide.empty()) files.push_back(s.decide.string());
  }
  if (!r.scripts.finish.empty()) files.push_back(r.scripts.finish.string());
  r.text += fmt::format("scripts: {}\n", fmt::join(files, " and "));
  if (o.dry_run) {
    r.text += fmt::format(
        "dry run: nothing submitted (submit {} with sbatch, each depending on the one before with afterok)\n",
        staged ? "each stage's array and merge, then the finish script," : "the array, then the merge job");
    return r;
  }
  // All or nothing: where a submission fails (Slurm unreachable, a refused script), the jobs this call
  // submitted are cancelled and the scripts (and the folders) it wrote are removed, so a failed submit
  // leaves no output and its campaign as it was.
  std::vector<std::string> submitted;
  const auto undo = [&] {
    for (const auto& id : submitted) try {
        run_slurm("scancel", {id});
      } catch (const Error&) {  // scancel missing as sbatch was: nothing of ours is queued
      }
    std::error_code ec;
    for (const auto& f : files)
      if (std::find(before.begin(), before.end(), fs::path(f)) == before.end()) fs::remove(f, ec);
    if (made_logs) fs::remove(dir / "logs", ec);  // only where empty: a job of ours may have logged
    if (made_dir) fs::remove(dir, ec);
  };
  const auto submit = [&](const fs::path& script, const std::string& dependency) {
    try {
      submitted.push_back(submit_script(script, dependency));
    } catch (const Error& e) {
      undo();
      throw Error(fmt::format(
          "{} ({})", e.what(),
          submitted.empty()
              ? "nothing was submitted; no new script kept"
              : fmt::format("the {} job(s) it had submitted were cancelled; no new script kept", submitted.size())));
    }
    return submitted.back();
  };
  // Jobs of an earlier submission that wait on shards that failed can never run: cancel them.
  if (std::ifstream old(submitted_path(first)); old) {
    std::string first_array, id;
    old >> first_array;
    while (old >> id) run_slurm("scancel", {id});
  }
  std::string after;  // the job the next one waits for
  std::vector<std::string> dependents;
  for (size_t k = 0; k < st.stages.size(); ++k) {
    const StageStatus& stage = st.stages[k];
    std::string array;
    if (!todo[k].empty()) {
      array = submit(r.scripts.stages[k].array, after);
      if (!after.empty()) dependents.push_back(array);
    }
    const std::string merge = submit(r.scripts.stages[k].merge, array.empty() ? after : array);
    dependents.push_back(merge);
    r.array_jobs.push_back(array);
    r.merge_jobs.push_back(merge);
    after = merge;
    if (!r.scripts.stages[k].decide.empty()) {  // the next round's array waits for this round's decision
      const std::string decide = submit(r.scripts.stages[k].decide, merge);
      dependents.push_back(decide);
      r.decide_jobs.push_back(decide);
      after = decide;
    }
    const std::string prefix = stage.jobs.stage.empty() ? "" : fmt::format("stage {}: ", stage.jobs.stage);
    r.text += array.empty() ? fmt::format("{}submitted merge job {}\n", prefix, merge)
                            : fmt::format(
                                  "{}submitted array job {} ({} tasks) and merge job {} (after the array "
                                  "succeeds)\n",
                                  prefix, array, todo[k].size(), merge);
    if (!r.scripts.stages[k].decide.empty())
      r.text += fmt::format("{}submitted decision job {} (after the merge; the next round waits for it)\n", prefix,
                            r.decide_jobs.back());
  }
  if (!r.scripts.finish.empty()) {
    r.finish_job = submit(r.scripts.finish, after);
    dependents.push_back(r.finish_job);
    r.text += fmt::format("submitted finish job {} (the whole campaign once every stage is merged)\n", r.finish_job);
  }
  const std::string first_array = r.array_jobs.front().empty() ? "-" : r.array_jobs.front();
  traces::write_file_atomic(submitted_path(first), fmt::format("{} {}\n", first_array, fmt::join(dependents, " ")));
  r.text += fmt::format("result: {} campaign '{}' in {} once the {} job ends\n", first.campaign,
                        st.stages.back().jobs.record, first.store.string(), staged ? "finish" : "merge");
  return r;
}

}  // namespace pacer::experiments
