// libtorch builders for the registry's networks (the only place they are defined in torch).
#include <torch/torch.h>

#include <cmath>

#include "base/error.hpp"
#include "dnn/nets.hpp"

namespace pacer::dnn {
namespace {

namespace nn = torch::nn;

nn::Conv2d conv(int64_t cin, int64_t cout, int k, int stride, int64_t groups = 1, bool bias = false) {
  return nn::Conv2d(nn::Conv2dOptions(cin, cout, k).stride(stride).padding(k / 2).groups(groups).bias(bias));
}

// 2x2 max pooling with stride 2 (the last odd row or column dropped, as max_pool2d does). Without
// autograd (evaluation) it takes the elementwise maxima of the four strided quarters: the same
// values bit for bit, 17x faster than libtorch 1.13's max_pool2d on NCHW tensors on the CPU, which
// took over half of the small CNN's evaluation time. With autograd, max_pool2d, so that training
// keeps its own kernel and gradient routing.
torch::Tensor max_pool_2x2(const torch::Tensor& x) {
  if (torch::GradMode::is_enabled() || x.dim() != 4) return torch::max_pool2d(x, 2);
  using torch::indexing::None;
  using torch::indexing::Slice;
  const int64_t h = x.size(2) / 2 * 2, w = x.size(3) / 2 * 2;
  const auto rows = torch::maximum(x.index({Slice(), Slice(), Slice(0, h, 2), Slice(0, w)}),
                                   x.index({Slice(), Slice(), Slice(1, h, 2), Slice(0, w)}));
  return torch::maximum(rows.index({Slice(), Slice(), Slice(), Slice(0, None, 2)}),
                        rows.index({Slice(), Slice(), Slice(), Slice(1, None, 2)}));
}

struct BasicBlockImpl : nn::Module {
  nn::Conv2d c1{nullptr}, c2{nullptr}, cs{nullptr};
  nn::BatchNorm2d b1{nullptr}, b2{nullptr}, bs{nullptr};
  BasicBlockImpl(int64_t cin, int64_t cout, int stride) {
    c1 = register_module("conv1", conv(cin, cout, 3, stride));
    b1 = register_module("bn1", nn::BatchNorm2d(cout));
    c2 = register_module("conv2", conv(cout, cout, 3, 1));
    b2 = register_module("bn2", nn::BatchNorm2d(cout));
    if (stride != 1 || cin != cout) {
      cs = register_module("shortcut_conv", conv(cin, cout, 1, stride));
      bs = register_module("shortcut_bn", nn::BatchNorm2d(cout));
    }
  }
  torch::Tensor forward(const torch::Tensor& x) {
    auto y = torch::relu(b1(c1(x)));
    y = b2(c2(y));
    return torch::relu(y + (cs ? bs(cs(x)) : x));
  }
};
TORCH_MODULE(BasicBlock);

struct InvertedResidualImpl : nn::Module {
  nn::Sequential body;
  bool residual;
  InvertedResidualImpl(int64_t cin, int64_t cout, int stride, int expansion) : residual(stride == 1 && cin == cout) {
    const int64_t hidden = cin * expansion;
    if (expansion != 1) {
      body->push_back(conv(cin, hidden, 1, 1));
      body->push_back(nn::BatchNorm2d(hidden));
      body->push_back(nn::ReLU6());
    }
    body->push_back(conv(hidden, hidden, 3, stride, hidden));
    body->push_back(nn::BatchNorm2d(hidden));
    body->push_back(nn::ReLU6());
    body->push_back(conv(hidden, cout, 1, 1));
    body->push_back(nn::BatchNorm2d(cout));
    register_module("body", body);
  }
  torch::Tensor forward(const torch::Tensor& x) {
    auto y = body->forward(x);
    return residual ? x + y : y;
  }
};
TORCH_MODULE(InvertedResidual);

// Pre-LayerNorm block with causal self-attention in heads * head_dim dimensions.
struct BlockImpl : nn::Module {
  nn::LayerNorm ln1{nullptr}, ln2{nullptr};
  nn::Linear qkv{nullptr}, proj{nullptr}, fc1{nullptr}, fc2{nullptr};
  int heads, head_dim;
  BlockImpl(const NetSpec& s) : heads(s.heads), head_dim(s.head_dim) {
    const int64_t inner = static_cast<int64_t>(s.heads) * s.head_dim;
    ln1 = register_module("ln1", nn::LayerNorm(nn::LayerNormOptions({s.embed_dim})));
    qkv = register_module("qkv", nn::Linear(s.embed_dim, 3 * inner));
    proj = register_module("proj", nn::Linear(inner, s.embed_dim));
    ln2 = register_module("ln2", nn::LayerNorm(nn::LayerNormOptions({s.embed_dim})));
    fc1 = register_module("fc1", nn::Linear(s.embed_dim, s.mlp_ratio * s.embed_dim));
    fc2 = register_module("fc2", nn::Linear(s.mlp_ratio * s.embed_dim, s.embed_dim));
  }
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& causal_mask) {
    const auto b = x.size(0), t = x.size(1);
    auto parts = qkv(ln1(x)).view({b, t, 3, heads, head_dim}).permute({2, 0, 3, 1, 4});
    auto q = parts[0], k = parts[1], v = parts[2];  // [B, H, T, Dh]
    auto scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(head_dim));
    scores = scores.masked_fill(causal_mask, -std::numeric_limits<float>::infinity());
    auto att = torch::matmul(torch::softmax(scores, -1), v).transpose(1, 2).reshape({b, t, heads * head_dim});
    auto y = x + proj(att);
    return y + fc2(torch::gelu(fc1(ln2(y))));
  }
};
TORCH_MODULE(Block);

