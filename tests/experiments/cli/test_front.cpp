// The light `pacer` front: it runs the commands that need no libtorch by itself and hands every
// other invocation to pacer-train (exec), so a user sees one program.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "tests/support/run_pacer.hpp"

namespace fs = std::filesystem;

namespace {

using pacer::testing::RunResult;

// Runs `program ARGS` (not necessarily the built pacer) with stdout and stderr captured.
RunResult run_program(const fs::path& program, const std::string& args, const fs::path& scratch) {
  const auto out = scratch / "out", err = scratch / "err";
  const std::string cmd = program.string() + " " + args + " >" + out.string() + " 2>" + err.string() + " </dev/null";
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, pacer::testing::slurp(out), pacer::testing::slurp(err)};
}

struct LoneFront : ::testing::Test {
  fs::path dir = fs::temp_directory_path() / ("pacer-front-" + std::to_string(::getpid()));
  fs::path front = dir / "pacer";
  void SetUp() override {
    fs::create_directories(dir);
    fs::copy_file(PACER_BINARY, front, fs::copy_options::overwrite_existing);
  }
  void TearDown() override { fs::remove_all(dir); }
};

// A copy of the front without pacer-train beside it still runs the catalog: the light commands
// are its own, not handed over.
TEST_F(LoneFront, RunsTheCatalogWithoutTheTrainingProgram) {
  const auto r = run_program(front, "devices list", dir);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("jetson-nano"), std::string::npos);
}

// ...and says which program it lacks for a training command, in one line, exit 1.
TEST_F(LoneFront, NamesTheMissingTrainingProgram) {
  const auto r = run_program(front, "relation --help", dir);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find((dir / "pacer-train").string()), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

// The front copied under the training program's name would exec itself forever; it stops with one
// line instead (exit 1), naming what to do.
TEST_F(LoneFront, UnderTheTrainingProgramsNameStopsInsteadOfExecingItself) {
  const auto renamed = dir / "pacer-train";
  fs::copy_file(front, renamed, fs::copy_options::overwrite_existing);
  const auto r = run_program("timeout 20 " + renamed.string(), "relation --help", dir);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("under the training program's name"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

// Through the front, the help lists the commands of both programs.
TEST(PacerFront, HelpListsTrainingAndLightCommands) {
  const auto r = pacer::testing::run_pacer("--help", fs::temp_directory_path());
  EXPECT_EQ(r.code, 0);
  for (const char* name : {"devices", "select", "sweep", "relation", "validate", "demo", "profile", "calibrate"})
    EXPECT_NE(r.out.find(std::string("\n  ") + name + " "), std::string::npos) << name << "\n" << r.out;
}

// A training command's usage error comes back unchanged through the exec: exit 2, its own message.
TEST(PacerFront, PassesTheTrainingProgramsExitCodeAndStderr) {
  const auto r = pacer::testing::run_pacer("relation --no-such-option", fs::temp_directory_path());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("pacer relation:"), std::string::npos) << r.err;
  const auto unknown = pacer::testing::run_pacer("no-such-command", fs::temp_directory_path());
  EXPECT_EQ(unknown.code, 2);
  EXPECT_NE(unknown.err.find("unknown command 'no-such-command'"), std::string::npos) << unknown.err;
}

}  // namespace
