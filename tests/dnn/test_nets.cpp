// Workload registry: the torch-free cost walk agrees with the built networks, matches published
// parameter counts, and the full-size networks take a training step.
#include <gtest/gtest.h>

#include "base/error.hpp"
#include "dnn/nets.hpp"
#include "dnn/train.hpp"
#include "models/workloads/workload.hpp"

namespace pm = pacer::models;

TEST(Nets, CostWalkParameterCountEqualsTheBuiltNetwork) {
  for (const auto& name : pm::workload_names()) {
    const auto info = pm::describe_workload(name);
    auto net = pacer::dnn::build_network(pm::parse_workload(name));
    EXPECT_EQ(info.parameters, pacer::dnn::count_parameters(*net)) << name;
  }
  // Other input shapes change the classifier of the small CNN and nothing in the ResNet.
  for (const std::string name : {"cnn@3x32x32", "resnet18@1x28x28", "mobilenetv2-w0.5@3x32x32", "chartransformer@32"}) {
    auto net = pacer::dnn::build_network(pm::parse_workload(name));
    EXPECT_EQ(pm::describe_workload(name).parameters, pacer::dnn::count_parameters(*net)) << name;
  }
}

TEST(Nets, FullSizeNetworksMatchPublishedParameterCounts) {
  // CIFAR ResNet18 (3x3 stem, 1x1 projection shortcuts), 10 classes: 11,173,962.
  EXPECT_EQ(pm::describe_workload("resnet18").parameters, 11173962);
  // torchvision MobileNetV2 with a 10-class head: 2,223,872 feature + 12,810 classifier parameters.
  EXPECT_EQ(pm::describe_workload("mobilenetv2").parameters, 2236682);
  const auto t = pm::describe_workload("chartransformer");
  const auto spec = pm::parse_workload("chartransformer");
  EXPECT_EQ(spec.layers, 6);
  EXPECT_EQ(spec.heads, 6);
  EXPECT_EQ(spec.embed_dim, 256);
  EXPECT_EQ(spec.head_dim, 43);  // 256 is not divisible by 6: attention runs in 6 x 43 = 258 dims
  EXPECT_EQ(t.input_shape, std::vector<int64_t>({64}));
  EXPECT_EQ(t.num_classes, 96);
  // Per layer: 2 LN (1024) + qkv 256*774+774 + proj 258*256+256 + MLP 256*1024+1024 + 1024*256+256.
  const int64_t per_layer = 1024 + (256 * 774 + 774) + (258 * 256 + 256) + (256 * 1024 + 1024) + (1024 * 256 + 256);
  EXPECT_EQ(t.parameters, 96 * 256 + 64 * 256 + 6 * per_layer + 512 + 256 * 96 + 96);
}

TEST(Nets, FlopsFollowTheArchitecture) {
  // CIFAR ResNet18: 0.556 GMAC forward -> ~3.3 GFLOP forward + backward per sample.
  const auto r18 = pm::describe_workload("resnet18@3x32x32");
  EXPECT_GT(r18.flops_per_sample, 3.2e9);
  EXPECT_LT(r18.flops_per_sample, 3.5e9);
  // A narrower network is cheaper per sample, and more input pixels cost more.
  EXPECT_LT(pm::describe_workload("resnet8-w0.25").flops_per_sample, r18.flops_per_sample / 50);
  EXPECT_GT(pm::describe_workload("cnn@1x56x56").flops_per_sample,
            3.9 * pm::describe_workload("cnn@1x28x28").flops_per_sample);
  // Transformer forward ~ 2 * non-embedding parameters per token plus attention.
  const auto tr = pm::describe_workload("chartransformer");
  const double dense = 2.0 * 64 * (6 * 790790.0 + 256 * 96);  // non-embedding weights, per token
  EXPECT_GT(tr.flops_per_sample, 3 * dense);
  EXPECT_LT(tr.flops_per_sample, 3 * dense * 1.3);
  for (const auto& name : pm::workload_names()) {
    const auto w = pm::describe_workload(name);
    EXPECT_GT(w.bytes_per_sample, 0) << name;
    EXPECT_GT(w.memory_per_sample_bytes, 0) << name;
    EXPECT_DOUBLE_EQ(w.weight_bytes, 16.0 * w.parameters) << name;
  }
}

TEST(Nets, NamesAndShapesAreValidated) {
  EXPECT_EQ(pm::describe_workload("resnet8-w0.25").name, "resnet8-w0.25@1x28x28");
  EXPECT_EQ(pm::describe_workload("resnet18").name, "resnet18@3x32x32");
  EXPECT_EQ(pm::describe_workload("resnet8-w0.25@3x32x32").input_shape, std::vector<int64_t>({3, 32, 32}));
  EXPECT_THROW(pm::describe_workload("vgg16"), pacer::Error);
  EXPECT_THROW(pm::describe_workload("resnet18@3x32"), pacer::Error);
  EXPECT_THROW(pm::describe_workload("resnet18@3xAx32"), pacer::Error);
  EXPECT_THROW(pm::describe_workload("resnet12"), pacer::Error);
  EXPECT_THROW(pm::describe_workload("chartransformer@8x8"), pacer::Error);
}

TEST(Nets, FullSizeNetworksTakeATrainingStepAtBatchTwo) {
  for (const std::string name : {"resnet18", "mobilenetv2", "chartransformer"}) {
    pacer::dnn::StepRunnerOptions o;
    o.workload = name;
    o.batch_size = 2;
    o.threads = 1;
    pacer::dnn::StepRunner runner(o);
    EXPECT_NO_THROW(runner.step()) << name;
    EXPECT_EQ(runner.workload().name, pm::describe_workload(name).name);
  }
}

// A depth or width too large for a number is an error naming the workload and the value, not the
// bare "stoi"/"stod" of the C++ library, which names neither.
TEST(Nets, WorkloadNumbersOutOfRangeNameTheWorkload) {
  for (const std::string& name : std::vector<std::string>{"resnet99999999999", "cnn-w" + std::string(400, '9'),
                                                          "resnet18@3x99999999999999999999x32"}) {
    try {
      pm::describe_workload(name);
      ADD_FAILURE() << name << " accepted";
    } catch (const pacer::Error& e) {
      EXPECT_NE(std::string(e.what()).find(name.substr(0, 12)), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("99999"), std::string::npos) << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << name << ": not a pacer::Error: " << e.what();
    }
  }
}