class ResNet : public Network, public nn::Module {
 public:
  explicit ResNet(const NetSpec& s) : spec_(s) {
    int64_t cin = models::scaled_channels(64, s.width, 4);
    stem_ = register_module("stem", conv(s.input_shape[0], cin, 3, 1));
    stem_bn_ = register_module("stem_bn", nn::BatchNorm2d(cin));
    for (size_t stage = 0; stage < s.blocks.size(); ++stage) {
      const int64_t cout = models::scaled_channels(64.0 * (1 << stage), s.width, 4);
      for (int b = 0; b < s.blocks[stage]; ++b) {
        blocks_->push_back(BasicBlock(cin, cout, (stage > 0 && b == 0) ? 2 : 1));
        cin = cout;
      }
    }
    register_module("blocks", blocks_);
    fc_ = register_module("fc", nn::Linear(cin, s.num_classes));
  }
  at::Tensor forward(const at::Tensor& x) override {
    auto y = torch::relu(stem_bn_(stem_(x)));
    y = blocks_->forward(y);
    return fc_(torch::adaptive_avg_pool2d(y, {1, 1}).flatten(1));
  }
  nn::Module& module() override { return *this; }
  const NetSpec& spec() const override { return spec_; }

 private:
  NetSpec spec_;
  nn::Conv2d stem_{nullptr};
  nn::BatchNorm2d stem_bn_{nullptr};
  nn::Sequential blocks_;
  nn::Linear fc_{nullptr};
};

