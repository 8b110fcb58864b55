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
  return b;
}

}  // namespace pacer::dnn
