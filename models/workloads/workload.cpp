// The workload registry and the torch-free cost walk: parameters, FLOPs and activation sizes are
// counted layer by layer from the same NetSpec that nets_torch.cpp builds.
#include "models/workloads/workload.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>

#include "base/error.hpp"
#include "base/units.hpp"
#include "models/workloads/net_spec.hpp"

namespace pacer::models {
namespace {

constexpr double kBytesPerValue = 4;  // fp32
// An input side (channels, pixels, tokens) above this is a typo: its cost walk would overflow.
constexpr int64_t kMaxShapeSide = 1 << 16;

struct BaseEntry {
  std::string family;
  std::vector<int64_t> default_shape;
};

// Names listed by workload_names(); parse_workload also accepts any resnetN-wX / mobilenetv2-wX /
// cnn-wX spelled the same way.
const std::vector<std::string>& registry_names() {
  static const std::vector<std::string> names = {
      "cnn",         "resnet8-w0.25",    "mobilenetv2-w0.25",     "chartransformer-tiny",
      "resnet18",    "mobilenetv2",      "chartransformer",       "resnet8",
      "cnn-w0.5",    "resnet10-w0.5",    "chartransformer-small", "mobilenetv2-w0.5"};
  return names;
}

std::vector<int> resnet_blocks(const std::string& name, const std::string& depth_text) {
  const int depth = static_cast<int>(units::to_integer(depth_text, 0, 1000).value_or(0));
  switch (depth) {
    case 8: return {1, 1, 1};
    case 10: return {1, 1, 1, 1};
    case 18: return {2, 2, 2, 2};
    case 34: return {3, 4, 6, 3};
    default:
      throw Error(fmt::format("workload '{}': unsupported ResNet depth {} (use 8, 10, 18 or 34)", name, depth_text));
  }
}

std::vector<int64_t> parse_shape(const std::string& text, const std::string& name) {
  std::vector<int64_t> shape;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t x = text.find('x', pos);
    const std::string part = text.substr(pos, x == std::string::npos ? std::string::npos : x - pos);
    const auto v = units::to_integer(part, 1, kMaxShapeSide);
    if (!v)
      throw Error(
          fmt::format("workload '{}': bad input shape '{}' (write CxHxW, e.g. @3x32x32, or the "
                      "context length for text, e.g. @64; each at most {})",
                      name, text, kMaxShapeSide));
    shape.push_back(*v);
    if (x == std::string::npos) break;
    pos = x + 1;
  }
  return shape;
}

// Accumulates the cost of a network walked layer by layer (per sample).
struct CostWalk {
  double params = 0;
  double fwd_flops = 0;
  double saved_values = 0;    // activations kept for the backward pass
  double traffic_values = 0;  // values read and written by the forward pass

  void conv(int64_t cin, int64_t cout, int k, int stride, int64_t& h, int64_t& w, int64_t groups, bool bias) {
    const int pad = k / 2;
    const int64_t ho = (h + 2 * pad - k) / stride + 1, wo = (w + 2 * pad - k) / stride + 1;
    params += static_cast<double>(cout) * (cin / groups) * k * k + (bias ? cout : 0);
    fwd_flops += 2.0 * cout * ho * wo * (cin / groups) * k * k;
    const double in = static_cast<double>(cin) * h * w, out = static_cast<double>(cout) * ho * wo;
    saved_values += out;
    traffic_values += in + out;
    h = ho;
    w = wo;
  }
  void batchnorm(int64_t c, double values) {
    params += 2.0 * c;
    fwd_flops += 5 * values;  // mean, variance, normalise, scale, shift
    saved_values += values;
    traffic_values += 2 * values;
  }
  void elementwise(double values, double flops_per_value, bool saved) {
    fwd_flops += flops_per_value * values;
    if (saved) saved_values += values;
    traffic_values += 2 * values;
  }
  void linear(int64_t in, int64_t out, int64_t tokens) {
    params += static_cast<double>(in) * out + out;
    fwd_flops += 2.0 * in * out * tokens;
    saved_values += static_cast<double>(out) * tokens;
    traffic_values += static_cast<double>(in + out) * tokens;
  }
  void layernorm(int64_t d, int64_t tokens) {
    params += 2.0 * d;
    fwd_flops += 5.0 * d * tokens;
    saved_values += static_cast<double>(d) * tokens;
    traffic_values += 2.0 * d * tokens;
  }
};

}  // namespace

