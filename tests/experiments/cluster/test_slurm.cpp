// Campaigns on several processes and on a real Slurm cluster, which must give the relation one
// process gives. A tiny relation campaign (cnn-w0.5 from scratch on 1,500 Fashion-MNIST proxy
// images, b in {8, 16, 32} x seeds {0, 1} = 6 jobs, one CPU thread, deterministic per (b, seed)) is
// run serially once; then
//  - as --shard stores merged with `pacer merge`, and with --jobs 2: the same relation;
//  - `pacer slurm submit --dry-run` writes the array and merge scripts with the command line;
//  - on a single-node Slurm cluster started here (munged, slurmctld, slurmd on localhost, a config
//    in a temporary folder, proctrack/linuxproc): submitted as a 6-task array, merged by the
//    dependent job, equal to the serial run; a second submission with one task cancelled is
//    reported by `pacer slurm status` and completed by submitting again, with the same result;
//  - a validation (two stages: the oracle's relation, then the runs of the chosen configurations)
//    on that relation's store: its scripts per stage and the finish job (--dry-run), and on the
//    cluster, stage after stage, the same validation as the whole command run serially.
// The daemons are children of this test, stopped by their process ids whatever happens.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "tests/support/run_pacer.hpp"
#include "traces/store/store.hpp"

namespace {
namespace fs = std::filesystem;
using pacer::testing::run_pacer;
using pacer::testing::slurp;
using pacer::traces::RelationRun;
using pacer::traces::RelationSet;
using pacer::traces::Store;

const char* kCampaign =
    "workload = cnn-w0.5\ndataset = fmnist-proxy\ncheckpoint = none\nmax-train = 1500\neval-samples = 300\n"
    "eval-every = 256\nscreen-samples = 0\ntarget = 0.75\nbudget = 3000\nbatch-sizes = 8,16,32\nseeds = 0,1\n"
    "threads = 1\nname = proxy\n";

fs::path g_dir;
RelationSet g_serial;

void write_text(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

// A spec: the campaign's [relation] section writing `out`, and a [slurm] section.
fs::path write_spec(const std::string& name, const std::string& slurm) {
  const fs::path spec = g_dir / (name + ".ini");
  write_text(spec, std::string("[relation]\n") + kCampaign + "out = " + (g_dir / name / "relations.h5").string() +
                       "\n[slurm]\n" + slurm);
  return spec;
}

RelationSet read_relation(const fs::path& store) {
  return Store::open(store).read<pacer::traces::RelationSet>("proxy");
}

// Equal to the serial run in everything but the wall time of each run (a property of the machine
// at that moment, not of the result).
void expect_same_relation(const RelationSet& got, const RelationSet& want) {
  RelationSet a = got, b = want;
  ASSERT_EQ(a.runs.size(), b.runs.size());
  for (size_t i = 0; i < a.runs.size(); ++i) {
    EXPECT_GT(a.runs[i].wall_time_s, 0);
    a.runs[i].wall_time_s = b.runs[i].wall_time_s = 0;
  }
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.relation_vector(), b.relation_vector());
}

class Campaign : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    g_dir = fs::temp_directory_path() / ("pacer-cluster-" + std::to_string(::getpid()));
    fs::remove_all(g_dir);
    fs::create_directories(g_dir);
    const fs::path spec = write_spec("serial", "");
    const auto r = run_pacer("relation --config " + spec.string(), g_dir);
    ASSERT_EQ(r.code, 0) << r.err;
    g_serial = read_relation(g_dir / "serial" / "relations.h5");
    ASSERT_EQ(g_serial.runs.size(), 6u);
  }
  static void TearDownTestSuite() { fs::remove_all(g_dir); }
  void SetUp() override {
    if (g_serial.runs.empty()) GTEST_SKIP() << "the serial reference run failed";
  }
};

