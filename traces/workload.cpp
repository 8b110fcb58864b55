#include "traces/workload.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cmath>

#include <spdlog/spdlog.h>

#include "base/error.hpp"
#include "traces/records.hpp"

namespace pacer::traces {
namespace {

std::string bytes_text(double bytes) {
  constexpr double kKiB = 1024, kMiB = kKiB * 1024, kGiB = kMiB * 1024, kTiB = kGiB * 1024;
  if (bytes >= kTiB) return fmt::format("{:.3g} TiB", bytes / kTiB);
  if (bytes >= kGiB) return fmt::format("{:.3g} GiB", bytes / kGiB);
  if (bytes >= kMiB) return fmt::format("{:.3g} MiB", bytes / kMiB);
  return fmt::format("{:.3g} kiB", bytes / kKiB);
}

}  // namespace

double training_memory_bytes(const WorkloadInfo& w, int64_t batch_size) {
  return w.weight_bytes + static_cast<double>(batch_size) * w.memory_per_sample_bytes;
}

int64_t largest_batch_in_memory(const WorkloadInfo& w, double memory_bytes) {
  if (!(w.memory_per_sample_bytes > 0)) return INT64_MAX;
  const double b = std::floor((memory_bytes - w.weight_bytes) / w.memory_per_sample_bytes);
  return b < 1 ? 0 : b > 1e18 ? INT64_MAX : static_cast<int64_t>(b);
}

void check_batches_fit(const WorkloadInfo& w, const std::vector<int>& batch_sizes, double memory_bytes,
                       const std::string& where, const std::string& option) {
  if (!(memory_bytes > 0)) return;
  for (int b : batch_sizes) {
    const double need = training_memory_bytes(w, b);
    if (need <= memory_bytes) continue;
    const int64_t largest = largest_batch_in_memory(w, memory_bytes);
    const std::string message = fmt::format(
        "a batch of {} samples of {} needs about {} ({} per sample plus {} of weights and optimizer state), more than "
        "the {} of {}: {}",
        b, w.name, bytes_text(need), bytes_text(w.memory_per_sample_bytes), bytes_text(w.weight_bytes),
        bytes_text(memory_bytes), where,
        largest > 0 ? fmt::format("use batch sizes of at most {}", largest)
                    : std::string("the workload does not fit at any batch size; choose a smaller one"));
    if (!option.empty()) throw OptionError(option, message);
    throw Error(message);
  }
}

double host_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0.0;
}

}  // namespace pacer::traces

namespace pacer::traces {

void check_workload_match(const std::string& what, const std::string& workload, const RelationSet& relation,
                          bool allow_mismatch) {
  if (workload.empty() || relation.workload.empty() || workload == relation.workload) return;
  const std::string text = fmt::format("relation '{}' was measured on workload {} but {} is workload {}",
                                       relation.name, relation.workload, what, workload);
  if (!allow_mismatch)
    throw SettingError("allow-workload-mismatch",
                       text + ": pair records of one workload, or give this flag to pair them anyway");
  spdlog::warn("{} (paired anyway, as asked)", text);
}

}  // namespace pacer::traces
