#pragma once
// What one training sample of a workload costs: the plain description the emulated device (hw/)
// needs. dnn/workload.hpp computes it from a network definition (describe_workload, libtorch);
// hw/ and its tests take it as a value, so they build and link without libtorch.
#include <cstdint>
#include <string>
#include <vector>

namespace pacer::traces {

struct WorkloadInfo {
  std::string name;                  // "resnet8-w0.25", "resnet18", "mobilenetv2", "chartransformer", ...
  std::string family;                // "resnet" | "mobilenetv2" | "transformer" | "cnn"
  std::string task;                  // "image" | "text"
  std::vector<int64_t> input_shape;  // per sample: {1,28,28}, {3,32,32}, {64} (token ids)
  int num_classes = 0;               // classes, or vocabulary size for text
  int64_t parameters = 0;
  double flops_per_sample = 0;         // forward + backward (~3x forward), FLOP
  double bytes_per_sample = 0;         // activation + gradient traffic per sample, bytes
  double weight_bytes = 0;             // parameters + optimizer state touched per step, bytes
  double memory_per_sample_bytes = 0;  // activation memory held for backward, bytes
};

}  // namespace pacer::traces
