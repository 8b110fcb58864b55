#pragma once
// The libtorch this program is built against and whether it sees a CUDA device (`pacer doctor`).
#include <string>

namespace pacer::dnn {

struct TorchBuild {
  std::string version;  // "1.13.0", from torch/version.h
  bool cuda = false;    // torch::cuda::is_available()
  int cuda_devices = 0;
};
TorchBuild torch_build();

}  // namespace pacer::dnn
