#pragma once
// The workload registry: named networks with their input shape and their cost per sample, computed
// from the network definition (no libtorch in this header).
#include <cstdint>
#include <string>
#include <vector>

namespace pacer::models {

struct WorkloadInfo {
  std::string name;         // "resnet8-w0.25", "resnet18", "mobilenetv2", "chartransformer", ...
  std::string family;       // "resnet" | "mobilenetv2" | "transformer" | "cnn"
  std::string task;         // "image" | "text"
  std::vector<int64_t> input_shape;  // per sample: {1,28,28}, {3,32,32}, {64} (token ids)
  int num_classes = 0;      // classes, or vocabulary size for text
  int64_t parameters = 0;
  double flops_per_sample = 0;       // forward + backward (~3x forward), FLOP
  double bytes_per_sample = 0;       // activation + gradient traffic per sample, bytes
  double weight_bytes = 0;           // parameters + optimizer state touched per step, bytes
  double memory_per_sample_bytes = 0;  // activation memory held for backward, bytes
};

// Every registered workload (small CPU variants and the paper's full-size networks).
std::vector<std::string> workload_names();
// Builds the network once to count parameters and FLOPs. `name` may carry an input shape suffix:
// "resnet18@3x32x32", "resnet8-w0.25@1x28x28". Throws Error for an unknown name.
WorkloadInfo describe_workload(const std::string& name);

}  // namespace pacer::models
