// The sbatch scripts pacer writes, without a cluster (issue 22 item 20), and the number of local
// shard processes of --jobs (item 10). A value that sbatch would split or misread on an #SBATCH
// line is quoted (a path, a job name) or refused (--partition, --time, --gres); where Slurm's client
// is installed, the real sbatch parses the script (-vvv prints the options it read, and a config
// naming a closed port makes it give up at once).
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "base/error.hpp"
#include "base/process.hpp"
#include "experiments/cluster/shard.hpp"
#include "experiments/cluster/slurm.hpp"

namespace {
namespace fs = std::filesystem;
using namespace pacer::experiments;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

fs::path temp_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("pacer-slurm-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

SlurmStatus one_stage(const fs::path& store) {
  SlurmStatus st;
  StageStatus stage;
  stage.jobs = relation_job_list("r", store, {8, 16}, {0});
  stage.shards = 2;
  st.stages.push_back(stage);
  return st;
}

SlurmOptions options(const fs::path& dir) {
  SlurmOptions o;
  o.spec = dir / "spec.ini";
  o.pacer = "/bin/true";
  return o;
}

TEST(LocalShards, JobsIsCappedByTheNumberOfJobs) {
  EXPECT_EQ(local_shard_count(1000, 1), 1);
  EXPECT_EQ(local_shard_count(6, 1), 1);
  EXPECT_EQ(local_shard_count(2, 6), 2);
  EXPECT_EQ(local_shard_count(6, 6), 6);
  EXPECT_EQ(local_shard_count(4, 0), 1);  // a stage without jobs still runs (and merges) once
}

// A store in a folder with a blank, '#' and a quote: the log path is one double-quoted word that
// sbatch reads back whole; a usual path stays as it was.
TEST(SlurmScripts, PathsSbatchWouldSplitAreQuotedAndReadBackWhole) {
  const fs::path dir = temp_dir("quote");
  const fs::path odd = dir / "a b#c\"d";
  const auto scripts = write_slurm_scripts(options(dir), one_stage(odd / "s.h5"), {});
  const std::string array = slurp(scripts.stages.at(0).array);
  const fs::path log = odd / "slurm" / "logs" / "s-%A_%a.out";
  std::string quoted = log.string();
  quoted = std::regex_replace(quoted, std::regex("\""), "\\\"");
  EXPECT_NE(array.find("#SBATCH --output=\"" + quoted + "\"\n"), std::string::npos) << array;
  const auto plain = write_slurm_scripts(options(dir), one_stage(dir / "plain" / "s.h5"), {});
  EXPECT_NE(slurp(plain.stages.at(0).array)
                .find("#SBATCH --output=" + (dir / "plain/slurm/logs/s-%A_%a.out").string() + "\n"),
            std::string::npos);
  try {
    pacer::base::find_program("sbatch", "");
  } catch (const pacer::Error&) {
    fs::remove_all(dir);
    GTEST_SKIP() << "sbatch is not installed: the script's text was checked, not Slurm's reading of it";
  }
  const fs::path conf = dir / "slurm.conf";
  std::ofstream(conf) << "ClusterName=t\nSlurmctldHost=localhost\nSlurmctldPort=1\nNodeName=localhost CPUs=1\n"
                         "PartitionName=p Nodes=localhost Default=YES\nAuthType=auth/none\nMessageTimeout=1\n"
                         "TCPTimeout=1\n";
  pacer::base::RunOptions ro;
  ro.set_env = {{"SLURM_CONF", conf.string()}};
  ro.timeout_s = 120;
  const auto r = pacer::base::run_program("sbatch", {"-vvv", scripts.stages.at(0).array.string()}, ro);
  EXPECT_NE(r.output.find("output              : " + log.string() + "\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("job-name            : pacer-relation-s\n"), std::string::npos) << r.output;
  fs::remove_all(dir);
}

// --partition, --time and --gres are copied as given: anything but a plain value is refused
// before any script is written.
TEST(SlurmScripts, SettingsSbatchWouldSplitOrMisreadAreRefusedBeforeAnyScript) {
  const fs::path dir = temp_dir("refuse");
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{{"partition", "gpu $(reboot)"},
                                                                                   {"partition", "gpu\nhostname"},
                                                                                   {"gres", "gpu:1 --wrap=id"},
                                                                                   {"time", "-1"},
                                                                                   {"partition", "`id`"},
                                                                                   {"gres", "gpu:1#x"}}) {
    SlurmOptions o = options(dir);
    (key == "partition" ? o.partition : key == "time" ? o.time_limit : o.gres) = value;
    try {
      write_slurm_scripts(o, one_stage(dir / "s.h5"), {});
      ADD_FAILURE() << key << " '" << value << "' was written";
    } catch (const pacer::SettingError& e) {
      EXPECT_EQ(e.option, key);
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
    EXPECT_FALSE(fs::exists(dir / "slurm")) << key << " " << value;
  }
  SlurmOptions ok = options(dir);
  ok.partition = "gpu-a100";
  ok.gres = "gpu:a100:1";
  ok.time_limit = "1-00:00:00";
  EXPECT_NO_THROW(write_slurm_scripts(ok, one_stage(dir / "s.h5"), {}));
  fs::remove_all(dir);
}

}  // namespace
