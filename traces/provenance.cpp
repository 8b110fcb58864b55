#include "traces/provenance.hpp"

#include <fmt/format.h>
#include <unistd.h>

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
template <typename P, typename F>
void each_field(P& p, F&& f) {
  f("pacer_version", p.pacer_version);
  f("git_commit", p.git_commit);
  f("command_line", p.command_line);
  f("start_time", p.start_time);
  f("host", p.host);
  f("threads", p.threads);
  f("cpu_kernels", p.cpu_kernels);
  f("seeds", p.seeds);
  f("options", p.options);
}

}  // namespace

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
