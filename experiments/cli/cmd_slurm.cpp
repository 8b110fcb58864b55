// `pacer slurm submit|status --config SPEC.ini`: a campaign as a Slurm job array (one task per
// shard) and a dependent merge job; experiments/cluster/slurm.hpp does the work, docs/cluster.md shows how.
#include <fmt/format.h>

#include <iostream>

#include "base/error.hpp"
#include "experiments/cli/cli.hpp"
#include "experiments/cluster/slurm.hpp"

namespace pacer::cli {
namespace {

experiments::SlurmOptions slurm_options(const po::variables_map& vm) {
  experiments::SlurmOptions o;
  if (!vm.count("config")) throw UsageError("--config SPEC.ini is required: the campaign's spec");
  o.spec = vm["config"].as<std::string>();
  o.campaign = vm["campaign"].as<std::string>();
  if (o.campaign != "relation" && o.campaign != "profile" && o.campaign != "validate" && o.campaign != "experiment")
    throw UsageError(fmt::format(
        "--campaign: '{}' is not a campaign that shards (relation, profile, validate, experiment)", o.campaign));
  o.shards = vm["shards"].as<int>();
  o.array_limit = vm["array-limit"].as<int>();
  o.cpus_per_task = vm["cpus-per-task"].as<int>();
  if (o.shards < 0) throw UsageError("--shards must be 0 (one per job) or more");
  if (o.array_limit < 0) throw UsageError("--array-limit must be 0 (no limit) or more");
  if (o.cpus_per_task < 1) throw UsageError("--cpus-per-task must be at least 1");
  if (vm.count("partition")) o.partition = vm["partition"].as<std::string>();
  if (vm.count("time")) o.time_limit = vm["time"].as<std::string>();
  if (vm.count("gres")) o.gres = vm["gres"].as<std::string>();
  if (vm.count("pacer")) o.pacer = vm["pacer"].as<std::string>();
  o.dry_run = vm["dry-run"].as<bool>();
  return o;
}

int run_slurm(const po::variables_map& vm) {
  const std::string action = vm.count("action") ? vm["action"].as<std::string>() : "";
  if (action != "submit" && action != "status")
    throw UsageError(fmt::format("choose an action: submit or status (not '{}')", action));
  const auto o = slurm_options(vm);
  if (action == "status") {
    const auto st = experiments::slurm_status(o);
    std::cout << st.text;
    return st.done() ? 0 : 1;  // something left to do: `pacer slurm submit` again
  }
  const auto r = experiments::slurm_submit(o);
  std::cout << r.text;
  if (!o.dry_run) std::cout << fmt::format("progress: pacer slurm status --config {}\n", o.spec.string());
  return 0;
}

Command make() {
  const experiments::SlurmOptions d;
  Command c;
  c.name = "slurm";
  c.summary = "run a campaign on a Slurm cluster: job array of shards + merge job, status, resubmit";
  c.order = 96;
  c.usage_tail = "submit|status --config SPEC.ini";
  c.description =
      "submit: writes STORE_DIR/slurm/STEM-array.sbatch (one array task per shard, each running\n"
      "`pacer CAMPAIGN --config SPEC --shard I/N`) and STEM-merge.sbatch (`pacer merge`), submits both with\n"
      "`sbatch --parsable` (the merge with --dependency=afterok on the array) and prints the job ids.\n"
      "Submitting again submits only the shards that are not done. status: done / failed (with the message) /\n"
      "missing per shard, exit 1 while any shard is not done. A campaign in stages (validate, experiment) gets\n"
      "an array and a merge per stage, each stage after the one before, and a finish job running the whole\n"
      "command. The options below may sit in a [slurm] section of SPEC, beside the campaign's own section\n"
      "(e.g. [relation]). See docs/cluster.md.";
  c.add_options = [d](po::options_description& o) {
    o.add_options()("action", po::value<std::string>(), "submit | status (positional)")(
        "campaign", po::value<std::string>()->default_value(d.campaign),
        "campaign command each task runs: relation | profile | validate | experiment (the last two in stages)")(
        "shards", po::value<int>()->default_value(d.shards), "array tasks (0: one per job; never more than the jobs)")(
        "partition", po::value<std::string>(), "Slurm partition (default: the cluster's)")(
        "array-limit", po::value<int>()->default_value(d.array_limit),
        "at most M tasks at once (--array=...%M); 0: no limit")("time", po::value<std::string>(),
                                                                "time limit of one task (sbatch --time, e.g. 4:00:00)")(
        "cpus-per-task", po::value<int>()->default_value(d.cpus_per_task), "CPUs of one task (sbatch --cpus-per-task)")(
        "gres", po::value<std::string>(), "generic resources of one task, e.g. gpu:1 (sbatch --gres)")(
        "pacer", po::value<std::string>(), "pacer binary the tasks run (default: this one)")(
        "dry-run", po::bool_switch()->default_value(false), "write the scripts, submit nothing");
  };
  c.positional = {"action"};
  c.run = run_slurm;
  return c;
}

PACER_REGISTER_COMMAND(make);

}  // namespace
}  // namespace pacer::cli
