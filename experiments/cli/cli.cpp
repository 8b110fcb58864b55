#include "experiments/cli/cli.hpp"
#include "experiments/cli/options.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <vector>

#include "base/cpu_threads.hpp"
#include "base/error.hpp"
#include "base/files.hpp"
#include "base/progress.hpp"
#include "base/shell.hpp"
#include "base/text.hpp"
#include "base/units.hpp"
#include "traces/provenance.hpp"
#include "traces/store/outputs.hpp"
#include "traces/store/store.hpp"

namespace pacer::cli {
namespace {

std::vector<std::string>& current_args() {
  static std::vector<std::string> a;
  return a;
}

std::vector<Command>& registry() {
  static std::vector<Command> r;
  return r;
}

const Command* find_command(const std::string& name) {
  for (const auto& c : registry())
    if (c.name == name) return &c;
  return nullptr;
}

// The command `args` names: a two-word command ("import zeus") first, then a one-word one.
const Command* command_named(const std::vector<std::string>& args, size_t* consumed) {
  if (args.size() >= 2)
    if (const Command* cmd = find_command(args[0] + " " + args[1])) {
      *consumed = 2;
      return cmd;
    }
  *consumed = 1;
  return args.empty() ? nullptr : find_command(args[0]);
}

void print_global_help(std::ostream& os) {
  os << "pacer: joint GPU-frequency and batch-size selection for training under a power cap\n\n"
        "Usage: pacer COMMAND [options]      pacer COMMAND --help for the options of one command\n\n"
        "Commands:\n";
  std::vector<const Command*> sorted;
  for (const auto& c : registry()) sorted.push_back(&c);
  std::stable_sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->order < b->order; });
  for (const auto* c : sorted) os << fmt::format("  {:<18} {}\n", c->name, c->summary);
  os << "\nQuantities take units: power W, mW, kW; frequency Hz, kHz, MHz, GHz; time s, ms, us, min, h;\n"
        "energy J, kJ, Wh. A bare number takes the unit the option documents.\n"
        "Every command also reads options from an INI file: --config FILE (keys as option names, at the\n"
        "top or in a [COMMAND] section; the command line wins).\n"
        "Exit codes: 0 success, 1 runtime error, 2 usage error.\n";
}

po::options_description common_options() {
  po::options_description d("General options");
  d.add_options()("help,h", "show this help and exit")(
      "config", po::value<std::string>()->value_name("FILE"),
      "read options from an INI file (keys = option names, at the top or in a [COMMAND] section); a relative path "
      "not found here is looked up in pacer's checkout (experiments/specs/*.ini)")(
      "log-level", po::value<std::string>()->default_value("info")->value_name("LEVEL"),
      "stderr verbosity: error, warn, info, debug");
  return d;
}

void print_command_help(const Command& c, const po::options_description& own, std::ostream& os) {
  os << "Usage: pacer " << c.name << " [options]" << (c.usage_tail.empty() ? "" : " " + c.usage_tail) << "\n\n";
  os << c.summary << "\n";
  if (!c.description.empty()) os << "\n" << c.description << "\n";
  std::vector<std::string> required;
  for (const auto& o : own.options())
    if (o->semantic()->is_required()) required.push_back("--" + o->long_name());
  if (!required.empty()) os << "\nRequired: " << fmt::format("{}", fmt::join(required, ", ")) << "\n";
  os << "\n" << own << "\n" << common_options();
}

// Options of a [COMMAND] section apply to that command; sections of other commands are ignored,
// so one experiment file can configure several steps. Unknown keys are usage errors.
// A relative path that is not in the working directory names a file of pacer's source checkout
// (experiments/specs/...), so that the shipped specs work from any folder.
void store_config_file(const std::string& given, const Command& c, const po::options_description& all,
                       po::variables_map& vm) {
  std::string file = given;
  std::error_code ec;
  const std::filesystem::path in_checkout = std::filesystem::path(PACER_SOURCE_DIR) / given;
  if (std::filesystem::path(given).is_relative() && !std::filesystem::exists(given, ec) &&
      std::filesystem::is_regular_file(in_checkout, ec))
    file = in_checkout.string();
  // A folder opens as an empty stream on Linux: it would be read as a file with no options.
  if (std::filesystem::is_directory(file, ec))
    throw UsageError(fmt::format("--config: '{}' is a folder, not a config file: name the INI file in it", given));
  if (!std::filesystem::exists(file, ec))
    throw Error(
        fmt::format("config file '{}' cannot be read (check the path; a relative one is looked up in the "
                    "working directory, then in {})",
                    given, PACER_SOURCE_DIR));
  // A regular file of at most 1 MiB: --config /dev/zero or a FIFO is one error line, not a hang.
  store_config_text(base::read_regular_file(file, base::kMaxConfigFileBytes, "config file"), file, c.name, all, vm);
}

}  // namespace

