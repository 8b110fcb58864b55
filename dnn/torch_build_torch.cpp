#include <dlfcn.h>
#include <torch/torch.h>
#include <torch/version.h>

#include "dnn/torch_build.hpp"
#include "dnn/train.hpp"

namespace pacer::dnn {

TorchBuild torch_build() {
  TorchBuild b;
  b.version = TORCH_VERSION;
  b.cuda = cuda_available();
  b.cuda_devices = b.cuda ? static_cast<int>(torch::cuda::device_count()) : 0;
  // Asked of the loaded library by name: another BLAS (reference, MKL) simply has no such symbol.
  using CoreName = char* (*)();
  if (auto* corename = reinterpret_cast<CoreName>(::dlsym(RTLD_DEFAULT, "openblas_get_corename")))
    if (const char* name = corename(); name && *name) b.blas_kernels = name;
  return b;
}

}  // namespace pacer::dnn