class MobileNetV2 : public Network, public nn::Module {
 public:
  explicit MobileNetV2(const NetSpec& s) : spec_(s) {
    int64_t cin = models::mobilenet_divisible(32 * s.width);
    features_->push_back(conv(s.input_shape[0], cin, 3, 1));
    features_->push_back(nn::BatchNorm2d(cin));
    features_->push_back(nn::ReLU6());
    const int settings[7][4] = {{1, 16, 1, 1}, {6, 24, 2, 1},  {6, 32, 3, 2}, {6, 64, 4, 2},
                                {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
    for (const auto& st : settings) {
      const int64_t cout = models::mobilenet_divisible(st[1] * s.width);
      for (int i = 0; i < st[2]; ++i) {
        features_->push_back(InvertedResidual(cin, cout, i == 0 ? st[3] : 1, st[0]));
        cin = cout;
      }
    }
    const int64_t last = s.width > 1 ? models::mobilenet_divisible(1280 * s.width) : 1280;
    features_->push_back(conv(cin, last, 1, 1));
    features_->push_back(nn::BatchNorm2d(last));
    features_->push_back(nn::ReLU6());
    register_module("features", features_);
    fc_ = register_module("fc", nn::Linear(last, s.num_classes));
  }
  at::Tensor forward(const at::Tensor& x) override {
    return fc_(torch::adaptive_avg_pool2d(features_->forward(x), {1, 1}).flatten(1));
  }
  nn::Module& module() override { return *this; }
  const NetSpec& spec() const override { return spec_; }

 private:
  NetSpec spec_;
  nn::Sequential features_;
  nn::Linear fc_{nullptr};
};

class SmallCnn : public Network, public nn::Module {
 public:
  explicit SmallCnn(const NetSpec& s) : spec_(s) {
    const int64_t c1 = models::scaled_channels(16, s.width, 4), c2 = models::scaled_channels(32, s.width, 4);
    conv1_ = register_module("conv1", conv(s.input_shape[0], c1, 3, 1, 1, true));
    conv2_ = register_module("conv2", conv(c1, c2, 3, 1, 1, true));
    fc_ = register_module("fc", nn::Linear(c2 * (s.input_shape[1] / 4) * (s.input_shape[2] / 4), s.num_classes));
  }
  at::Tensor forward(const at::Tensor& x) override {
    auto y = max_pool_2x2(torch::relu(conv1_(x)));
    y = max_pool_2x2(torch::relu(conv2_(y)));
    return fc_(y.flatten(1));
  }
  nn::Module& module() override { return *this; }
  const NetSpec& spec() const override { return spec_; }

 private:
  NetSpec spec_;
  nn::Conv2d conv1_{nullptr}, conv2_{nullptr};
  nn::Linear fc_{nullptr};
};

class CharTransformer : public Network, public nn::Module {
 public:
  explicit CharTransformer(const NetSpec& s) : spec_(s) {
    token_ = register_module("token", nn::Embedding(s.num_classes, s.embed_dim));
    position_ = register_module("position", nn::Embedding(s.input_shape[0], s.embed_dim));
    for (int l = 0; l < s.layers; ++l) blocks_.push_back(register_module("block" + std::to_string(l), Block(s)));
    ln_ = register_module("ln", nn::LayerNorm(nn::LayerNormOptions({s.embed_dim})));
    head_ = register_module("head", nn::Linear(s.embed_dim, s.num_classes));
  }
  at::Tensor forward(const at::Tensor& tokens) override {
    const auto t = tokens.size(1);
    if (t > spec_.input_shape[0]) throw Error("chartransformer: input longer than the context length it was built for");
    auto pos = torch::arange(t, torch::TensorOptions().dtype(torch::kLong).device(tokens.device()));
    auto x = token_(tokens) + position_(pos).unsqueeze(0);
    auto mask = torch::ones({t, t}, torch::TensorOptions().dtype(torch::kBool).device(tokens.device())).triu(1);
    for (auto& b : blocks_) x = b->forward(x, mask);
    return head_(ln_(x));
  }
  nn::Module& module() override { return *this; }
  const NetSpec& spec() const override { return spec_; }

 private:
  NetSpec spec_;
  nn::Embedding token_{nullptr}, position_{nullptr};
  std::vector<Block> blocks_;
  nn::LayerNorm ln_{nullptr};
  nn::Linear head_{nullptr};
};

}  // namespace

std::unique_ptr<Network> build_network(const NetSpec& spec) {
  if (spec.family == "resnet") return std::make_unique<ResNet>(spec);
  if (spec.family == "mobilenetv2") return std::make_unique<MobileNetV2>(spec);
  if (spec.family == "cnn") return std::make_unique<SmallCnn>(spec);
  if (spec.family == "transformer") return std::make_unique<CharTransformer>(spec);
  throw Error("build_network: unknown family '" + spec.family + "'");
}

int64_t count_parameters(Network& network) {
  int64_t n = 0;
  for (const auto& p : network.module().parameters()) n += p.numel();
  return n;
}

}  // namespace pacer::dnn