namespace {

// What a command writes: the output folder or store (--out/-o), the trace store (--store, written
// by most commands and made by an earlier step for the others) and CSV files (--csv,
// --predictions-csv). A relative path of these in a config file stays relative to the working
// directory, as on the command line: a spec never writes into the folder it sits in (a checkout).
bool names_an_output(const std::string& option) {
  const std::string_view o = option;
  return o == "out" || o == "store" || (o.size() >= 3 && o.substr(o.size() - 3) == "csv");
}

// An input option declared with the value name FILE, DIR or PATH holds paths: a relative one in a
// config file is relative to the file's folder, so that a spec finds its inputs from any working
// directory. Outputs (names_an_output) are not moved.
void resolve_paths(po::basic_option<char>& opt, const po::option_description& d, const std::string& file) {
  if (names_an_output(d.long_name())) return;
  const std::string kind = d.semantic()->name();
  const bool is_path = kind.rfind("FILE", 0) == 0 || kind.rfind("DIR", 0) == 0 || kind.rfind("PATH", 0) == 0;
  const std::filesystem::path base = std::filesystem::path(file).parent_path();
  if (!is_path || base.empty()) return;
  for (auto& v : opt.value)
    if (!v.empty() && std::filesystem::path(v).is_relative()) v = (base / v).lexically_normal().string();
}

}  // namespace

void store_config_text(const std::string& text, const std::string& file, const std::string& command_name,
                       const po::options_description& all, po::variables_map& vm) {
  std::istringstream in(std::string(base::text_input(text, file)));
  po::parsed_options parsed = po::parse_config_file(in, all, /*allow_unregistered=*/true);
  std::string section = command_name;
  std::replace(section.begin(), section.end(), ' ', '-');
  po::parsed_options kept(&all);
  for (auto opt : parsed.options) {
    std::string key = opt.string_key;
    const auto dot = key.find('.');
    if (dot != std::string::npos) {
      std::string sec = key.substr(0, dot);
      std::replace(sec.begin(), sec.end(), ' ', '-');
      // A section of another command is that command's; one that names no command (a misspelt
      // [selct]) would leave its options unread without a word.
      std::vector<std::string> sections;
      for (const auto& c : registry()) {
        sections.push_back(c.name);
        std::replace(sections.back().begin(), sections.back().end(), ' ', '-');
      }
      if (!sections.empty() && std::find(sections.begin(), sections.end(), sec) == sections.end()) {
        const std::string best = base::closest_match(sec, sections);
        throw UsageError(fmt::format("{}: section [{}] names no pacer command; {}", file, sec,
                                     best.empty() ? fmt::format("name one, [{}] for pacer {}", section, command_name)
                                                  : fmt::format("did you mean [{}]?", best)));
      }
      if (sec != section) continue;
      key = key.substr(dot + 1);
    }
    if (key == "config") throw UsageError(fmt::format("{}: a config file cannot name another config file", file));
    if (!all.find_nothrow(key, false)) {
      std::vector<std::string> names;
      for (const auto& o : all.options()) names.push_back(o->long_name());
      const std::string best = base::closest_match(key, names);
      throw UsageError(fmt::format("{}: unknown option '{}' for 'pacer {}'{}", file, key, command_name,
                                   best.empty() ? "" : fmt::format("; did you mean '{}'?", best)));
    }
    opt.string_key = key;
    opt.unregistered = false;
    resolve_paths(opt, *all.find_nothrow(key, false), file);
    kept.options.push_back(opt);
  }
  po::store(kept, vm);
}

