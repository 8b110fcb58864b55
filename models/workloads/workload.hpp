#pragma once
// The workload registry: named networks with their input shape and their cost per sample, computed
// from the network definition (no libtorch in this header).
#include <string>
#include <vector>

#include "traces/workload.hpp"

namespace pacer::models {

// The plain cost description lives in traces/ so that hw/ takes it without linking libtorch.
using traces::WorkloadInfo;

// Every registered workload (small CPU variants and the paper's full-size networks).
std::vector<std::string> workload_names();
// Builds the network once to count parameters and FLOPs. `name` may carry an input shape suffix:
// "resnet18@3x32x32", "resnet8-w0.25@1x28x28". Throws Error for an unknown name.
WorkloadInfo describe_workload(const std::string& name);

}  // namespace pacer::models