TEST_F(Campaign, ListJobsNumbersTheJobsInCampaignOrder) {
  const auto r = run_pacer("relation --config " + write_spec("list", "").string() + " --list-jobs", g_dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("jobs: 6\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("job 0: b=8 seed=0\njob 1: b=8 seed=1\njob 2: b=16 seed=0\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("job 5: b=32 seed=1\n"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(g_dir / "list")) << "--list-jobs must not train or write";
}

TEST_F(Campaign, ShardsMergedEqualTheSerialRun) {
  const fs::path spec = write_spec("shards", "");
  const fs::path dir = g_dir / "shards";
  std::string inputs;
  for (int i = 0; i < 4; ++i) {  // 6 jobs in 4 shards: jobs {0,4}, {1,5}, {2}, {3}
    const auto r = run_pacer("relation --config " + spec.string() + " --shard " + std::to_string(i) + "/4", g_dir);
    ASSERT_EQ(r.code, 0) << r.err;
    const fs::path store = dir / ("relations.shard-" + std::to_string(i) + "-of-4.h5");
    EXPECT_EQ(read_relation(store).runs.size(), i < 2 ? 2u : 1u);
    EXPECT_EQ(slurp(fs::path(store.string() + ".outcome")).rfind("done on ", 0), 0u);
    inputs += " " + store.string();
  }
  EXPECT_FALSE(fs::exists(dir / "relations.h5")) << "a shard writes only its own store";
  const auto m = run_pacer("merge " + (dir / "relations.h5").string() + inputs, g_dir);
  ASSERT_EQ(m.code, 0) << m.err;
  expect_same_relation(read_relation(dir / "relations.h5"), g_serial);
}

// --jobs 2 prints one line per shard and the merged relation's table once, and leaves the store
// alone: no shard store, lock or outcome behind.
TEST_F(Campaign, LocalJobsEqualTheSerialRun) {
  const auto r = run_pacer("relation --config " + write_spec("jobs", "").string() + " --jobs 2", g_dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("merged into"), std::string::npos) << r.out;
  expect_same_relation(read_relation(g_dir / "jobs" / "relations.h5"), g_serial);
  size_t tables = 0;
  for (size_t at = r.out.find("relation proxy ("); at != std::string::npos; at = r.out.find("relation proxy (", at + 1))
    ++tables;
  EXPECT_EQ(tables, 1u) << r.out;
  EXPECT_LT(r.out.find("merged into"), r.out.find("relation proxy (")) << r.out;
  EXPECT_NE(r.out.find("shard 0/2: 3 of the relation's runs"), std::string::npos) << r.out;
  std::set<std::string> left;
  for (const auto& e : fs::directory_iterator(g_dir / "jobs")) left.insert(e.path().filename().string());
  left.erase("relations.h5.lock");  // the store's own writers' lock stays, as beside every store
  EXPECT_EQ(left, (std::set<std::string>{"relations.h5"}));
}

// A profile's jobs are its batch sizes; --jobs 4 for 3 batch sizes starts 3 local shards (never
// more than the jobs, issue 22 item 10), which merge to the serial grid's points, bit for bit, with
// the profiling cost of all shards.
TEST_F(Campaign, ProfileShardsCoverTheSerialGrid) {
  const std::string args =
      "profile --device emulated:jetson-nano --workload cnn@1x12x12 --batch-sizes 8,16,32 --store ";
  const fs::path serial = g_dir / "profile-serial.h5", sharded = g_dir / "profile-jobs" / "p.h5";
  auto r = run_pacer(args + serial.string(), g_dir);
  ASSERT_EQ(r.code, 0) << r.err;
  r = run_pacer(args + sharded.string() + " --list-jobs", g_dir);
  EXPECT_NE(r.out.find("jobs: 3\njob 0: b=8\njob 1: b=16\njob 2: b=32\n"), std::string::npos) << r.out;
  r = run_pacer(args + sharded.string() + " --jobs 4", g_dir);
  ASSERT_EQ(r.code, 0) << r.err;
  // 3 shards (never more than the jobs), merged: no shard store, lock or outcome is left.
  for (const auto& e : fs::directory_iterator(sharded.parent_path()))
    EXPECT_EQ(e.path().filename().string().find("p.shard-"), std::string::npos) << e.path();
  const auto want = Store::open(serial).read<pacer::traces::ProfileTable>("cnn@1x12x12");
  const auto got = Store::open(sharded).read<pacer::traces::ProfileTable>("cnn@1x12x12");
  ASSERT_EQ(got.points.size(), want.points.size());
  // Each shard measures its points as the serial run does, bit for bit (an emulated point's noise is
  // the stream of (seed, setting, b): EmulatedJetson::start_point).
  for (const auto& p : want.points) {
    const auto* q = got.find(p.knob, p.batch_size);
    ASSERT_NE(q, nullptr) << p.batch_size;
    EXPECT_EQ(*q, p) << p.knob[0] << " " << p.batch_size;
  }
  // The shards' costs summed (merge; tests/traces/store): the serial run's virtual times, regrouped.
  EXPECT_NEAR(got.profiling_cost_s, want.profiling_cost_s, 1e-9 * want.profiling_cost_s);
}

TEST_F(Campaign, DryRunWritesTheScripts) {
  const fs::path spec = write_spec("dry", "shards = 6\narray-limit = 2\npartition = gpu\ntime = 1:00:00\n");
  const auto r = run_pacer("slurm submit --dry-run --config " + spec.string(), g_dir);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string array = slurp(g_dir / "dry" / "slurm" / "relations-array.sbatch");
  EXPECT_NE(array.find("#SBATCH --array=0-5%2\n"), std::string::npos) << array;
  EXPECT_NE(array.find("#SBATCH --partition=gpu\n"), std::string::npos) << array;
  EXPECT_NE(array.find("#SBATCH --time=1:00:00\n"), std::string::npos) << array;
  EXPECT_NE(array.find("relation --config " + spec.string() + " --shard \"${SLURM_ARRAY_TASK_ID}/6\""),
            std::string::npos)
      << array;
  const std::string merge = slurp(g_dir / "dry" / "slurm" / "relations-merge.sbatch");
  EXPECT_NE(merge.find(" merge --update " + (g_dir / "dry" / "relations.h5").string() + " " +
                       (g_dir / "dry" / "relations.shard-0-of-6.h5").string()),
            std::string::npos)
      << merge;
  EXPECT_NE(merge.find("relations.shard-5-of-6.h5\n"), std::string::npos) << merge;
  const auto st = run_pacer("slurm status --config " + spec.string(), g_dir);
  EXPECT_EQ(st.code, 1);
  EXPECT_NE(st.out.find("shard 3/6 (1 job): missing"), std::string::npos) << st.out;
}

// Without Slurm's client on PATH, submit is one line saying what to install and submits nothing;
// a --pacer that is no program is a usage line naming the option.
TEST_F(Campaign, SubmitWithoutSlurmSaysWhatToInstall) {
  const fs::path spec = write_spec("noslurm", "shards = 2\n");
  const fs::path empty_bin = g_dir / "empty-bin";
  fs::create_directories(empty_bin);
  const std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  ::setenv("PATH", empty_bin.c_str(), 1);
  const auto r = run_pacer("slurm submit --config " + spec.string(), g_dir);
  ::setenv("PATH", path.c_str(), 1);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("sbatch not found on PATH: install Slurm's client (apt-get install slurm-wlm)"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(g_dir / "noslurm" / "slurm" / "relations.submitted"));
  const auto bad = run_pacer("slurm status --pacer /nonexistent/pacer --config " + spec.string(), g_dir);
  EXPECT_EQ(bad.code, 1) << bad.err;
  EXPECT_NE(bad.err.find("--pacer: /nonexistent/pacer does not exist"), std::string::npos) << bad.err;
}

// A submit that Slurm refuses part way (its controller unreachable after the array was queued) is
// all or nothing: the job it queued is cancelled, and the scripts and the slurm/ folder it wrote are
// removed; the error line says both. sbatch and scancel are stand-ins that log their arguments.
TEST_F(Campaign, ASubmitSlurmRefusesPartWayCancelsWhatItQueuedAndKeepsNoScript) {
  const fs::path spec = write_spec("halfslurm", "shards = 2\n");
  const fs::path bin = g_dir / "half-bin", log = g_dir / "half-bin" / "calls.log";
  fs::create_directories(bin);
  // The first sbatch queues job 4242; every later one cannot reach the controller.
  write_text(bin / "sbatch", "#!/bin/sh\necho \"sbatch $*\" >> " + log.string() + "\nif [ -e " +
                                 (bin / "once").string() +
                                 " ]; then echo 'sbatch: error: Batch job submission failed: Unable to contact slurm "
                                 "controller' >&2; exit 1; fi\ntouch " +
                                 (bin / "once").string() + "\necho 4242\n");
  write_text(bin / "scancel", "#!/bin/sh\necho \"scancel $*\" >> " + log.string() + "\n");
  fs::permissions(bin / "sbatch", fs::perms::owner_all);
  fs::permissions(bin / "scancel", fs::perms::owner_all);
  const std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  ::setenv("PATH", (bin.string() + ":" + path).c_str(), 1);
  const auto r = run_pacer("slurm submit --config " + spec.string(), g_dir);
  ::setenv("PATH", path.c_str(), 1);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(
      r.err.find("Unable to contact slurm controller: is Slurm reachable from this machine (sinfo)? (the 1 job(s) it "
                 "had submitted were cancelled; no new script kept)"),
      std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  const std::string calls = slurp(log);
  EXPECT_NE(calls.find("scancel 4242\n"), std::string::npos) << calls;
  EXPECT_FALSE(fs::exists(g_dir / "halfslurm" / "slurm")) << "a failed submit left its scripts";
  // A dry run's scripts, written before, stay.
  ASSERT_EQ(run_pacer("slurm submit --dry-run --config " + spec.string(), g_dir).code, 0);
  ::setenv("PATH", (bin.string() + ":" + path).c_str(), 1);
  const auto again = run_pacer("slurm submit --config " + spec.string(), g_dir);
  ::setenv("PATH", path.c_str(), 1);
  EXPECT_EQ(again.code, 1) << again.err;
  EXPECT_NE(again.err.find("(nothing was submitted; no new script kept)"), std::string::npos) << again.err;
  EXPECT_TRUE(fs::exists(g_dir / "halfslurm" / "slurm" / "relations-array.sbatch"));
}

// A validation of the serial relation (as its proxy) on a profile of the emulated Nano: target
// Fashion-MNIST half B, 3 batch sizes x 2 seeds per stage, the pacer policy and the oracle at one cap.
const char* kValidation =
    "target-dataset = fmnist-target-a\ncheckpoint = none\nmax-train = 1500\neval-samples = 300\n"
    "eval-every = 256\ntarget = 0.75\nbudget = 3000\nseeds = 0,1\nthreads = 1\npolicies = ours,oracle\n"
    "sensor-rate = 20Hz\nname = v\n";

// A store holding the profile and the serial proxy relation (made once, copied for each use), and
// a validation spec on a copy of it in `name`/v.h5.
fs::path write_validate_spec(const std::string& name, const std::string& slurm) {
  const fs::path base = g_dir / "validate-base.h5";
  if (!fs::exists(base)) {
    const fs::path profile = g_dir / "validate-profile.h5";
    auto r = run_pacer(
        "profile --device emulated:jetson-nano --workload cnn-w0.5@1x28x28 --batch-sizes 8,16,32 "
        "--store " +
            profile.string(),
        g_dir);
    EXPECT_EQ(r.code, 0) << r.err;
    r = run_pacer(
        "merge " + base.string() + " " + profile.string() + " " + (g_dir / "serial" / "relations.h5").string(), g_dir);
    EXPECT_EQ(r.code, 0) << r.err;
  }
  const auto prof = Store::open(base).read<pacer::traces::ProfileTable>("cnn-w0.5@1x28x28");
  double lo = 1e9, hi = 0;
  for (const auto& p : prof.points) lo = std::min(lo, p.power_peak_w), hi = std::max(hi, p.power_peak_w);
  fs::create_directories(g_dir / name);
  fs::copy_file(base, g_dir / name / "v.h5", fs::copy_options::overwrite_existing);
  const fs::path spec = g_dir / (name + ".ini");
  write_text(spec, std::string("[validate]\n") + kValidation + "store = " + (g_dir / name / "v.h5").string() +
                       "\npower-limits = " + std::to_string(std::round((lo + 0.6 * (hi - lo)) * 10) / 10) +
                       "W\n[slurm]\ncampaign = validate\n" + slurm);
  return spec;
}

// The validation and its oracle relation in `got` are those of `want`, up to the wall time of each
// run and the node it ran on (`node` in `got`).
void expect_same_validation(const fs::path& got, const fs::path& want, const std::string& node) {
  const Store a = Store::open(got), b = Store::open(want);
  auto va = a.read<pacer::traces::ValidationResult>("v"), vb = b.read<pacer::traces::ValidationResult>("v");
  ASSERT_EQ(va.rows.size(), vb.rows.size());
  ASSERT_EQ(va.rows.size(), 4u);  // 2 policies x 2 seeds at one cap
  for (size_t i = 0; i < va.rows.size(); ++i) {
    EXPECT_EQ(va.rows[i].node, node);
    EXPECT_EQ(va.rows[i].board_model, "NVIDIA Jetson Nano 4GB");
    va.rows[i].wall_time_s = vb.rows[i].wall_time_s = 0;
    va.rows[i].node = vb.rows[i].node = "";
  }
  EXPECT_EQ(va, vb);
  expect_same_relation(a.read<pacer::traces::RelationSet>("fmnist-target-a-true"),
                       b.read<pacer::traces::RelationSet>("fmnist-target-a-true"));
}

TEST_F(Campaign, ValidationDryRunWritesAnArrayAndAMergePerStageAndAFinishJob) {
  const fs::path spec = write_validate_spec("vdry", "shards = 4\narray-limit = 2\n");
  const auto r = run_pacer("slurm submit --dry-run --config " + spec.string(), g_dir);
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const fs::path dir = g_dir / "vdry" / "slurm";
  for (const std::string stage : {"oracle", "runs"}) {
    const std::string array = slurp(dir / ("v-" + stage + "-array.sbatch"));
    EXPECT_NE(array.find("#SBATCH --array=0-3%2\n"), std::string::npos) << array;
    EXPECT_NE(array.find("validate --config " + spec.string() + " --stage " + stage +
                         " --shard \"${SLURM_ARRAY_TASK_ID}/4\""),
              std::string::npos)
        << array;
    const std::string merge = slurp(dir / ("v-" + stage + "-merge.sbatch"));
    EXPECT_NE(merge.find(" merge --update " + (g_dir / "vdry" / "v.h5").string() + " " +
                         (g_dir / "vdry" / ("v." + stage + "-shard-0-of-4.h5")).string()),
              std::string::npos)
        << merge;
  }
  const std::string finish = slurp(dir / "v-finish.sbatch");
  EXPECT_NE(finish.find("validate --config " + spec.string() + "\n"), std::string::npos) << finish;
  const auto st = run_pacer("slurm status --config " + spec.string(), g_dir);
  EXPECT_EQ(st.code, 1);
  EXPECT_NE(st.out.find("stage oracle (record fmnist-target-a-true): 6 jobs in 4 shards\n"), std::string::npos)
      << st.out;
  EXPECT_NE(st.out.find("runs shard 3/4 (1 job): missing"), std::string::npos) << st.out;
}

// ---------------------------------------------------------------------------------------------
// A single-node Slurm cluster, children of this process.
class Cluster {
 public:
  explicit Cluster(const fs::path& dir) : dir_(dir) {}
  ~Cluster() { stop(); }

  // Returns "" when the cluster runs, else why not.
  std::string start() {
    for (const char* tool : {"/usr/sbin/munged", "/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/bin/sbatch"})
      if (!fs::exists(tool)) return std::string(tool) + " is not installed (setup.sh installs slurm-wlm and munge)";
    fs::create_directories(dir_ / "state");
    fs::create_directories(dir_ / "spool");
    {
      std::ofstream key(dir_ / "munge.key", std::ios::binary);
      std::mt19937 rng(static_cast<unsigned>(::getpid()));
      for (int i = 0; i < 1024; ++i) key.put(static_cast<char>(rng()));
    }
    fs::permissions(dir_ / "munge.key", fs::perms::owner_read, fs::perm_options::replace);
    const int port = 20000 + static_cast<int>(::getpid() % 20000) * 2;
    const std::string d = dir_.string();
    write_text(
        dir_ / "slurm.conf",
        "ClusterName=pacertest\nSlurmctldHost=localhost\nSlurmctldPort=" + std::to_string(port) +
            "\nSlurmdPort=" + std::to_string(port + 1) + "\nAuthType=auth/munge\nAuthInfo=socket=" + d +
            "/munge.sock\nCredType=cred/munge\nSlurmUser=root\nSlurmdUser=root\nStateSaveLocation=" + d +
            "/state\nSlurmdSpoolDir=" + d + "/spool\nSlurmctldPidFile=" + d + "/slurmctld.pid\nSlurmdPidFile=" + d +
            "/slurmd.pid\nSlurmctldLogFile=" + d + "/slurmctld.log\nSlurmdLogFile=" + d +
            "/slurmd.log\nProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nSelectType=select/cons_tres\n"
            "SelectTypeParameters=CR_Core\nReturnToService=2\nMpiDefault=none\nJobAcctGatherType=jobacct_gather/none\n"
            "AccountingStorageType=accounting_storage/none\nSwitchType=switch/none\nMinJobAge=600\n"
            "NodeName=localhost CPUs=2 RealMemory=1000 State=UNKNOWN\n"
            "PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP\n");
    ::setenv("SLURM_CONF", (dir_ / "slurm.conf").c_str(), 1);
    spawn({"/usr/sbin/munged", "-F", "--key-file=" + d + "/munge.key", "--socket=" + d + "/munge.sock",
           "--pid-file=" + d + "/munged.pid", "--log-file=" + d + "/munged.log", "--seed-file=" + d + "/munge.seed"});
    // Hang guards (a busy machine starts daemons slowly): a daemon that is slow is waited for, not skipped.
    if (!wait_for([&] { return fs::exists(dir_ / "munge.sock"); }, 120)) return "munged did not start (" + d + ")";
    spawn({"/usr/sbin/slurmctld", "-D", "-f", d + "/slurm.conf"});
    spawn({"/usr/sbin/slurmd", "-D", "-f", d + "/slurm.conf"});
    if (!wait_for([&] { return shell("sinfo -h -o %t") == "idle\n"; }, 180))
      return "slurmctld/slurmd did not bring the node up within 180 s (logs in " + d + ")";
    return "";
  }

  void stop() {
    for (auto it = pids_.rbegin(); it != pids_.rend(); ++it) ::kill(*it, SIGTERM);
    for (const pid_t pid : pids_) {
      bool gone = false;
      for (int i = 0; i < 50 && !gone; ++i) {
        gone = ::waitpid(pid, nullptr, WNOHANG) == pid;
        if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      if (!gone) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
      }
    }
    pids_.clear();
    ::unsetenv("SLURM_CONF");
  }

  static std::string shell(const std::string& cmd) {
    std::string out;
    if (FILE* p = ::popen((cmd + " 2>/dev/null").c_str(), "r")) {
      char buf[512];
      while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
      ::pclose(p);
    }
    return out;
  }

  static bool wait_for(const std::function<bool()>& ready, int seconds) {
    for (int i = 0; i < seconds * 5; ++i) {
      if (ready()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return false;
  }

 private:
  void spawn(const std::vector<std::string>& args) {
    const std::string log = (dir_ / (fs::path(args[0]).filename().string() + ".out")).string();
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::setsid();
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      std::vector<std::string> copy = args;
      std::vector<char*> argv;
      for (auto& a : copy) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    if (pid > 0) pids_.push_back(pid);
  }

  fs::path dir_;
  std::vector<pid_t> pids_;
};

std::string job_id(const std::string& out, const std::string& what) {
  std::smatch m;
  const std::regex re(what + " job (\\d+)");
  return std::regex_search(out, m, re) ? m[1].str() : "";
}

bool wait_jobs_gone(const std::string& ids, int seconds) {
  return Cluster::wait_for([&] { return Cluster::shell("squeue -h -o %i -j " + ids).empty(); }, seconds);
}

TEST_F(Campaign, SlurmArrayMergesToTheSerialRunAndResubmitCompletesACancelledTask) {
  if (::geteuid() != 0) GTEST_SKIP() << "a local Slurm cluster needs root (slurmd runs the tasks as root)";
  Cluster cluster(g_dir / "cluster");
  if (const std::string why = cluster.start(); !why.empty()) GTEST_SKIP() << why;

  const fs::path spec = write_spec("array", "shards = 6\narray-limit = 2\n");
  auto r = run_pacer("slurm submit --config " + spec.string(), g_dir);
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const std::string array = job_id(r.out, "array"), merge = job_id(r.out, "merge");
  ASSERT_FALSE(array.empty() || merge.empty()) << r.out;
  ASSERT_TRUE(wait_jobs_gone(array + "," + merge, 150)) << Cluster::shell("squeue");
  ASSERT_TRUE(fs::exists(g_dir / "array" / "relations.h5"))
      << slurp(g_dir / "array" / "slurm" / "logs" / ("relations-merge-" + merge + ".out"));
  expect_same_relation(read_relation(g_dir / "array" / "relations.h5"), g_serial);
  EXPECT_EQ(run_pacer("slurm status --config " + spec.string(), g_dir).code, 0);

  // One task at a time; the last one is cancelled while it waits.
  const fs::path spec2 = write_spec("cancel", "shards = 6\narray-limit = 1\n");
  r = run_pacer("slurm submit --config " + spec2.string(), g_dir);
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const std::string array2 = job_id(r.out, "array");
  ASSERT_EQ(std::system(("scancel " + array2 + "_5").c_str()), 0);
  ASSERT_TRUE(wait_jobs_gone(array2, 150)) << Cluster::shell("squeue");
  const auto st = run_pacer("slurm status --config " + spec2.string(), g_dir);
  EXPECT_EQ(st.code, 1);
  EXPECT_NE(st.out.find("shard 5/6 (1 job): missing"), std::string::npos) << st.out;
  EXPECT_NE(st.out.find("5 done"), std::string::npos) << st.out;
  EXPECT_FALSE(fs::exists(g_dir / "cancel" / "relations.h5")) << "the merge ran without shard 5";

  r = run_pacer("slurm submit --config " + spec2.string(), g_dir);
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("submitting shards 5\n"), std::string::npos) << r.out;
  const std::string array3 = job_id(r.out, "array"), merge3 = job_id(r.out, "merge");
  ASSERT_TRUE(wait_jobs_gone(array3 + "," + merge3, 150)) << Cluster::shell("squeue");
  expect_same_relation(read_relation(g_dir / "cancel" / "relations.h5"), g_serial);
  EXPECT_EQ(run_pacer("slurm status --config " + spec2.string(), g_dir).code, 0);
}

}  // namespace

namespace {

// A validation on the cluster: the oracle stage's array, its merge, the runs stage's array, its
// merge and the finish job, each after the one before; the result is the serial validation's.
TEST_F(Campaign, SlurmValidationInStagesEqualsTheWholeValidation) {
  if (::geteuid() != 0) GTEST_SKIP() << "a local Slurm cluster needs root (slurmd runs the tasks as root)";
  Cluster cluster(g_dir / "vcluster");
  if (const std::string why = cluster.start(); !why.empty()) GTEST_SKIP() << why;
  const fs::path serial = write_validate_spec("vserial", "");
  auto r = run_pacer("validate --config " + serial.string(), g_dir);
  ASSERT_EQ(r.code, 0) << r.err;

  const fs::path spec = write_validate_spec("varray", "shards = 6\narray-limit = 2\n");
  r = run_pacer("slurm submit --config " + spec.string(), g_dir);
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const std::string finish = job_id(r.out, "finish");
  ASSERT_FALSE(finish.empty()) << r.out;
  EXPECT_NE(r.out.find("stage oracle: submitted array job"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("stage runs: submitted array job"), std::string::npos) << r.out;
  ASSERT_TRUE(Cluster::wait_for([&] { return Cluster::shell("squeue -h -o %i").empty(); }, 300))
      << Cluster::shell("squeue");
  const std::string log = slurp(g_dir / "varray" / "slurm" / "logs" / ("v-finish-" + finish + ".out"));
  EXPECT_NE(log.find("\n0 real training runs"), std::string::npos) << log;
  expect_same_validation(g_dir / "varray" / "v.h5", g_dir / "vserial" / "v.h5", "localhost");
  const auto st = run_pacer("slurm status --config " + spec.string(), g_dir);
  EXPECT_EQ(st.code, 0) << st.out;
  EXPECT_NE(st.out.find("runs shard 5/6 (1 job): done on localhost"), std::string::npos) << st.out;
}

}  // namespace

namespace {

// The tiny campaign as an adaptive one in at most three rounds, for the emulated Nano's profile.
fs::path write_adaptive_spec(const std::string& name, const std::string& slurm) {
  const fs::path profile = g_dir / "adaptive-profile.h5";
  if (!fs::exists(profile)) {
    const auto r = run_pacer(
        "profile --device emulated:jetson-nano --workload cnn-w0.5@1x28x28 --batch-sizes 8,16,32 --store " +
            profile.string(),
        g_dir);
    EXPECT_EQ(r.code, 0) << r.err;
  }
  const fs::path spec = g_dir / (name + ".ini");
  write_text(spec, std::string("[relation]\n") + kCampaign +
                       "adaptive = true\neval-stop = full\nmax-rounds = 3\nfirst-round = 12.5%\ncaps = 4\nprofile-store = " +
                       profile.string() + "\nout = " + (g_dir / name / "relations.h5").string() + "\n[slurm]\n" +
                       slurm);
  return spec;
}

// The decisions that matter (what each round trains, what stopped, the end), without wall times.
std::vector<std::string> decisions(const fs::path& store) {
  std::vector<std::string> out;
  for (const auto& d : Store::open(store).read<pacer::traces::AdaptiveLog>("proxy").decisions)
    out.push_back(fmt::format("{} {} b={} seed={} {}", d.round, d.action, d.batch_size, d.seed, d.budget_samples));
  return out;
}

}  // namespace

// Every round of an adaptive campaign is an array, a merge and a decision job; the next round's
// array waits for that decision (afterok).
TEST_F(Campaign, AdaptiveDryRunWritesADecisionJobPerRound) {
  const fs::path spec = write_adaptive_spec("adry", "shards = 2\n");
  const auto r = run_pacer("slurm submit --dry-run --config " + spec.string(), g_dir);
  ASSERT_EQ(r.code, 0) << r.err;
  for (const std::string round : {"round-1", "round-2", "round-3"}) {
    const std::string decide = slurp(g_dir / "adry" / "slurm" / ("relations-" + round + "-decide.sbatch"));
    EXPECT_NE(decide.find("relation --config " + spec.string() + " --stage " + round + " --decide\n"),
              std::string::npos)
        << decide;
    const std::string array = slurp(g_dir / "adry" / "slurm" / ("relations-" + round + "-array.sbatch"));
    EXPECT_NE(array.find(" --stage " + round + " --shard \"${SLURM_ARRAY_TASK_ID}/2\""), std::string::npos) << array;
  }
  EXPECT_FALSE(fs::exists(g_dir / "adry" / "slurm" / "relations-round-4-array.sbatch"));
}

TEST_F(Campaign, SlurmAdaptiveRoundsEachAfterTheDecisionBeforeEqualTheSerialCampaign) {
  if (::geteuid() != 0) GTEST_SKIP() << "a local Slurm cluster needs root (slurmd runs the tasks as root)";
  Cluster cluster(g_dir / "acluster");
  if (const std::string why = cluster.start(); !why.empty()) GTEST_SKIP() << why;
  const fs::path serial = write_adaptive_spec("aserial", "");
  auto r = run_pacer("relation --config " + serial.string(), g_dir);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto want = decisions(g_dir / "aserial" / "relations.h5");
  ASSERT_GT(std::count_if(want.begin(), want.end(), [](const std::string& d) { return d.rfind("2 train", 0) == 0; }),
            0)
      << "the campaign needs a second round to test its dependency";

  const fs::path spec = write_adaptive_spec("aarray", "shards = 2\n");
  r = run_pacer("slurm submit --config " + spec.string(), g_dir);
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("stage round-1: submitted decision job"), std::string::npos) << r.out;
  const std::string finish = job_id(r.out, "finish");
  ASSERT_FALSE(finish.empty()) << r.out;
  ASSERT_TRUE(Cluster::wait_for([&] { return Cluster::shell("squeue -h -o %i").empty(); }, 400))
      << Cluster::shell("squeue");
  const fs::path store = g_dir / "aarray" / "relations.h5";
  ASSERT_TRUE(fs::exists(store)) << slurp(g_dir / "aarray" / "slurm" / "logs" / ("relations-finish-" + finish + ".out"));
  EXPECT_EQ(decisions(store), want);
  RelationSet got = read_relation(store), serial_set = read_relation(g_dir / "aserial" / "relations.h5");
  ASSERT_EQ(got.runs.size(), serial_set.runs.size());
  for (const auto& w : serial_set.runs) {
    const auto it = std::find_if(got.runs.begin(), got.runs.end(), [&](const RelationRun& x) {
      return x.batch_size == w.batch_size && x.seed == w.seed;
    });
    ASSERT_NE(it, got.runs.end()) << w.batch_size << " " << w.seed;
    EXPECT_EQ(it->samples, w.samples);
    EXPECT_EQ(it->reached, w.reached);
    EXPECT_EQ(it->budget_samples, w.budget_samples);
  }
}
