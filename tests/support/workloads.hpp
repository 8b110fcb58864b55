#pragma once
// Workload descriptions as literal values, for the tests of layers below dnn/ (hw/ takes a plain
// traces::WorkloadInfo and links no libtorch). tests/dnn/test_workload_fixtures.cpp checks that
// they equal what dnn's describe_workload computes, so they cannot drift.
#include "traces/workload.hpp"

namespace pacer::testing {

inline traces::WorkloadInfo resnet18_cifar() {
  traces::WorkloadInfo w;
  w.name = "resnet18@3x32x32";
  w.family = "resnet";
  w.task = "image";
  w.input_shape = {3, 32, 32};
  w.num_classes = 10;
  w.parameters = 11173962;
  w.flops_per_sample = 3344185344;
  w.bytes_per_sample = 43690104;
  w.weight_bytes = 178783392;
  w.memory_per_sample_bytes = 7143464;
  return w;
}

inline traces::WorkloadInfo resnet8_quarter_fmnist() {
  traces::WorkloadInfo w;
  w.name = "resnet8-w0.25@1x28x28";
  w.family = "resnet";
  w.task = "image";
  w.input_shape = {1, 28, 28};
  w.num_classes = 10;
  w.parameters = 77754;
  w.flops_per_sample = 57307968;
  w.bytes_per_sample = 4676664;
  w.weight_bytes = 1244064;
  w.memory_per_sample_bytes = 752680;
  return w;
}

}  // namespace pacer::testing
