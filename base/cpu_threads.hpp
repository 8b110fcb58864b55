#pragma once
// How many CPU threads a training run may use on this machine right now, and how its OpenMP threads
// wait. Torch-free, so the CLI reads the default without loading the training library.
#include <optional>
#include <string>
#include <vector>

namespace pacer::base {

// CPUs this process may run on (its affinity set, e.g. a cgroup's cpuset or `taskset`).
int cpus_available();

// The most intra-op threads a training run accepts: more than the CPUs only oversubscribes them.
int max_cpu_threads();

// How busy the machine is, as the thread default sees it.
struct CpuLoad {
  int cpus = 1;            // CPUs of this process's affinity set
  int online_cpus = 1;     // CPUs of the machine (the load figures below are the machine's)
  double load_1min = 0;    // 1-minute load average
  int running_others = 0;  // tasks running right now besides the reading one
};

// Parses /proc/loadavg ("0.52 0.58 0.59 3/455 12345"): the 1-minute average and the running tasks
// minus the reader. Throws Error on text that is not in that form.
CpuLoad parse_loadavg(const std::string& text);

// The machine's load now: /proc/loadavg read three times 10 ms apart, keeping the fewest running
// tasks (a CPU-bound neighbour runs in every read; a passing blip does not), with this process's
// CPUs. Without /proc/loadavg: getloadavg() and no running count. The environment variable
// kLoadAvgVariable, when set, is read instead of /proc/loadavg (same form): it emulates a load.
CpuLoad read_cpu_load();
inline constexpr const char* kLoadAvgVariable = "PACER_LOADAVG";

// The threads that are free under `load`: the CPUs minus the busy ones, at least 1. Busy is the
// larger of the 1-minute load (slow to see a neighbour that just started) and the tasks running
// now (blind to one that sleeps between bursts), scaled to this process's share of the machine's
// CPUs when its affinity set is smaller (a Slurm job's cpuset does not see the other jobs' load).
// More threads than free cores run many times slower than one (docs/reliability.md, contention).
int free_cpu_threads(const CpuLoad& load);

// free_cpu_threads(read_cpu_load()): what `pacer bench train` reports and measures beside; never a
// training default (kTrainingThreads).
int free_cpu_threads();

// The intra-op threads of every training process unless the user gives `--threads`: one, whatever
// the machine and its load. libtorch's reductions split their work by the thread count, so another
// count gives other floating-point sums, other learning curves and other relations; with a fixed
// count a relation or validation is a function of its inputs (docs/reliability.md, "Results that
// do not depend on the load"). Parallelism comes from running several runs at once (`--jobs N`).
inline constexpr int kTrainingThreads = 1;

// pacer trains with a short OpenMP spin: a thread waiting at a barrier spins this many times (a
// few microseconds) and then sleeps, where libgomp's default spins 300,000 times (milliseconds).
// A team that shares its cores with other busy processes then hands them back instead of running
// up to ten times slower, and on a quiet machine it stays close to the default, which sleeping at
// once (OMP_WAIT_POLICY=PASSIVE) does not for small batches (docs/reliability.md, "Contention").
// libgomp (the runtime pacer's libtorch uses) reads it once, when it is loaded, so it must be in the
// environment before a program that trains starts.
inline constexpr const char* kOpenMpSpinCount = "1000";

// Sets GOMP_SPINCOUNT to kOpenMpSpinCount unless the user chose a wait policy (OMP_WAIT_POLICY or
// GOMP_SPINCOUNT is set). True when it set the variable.
bool set_default_openmp_wait_policy();

// One environment variable that fixes which CPU kernels a library of the training process runs.
struct KernelPin {
  std::string variable;
  std::string value;
};

// The CPU kernels every training process computes with, pinned to one family so that a relation or
// a validation is the same record on every x86-64 CPU with AVX2 and FMA (Intel since 2013, AMD
// since 2015), with or without AVX-512. OpenBLAS (the GEMMs of the linear and convolution layers),
// ATen's vectorised operations and oneDNN each pick their kernels by the CPU they find, and kernels
// of another vector width add in another order: the last bits differ, a few hundred Adam steps
// later a held-out sample flips, and the samples to the target, r(b), the choices and the verdict
// follow (docs/reliability.md, "Results that do not depend on the machine"). Empty on a CPU without
// AVX2 and FMA (arm64, a Jetson's), whose libraries have one kernel family there.
std::vector<KernelPin> cpu_kernel_pins();
// The pin set itself, whatever this CPU has (cpu_kernel_pins where the CPU has AVX2 and FMA).
std::vector<KernelPin> avx2_kernel_pins();

// PACER_CPU_KERNELS=native leaves the libraries to pick this CPU's own kernels (faster on some
// CPUs, records that can differ in the last bits from another machine's); unset or "avx2": pinned;
// any other value is an error.
inline constexpr const char* kCpuKernelsVariable = "PACER_CPU_KERNELS";
inline constexpr const char* kPinnedCpuKernels = "avx2";
inline constexpr const char* kNativeCpuKernels = "native";

// Every environment variable that decides the CPU kernels: PACER_CPU_KERNELS and each pin's (what a
// child or a test clears to start from pacer's default).
std::vector<std::string> cpu_kernel_variables();

// One change to the environment, with the value before it (nullopt: unset), so it can be undone.
struct EnvChange {
  std::string variable;
  std::optional<std::string> before;
};
void undo_env_changes(const std::vector<EnvChange>& changes);

// Sets every pin of cpu_kernel_pins() whose variable the user has not set, before the libraries
// that read them load (OpenBLAS reads its variable when it is loaded), unless PACER_CPU_KERNELS
// says native. On a CPU without AVX2 and FMA it removes a pin's value inherited from a pacer on
// another machine (a Slurm job's exported environment), which would stop the libraries here.
// Returns what it changed; throws Error for a PACER_CPU_KERNELS that is neither avx2 nor native.
std::vector<EnvChange> set_default_cpu_kernels();

// The CPU kernels of this process, for its records' provenance: "avx2" when every pin holds its
// value, "native" where there is nothing to pin or none is set (PACER_CPU_KERNELS=native), else
// the variables as set ("OPENBLAS_CORETYPE=SkylakeX, ATEN_CPU_CAPABILITY unset, DNNL_MAX_CPU_ISA unset").
std::string cpu_kernels();

// The environment of a training process, set before its libraries load: the OpenMP wait policy and
// the CPU kernels. Returns what it changed (a running program must exec itself again to see it);
// throws Error as set_default_cpu_kernels.
std::vector<EnvChange> set_training_environment();

}  // namespace pacer::base