namespace {

// "--name" of every long option of `d`.
std::vector<std::string> option_names(const po::options_description& d) {
  std::vector<std::string> names;
  for (const auto& o : d.options()) names.push_back("--" + o->long_name());
  return names;
}

// "; did you mean '--store'?" when one candidate is close to `given` (base::closest_match), else "".
std::string did_you_mean(const std::string& given, const std::vector<std::string>& candidates) {
  const std::string best = base::closest_match(given, candidates);
  return best.empty() ? "" : fmt::format("; did you mean '{}'?", best);
}

void setup_logging(const std::string& level) {
  auto logger = spdlog::get("pacer");
  if (!logger) logger = spdlog::stderr_color_mt("pacer");
  logger->set_pattern("%^%l%$: %v");
  spdlog::set_default_logger(logger);
  const auto lvl = spdlog::level::from_str(level);
  if (lvl == spdlog::level::off && level != "off")
    throw UsageError(fmt::format("--log-level: unknown level '{}' (error, warn, info, debug)", level));
  spdlog::set_level(lvl);
}

// An option's value as text, for the run's provenance.
std::string option_text(const boost::any& v) {
  if (const auto* s = boost::any_cast<std::string>(&v)) return *s;
  if (const auto* b = boost::any_cast<bool>(&v)) return *b ? "true" : "false";
  if (const auto* i = boost::any_cast<int>(&v)) return std::to_string(*i);
  if (const auto* l = boost::any_cast<int64_t>(&v)) return std::to_string(*l);
  if (const auto* u = boost::any_cast<uint64_t>(&v)) return std::to_string(*u);
  if (const auto* d = boost::any_cast<double>(&v)) return fmt::format("{:g}", *d);
  if (const auto* p = boost::any_cast<units::Power>(&v)) return fmt::format("{:g}W", p->w);
  if (const auto* f = boost::any_cast<units::Frequency>(&v)) return fmt::format("{:g}Hz", f->hz);
  if (const auto* t = boost::any_cast<units::Duration>(&v)) return fmt::format("{:g}s", t->s);
  if (const auto* e = boost::any_cast<units::Energy>(&v)) return fmt::format("{:g}J", e->j);
  if (const auto* l = boost::any_cast<long>(&v)) return std::to_string(*l);
  if (const auto* r = boost::any_cast<units::Rate>(&v)) return fmt::format("{:g}Hz", r->hz);
  const auto watts = [](const std::vector<double>& ws) {
    std::string s;
    for (double w : ws)
      s += (s.empty() ? "" : ",") + (units::is_no_cap(w) ? std::string("none") : fmt::format("{:g}W", w));
    return s;
  };
  if (const auto* pl = boost::any_cast<units::PowerList>(&v)) return watts(pl->w);
  if (const auto* c = boost::any_cast<units::PowerCap>(&v)) return watts({c->w});
  if (const auto* cl = boost::any_cast<units::PowerCapList>(&v)) return watts(cl->w);
  if (const auto* sv = boost::any_cast<std::vector<std::string>>(&v)) {
    std::string s;
    for (const auto& x : *sv) s += (s.empty() ? "" : " ") + x;
    return s;
  }
  return "(set)";
}

// The provenance of this run (traces/provenance.hpp), stamped on every record it writes: the full
// command line, the seeds (given or default) and the options given on the command line or in a
// config file; threads from --threads where the command has it and sets it.
void set_run_provenance(const po::variables_map& vm) {
  traces::Provenance p = traces::this_process();
  p.command_line = "pacer";
  for (const auto& a : current_args()) p.command_line += " " + base::shell_quote(a);
  std::string seeds, options;
  for (const auto& [key, value] : vm) {
    if (key == "help" || value.empty()) continue;
    const std::string item = key + "=" + option_text(value.value());
    if (key.find("seed") != std::string::npos) seeds += (seeds.empty() ? "" : "; ") + item;
    if (!value.defaulted()) options += (options.empty() ? "" : "; ") + item;
    if (key == "threads")
      if (const auto* t = boost::any_cast<int>(&value.value()); t && *t > 0) p.threads = std::to_string(*t);
  }
  p.seeds = seeds.empty() ? "none" : seeds;
  p.options = options.empty() ? "none" : options;
  traces::set_current_run(std::move(p));
}

// The paths the option `key` holds in `vm` (none when it is not given).
std::vector<std::string> option_paths(const po::variables_map& vm, const std::string& key) {
  if (!vm.count(key)) return {};
  const boost::any& value = vm[key].value();
  if (const auto* one = boost::any_cast<std::string>(&value)) return {*one};
  if (const auto* many = boost::any_cast<std::vector<std::string>>(&value)) return *many;
  return {};
}

// Before any work: no output of the command is one of its inputs or another of its outputs.
void check_command_files(const Command& c, const po::variables_map& vm) {
  std::vector<traces::NamedFile> inputs, outputs;
  for (const auto& key : c.input_files)
    for (const auto& p : option_paths(vm, key)) inputs.push_back({p, key});
  for (const auto& p : option_paths(vm, "config")) inputs.push_back({p, "config"});
  for (const auto& out : c.output_files)
    for (const auto& p : option_paths(vm, out.option)) {
      outputs.push_back({p, out.option});
      if (!out.companion.empty() && !p.empty() && p != "-")
        outputs.push_back({traces::companion_csv(p, out.companion), out.option});
    }
  traces::check_distinct_outputs(inputs, outputs);
}

// "first", "second", ...: where positional argument `key` stands on the command line.
std::string ordinal(const Command& c, const std::string& key) {
  static const char* const names[] = {"first", "second", "third", "fourth"};
  const auto at = std::find(c.positional.begin(), c.positional.end(), key) - c.positional.begin();
  return at < 4 ? names[at] : fmt::format("{}th", at + 1);
}

int run_command(const Command& c, const std::vector<std::string>& args) {
  po::options_description own("Options");
  if (c.add_options) c.add_options(own);
  po::options_description all;
  all.add(own).add(common_options());
  po::positional_options_description pos;
  for (size_t i = 0; i < c.positional.size(); ++i)
    pos.add(c.positional[i].c_str(), (c.positional_repeat && i + 1 == c.positional.size()) ? -1 : 1);

  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(all).positional(pos).run(), vm);
    if (vm.count("help")) {
      print_command_help(c, own, std::cout);
      return 0;
    }
    if (vm.count("config")) store_config_file(vm["config"].as<std::string>(), c, all, vm);
    po::notify(vm);
  } catch (const po::unknown_option& e) {
    std::cerr << fmt::format("pacer {}: {}{} (see pacer {} --help)\n", c.name, e.what(),
                             did_you_mean(e.get_option_name(), option_names(all)), c.name);
    return 2;
  } catch (const po::invalid_option_value& e) {
    // A plain number option (a count, a weight) that did not read: say what it takes.
    std::cerr << fmt::format(
        "pacer {}: {}: give a plain number, a whole one for a count (1000, not 1e3 or 1k) (see pacer {} --help)\n",
        c.name, e.what(), c.name);
    return 2;
  } catch (const po::multiple_occurrences& e) {
    // An option that is also a positional argument given both ways reads as "more than once".
    const std::string name = e.get_option_name();
    const bool positional =
        std::any_of(c.positional.begin(), c.positional.end(), [&](const std::string& p) { return name == "--" + p; });
    std::cerr << fmt::format("pacer {}: {}{} (see pacer {} --help)\n", c.name, e.what(),
                             positional ? fmt::format(": {} is also the command's {} argument; give it one way", name,
                                                      ordinal(c, name.substr(2)))
                                        : "",
                             c.name);
    return 2;
  } catch (const po::error& e) {
    std::cerr << fmt::format("pacer {}: {} (see pacer {} --help)\n", c.name, e.what(), c.name);
    return 2;
  }
  setup_logging(vm["log-level"].as<std::string>());
  set_run_provenance(vm);
  check_command_files(c, vm);
  return c.run(vm);
}

}  // namespace

