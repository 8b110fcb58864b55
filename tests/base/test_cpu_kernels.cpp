// base::cpu_kernel_pins and what a record says of them (base/cpu_threads.hpp): the training
// environment pins OpenBLAS, oneDNN and ATen to their AVX2 kernels on a CPU that has AVX2 and FMA,
// keeps a variable the user set, pins nothing under PACER_CPU_KERNELS=native, and cpu_kernels()
// names each case. The libraries' own view of the pin is CliOptions.TrainingProgramsRunOneCpuKernelSet...
#include <gtest/gtest.h>
#include <stdlib.h>

#include <optional>
#include <string>
#include <vector>

#include "base/cpu_threads.hpp"

namespace {

using pacer::base::cpu_kernel_pins;
using pacer::base::cpu_kernels;
using pacer::base::set_default_cpu_kernels;

// The variables this test touches, restored as they were when it ends.
class SavedEnvironment {
 public:
  SavedEnvironment() {
    names_.push_back(pacer::base::kCpuKernelsVariable);
    for (const auto& pin : cpu_kernel_pins()) names_.push_back(pin.variable);
    for (const auto& n : names_) {
      const char* v = std::getenv(n.c_str());
      saved_.push_back(v ? std::optional<std::string>(v) : std::nullopt);
      ::unsetenv(n.c_str());
    }
  }
  ~SavedEnvironment() {
    for (size_t i = 0; i < names_.size(); ++i)
      if (saved_[i])
        ::setenv(names_[i].c_str(), saved_[i]->c_str(), 1);
      else
        ::unsetenv(names_[i].c_str());
  }

 private:
  std::vector<std::string> names_;
  std::vector<std::optional<std::string>> saved_;
};

TEST(CpuKernels, PinnedUnlessTheUserChoseAndNamedInEachCase) {
  const SavedEnvironment saved;
  if (cpu_kernel_pins().empty()) {
    EXPECT_FALSE(set_default_cpu_kernels());
    EXPECT_EQ(cpu_kernels(), "native");
    GTEST_SKIP() << "this CPU has no AVX2 and FMA: nothing to pin";
  }
  EXPECT_EQ(cpu_kernels(), "native");  // nothing set yet: the libraries would pick their own
  EXPECT_TRUE(set_default_cpu_kernels());
  for (const auto& pin : cpu_kernel_pins()) EXPECT_STREQ(std::getenv(pin.variable.c_str()), pin.value.c_str());
  EXPECT_EQ(cpu_kernels(), "avx2");
  EXPECT_FALSE(set_default_cpu_kernels());  // already pinned: no restart needed

  // A user's own OpenBLAS kernels are kept, and the record says what ran.
  for (const auto& pin : cpu_kernel_pins()) ::unsetenv(pin.variable.c_str());
  ::setenv("OPENBLAS_CORETYPE", "SkylakeX", 1);
  EXPECT_TRUE(set_default_cpu_kernels());
  EXPECT_STREQ(std::getenv("OPENBLAS_CORETYPE"), "SkylakeX");
  EXPECT_STREQ(std::getenv("DNNL_MAX_CPU_ISA"), "AVX2");
  EXPECT_EQ(cpu_kernels(), "OPENBLAS_CORETYPE=SkylakeX, ATEN_CPU_CAPABILITY=avx2, DNNL_MAX_CPU_ISA=AVX2");

  // The way out: nothing pinned, and said so.
  for (const auto& pin : cpu_kernel_pins()) ::unsetenv(pin.variable.c_str());
  ::setenv(pacer::base::kCpuKernelsVariable, "Native", 1);
  EXPECT_FALSE(set_default_cpu_kernels());
  for (const auto& pin : cpu_kernel_pins()) EXPECT_EQ(std::getenv(pin.variable.c_str()), nullptr) << pin.variable;
  EXPECT_EQ(cpu_kernels(), "native");
}

}  // namespace
