// The networks' forward pass without autograd (evaluation) against the pass with it (training):
// the small CNN pools by elementwise maxima when no gradient is recorded (nets_torch.cpp), which
// must give the logits of max_pool2d bit for bit, so that an evaluation scores as before.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "dnn/nets.hpp"
#include "models/workloads/workload.hpp"

namespace pm = pacer::models;

TEST(NetsTorch, EvaluationLogitsEqualTheTrainingPassBitForBit) {
  torch::manual_seed(7);
  // 28x28 pools to 14 and 7; 13x13 and 11x10 drop an odd last row or column at each pooling.
  for (const std::string name : {"cnn@1x28x28", "cnn@1x13x13", "cnn@3x11x10"}) {
    const auto spec = pm::parse_workload(name);
    auto net = pacer::dnn::build_network(spec);
    net->module().eval();
    std::vector<int64_t> shape = {37};
    shape.insert(shape.end(), spec.input_shape.begin(), spec.input_shape.end());
    const auto x = torch::randn(shape);
    const auto with_autograd = net->forward(x);
    ASSERT_TRUE(with_autograd.requires_grad()) << name;
    torch::Tensor evaluated;
    {
      c10::InferenceMode inference;
      evaluated = net->forward(x);
    }
    EXPECT_TRUE(torch::equal(evaluated, with_autograd.detach())) << name;
    EXPECT_EQ(evaluated.sizes(), with_autograd.sizes()) << name;
  }
}