int64_t mobilenet_divisible(double v) {
  int64_t n = std::max<int64_t>(8, static_cast<int64_t>(v + 4) / 8 * 8);
  if (n < 0.9 * v) n += 8;
  return n;
}

NetSpec parse_workload(const std::string& name) {
  NetSpec s;
  s.name = name;
  const auto at = name.find('@');
  s.base = name.substr(0, at);
  static const std::regex image_re(R"((resnet(\d+)|mobilenetv2|cnn)(-w([0-9]*\.?[0-9]+))?)");
  std::smatch m;
  if (std::regex_match(s.base, m, image_re)) {
    s.task = "image";
    s.num_classes = 10;
    const std::string head = m[1].str();
    s.width = m[4].matched ? units::to_number(m[4].str()).value_or(0) : 1.0;
    if (!(s.width > 0 && s.width <= 4))
      throw Error(fmt::format("workload '{}': width multiplier {} must be in (0, 4]", name, m[4].str()));
    if (head.rfind("resnet", 0) == 0) {
      s.family = "resnet";
      s.blocks = resnet_blocks(name, m[2].str());
    } else if (head == "mobilenetv2") {
      s.family = "mobilenetv2";
    } else {
      s.family = "cnn";
    }
    // The paper's full-size networks run on 3x32x32; the small CPU variants default to Fashion-MNIST.
    const bool small = s.width < 1 || s.family == "cnn" || (s.family == "resnet" && s.blocks.size() < 4);
    s.input_shape = small ? std::vector<int64_t>{1, 28, 28} : std::vector<int64_t>{3, 32, 32};
  } else if (s.base == "chartransformer" || s.base == "chartransformer-small" || s.base == "chartransformer-tiny") {
    s.task = "text";
    s.family = "transformer";
    s.num_classes = kCharVocabSize;
    s.input_shape = {64};
    if (s.base == "chartransformer") {
      s.layers = 6, s.heads = 6, s.embed_dim = 256;
    } else if (s.base == "chartransformer-small") {
      s.layers = 4, s.heads = 4, s.embed_dim = 128;
    } else {
      s.layers = 2, s.heads = 2, s.embed_dim = 64;
    }
    s.head_dim = (s.embed_dim + s.heads - 1) / s.heads;
  } else {
    throw Error(fmt::format("unknown workload '{}' (known: {}; `pacer workloads` lists them)", name,
                            fmt::join(registry_names(), ", ")));
  }
  if (at != std::string::npos) {
    const auto shape = parse_shape(name.substr(at + 1), name);
    if (s.task == "image" && (shape.size() != 3 || shape[1] < 8 || shape[2] < 8))
      throw Error(fmt::format("workload '{}': image shape must be CxHxW with H, W >= 8", name));
    if (s.task == "text" && shape.size() != 1)
      throw Error(fmt::format("workload '{}': text shape is the context length, e.g. @64", name));
    s.input_shape = shape;
  }
  s.name = s.base + "@" + fmt::format("{}", fmt::join(s.input_shape, "x"));
  return s;
}

std::vector<std::string> workload_names() { return registry_names(); }