bool register_command(Command command) {
  registry().push_back(std::move(command));
  return true;
}

const std::vector<Command>& commands() {
  return registry();
}

const std::vector<std::string>& invocation_args() {
  return current_args();
}

bool stderr_is_terminal() {
  return ::isatty(STDERR_FILENO) != 0;
}

void write_output(const std::filesystem::path& path, const std::string& content, const std::string& detail) {
  StagedOutput(path, content, detail).commit();
}

StagedOutput::StagedOutput(const std::filesystem::path& path, const std::string& content, const std::string& detail)
    : path_(path), detail_(detail), staged_(traces::stage_file_atomic(path, content)) {}

void StagedOutput::commit() {
  if (path_.empty()) return;
  staged_.commit();
  if (!traces::is_stdout(path_))
    std::cerr << (detail_.empty() ? fmt::format("wrote {}\n", path_.string())
                                  : fmt::format("wrote {} ({})\n", path_.string(), detail_));
  path_.clear();
}

int main(int argc, char** argv) {
  base::line_buffer_stdout();  // before any output: results reach a file or pipe line by line
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    print_global_help(std::cerr);
    return 2;
  }
  if (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    print_global_help(std::cout);
    return 0;
  }
  if (args[0] == "--version") {
    // What this build's records will name (traces::this_process): its version, commit and kernels.
    const traces::Provenance p = traces::this_process();
    std::cout << fmt::format("pacer {} (commit {}, CPU kernels {})\n", p.pacer_version, p.git_commit, p.cpu_kernels);
    return 0;
  }
  size_t consumed = 1;
  const Command* cmd = command_named(args, &consumed);
  if (!cmd) {
    // A command group ("bench") given without or with an unknown topic.
    std::string topics;
    for (const auto& c : registry())
      if (c.name.rfind(args[0] + " ", 0) == 0) topics += "\n  " + c.name + "  " + c.summary;
    if (!topics.empty()) {
      std::cerr << fmt::format("pacer {}: choose one of:{}\n", args[0], topics);
      return 2;
    }
    std::vector<std::string> names;
    for (const auto& c : registry()) names.push_back(c.name.substr(0, c.name.find(' ')));
    std::cerr << fmt::format("pacer: unknown command '{}'{} (see pacer --help)\n", args[0],
                             did_you_mean(args[0], names));
    return 2;
  }
  current_args() = args;
  args.erase(args.begin(), args.begin() + static_cast<long>(consumed));
  try {
    return run_command(*cmd, args);
  } catch (const OptionError& e) {
    std::cerr << fmt::format("pacer {}: --{}: {} (see pacer {} --help)\n", cmd->name, e.option, e.what(), cmd->name);
    return 2;
  } catch (const UsageError& e) {
    std::cerr << fmt::format("pacer {}: {} (see pacer {} --help)\n", cmd->name, e.what(), cmd->name);
    return 2;
  } catch (const SettingError& e) {
    std::cerr << fmt::format("pacer {}: error: --{}: {}\n", cmd->name, e.option, e.what());
    return 1;
  } catch (const Error& e) {
    std::cerr << fmt::format("pacer {}: error: {}\n", cmd->name, e.what());
    return 1;
  } catch (const std::exception& e) {
    std::cerr << fmt::format("pacer {}: error: {}\n", cmd->name, e.what());
    return 1;
  }
}

