#pragma once
// Where a record came from: the one home of the provenance every record of the trace store carries
// (docs/trace-store.md). The program's front (experiments/cli) sets the current run once, after it
// parsed a command's options; every record the store writes in that process (Store::write,
// write_device) is stamped with it as attributes of its group, `pacer export` prints it as comment
// lines, and `pacer report` lists it (provenance.md). A record written before provenance existed
// reads back with every field "unknown".
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pacer::traces {

namespace h5 {
class GroupWriter;
class GroupReader;
}  // namespace h5

inline constexpr std::string_view kUnknownProvenance = "unknown";

struct Provenance {
  std::string pacer_version{kUnknownProvenance};
  std::string git_commit{kUnknownProvenance};  // the commit built from ("-dirty": tracked files differed)
  std::string command_line{kUnknownProvenance};
  std::string start_time{kUnknownProvenance};  // UTC, ISO 8601: 2026-11-26T10:03:56Z
  std::string host{kUnknownProvenance};
  std::string threads{kUnknownProvenance};  // CPU threads the run used
  // The CPU kernels its libraries ran: "avx2" (pinned, base::cpu_kernel_pins), "native", or the
  // variables as the user set them; a record of other kernels can differ in the last bits.
  std::string cpu_kernels{kUnknownProvenance};
  std::string seeds{kUnknownProvenance};    // the seed options given ("seeds=0,1"); "none"
  std::string options{kUnknownProvenance};  // the options set on the command line or in a config file
  bool operator==(const Provenance&) const = default;

  // The fields as (name, value), in the order they are stored and shown.
  std::vector<std::pair<std::string, std::string>> fields() const;
};

// This build and this machine, now: version, commit, start time, host, the CPUs available and the
// CPU kernels; the command line, seeds and options unknown.
Provenance this_process();

// A record made of the rows of several runs (the shards of a campaign merged, a campaign resumed by
// another process) carries the provenance of each: per field, the distinct values in the order met,
// joined by kProvenanceJoin ("abc123 | def456"); the start time as the span of the runs' start
// times, "earliest .. latest" (one time where they agree). Combining a provenance with itself, or
// with one it already holds, changes nothing.
inline constexpr std::string_view kProvenanceJoin = " | ";
inline constexpr std::string_view kProvenanceSpan = " .. ";
Provenance combine_provenance(const Provenance& held, const Provenance& added);

// The run whose records this process writes; this_process() until set_current_run is called.
const Provenance& current_run();
void set_current_run(Provenance run);

// "# pacer_version: 0.1.0\n# git_commit: ...\n": one comment line per field, each line starting with `prefix`.
std::string provenance_lines(const Provenance& p, std::string_view prefix = "# ");
// One line: "pacer 0.1.0 (commit 1a2b3c4d), 2026-11-26T10:03:56Z on host: pacer select c.h5 -P 7W".
std::string provenance_summary(const Provenance& p);

// The attributes provenance_<field> of a record's group; read_provenance fills a field that a group
// lacks (an older store) with "unknown".
void write_provenance(h5::GroupWriter& w, const Provenance& p);
Provenance read_provenance(const h5::GroupReader& g);

}  // namespace pacer::traces
