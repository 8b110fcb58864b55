#include "models/learned.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <map>
#include <sstream>

#include "base/error.hpp"
#include "base/units.hpp"

namespace pacer::models {

namespace {

constexpr int kOutputs = kLearnedOutputs;
constexpr const char* kNoLearnedTrainer =
    "training a learned model needs libtorch, which this program does not link (the pacer_dnn library "
    "installs the trainer)";

double silu(double x) {
  return x / (1.0 + std::exp(-x));
}

std::string knob_dims_text(const traces::KnobSpace& k) {
  std::string s;
  for (const auto& d : k.dims) s += fmt::format("{}{}:{}", s.empty() ? "" : ",", d.name, d.unit);
  return s;
}

LearnedTrainer& installed_trainer() {
  static LearnedTrainer trainer;
  return trainer;
}

}  // namespace

std::vector<float> learned_features(const LearnedModel::Net& net, const std::vector<double>& knob, int batch_size) {
  std::vector<float> x;
  for (size_t d = 0; d < knob.size(); ++d) x.push_back(static_cast<float>(knob[d] / net.knob_scale.at(d)));
  x.push_back(static_cast<float>(std::log2(static_cast<double>(batch_size)) / net.log2_batch_scale));
  return x;
}

void set_learned_trainer(LearnedTrainer trainer) {
  installed_trainer() = trainer;
}

std::unique_ptr<LearnedModel> train_learned(const std::vector<traces::ProfilePoint>& points,
                                            const traces::KnobSpace& knob, const LearnedOptions& options) {
  if (!installed_trainer().train) throw Error(kNoLearnedTrainer);
  return installed_trainer().train(points, knob, options);
}

std::unique_ptr<LearnedModel> transfer_learned(const LearnedModel& reference,
                                               const std::vector<traces::ProfilePoint>& points,
                                               const LearnedOptions& options) {
  if (!installed_trainer().transfer) throw Error(kNoLearnedTrainer);
  return installed_trainer().transfer(reference, points, options);
}

// ---------------------------------------------------------------------------------------------
LearnedModel::LearnedModel(Net net, traces::ModelRecord record) : net_(std::move(net)), record_(std::move(record)) {
  record_.kind = to_string(traces::ModelKind::learned);
  if (net_.layers.empty() || net_.knob_scale.size() != net_.knob.dims.size() || net_.output_mean.size() != kOutputs ||
      net_.output_std.size() != kOutputs)
    throw Error("learned model: inconsistent network description (layers, knob scales or output scaling)");
  int in = static_cast<int>(net_.knob.dims.size() + 1);
  for (const auto& l : net_.layers) {
    if (l.in != in || l.weight.size() != static_cast<size_t>(l.in) * l.out ||
        l.bias.size() != static_cast<size_t>(l.out))
      throw Error("learned model: layer sizes do not chain; the stored weights are damaged");
    in = l.out;
  }
  if (in != kOutputs) throw Error("learned model: the last layer must have 3 outputs");
}

Prediction LearnedModel::predict(const std::vector<double>& knob, int batch_size) const {
  if (knob.size() != net_.knob.dims.size())
    throw Error(fmt::format("the learned model takes {} knob values, got {}", net_.knob.dims.size(), knob.size()));
  if (batch_size < 1) throw Error(fmt::format("batch size must be at least 1, got {}", batch_size));
  const auto f = learned_features(net_, knob, batch_size);
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
  const auto out = [&](int j) {
    return std::exp(x[static_cast<size_t>(j)] * net_.output_std[static_cast<size_t>(j)] +
                    net_.output_mean[static_cast<size_t>(j)]);
  };
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
  r.settings["knob_kind"] = to_string(net_.knob.kind);
  r.settings["knob_dims"] = knob_dims_text(net_.knob);
  return r;
}

std::unique_ptr<LearnedModel> learned_from_record(const traces::ModelRecord& record) {
  std::map<std::string, double> p;
  for (size_t i = 0; i < record.param_names.size() && i < record.param_values.size(); ++i)
    p[record.param_names[i]] = record.param_values[i];
  const auto get = [&](const std::string& n) {
    const auto it = p.find(n);
    if (it == p.end())
      throw Error(
          fmt::format("model record '{}' lacks parameter '{}': recalibrate with pacer calibrate", record.name, n));
    return it->second;
  };
  const auto setting = [&](const std::string& k) {
    const auto it = record.settings.find(k);
    if (it == record.settings.end())
      throw Error(
          fmt::format("model record '{}' lacks setting '{}': recalibrate with pacer calibrate", record.name, k));
    return it->second;
  };
  LearnedModel::Net net;
  net.knob.kind = traces::knob_kind_from_string(setting("knob_kind"));
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
  for (std::string item; std::getline(ss, item, ',');) {
    // A layer's width: the blob's size check below needs a sane value first.
    const auto size = units::to_integer(item, 1, 1 << 20);
    if (!size)
      throw Error(
          fmt::format("model record '{}': layer size '{}' in its settings is not a width of 1 to 2^20: the "
                      "record is damaged; calibrate the model again",
                      record.name, item));
    sizes.push_back(static_cast<int>(*size));
  }
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
