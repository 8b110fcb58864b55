// `pacer restore`: puts back the GPU frequency range (or the nvpmodel power mode) a crashed pacer run left, from the
// state file every run writes before its first change (the next pacer run on the same tree does this too).
#include <fmt/format.h>

#include <filesystem>
#include <iostream>

#include "base/error.hpp"
#include "experiments/cli/cli.hpp"
#include "hw/jetson/jetson_sysfs.hpp"
#include "hw/jetson/restore_guard.hpp"
#include "hw/jetson/sysfs_io.hpp"

namespace pacer::cli {
namespace {

namespace fs = std::filesystem;

int run_restore(const po::variables_map& vm) {
  const fs::path root = vm["sysfs-root"].as<std::string>();
  const fs::path file =
      vm.count("state-file") ? fs::path(vm["state-file"].as<std::string>()) : hw::default_state_file(root);
  if (!fs::exists(file)) {
    std::cout << fmt::format("nothing to restore: no state file at {} (the last run exited cleanly)\n", file.string());
    return 0;
  }
  std::cout << hw::restore_from_state_file(file, root, hw::real_sysfs_io()) << "\n";
  return 0;
}

Command make() {
  Command c;
  c.name = "restore";
  c.summary = "restore GPU clocks or the power mode left changed by a crashed pacer run";
  c.order = 31;
  c.description =
      "Every run that pins a Jetson GPU frequency first writes the original min_freq/max_freq to a state file\n"
      "($PACER_STATE_DIR, else ~/.local/state/pacer, one per sysfs root) and deletes it when it restores. After\n"
      "a crash (SIGKILL, power loss) the file remains; this command replays it. Refuses while the run that\n"
      "wrote it is still alive, and replays only the min_freq/max_freq of the devfreq node under --sysfs-root that\n"
      "the run saved, from a state folder owned by you and not writable by others. A run that changed the nvpmodel\n"
      "power mode saved the mode in force and the nvpmodel program: the restore runs `nvpmodel -m ID` (only a\n"
      "program owned by root or you and writable by nobody else) and checks `nvpmodel -q`.";
  c.add_options = [](po::options_description& d) {
    d.add_options()("sysfs-root", po::value<std::string>()->default_value("/"), "root of the Jetson sysfs tree")(
        "state-file", po::value<std::string>(), "state file to replay (default: the one of --sysfs-root)");
  };
  c.input_files = {"state-file"};
  c.run = run_restore;
  return c;
}

PACER_REGISTER_COMMAND(make);

}  // namespace
}  // namespace pacer::cli
