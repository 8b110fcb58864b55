// libtorch side of models/learned.hpp: training from scratch and transfer (installed as the learned trainer).
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <cmath>
#include <cstring>
#include <sstream>

#include "base/error.hpp"
#include "dnn/learned_trainer.hpp"
#include "models/learned.hpp"

namespace pacer::dnn {

namespace {

// libtorch's intra-op thread count is process-wide: set it for training and put it back after.
class ThreadScope {
 public:
  explicit ThreadScope(int threads) : saved_(torch::get_num_threads()) {
    if (threads > 0) torch::set_num_threads(threads);
  }
  ~ThreadScope() { torch::set_num_threads(saved_); }
  ThreadScope(const ThreadScope&) = delete;
  ThreadScope& operator=(const ThreadScope&) = delete;

 private:
  int saved_;
};

struct Data {
  torch::Tensor x, y, mask;
};

Data make_data(const models::LearnedModel::Net& net, const std::vector<traces::ProfilePoint>& points) {
  const auto n = static_cast<int64_t>(points.size());
  const auto in = static_cast<int64_t>(net.knob.dims.size() + 1);
  Data d{torch::zeros({n, in}), torch::zeros({n, models::kLearnedOutputs}), torch::zeros({n, models::kLearnedOutputs})};
  auto xa = d.x.accessor<float, 2>();
  auto ya = d.y.accessor<float, 2>();
  auto ma = d.mask.accessor<float, 2>();
  for (int64_t i = 0; i < n; ++i) {
    const auto& p = points[static_cast<size_t>(i)];
    if (p.knob.size() != net.knob.dims.size())
      throw Error(fmt::format("learned model: point with {} knob values for a {}-dimensional knob", p.knob.size(),
                              net.knob.dims.size()));
    const auto f = learned_features(net, p.knob, p.batch_size);
    for (int64_t j = 0; j < in; ++j) xa[i][j] = f[static_cast<size_t>(j)];
    const double y[models::kLearnedOutputs] = {p.time_per_batch_mean_s, p.power_mean_w, p.power_peak_w};
    for (int j = 0; j < models::kLearnedOutputs; ++j) {
      if (std::isfinite(y[j]) && y[j] > 0 && std::isfinite(net.output_mean[static_cast<size_t>(j)])) {
        ya[i][j] = static_cast<float>((std::log(y[j]) - net.output_mean[static_cast<size_t>(j)]) /
                                      net.output_std[static_cast<size_t>(j)]);
        ma[i][j] = 1.0F;
      }
    }
  }
  return d;
}

torch::nn::Sequential build(const models::LearnedModel::Net& net, const std::vector<int>& hidden, int in) {
  torch::nn::Sequential seq;
  int prev = in;
  for (int h : hidden) {
    seq->push_back(torch::nn::Linear(prev, h));
    seq->push_back(torch::nn::SiLU());
    prev = h;
  }
  seq->push_back(torch::nn::Linear(prev, models::kLearnedOutputs));
  (void)net;
  return seq;
}

std::vector<torch::nn::Linear> linears(torch::nn::Sequential& seq) {
  std::vector<torch::nn::Linear> out;
  for (auto& m : seq->children())
    if (auto l = std::dynamic_pointer_cast<torch::nn::LinearImpl>(m)) out.emplace_back(l);
  return out;
}

void load_weights(torch::nn::Sequential& seq, const models::LearnedModel::Net& net) {
  torch::NoGradGuard guard;
  auto ls = linears(seq);
  for (size_t k = 0; k < ls.size(); ++k) {
    const auto& layer = net.layers.at(k);
    ls[k]->weight.copy_(torch::from_blob(const_cast<float*>(layer.weight.data()), {layer.out, layer.in}).clone());
    ls[k]->bias.copy_(torch::from_blob(const_cast<float*>(layer.bias.data()), {layer.out}).clone());
  }
}

void store_weights(torch::nn::Sequential& seq, models::LearnedModel::Net& net) {
  net.layers.clear();
  for (auto& l : linears(seq)) {
    models::LearnedModel::Layer layer;
    layer.out = static_cast<int>(l->weight.size(0));
    layer.in = static_cast<int>(l->weight.size(1));
    const auto w = l->weight.detach().contiguous();
    const auto b = l->bias.detach().contiguous();
    layer.weight.assign(w.data_ptr<float>(), w.data_ptr<float>() + w.numel());
    layer.bias.assign(b.data_ptr<float>(), b.data_ptr<float>() + b.numel());
    net.layers.push_back(std::move(layer));
  }
}

torch::Tensor masked_mse(const torch::Tensor& pred, const Data& d) {
  const auto diff = (pred - d.y) * d.mask;
  return diff.pow(2).sum() / d.mask.sum().clamp_min(1.0);
}

// Full-batch Adam with a step decay; `anchor` (may be empty) adds the L2-SP pull towards it.
void train(torch::nn::Sequential& seq, const Data& d, int epochs, double lr, double weight_decay,
           const std::vector<torch::Tensor>& anchor, double anchor_weight) {
  torch::optim::Adam opt(seq->parameters(), torch::optim::AdamOptions(lr).weight_decay(weight_decay));
  auto params = seq->parameters();
  for (int e = 0; e < epochs; ++e) {
    if (e == epochs / 2 || e == (3 * epochs) / 4)
      for (auto& g : opt.param_groups())
        static_cast<torch::optim::AdamOptions&>(g.options())
            .lr(static_cast<torch::optim::AdamOptions&>(g.options()).lr() * 0.3);
    opt.zero_grad();
    auto loss = masked_mse(seq->forward(d.x), d);
    if (!anchor.empty()) {
      auto reg = torch::zeros({});
      for (size_t k = 0; k < params.size(); ++k) reg = reg + (params[k] - anchor[k]).pow(2).sum();
      loss = loss + anchor_weight * reg;
    }
    loss.backward();
    opt.step();
  }
}

traces::ModelRecord base_record(const std::string& trained, const models::LearnedOptions& options, int points) {
  traces::ModelRecord r;
  r.kind = to_string(traces::ModelKind::learned);
  r.settings["trained"] = trained;
  r.settings["seed"] = std::to_string(options.seed);
  r.settings["epochs"] = std::to_string(trained == "scratch" ? options.epochs : options.transfer_epochs);
  r.settings["training_points"] = std::to_string(points);
  return r;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
std::unique_ptr<models::LearnedModel> torch_train_learned(const std::vector<traces::ProfilePoint>& points,
                                                          const traces::KnobSpace& knob,
                                                          const models::LearnedOptions& options) {
  if (points.size() < 2) throw Error(fmt::format("the learned model needs at least 2 points, got {}", points.size()));
  if (options.hidden.empty()) throw Error("the learned model needs at least one hidden layer");
  ThreadScope threads(options.threads);
  torch::manual_seed(options.seed);
  models::LearnedModel::Net net;
  net.knob = knob;
  net.knob_scale = options.knob_scale;
  if (net.knob_scale.empty()) {
    net.knob_scale.assign(knob.dims.size(), 0.0);
    for (const auto& p : points)
      for (size_t d = 0; d < net.knob_scale.size() && d < p.knob.size(); ++d)
        net.knob_scale[d] = std::max(net.knob_scale[d], p.knob[d]);
  }
  if (net.knob_scale.size() != knob.dims.size())
    throw Error("learned model: one knob scale is needed per knob dimension");
  for (auto& s : net.knob_scale)
    if (!(s > 0)) s = 1;
  double lb = 1;
  for (const auto& p : points) lb = std::max(lb, std::log2(static_cast<double>(p.batch_size)));
  net.log2_batch_scale = lb;
  // Standardise each log target over its finite values.
  net.output_mean.assign(models::kLearnedOutputs, traces::kNaN);
  net.output_std.assign(models::kLearnedOutputs, 1.0);
  for (int j = 0; j < models::kLearnedOutputs; ++j) {
    double s = 0, ss = 0;
    int n = 0;
    for (const auto& p : points) {
      const double y = j == 0 ? p.time_per_batch_mean_s : (j == 1 ? p.power_mean_w : p.power_peak_w);
      if (std::isfinite(y) && y > 0) {
        s += std::log(y);
        ss += std::log(y) * std::log(y);
        ++n;
      }
    }
    if (n == 0) continue;
    const double m = s / n;
    net.output_mean[static_cast<size_t>(j)] = m;
    net.output_std[static_cast<size_t>(j)] = std::max(0.05, std::sqrt(std::max(0.0, ss / n - m * m)));
  }
  if (!std::isfinite(net.output_mean[0]) || !std::isfinite(net.output_mean[1]))
    throw Error("the learned model needs time and mean power on its training points");
  net.has_peak = std::isfinite(net.output_mean[2]);
  if (!net.has_peak) net.output_mean[2] = net.output_mean[1];

  const int in = static_cast<int>(knob.dims.size() + 1);
  auto seq = build(net, options.hidden, in);
  const auto data = make_data(net, points);
  train(seq, data, options.epochs, options.learning_rate, options.weight_decay, {}, 0.0);
  store_weights(seq, net);
  return std::make_unique<models::LearnedModel>(std::move(net),
                                                base_record("scratch", options, static_cast<int>(points.size())));
}

std::unique_ptr<models::LearnedModel> torch_transfer_learned(const models::LearnedModel& reference,
                                                             const std::vector<traces::ProfilePoint>& points,
                                                             const models::LearnedOptions& options) {
  if (points.empty()) throw Error("learned transfer needs at least one point of the new workload");
  ThreadScope threads(options.threads);
  torch::manual_seed(options.seed);
  models::LearnedModel::Net net = reference.net();
  if (!options.knob_scale.empty()) {
    if (options.knob_scale.size() != net.knob.dims.size())
      throw Error("learned transfer: the new knob has a different number of dimensions than the reference");
    net.knob_scale = options.knob_scale;
  }
  bool any_peak = false;
  for (const auto& p : points) any_peak = any_peak || (std::isfinite(p.power_peak_w) && p.power_peak_w > 0);
  net.has_peak = any_peak;

  const int in = static_cast<int>(net.knob.dims.size() + 1);
  std::vector<int> hidden;
  for (size_t k = 0; k + 1 < net.layers.size(); ++k) hidden.push_back(net.layers[k].out);
  auto seq = build(net, hidden, in);
  load_weights(seq, net);
  const auto data = make_data(net, points);
  {
    // A new workload mostly differs in scale: shift each output by the mean residual on the new
    // points first, so fine-tuning only has to learn the change of shape.
    torch::NoGradGuard guard;
    const auto residual = ((data.y - seq->forward(data.x)) * data.mask).sum(0) / data.mask.sum(0).clamp_min(1.0);
    auto ls = linears(seq);
    ls.back()->bias.add_(residual);
  }
  std::vector<torch::Tensor> anchor;
  for (auto& p : seq->parameters()) anchor.push_back(p.detach().clone());
  train(seq, data, options.transfer_epochs, options.transfer_learning_rate, 0.0, anchor, options.anchor_weight);
  store_weights(seq, net);
  auto record = base_record("transfer", options, static_cast<int>(points.size()));
  return std::make_unique<models::LearnedModel>(std::move(net), std::move(record));
}

void install_learned_trainer() {
  models::set_learned_trainer({&torch_train_learned, &torch_transfer_learned});
}

}  // namespace pacer::dnn
