// Board fleets (docs/cluster.md): the Jetson backend identifies its board by the device tree's
// model string, and every profile point records that model and the node it was measured on (the
// Slurm node name when Slurm runs the process, else the host name), in the store.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "base/error.hpp"
#include "hw/emulator/emulated_tree.hpp"
#include "hw/executor.hpp"
#include "hw/jetson/jetson_sysfs.hpp"
#include "hw/profiler.hpp"
#include "tests/hw/helpers.hpp"
#include "tests/support/workloads.hpp"
#include "traces/catalog/catalog.hpp"
#include "traces/store/store.hpp"

namespace pacer::hw {
namespace {

namespace fs = std::filesystem;

std::string host_name() {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  return host;
}

// Sets an environment variable for one scope.
struct ScopedEnv {
  std::string name;
  ScopedEnv(std::string n, const std::string& value) : name(std::move(n)) { ::setenv(name.c_str(), value.c_str(), 1); }
  ~ScopedEnv() { ::unsetenv(name.c_str()); }
};

TEST(BoardFleet, TheDeviceTreeModelNamesTheBoard) {
  test::TempDir tmp;
  const auto orin = traces::find_device("jetson-orin-nano");
  write_fake_tree(tmp.path(), orin);
  // As on a board: /proc/device-tree links to the firmware tree, the model ends in a NUL.
  EXPECT_TRUE(fs::is_symlink(tmp.path() / "proc/device-tree"));
  std::ifstream raw(tmp.path() / "proc/device-tree/model", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(raw)), {});
  EXPECT_EQ(bytes, orin.display_name + std::string(1, '\0'));
  EXPECT_EQ(read_board_model(tmp.path(), real_sysfs_io()), orin.display_name);

  JetsonSysfsOptions o;
  o.root = tmp.path();
  o.state_file = tmp.path() / "state";
  {
    JetsonSysfsDevice dev(o);
    EXPECT_EQ(dev.board_model(), orin.display_name);
  }
  // Without /proc in the tree the firmware tree is read; with neither, the GPU's of_node names it.
  fs::remove(tmp.path() / "proc/device-tree");
  EXPECT_EQ(read_board_model(tmp.path(), real_sysfs_io()), orin.display_name);
  fs::remove_all(tmp.path() / "sys/firmware");
  EXPECT_EQ(read_board_model(tmp.path(), real_sysfs_io()), "");
  JetsonSysfsDevice bare(o);
  EXPECT_EQ(bare.board_model(), "Jetson with GPU " + orin.gpu_arch + " (no device-tree model)");
}

TEST(BoardFleet, NodeNameIsTheSlurmNodeWhenSlurmRunsUs) {
  ::unsetenv("SLURMD_NODENAME");
  EXPECT_EQ(node_name(), host_name());
  ScopedEnv slurm("SLURMD_NODENAME", "nano-17");
  EXPECT_EQ(node_name(), "nano-17");
}

// A profile through the real sysfs backend on a served tree (hardware in the loop) under a Slurm
// node name: every point, as stored, names the node and the board; resuming that profile on a
// board of another model is refused.
TEST(BoardFleet, EveryProfilePointRecordsItsNodeAndBoardModel) {
  test::TempDir tmp;
  const auto nano = traces::find_device("jetson-nano");
  const auto workload = testing::resnet18_cifar();
  LiveTreeOptions lo;
  lo.time_scale = 0.04;
  lo.tick_s = 0.003;
  LiveEmulatedTree tree(tmp.path() / "board", EmulatedJetson::with_workload(nano, workload, {}), nullptr, lo);
  tree.start();
  ScopedEnv slurm("SLURMD_NODENAME", "nano-17");
  JetsonSysfsOptions so;
  so.root = tree.root();
  so.state_file = tmp.path() / "state";
  ProfileOptions o;
  o.workload = workload.name;
  o.batch_sizes = {16, 32};
  o.knob_values = {460.8e6, 921.6e6};
  o.warmup_batches = 1;
  o.measured_batches = 3;
  o.store = tmp.path() / "fleet.h5";
  {
    JetsonSysfsDevice dev(so);
    SleepingExecutor exec(tree.root() / "pacer-emulator", workload.name);
    run_profile(dev, exec, o);
  }
  const auto t = traces::Store::open(o.store).read<traces::ProfileTable>(workload.name);
  ASSERT_EQ(t.points.size(), 4u);
  for (const auto& p : t.points) {
    EXPECT_EQ(p.node, "nano-17") << p.batch_size;
    EXPECT_EQ(p.board_model, nano.display_name) << p.batch_size;
  }

  // The board under the same tree now says it is another model: the profile is not resumed on it.
  {
    std::ofstream model(tree.root() / "sys/firmware/devicetree/base/model", std::ios::binary | std::ios::trunc);
    model << "NVIDIA Jetson Nano 2GB Developer Kit" << '\0';
  }
  JetsonSysfsDevice other(so);
  SleepingExecutor exec(tree.root() / "pacer-emulator", workload.name);
  o.batch_sizes = {64};
  try {
    run_profile(other, exec, o);
    ADD_FAILURE() << "a profile of another board model was resumed";
  } catch (const SettingError& e) {
    EXPECT_EQ(e.option, "profile-name");
    EXPECT_NE(std::string(e.what()).find("'" + nano.display_name + "' (node nano-17)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'NVIDIA Jetson Nano 2GB Developer Kit'"), std::string::npos) << e.what();
  }
  tree.stop();
  EXPECT_EQ(traces::Store::open(o.store).read<traces::ProfileTable>(workload.name), t);
}

}  // namespace
}  // namespace pacer::hw