namespace {
std::filesystem::path& full_program_slot() {
  static std::filesystem::path full;
  return full;
}
}  // namespace

const std::filesystem::path& full_program_path() {
  return full_program_slot();
}

int front_main(int argc, char** argv, const std::string& full_program) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const auto full = (ec ? std::filesystem::path(argv[0]) : self).parent_path() / full_program;
  full_program_slot() = full;
  size_t consumed = 1;
  // Every record this front writes names the kernels a training program would run (provenance).
  try {
    base::set_training_environment();
  } catch (const Error& e) {
    std::cerr << fmt::format("pacer: {}\n", e.what());
    return 2;
  }
  if (!args.empty() && (args[0] == "--version" || command_named(args, &consumed))) return main(argc, argv);
  // The front copied under the full program's name would exec itself forever.
  std::error_code same_ec;
  if (!ec && std::filesystem::equivalent(full, self, same_ec)) {
    std::cerr << fmt::format(
        "pacer: '{}' is the light front program under the training program's name, so it cannot hand "
        "'{}' over: name it pacer and put the training program (CMake target pacer_train) beside it as {}\n",
        self.string(), args.empty() ? std::string() : args[0], full_program);
    return 1;
  }
  ::execv(full.c_str(), argv);
  const int err = errno;
  std::cerr << fmt::format(
      "pacer: cannot run '{}' ({}), which holds the commands that train and the full help: "
      "build it beside this program (CMake target pacer_train)\n",
      full.string(), std::strerror(err));
  return 1;
}

void restart_with_training_environment(char** argv) {
  std::vector<base::EnvChange> changes;
  try {
    changes = base::set_training_environment();
  } catch (const Error& e) {
    std::cerr << fmt::format("pacer: {}\n", e.what());
    std::exit(2);
  }
  if (changes.empty()) return;
  // The OpenMP runtime and OpenBLAS linked into this program have already read their environment:
  // only a new image of the program sees it. Without /proc (or when exec fails) it runs on as it
  // is, and the environment goes back to what the libraries read, so that its records' provenance
  // (cpu_kernels) says what they run.
  ::execv("/proc/self/exe", argv);
  const int err = errno;
  base::undo_env_changes(changes);
  std::cerr << fmt::format(
      "pacer: warning: cannot restart under the training environment ({}): training runs on this CPU's own "
      "kernels and OpenMP wait policy, and its records say so\n",
      std::strerror(err));
}

}  // namespace pacer::cli
