#pragma once
// What one training sample of a workload costs: the plain description the emulated device (hw/)
// needs. models/workloads/workload.hpp computes it from a network definition (describe_workload, libtorch);
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

// Whether a batch fits the memory of what trains it, so that no batch that cannot fit is reported
// as measured (a 2^30 batch once "profiled ok" on a 4 GiB Nano): the one home of that check for the
// profile, the relation campaigns and validation.
//
// Bytes a training step at `batch_size` holds, from the workload's estimate: weights and optimizer
// state plus the activations of b samples.
double training_memory_bytes(const WorkloadInfo& workload, int64_t batch_size);
// The largest batch size whose training memory fits in `memory_bytes` (0 when none does).
int64_t largest_batch_in_memory(const WorkloadInfo& workload, double memory_bytes);
// The first batch size that does not fit the `memory_bytes` of `where` ("jetson-nano", "this
// computer") is an error naming it, the memory it needs and the largest batch size that fits:
// OptionError(option) when `option` is set, else Error. memory_bytes <= 0 (unknown): no check.
void check_batches_fit(const WorkloadInfo& workload, const std::vector<int>& batch_sizes, double memory_bytes,
                       const std::string& where, const std::string& option = "");
// This computer's physical memory, bytes (0 when unknown): what trains on its CPU, and a Jetson's
// GPU, whose memory is the board's.
double host_memory_bytes();

}  // namespace pacer::traces

namespace pacer::traces {

struct RelationSet;

// The one check of a relation paired with a profile or a model (select, sweep, simulate, budget,
// validate): r(b) was measured on one network, and pairing it with another's device profile
// answers a question nobody asked. `what` names the other side ("profile 'mine'"), `workload` its
// workload. Equal workloads, or an empty one (a record that does not say): fine. Different:
// SettingError("allow-workload-mismatch") saying both, unless `allow_mismatch`, then one warning.
void check_workload_match(const std::string& what, const std::string& workload, const RelationSet& relation,
                          bool allow_mismatch);

}  // namespace pacer::traces
