#pragma once
// The libtorch this program is built against and whether it sees a CUDA device (`pacer doctor`).
#include <string>

namespace pacer::dnn {

struct TorchBuild {
  std::string version;  // "1.13.0", from torch/version.h
  bool cuda = false;    // torch::cuda::is_available()
  int cuda_devices = 0;
  // The kernel set OpenBLAS chose or was pinned to (openblas_get_corename: "Haswell", "SkylakeX");
  // "unknown" where the BLAS the process loaded is not OpenBLAS (base::cpu_kernel_pins).
  std::string blas_kernels = "unknown";
};
TorchBuild torch_build();

}  // namespace pacer::dnn