namespace {

// One basic block: two 3x3 convolutions, a 1x1 projection when the shape changes, residual add.
void resnet_block(CostWalk& c, int64_t& cin, int64_t cout, int stride, int64_t& h, int64_t& w) {
  int64_t h1 = h, w1 = w;
  c.conv(cin, cout, 3, stride, h1, w1, 1, false);
  const double v = static_cast<double>(cout) * h1 * w1;
  c.batchnorm(cout, v);
  c.elementwise(v, 1, true);
  int64_t h2 = h1, w2 = w1;
  c.conv(cout, cout, 3, 1, h2, w2, 1, false);
  c.batchnorm(cout, v);
  if (stride != 1 || cin != cout) {
    int64_t hs = h, ws = w;
    c.conv(cin, cout, 1, stride, hs, ws, 1, false);
    c.batchnorm(cout, v);
  }
  c.elementwise(v, 2, true);  // residual add + ReLU
  cin = cout;
  h = h1;
  w = w1;
}

void walk_resnet(const NetSpec& s, CostWalk& c) {
  int64_t h = s.input_shape[1], w = s.input_shape[2];
  int64_t cin = scaled_channels(64, s.width, 4);
  c.conv(s.input_shape[0], cin, 3, 1, h, w, 1, false);
  c.batchnorm(cin, static_cast<double>(cin) * h * w);
  c.elementwise(static_cast<double>(cin) * h * w, 1, true);
  for (size_t stage = 0; stage < s.blocks.size(); ++stage) {
    const int64_t cout = scaled_channels(64.0 * (1 << stage), s.width, 4);
    for (int b = 0; b < s.blocks[stage]; ++b) resnet_block(c, cin, cout, (stage > 0 && b == 0) ? 2 : 1, h, w);
  }
  c.elementwise(static_cast<double>(cin) * h * w, 1, false);  // global average pool
  c.linear(cin, s.num_classes, 1);
}

// One inverted residual block: 1x1 expansion (unless t = 1), 3x3 depthwise, 1x1 projection, and
// the residual add when the shape is kept.
void mobilenet_block(CostWalk& c, int64_t& cin, int64_t cout, int expansion, int stride, int64_t& h, int64_t& w) {
  const int64_t hidden = cin * expansion;
  if (expansion != 1) {
    c.conv(cin, hidden, 1, 1, h, w, 1, false);
    c.batchnorm(hidden, static_cast<double>(hidden) * h * w);
    c.elementwise(static_cast<double>(hidden) * h * w, 1, true);
  }
  c.conv(hidden, hidden, 3, stride, h, w, hidden, false);
  c.batchnorm(hidden, static_cast<double>(hidden) * h * w);
  c.elementwise(static_cast<double>(hidden) * h * w, 1, true);
  c.conv(hidden, cout, 1, 1, h, w, 1, false);
  c.batchnorm(cout, static_cast<double>(cout) * h * w);
  if (stride == 1 && cin == cout) c.elementwise(static_cast<double>(cout) * h * w, 1, false);
  cin = cout;
}

void walk_mobilenetv2(const NetSpec& s, CostWalk& c) {
  int64_t h = s.input_shape[1], w = s.input_shape[2];
  int64_t cin = mobilenet_divisible(32 * s.width);
  c.conv(s.input_shape[0], cin, 3, 1, h, w, 1, false);
  c.batchnorm(cin, static_cast<double>(cin) * h * w);
  c.elementwise(static_cast<double>(cin) * h * w, 1, true);
  // (expansion t, channels c, repeats n, stride s); CIFAR form: the first two strides are 1.
  const int settings[7][4] = {{1, 16, 1, 1}, {6, 24, 2, 1},  {6, 32, 3, 2}, {6, 64, 4, 2},
                              {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  for (const auto& st : settings) {
    const int64_t cout = mobilenet_divisible(st[1] * s.width);
    for (int i = 0; i < st[2]; ++i) mobilenet_block(c, cin, cout, st[0], i == 0 ? st[3] : 1, h, w);
  }
  const int64_t last = s.width > 1 ? mobilenet_divisible(1280 * s.width) : 1280;
  c.conv(cin, last, 1, 1, h, w, 1, false);
  c.batchnorm(last, static_cast<double>(last) * h * w);
  c.elementwise(static_cast<double>(last) * h * w, 1, true);
  c.elementwise(static_cast<double>(last) * h * w, 1, false);  // global average pool
  c.linear(last, s.num_classes, 1);
}

void walk_cnn(const NetSpec& s, CostWalk& c) {
  int64_t h = s.input_shape[1], w = s.input_shape[2];
  const int64_t c1 = scaled_channels(16, s.width, 4), c2 = scaled_channels(32, s.width, 4);
  c.conv(s.input_shape[0], c1, 3, 1, h, w, 1, true);
  c.elementwise(static_cast<double>(c1) * h * w, 1, true);
  h /= 2, w /= 2;
  c.elementwise(static_cast<double>(c1) * h * w, 4, true);  // 2x2 max pool
  c.conv(c1, c2, 3, 1, h, w, 1, true);
  c.elementwise(static_cast<double>(c2) * h * w, 1, true);
  h /= 2, w /= 2;
  c.elementwise(static_cast<double>(c2) * h * w, 4, true);
  c.linear(c2 * h * w, s.num_classes, 1);
}

void walk_transformer(const NetSpec& s, CostWalk& c) {
  const int64_t t = s.input_shape[0], d = s.embed_dim, inner = static_cast<int64_t>(s.heads) * s.head_dim;
  c.params += static_cast<double>(s.num_classes) * d + static_cast<double>(t) * d;  // token + position
  c.elementwise(static_cast<double>(t) * d, 1, true);
  for (int l = 0; l < s.layers; ++l) {
    c.layernorm(d, t);
    c.linear(d, 3 * inner, t);
    const double scores = static_cast<double>(s.heads) * t * t;
    c.fwd_flops += 2.0 * scores * s.head_dim * 2;  // Q K^T and P V
    c.elementwise(scores, 6, true);                // scale, causal mask, softmax
    c.saved_values += static_cast<double>(inner) * t;
    c.linear(inner, d, t);
    c.elementwise(static_cast<double>(t) * d, 1, false);  // residual
    c.layernorm(d, t);
    c.linear(d, s.mlp_ratio * d, t);
    c.elementwise(static_cast<double>(s.mlp_ratio) * d * t, 8, true);  // GELU
    c.linear(s.mlp_ratio * d, d, t);
    c.elementwise(static_cast<double>(t) * d, 1, false);
  }
  c.layernorm(d, t);
  c.linear(d, s.num_classes, t);
  c.elementwise(static_cast<double>(s.num_classes) * t, 5, false);  // softmax cross-entropy
}

}  // namespace

WorkloadInfo describe_workload(const std::string& name) {
  const NetSpec s = parse_workload(name);
  CostWalk c;
  if (s.family == "resnet")
    walk_resnet(s, c);
  else if (s.family == "mobilenetv2")
    walk_mobilenetv2(s, c);
  else if (s.family == "cnn")
    walk_cnn(s, c);
  else  // transformer
    walk_transformer(s, c);

  WorkloadInfo info;
  info.name = s.name;
  info.family = s.family;
  info.task = s.task;
  info.input_shape = s.input_shape;
  info.num_classes = s.num_classes;
  info.parameters = static_cast<int64_t>(std::llround(c.params));
  // Backward costs about twice the forward (gradients with respect to inputs and to weights).
  info.flops_per_sample = 3 * c.fwd_flops;
  info.bytes_per_sample = 3 * c.traffic_values * kBytesPerValue;
  // Weights, their gradients and Adam's two moments are all read or written every step.
  info.weight_bytes = 4 * c.params * kBytesPerValue;
  info.memory_per_sample_bytes = c.saved_values * kBytesPerValue;
  return info;
}

}  // namespace pacer::models
