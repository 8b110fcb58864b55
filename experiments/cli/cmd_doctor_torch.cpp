// The libtorch side of `pacer doctor` (linked into pacer-train only): which libtorch, whether it sees CUDA.
#include "dnn/torch_build.hpp"
#include "experiments/cli/doctor_torch.hpp"

namespace pacer::cli {

hw::TorchInfo linked_torch_info() {
  const auto b = dnn::torch_build();
  hw::TorchInfo t;
  t.linked = true;
  t.version = b.version;
  t.cuda = b.cuda;
  t.cuda_devices = b.cuda_devices;
  t.blas_kernels = b.blas_kernels;
  return t;
}

}  // namespace pacer::cli
