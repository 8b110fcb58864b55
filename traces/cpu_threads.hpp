#pragma once
// How many CPU threads a training run may use on this machine right now. Torch-free, so the CLI
// reads the default without loading the training library.
#include <sched.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <thread>

namespace pacer::traces {

// CPUs this process may run on (its affinity set, e.g. a cgroup's cpuset or `taskset`).
inline int cpus_available() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

// The threads that are free now: the available CPUs minus the 1-minute load average, at least 1.
// More threads than free cores spin-wait on busy ones (OpenMP) and run many times slower than one.
inline int free_cpu_threads() {
  const int cpus = cpus_available();
  double load[1] = {0};
  if (getloadavg(load, 1) != 1) return cpus;
  const int busy = static_cast<int>(std::lround(std::max(0.0, load[0])));
  return std::clamp(cpus - busy, 1, cpus);
}

// The most intra-op threads a training run accepts: more than the CPUs only oversubscribes them.
inline int max_cpu_threads() {
  return cpus_available();
}

}  // namespace pacer::traces
