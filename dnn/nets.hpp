#pragma once
// The libtorch networks built from a NetSpec (models/workloads/net_spec.hpp); the builder is
// nets_torch.cpp.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/workloads/net_spec.hpp"

// Forward declarations only: this header must stay free of <torch/torch.h>.
namespace at {
class Tensor;
}
namespace torch::nn {
class Module;
}

namespace pacer::dnn {

using models::NetSpec;

// A built network. The interface is declared here so that the training code in another libtorch
// translation unit can run it; only *_torch.cpp files can call forward() (they see at::Tensor).
class Network {
 public:
  virtual ~Network() = default;
  // Images: float [B,C,H,W] -> logits [B,classes]. Text: int64 [B,T] -> logits [B,T,vocab].
  virtual at::Tensor forward(const at::Tensor& input) = 0;
  virtual torch::nn::Module& module() = 0;
  virtual const NetSpec& spec() const = 0;
};

std::unique_ptr<Network> build_network(const NetSpec& spec);
// Trainable parameters of a built network (what describe_workload counts without building it).
int64_t count_parameters(Network& network);

}  // namespace pacer::dnn
