#pragma once
// What a registered network is (NetSpec) and the registry's names: shared by the torch-free cost
// walk (workload.cpp) and the libtorch builder (dnn/nets_torch.cpp). Both sides read the same
// fields, and a test checks that their parameter counts agree.
#include <cstdint>
#include <string>
#include <vector>

namespace pacer::models {

struct NetSpec {
  std::string name;    // registry name with the shape suffix: "resnet8-w0.25@1x28x28"
  std::string base;    // registry name without the suffix: "resnet8-w0.25"
  std::string family;  // "resnet" | "mobilenetv2" | "transformer" | "cnn"
  std::string task;    // "image" | "text"
  std::vector<int64_t> input_shape;  // {C,H,W} or {context}
  int num_classes = 10;              // classes, or the vocabulary size for text
  double width = 1.0;                // channel multiplier (image families)
  std::vector<int> blocks;           // resnet: residual blocks per stage
  // Transformer: embed_dim need not be a multiple of heads; attention runs in heads * head_dim
  // dimensions (256 / 6 heads -> 6 x 43 = 258) and the output projection maps back to embed_dim.
  int layers = 0;
  int heads = 0;
  int embed_dim = 0;
  int head_dim = 0;
  int mlp_ratio = 4;
};

// Parses "resnet18", "resnet8-w0.25@1x28x28", "mobilenetv2-w0.5@3x32x32", "cnn",
// "chartransformer@128" (context 128). Throws Error naming the registry for an unknown name.
NetSpec parse_workload(const std::string& name);

// Channel rounding shared by the cost walk and the builder.
int64_t mobilenet_divisible(double channels);  // torchvision's _make_divisible(v, 8)
inline int64_t scaled_channels(double base, double width, int64_t min_channels) {
  const auto v = static_cast<int64_t>(base * width + 0.5);
  return v < min_channels ? min_channels : v;
}

// The character vocabulary of the text workloads (see dnn/data/text.hpp).
inline constexpr int kCharVocabSize = 96;

}  // namespace pacer::models
