// base::cpu_kernel_pins and what a record says of them (base/cpu_threads.hpp): the training
// environment pins OpenBLAS, oneDNN and ATen to their AVX2 kernels on a CPU that has AVX2 and FMA,
// keeps a variable the user set, pins nothing under PACER_CPU_KERNELS=native, refuses another
// value, can be undone, and cpu_kernels() names each case. The libraries' own view of the pin is
// CliOptions.TrainingProgramsRunOneCpuKernelSetOnEveryAvx2Machine.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>
#include <vector>

#include "base/cpu_threads.hpp"
#include "base/error.hpp"
#include "tests/support/saved_env.hpp"

namespace {

using pacer::base::avx2_kernel_pins;
using pacer::base::cpu_kernel_pins;
using pacer::base::cpu_kernels;
using pacer::base::set_default_cpu_kernels;

void unset_pins() {
  for (const auto& pin : avx2_kernel_pins()) ::unsetenv(pin.variable.c_str());
}

TEST(CpuKernels, PinnedUnlessTheUserChoseAndNamedInEachCase) {
  const pacer::testing::SavedEnvironment saved(pacer::base::cpu_kernel_variables());  // restored at the end
  if (cpu_kernel_pins().empty()) {
    // A pin come with another machine's environment would stop this CPU's libraries: removed.
    ::setenv("OPENBLAS_CORETYPE", "Haswell", 1);
    EXPECT_EQ(set_default_cpu_kernels().size(), 1u);
    EXPECT_EQ(std::getenv("OPENBLAS_CORETYPE"), nullptr);
    EXPECT_EQ(cpu_kernels(), "native");
    GTEST_SKIP() << "this CPU has no AVX2 and FMA: nothing to pin";
  }
  EXPECT_EQ(cpu_kernels(), "native");  // nothing set yet: the libraries would pick their own
  const auto changes = set_default_cpu_kernels();
  EXPECT_EQ(changes.size(), cpu_kernel_pins().size());
  for (const auto& pin : cpu_kernel_pins()) EXPECT_STREQ(std::getenv(pin.variable.c_str()), pin.value.c_str());
  EXPECT_EQ(cpu_kernels(), "avx2");
  EXPECT_TRUE(set_default_cpu_kernels().empty());  // already pinned: no restart needed
  pacer::base::undo_env_changes(changes);          // a restart that failed: back to what the libraries read
  EXPECT_EQ(cpu_kernels(), "native");

  // A user's own OpenBLAS kernels are kept, and the record says what ran.
  ::setenv("OPENBLAS_CORETYPE", "SkylakeX", 1);
  EXPECT_EQ(set_default_cpu_kernels().size(), 2u);
  EXPECT_STREQ(std::getenv("OPENBLAS_CORETYPE"), "SkylakeX");
  EXPECT_STREQ(std::getenv("DNNL_MAX_CPU_ISA"), "AVX2");
  EXPECT_EQ(cpu_kernels(), "OPENBLAS_CORETYPE=SkylakeX, ATEN_CPU_CAPABILITY=avx2, DNNL_MAX_CPU_ISA=AVX2");

  // The way out: nothing pinned, and said so.
  unset_pins();
  ::setenv(pacer::base::kCpuKernelsVariable, "Native", 1);
  EXPECT_TRUE(set_default_cpu_kernels().empty());
  for (const auto& pin : cpu_kernel_pins()) EXPECT_EQ(std::getenv(pin.variable.c_str()), nullptr) << pin.variable;
  EXPECT_EQ(cpu_kernels(), "native");

  // Any other value is a mistake, not a silent pin.
  ::setenv(pacer::base::kCpuKernelsVariable, "avx512", 1);
  EXPECT_THROW(set_default_cpu_kernels(), pacer::Error);
  for (const auto& pin : cpu_kernel_pins()) EXPECT_EQ(std::getenv(pin.variable.c_str()), nullptr) << pin.variable;
}

}  // namespace
