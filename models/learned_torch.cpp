// The learned predictor's training (libtorch) and its inference (plain C++ on the stored weights).
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <cmath>
#include <cstring>
#include <sstream>

#include "models/learned.hpp"
#include "traces/error.hpp"

namespace pacer::models {

namespace {

constexpr int kOutputs = 3;  // log time, log mean power, log peak power

double silu(double x) { return x / (1.0 + std::exp(-x)); }

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

std::vector<float> features(const LearnedModel::Net& net, const std::vector<double>& knob, int batch_size) {
  std::vector<float> x;
  for (size_t d = 0; d < knob.size(); ++d) x.push_back(static_cast<float>(knob[d] / net.knob_scale.at(d)));
  x.push_back(static_cast<float>(std::log2(static_cast<double>(batch_size)) / net.log2_batch_scale));
  return x;
}

struct Data {
  torch::Tensor x, y, mask;
};

Data make_data(const LearnedModel::Net& net, const std::vector<traces::ProfilePoint>& points) {
  const auto n = static_cast<int64_t>(points.size());
  const auto in = static_cast<int64_t>(net.knob.dims.size() + 1);
  Data d{torch::zeros({n, in}), torch::zeros({n, kOutputs}), torch::zeros({n, kOutputs})};
  auto xa = d.x.accessor<float, 2>();
  auto ya = d.y.accessor<float, 2>();
  auto ma = d.mask.accessor<float, 2>();
  for (int64_t i = 0; i < n; ++i) {
    const auto& p = points[static_cast<size_t>(i)];
    if (p.knob.size() != net.knob.dims.size())
      throw Error(fmt::format("learned model: point with {} knob values for a {}-dimensional knob", p.knob.size(),
                              net.knob.dims.size()));
    const auto f = features(net, p.knob, p.batch_size);
    for (int64_t j = 0; j < in; ++j) xa[i][j] = f[static_cast<size_t>(j)];
    const double y[kOutputs] = {p.time_per_batch_mean_s, p.power_mean_w, p.power_peak_w};
    for (int j = 0; j < kOutputs; ++j) {
      if (std::isfinite(y[j]) && y[j] > 0 && std::isfinite(net.output_mean[static_cast<size_t>(j)])) {
        ya[i][j] = static_cast<float>((std::log(y[j]) - net.output_mean[static_cast<size_t>(j)]) /
                                      net.output_std[static_cast<size_t>(j)]);
        ma[i][j] = 1.0F;
      }
    }
  }
  return d;
}

torch::nn::Sequential build(const LearnedModel::Net& net, const std::vector<int>& hidden, int in) {
  torch::nn::Sequential seq;
  int prev = in;
  for (int h : hidden) {
    seq->push_back(torch::nn::Linear(prev, h));
    seq->push_back(torch::nn::SiLU());
    prev = h;
  }
  seq->push_back(torch::nn::Linear(prev, kOutputs));
  (void)net;
  return seq;
}

std::vector<torch::nn::Linear> linears(torch::nn::Sequential& seq) {
  std::vector<torch::nn::Linear> out;
  for (auto& m : seq->children())
    if (auto l = std::dynamic_pointer_cast<torch::nn::LinearImpl>(m)) out.emplace_back(l);
  return out;
}

void load_weights(torch::nn::Sequential& seq, const LearnedModel::Net& net) {
  torch::NoGradGuard guard;
  auto ls = linears(seq);
  for (size_t k = 0; k < ls.size(); ++k) {
    const auto& layer = net.layers.at(k);
    ls[k]->weight.copy_(torch::from_blob(const_cast<float*>(layer.weight.data()), {layer.out, layer.in}).clone());
    ls[k]->bias.copy_(torch::from_blob(const_cast<float*>(layer.bias.data()), {layer.out}).clone());
  }
}

void store_weights(torch::nn::Sequential& seq, LearnedModel::Net& net) {
  net.layers.clear();
  for (auto& l : linears(seq)) {
    LearnedModel::Layer layer;
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
      for (auto& g : opt.param_groups()) static_cast<torch::optim::AdamOptions&>(g.options()).lr(
          static_cast<torch::optim::AdamOptions&>(g.options()).lr() * 0.3);
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

std::string knob_dims_text(const traces::KnobSpace& k) {
  std::string s;
  for (const auto& d : k.dims) s += fmt::format("{}{}:{}", s.empty() ? "" : ",", d.name, d.unit);
  return s;
}

traces::ModelRecord base_record(const std::string& trained, const LearnedOptions& options, int points) {
  traces::ModelRecord r;
  r.kind = "learned";
  r.settings["trained"] = trained;
  r.settings["seed"] = std::to_string(options.seed);
  r.settings["epochs"] = std::to_string(trained == "scratch" ? options.epochs : options.transfer_epochs);
  r.settings["training_points"] = std::to_string(points);
  return r;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
LearnedModel::LearnedModel(Net net, traces::ModelRecord record) : net_(std::move(net)), record_(std::move(record)) {
  record_.kind = "learned";
  if (net_.layers.empty() || net_.knob_scale.size() != net_.knob.dims.size() ||
      net_.output_mean.size() != kOutputs || net_.output_std.size() != kOutputs)
    throw Error("learned model: inconsistent network description (layers, knob scales or output scaling)");
  int in = static_cast<int>(net_.knob.dims.size() + 1);
  for (const auto& l : net_.layers) {
    if (l.in != in || l.weight.size() != static_cast<size_t>(l.in) * l.out || l.bias.size() != static_cast<size_t>(l.out))
      throw Error("learned model: layer sizes do not chain; the stored weights are damaged");
    in = l.out;
  }
  if (in != kOutputs) throw Error("learned model: the last layer must have 3 outputs");
}

Prediction LearnedModel::predict(const std::vector<double>& knob, int batch_size) const {
  if (knob.size() != net_.knob.dims.size())
    throw Error(fmt::format("the learned model takes {} knob values, got {}", net_.knob.dims.size(), knob.size()));
  if (batch_size < 1) throw Error(fmt::format("batch size must be at least 1, got {}", batch_size));
  const auto f = features(net_, knob, batch_size);
  std::vector<double> x(f.begin(), f.end());
  for (size_t k = 0; k < net_.layers.size(); ++k) {
    const auto& l = net_.layers[k];
    std::vector<double> y(static_cast<size_t>(l.out));
    for (int o = 0; o < l.out; ++o) {
      double s = l.bias[static_cast<size_t>(o)];
      for (int i = 0; i < l.in; ++i) s += l.weight[static_cast<size_t>(o * l.in + i)] * x[static_cast<size_t>(i)];
      y[static_cast<size_t>(o)] = k + 1 < net_.layers.size() ? silu(s) : s;
    }
    x = std::move(y);
  }
  const auto out = [&](int j) { return std::exp(x[static_cast<size_t>(j)] * net_.output_std[static_cast<size_t>(j)] +
                                                net_.output_mean[static_cast<size_t>(j)]); };
  Prediction p;
  p.time_per_batch_s = out(0);
  p.power_mean_w = out(1);
  p.power_peak_w = net_.has_peak ? out(2) : traces::kNaN;
  return p;
}

traces::ModelRecord LearnedModel::to_record() const {
  traces::ModelRecord r = record_;
  r.param_names.clear();
  r.param_values.clear();
  r.param_stderr.clear();
  const auto push = [&](const std::string& n, double v) {
    r.param_names.push_back(n);
    r.param_values.push_back(v);
    r.param_stderr.push_back(traces::kNaN);
  };
  for (size_t d = 0; d < net_.knob_scale.size(); ++d) push(fmt::format("knob_scale_{}", d), net_.knob_scale[d]);
  push("log2_batch_scale", net_.log2_batch_scale);
  for (int j = 0; j < kOutputs; ++j) {
    push(fmt::format("output_mean_{}", j), net_.output_mean[static_cast<size_t>(j)]);
    push(fmt::format("output_std_{}", j), net_.output_std[static_cast<size_t>(j)]);
  }
  std::string sizes = std::to_string(net_.layers.front().in);
  r.blob.clear();
  for (const auto& l : net_.layers) {
    sizes += "," + std::to_string(l.out);
    for (const auto* v : {&l.weight, &l.bias}) {
      const auto* bytes = reinterpret_cast<const uint8_t*>(v->data());
      r.blob.insert(r.blob.end(), bytes, bytes + v->size() * sizeof(float));
    }
  }
  r.settings["layer_sizes"] = sizes;
  r.settings["activation"] = "silu";
  r.settings["blob_format"] = "float32 little-endian; per layer: weight (out x in, row-major), then bias";
  r.settings["inputs"] = "knob_d / knob_scale_d for each dim, log2(b) / log2_batch_scale";
  r.settings["outputs"] = "standardised log time per batch [s], log mean power [W], log peak power [W]";
  r.settings["has_peak"] = std::string(net_.has_peak ? "1" : "0");
  r.settings["knob_kind"] = net_.knob.kind;
  r.settings["knob_dims"] = knob_dims_text(net_.knob);
  return r;
}

// ---------------------------------------------------------------------------------------------
std::unique_ptr<LearnedModel> train_learned(const std::vector<traces::ProfilePoint>& points,
                                            const traces::KnobSpace& knob, const LearnedOptions& options) {
  if (points.size() < 2) throw Error(fmt::format("the learned model needs at least 2 points, got {}", points.size()));
  if (options.hidden.empty()) throw Error("the learned model needs at least one hidden layer");
  ThreadScope threads(options.threads);
  torch::manual_seed(options.seed);
  LearnedModel::Net net;
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
  net.output_mean.assign(kOutputs, traces::kNaN);
  net.output_std.assign(kOutputs, 1.0);
  for (int j = 0; j < kOutputs; ++j) {
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
  return std::make_unique<LearnedModel>(std::move(net), base_record("scratch", options, static_cast<int>(points.size())));
}

std::unique_ptr<LearnedModel> transfer_learned(const LearnedModel& reference,
                                               const std::vector<traces::ProfilePoint>& points,
                                               const LearnedOptions& options) {
  if (points.empty()) throw Error("learned transfer needs at least one point of the new workload");
  ThreadScope threads(options.threads);
  torch::manual_seed(options.seed);
  LearnedModel::Net net = reference.net();
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
  return std::make_unique<LearnedModel>(std::move(net), std::move(record));
}

std::unique_ptr<LearnedModel> learned_from_record(const traces::ModelRecord& record) {
  std::map<std::string, double> p;
  for (size_t i = 0; i < record.param_names.size() && i < record.param_values.size(); ++i)
    p[record.param_names[i]] = record.param_values[i];
  const auto get = [&](const std::string& n) {
    const auto it = p.find(n);
    if (it == p.end())
      throw Error(fmt::format("model record '{}' lacks parameter '{}': recalibrate with pacer calibrate", record.name, n));
    return it->second;
  };
  const auto setting = [&](const std::string& k) {
    const auto it = record.settings.find(k);
    if (it == record.settings.end())
      throw Error(fmt::format("model record '{}' lacks setting '{}': recalibrate with pacer calibrate", record.name, k));
    return it->second;
  };
  LearnedModel::Net net;
  net.knob.kind = setting("knob_kind");
  std::stringstream dims(setting("knob_dims"));
  for (std::string item; std::getline(dims, item, ',');) {
    const auto colon = item.find(':');
    net.knob.dims.push_back({item.substr(0, colon), colon == std::string::npos ? "" : item.substr(colon + 1)});
  }
  for (size_t d = 0; d < net.knob.dims.size(); ++d) net.knob_scale.push_back(get(fmt::format("knob_scale_{}", d)));
  net.log2_batch_scale = get("log2_batch_scale");
  for (int j = 0; j < kOutputs; ++j) {
    net.output_mean.push_back(get(fmt::format("output_mean_{}", j)));
    net.output_std.push_back(get(fmt::format("output_std_{}", j)));
  }
  net.has_peak = setting("has_peak") != "0";
  std::vector<int> sizes;
  std::stringstream ss(setting("layer_sizes"));
  for (std::string item; std::getline(ss, item, ',');) sizes.push_back(std::stoi(item));
  size_t offset = 0;
  const auto take = [&](size_t count) {
    std::vector<float> v(count);
    if (offset + count * sizeof(float) > record.blob.size())
      throw Error(fmt::format("model record '{}': the weight blob is shorter than its layer sizes say", record.name));
    std::memcpy(v.data(), record.blob.data() + offset, count * sizeof(float));
    offset += count * sizeof(float);
    return v;
  };
  for (size_t k = 0; k + 1 < sizes.size(); ++k) {
    LearnedModel::Layer l;
    l.in = sizes[k];
    l.out = sizes[k + 1];
    l.weight = take(static_cast<size_t>(l.in) * l.out);
    l.bias = take(static_cast<size_t>(l.out));
    net.layers.push_back(std::move(l));
  }
  if (offset != record.blob.size())
    throw Error(fmt::format("model record '{}': the weight blob is longer than its layer sizes say", record.name));
  return std::make_unique<LearnedModel>(std::move(net), record);
}

}  // namespace pacer::models
