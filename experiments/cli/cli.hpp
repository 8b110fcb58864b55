#pragma once
// The `pacer` command-line framework. Each subcommand lives in its own cmd_<name>.cpp in this
// folder and registers itself with a static PACER_REGISTER_COMMAND. Options use
// Boost.Program_options; quantities use the typed values of options.hpp so malformed values are
// usage errors (exit 2) that name the option.
#include <boost/program_options.hpp>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "traces/store/store_file.hpp"

namespace pacer::cli {

namespace po = boost::program_options;

struct Command {
  std::string name;         // "profile"
  std::string summary;      // one line for `pacer --help`
  int order = 100;          // position in `pacer --help`
  std::string usage_tail;   // e.g. "[list|show NAME]" after "pacer devices [options]"
  std::string description;  // paragraph under the usage line in `pacer CMD --help`
  std::function<void(po::options_description&)> add_options;
  // Positional arguments: names in order; the last may repeat when positional_repeat is set.
  std::vector<std::string> positional;
  bool positional_repeat = false;
  // The options that name files (keys, positional ones included), for the check that no output is
  // an input or another output, made before run (traces::check_distinct_outputs): files the
  // command only reads, and files it writes (a store it writes into is one: it is also read).
  // --config is always an input. An output's companion CSV ("-summary": FILE-summary.csv, written
  // beside it) is an output too.
  struct OutputFile {
    std::string option;
    std::string companion;  // suffix of a CSV written beside it (traces::companion_csv), or ""
  };
  std::vector<std::string> input_files;
  std::vector<OutputFile> output_files;
  // Returns the process exit code. Throw pacer::Error for runtime errors (exit 1) and
  // pacer::UsageError for semantic usage errors (exit 2).
  std::function<int(const po::variables_map&)> run;
};

bool register_command(Command command);
const std::vector<Command>& commands();

// Entry point of an executable that holds every command: dispatches, prints help, maps exceptions
// to exit codes.
int main(int argc, char** argv);

// Entry point of the light `pacer` front, which holds only the commands that need no libtorch. It
// runs those itself (as main() does) and replaces itself (exec, same process: exit code, stderr and
// signals are the other program's) by `full_program`, found in the front's own folder, for
// everything else: the training commands, help, unknown commands. Returns 1 with one stderr line
// when `full_program` cannot be run.
int front_main(int argc, char** argv, const std::string& full_program);
// The training program the light front hands over to, as front_main found it beside the front;
// empty inside a program started by main() (which holds every command).
const std::filesystem::path& full_program_path();

// First call of a program that trains (pacer-train): when the training environment is not set yet
// (base::set_training_environment: the OpenMP wait policy and the pinned CPU kernels; the front sets
// it before it hands over), sets it and restarts this program (exec, same pid and arguments) so that
// the OpenMP runtime and OpenBLAS, which read it once when they load, train under it.
void restart_with_training_environment(char** argv);

// Merges the options of a --config INI text into `vm` (keys at the top or in a [COMMAND] section;
// sections of other commands are ignored; unknown keys are UsageErrors naming `origin`). Separate
// from the file reading so the parser can be fuzzed and tested on strings (tests/fuzz). Relative
// values of input options declared with the value name FILE, DIR or PATH are taken relative to the
// folder of `origin`; outputs (out, store, *csv) stay relative to the working directory.
void store_config_text(const std::string& text, const std::string& origin, const std::string& command_name,
                       const po::options_description& all, po::variables_map& vm);

// The arguments of this process after the program name, the command's name first, as given on the
// command line (to start the same command again, e.g. as shards).
const std::vector<std::string>& invocation_args();

// Progress and status lines go to stderr through spdlog; results go to stdout.
bool stderr_is_terminal();

// Writes a command's text or CSV output `path` whole or not at all (traces::write_file_atomic; "-" is
// the standard output) and, for a file, says so on stderr: "wrote PATH", or "wrote PATH (DETAIL)".
// A failure is traces::write_file_atomic's one Error ("PATH: why"); the file is left as it was.
void write_output(const std::filesystem::path& path, const std::string& content, const std::string& detail = "");

// write_output in two steps, for outputs that go with a store record: the file is staged now
// (traces::stage_file_atomic: a full disk fails here, before the store is written) and commit()
// puts it in place and says "wrote PATH"; an output never committed leaves nothing behind.
class StagedOutput {
 public:
  StagedOutput() = default;
  StagedOutput(const std::filesystem::path& path, const std::string& content, const std::string& detail = "");
  void commit();

 private:
  std::filesystem::path path_;
  std::string detail_;
  traces::file::StagedFile staged_;
};

}  // namespace pacer::cli

#define PACER_CONCAT_INNER(a, b) a##b
#define PACER_CONCAT(a, b) PACER_CONCAT_INNER(a, b)
#define PACER_REGISTER_COMMAND(factory) \
  static const bool PACER_CONCAT(pacer_registered_, __LINE__) = ::pacer::cli::register_command(factory())
