#include "traces/provenance.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <mutex>

#include "base/cpu_threads.hpp"
#include "pacer_git_commit.hpp"  // generated at build time: PACER_GIT_COMMIT (traces/git_commit.cmake)
#include "traces/store/h5io.hpp"

namespace pacer::traces {
namespace {

constexpr std::string_view kAttrPrefix = "provenance_";

std::mutex& run_mutex() {
  static std::mutex m;
  return m;
}

Provenance& run_slot() {
  static Provenance run = this_process();
  return run;
}

// The members in stored order, with their names.
constexpr std::pair<const char*, std::string Provenance::*> kFields[] = {
    {"pacer_version", &Provenance::pacer_version},
    {"git_commit", &Provenance::git_commit},
    {"command_line", &Provenance::command_line},
    {"start_time", &Provenance::start_time},
    {"host", &Provenance::host},
    {"threads", &Provenance::threads},
    {"cpu_kernels", &Provenance::cpu_kernels},
    {"seeds", &Provenance::seeds},
    {"options", &Provenance::options},
};

template <typename P, typename F>
void each_field(P& p, F&& f) {
  for (const auto& [name, member] : kFields) f(name, p.*member);
}

// The parts of `value` between the separators `sep`.
std::vector<std::string> split_on(std::string_view value, std::string_view sep) {
  std::vector<std::string> parts;
  size_t from = 0;
  for (size_t at; (at = value.find(sep, from)) != std::string_view::npos; from = at + sep.size())
    parts.emplace_back(value.substr(from, at - from));
  parts.emplace_back(value.substr(from));
  return parts;
}

// `held` with each of `added`'s distinct values not among its own appended.
std::string join_distinct(const std::string& held, const std::string& added) {
  std::vector<std::string> values = split_on(held, kProvenanceJoin);
  std::string out = held;
  for (auto& v : split_on(added, kProvenanceJoin))
    if (std::find(values.begin(), values.end(), v) == values.end()) {
      out += std::string(kProvenanceJoin) + v;
      values.push_back(std::move(v));
    }
  return out;
}

// The span of the start times of both: ISO 8601 UTC times order as strings.
std::string start_span(const std::string& held, const std::string& added) {
  std::vector<std::string> times;
  for (const auto* v : {&held, &added})
    for (auto& t : split_on(*v, kProvenanceSpan))
      if (t != kUnknownProvenance) times.push_back(std::move(t));
  if (times.empty()) return std::string(kUnknownProvenance);
  const auto [first, last] = std::minmax_element(times.begin(), times.end());
  return *first == *last ? *first : *first + std::string(kProvenanceSpan) + *last;
}

}  // namespace

Provenance combine_provenance(const Provenance& held, const Provenance& added) {
  Provenance out = held;
  for (const auto& [name, member] : kFields)
    out.*member = member == &Provenance::start_time ? start_span(held.*member, added.*member)
                                                    : join_distinct(held.*member, added.*member);
  return out;
}

std::vector<std::pair<std::string, std::string>> Provenance::fields() const {
  std::vector<std::pair<std::string, std::string>> out;
  each_field(*this, [&](const char* name, const std::string& v) { out.emplace_back(name, v); });
  return out;
}

Provenance this_process() {
  Provenance p;
  p.pacer_version = PACER_VERSION;
  p.git_commit = PACER_GIT_COMMIT;
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char when[32];
  if (std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &utc) > 0) p.start_time = when;
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0 && host[0]) p.host = host;
  p.threads = std::to_string(base::cpus_available());
  p.cpu_kernels = base::cpu_kernels();
  return p;
}

const Provenance& current_run() {
  std::lock_guard lock(run_mutex());
  return run_slot();
}

void set_current_run(Provenance run) {
  std::lock_guard lock(run_mutex());
  run_slot() = std::move(run);
}

std::string provenance_lines(const Provenance& p, std::string_view prefix) {
  std::string out;
  for (const auto& [name, value] : p.fields()) out += fmt::format("{}{}: {}\n", prefix, name, value);
  return out;
}

std::string provenance_summary(const Provenance& p) {
  const std::string commit = p.git_commit.size() > 12 ? p.git_commit.substr(0, 12) : p.git_commit;
  return fmt::format("pacer {} (commit {}), {} on {}: {}", p.pacer_version, commit, p.start_time, p.host,
                     p.command_line);
}

void write_provenance(h5::GroupWriter& w, const Provenance& p) {
  // Fixed-length strings: a damaged store's provenance cannot send libhdf5 into its global heap.
  each_field(p, [&](const char* name, const std::string& v) { w.fixed_attr(std::string(kAttrPrefix) + name, v); });
}

Provenance read_provenance(const h5::GroupReader& g) {
  Provenance p;
  each_field(p, [&](const char* name, std::string& v) {
    const std::string attr = std::string(kAttrPrefix) + name;
    if (g.has_attr(attr)) v = g.str_attr(attr);
  });
  return p;
}

}  // namespace pacer::traces
