// libtorch side of dnn/train.hpp: the profiler's step runner, the train-to-target loop and
// checkpoints.
#include <torch/torch.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <mutex>
#include <numeric>
#include <sstream>
#include <vector>

#include "base/error.hpp"
#include "dnn/nets.hpp"
#include "dnn/train.hpp"
#include "traces/store/store.hpp"

namespace pacer::dnn {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

bool is_training_device(const std::string& name) {
  const bool gpu_index = name.size() > 5 && name.rfind("cuda:", 0) == 0 &&
                         std::all_of(name.begin() + 5, name.end(), [](char c) { return c >= '0' && c <= '9'; });
  return name == "cpu" || name == "cuda" || gpu_index;
}

torch::Device parse_device(const std::string& name) {
  if (!is_training_device(name))
    throw Error(fmt::format("unknown training device '{}' (use cpu, cuda or cuda:N)", name));
  if (name == "cpu") return torch::kCPU;
  if (!torch::cuda::is_available())
    throw Error(fmt::format("device '{}' requested but libtorch sees no CUDA GPU (train on the cpu)", name));
  return torch::Device(name);
}

// The training boundary: libtorch's errors carry a C++ stack trace of tens of lines; the user gets
// one line saying what failed at which batch size and what to do. A failed allocation is a batch
// (or a model) that does not fit the memory of the device it trains on.
template <typename Fn>
auto at_torch_boundary(int batch_size, const std::string& device, Fn&& fn) {
  const auto does_not_fit = [&](const std::string& why) {
    return Error(fmt::format("a batch of {} samples does not fit in the memory of the {} ({}): lower the batch size",
                             batch_size, device, why));
  };
  try {
    return fn();
  } catch (const c10::Error& e) {
    std::string first = e.what_without_backtrace();
    first = first.substr(0, first.find('\n'));
    if (first.rfind("[enforce fail", 0) == 0 && first.find("] ") != std::string::npos)
      first = first.substr(first.find("] ") + 2);
    if (first.find("allocate") != std::string::npos || first.find("out of memory") != std::string::npos)
      throw does_not_fit(first);
    throw Error(fmt::format("training at b={} on the {} failed inside libtorch: {}", batch_size, device, first));
  } catch (const std::bad_alloc&) {
    throw does_not_fit("out of memory");
  }
}

std::unique_ptr<torch::optim::Optimizer> make_optimizer(torch::nn::Module& module, const std::string& kind, double lr,
                                                        double weight_decay) {
  if (kind == "adam") return std::make_unique<torch::optim::Adam>(module.parameters(), torch::optim::AdamOptions(lr));
  if (kind == "adamw")
    return std::make_unique<torch::optim::AdamW>(module.parameters(),
                                                 torch::optim::AdamWOptions(lr).weight_decay(weight_decay));
  throw Error(fmt::format("unknown optimizer '{}' (use adam or adamw)", kind));
}

torch::Tensor loss_of(const torch::Tensor& logits, const torch::Tensor& labels) {
  if (logits.dim() == 3) return torch::nn::functional::cross_entropy(logits.flatten(0, 1), labels.flatten());
  return torch::nn::functional::cross_entropy(logits, labels);
}

// The whole split as tensors, converted once (per-batch conversion would dominate small models).
struct TensorSet {
  torch::Tensor inputs;  // float [N,C,H,W] normalised, or int64 [N,T]
  torch::Tensor labels;  // int64 [N] or [N,T]
  int64_t size = 0;
};

TensorSet to_tensors(const data::Samples& s, const torch::Device& device) {
  TensorSet t;
  t.size = s.size();
  std::vector<int64_t> shape = {t.size};
  shape.insert(shape.end(), s.sample_shape.begin(), s.sample_shape.end());
  auto raw = torch::from_blob(const_cast<uint8_t*>(s.values.data()), shape, torch::kUInt8);
  if (s.task == "image")
    t.inputs = (raw.to(torch::kFloat32) / 255.0f - 0.5f) / 0.5f;
  else
    t.inputs = raw.to(torch::kInt64);
  std::vector<int64_t> lshape = {t.size};
  if (s.task == "text") lshape.push_back(s.label_width());
  t.labels = torch::from_blob(const_cast<int32_t*>(s.labels.data()), lshape, torch::kInt32).to(torch::kInt64);
  t.inputs = t.inputs.to(device);
  t.labels = t.labels.to(device);
  return t;
}

// A workload named without a shape takes the data's shape (cnn on CIFAR becomes cnn@3x32x32).
NetSpec resolve(const std::string& workload, const data::Samples& train) {
  NetSpec spec = models::parse_workload(workload);
  if (spec.task != train.task)
    throw Error(fmt::format("workload {} is a {} network but the data is {}", spec.base, spec.task, train.task));
  if (workload.find('@') == std::string::npos)
    spec = models::parse_workload(fmt::format("{}@{}", spec.base, fmt::join(train.sample_shape, "x")));
  if (spec.input_shape != train.sample_shape)
    throw Error(fmt::format("workload {} expects input {} but the data has {}", spec.name,
                            fmt::join(spec.input_shape, "x"), fmt::join(train.sample_shape, "x")));
  if (train.num_classes > spec.num_classes)
    throw Error(fmt::format("data has {} classes but workload {} has {} outputs", train.num_classes, spec.name,
                            spec.num_classes));
  return spec;
}

void save_checkpoint(Network& net, const std::string& path) {
  torch::serialize::OutputArchive archive;
  net.module().save(archive);
  archive.write("pacer_workload", c10::IValue(net.spec().name));
  std::ostringstream out;
  archive.save_to(out);
  traces::write_file_atomic(path, out.str());
}

std::string checkpoint_workload(torch::serialize::InputArchive& archive, const std::string& path) {
  c10::IValue name;
  if (!archive.try_read("pacer_workload", name) || !name.isString())
    throw Error(fmt::format("{}: not a pacer checkpoint (no workload name inside)", path));
  return name.toStringRef();
}

// libtorch 1.13 crashes (instead of throwing) when load_from is given a path that cannot be opened.
void require_readable(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw Error(
        fmt::format("{}: checkpoint not found (pre-train one with pacer relation, or give an existing "
                    "file)",
                    path));
  std::ifstream probe(path, std::ios::binary);
  if (!probe) throw Error(fmt::format("{}: cannot open checkpoint (check its permissions)", path));
}

void load_checkpoint(Network& net, const std::string& path) {
  require_readable(path);
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(path);
  } catch (const c10::Error& e) {
    throw Error(fmt::format("{}: cannot read checkpoint (missing or corrupt file)", path));
  }
  const std::string stored = checkpoint_workload(archive, path);
  if (stored != net.spec().name)
    throw Error(fmt::format("{}: checkpoint holds {} weights, not {}", path, stored, net.spec().name));
  try {
    net.module().load(archive);
  } catch (const c10::Error& e) {
    throw Error(fmt::format("{}: checkpoint weights do not match {} ({})", path, net.spec().name,
                            std::string(e.what_without_backtrace()).substr(0, 120)));
  }
}

// A continued run's state (TrainOptions::run_state): weights, optimizer state and samples trained.
void save_run_state(Network& net, torch::optim::Optimizer& optimizer, int64_t samples, double metric,
                    const std::string& path) {
  torch::serialize::OutputArchive archive, weights, moments;
  net.module().save(weights);
  optimizer.save(moments);
  archive.write("weights", weights);
  archive.write("optimizer", moments);
  archive.write("pacer_workload", c10::IValue(net.spec().name));
  archive.write("samples", c10::IValue(samples));
  archive.write("metric", c10::IValue(metric));
  std::ostringstream out;
  archive.save_to(out);
  traces::write_file_atomic(path, out.str());
}

struct RunState {
  int64_t samples = 0;
  double metric = NAN;
};

RunState load_run_state(Network& net, torch::optim::Optimizer& optimizer, const std::string& path) {
  require_readable(path);
  torch::serialize::InputArchive archive, weights, moments;
  c10::IValue samples, metric;
  try {
    archive.load_from(path);
  } catch (const c10::Error&) {
    throw Error(fmt::format("{}: cannot read the run's state (corrupt file: delete it to train the run afresh)", path));
  }
  const std::string stored = checkpoint_workload(archive, path);
  if (stored != net.spec().name)
    throw Error(fmt::format("{}: the run's state holds {} weights, not {}", path, stored, net.spec().name));
  try {
    if (!archive.try_read("weights", weights) || !archive.try_read("optimizer", moments) ||
        !archive.try_read("samples", samples) || !archive.try_read("metric", metric))
      throw Error(fmt::format("{}: not a run's state (delete it to train the run afresh)", path));
    net.module().load(weights);
    optimizer.load(moments);
  } catch (const c10::Error& e) {
    throw Error(fmt::format("{}: the run's state does not match {} ({})", path, net.spec().name,
                            std::string(e.what_without_backtrace()).substr(0, 120)));
  }
  return {samples.toInt(), metric.toDouble()};
}

}  // namespace

bool evaluation_cannot_reach(double correct, double labels, int64_t done, int64_t n, double target, double z) {
  if (done <= 0 || done >= n || !(labels > 0)) return false;
  const double p = correct / labels;
  // The standard error counts samples, not labels: the positions of one text window are not
  // independent, so this errs on the side of scoring on.
  const double m = static_cast<double>(done);
  const double se = std::sqrt(std::max(p * (1 - p), 1.0 / m) / m);
  const double rest = labels / m * static_cast<double>(n - done);  // labels not scored yet
  return (correct + rest * std::min(1.0, p + z * se)) / (labels + rest) < target;
}

namespace {

// When an evaluation may stop early (only when it can no longer reach the target; the target is
// only ever reached on the full held-out set).
struct EvalStop {
  double target = NAN;  // NaN: never stop early
  bool higher_is_better = true;
  bool exact = false;            // stop once out of reach even if every unscored sample were right
  int64_t estimate_samples = 0;  // exact: unscored samples scored after the stop to estimate the score
  int64_t screen_samples = 0;    // after this many: stop when the score is not within screen_margin
  double screen_margin = 0;
  double z = 0;  // later: stop when even z sigma above the score misses the target; 0: never
};

struct EvalResult {
  double metric = NAN;
  double loss = NAN;
  int64_t samples = 0;  // held-out samples scored
};

// Hardest-first evaluations score the held-out samples in increasing order of their remembered
// margin; samples never scored keep 0 and the split's order among themselves.
std::vector<int64_t> hardest_first_order(const HeldOutMargins& memory, int64_t n) {
  std::vector<int64_t> idx(static_cast<size_t>(n));
  std::iota(idx.begin(), idx.end(), int64_t{0});
  const auto& m = memory.margin;
  std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return m[a] < m[b]; });
  return idx;
}

// Remembers the margins of the samples `idx` (true-class logit minus the best other one; the mean
// over positions for text).
void remember_margins(HeldOutMargins& memory, const torch::Tensor& idx, const torch::Tensor& logits,
                      const torch::Tensor& labels) {
  const auto l = labels.unsqueeze(-1);
  const auto others = logits.scatter(-1, l, -std::numeric_limits<float>::infinity()).amax(-1);
  auto m = logits.gather(-1, l).squeeze(-1) - others;
  if (m.dim() == 2) m = m.mean(1);
  const auto mc = m.to(torch::kCPU, torch::kFloat32).contiguous();
  const auto ic = idx.to(torch::kCPU).contiguous();
  const float* mp = mc.data_ptr<float>();
  const int64_t* ip = ic.data_ptr<int64_t>();
  for (int64_t i = 0; i < ic.size(0); ++i) memory.margin[static_cast<size_t>(ip[i])] = mp[i];
}

// Labels right, labels and summed loss of scored held-out samples.
struct Scored {
  double correct = 0, labels = 0, loss_sum = 0;
  void add(const torch::Tensor& logits, const torch::Tensor& l) {
    correct += logits.argmax(-1).eq(l).sum().item<double>();
    labels += static_cast<double>(l.numel());
    loss_sum += loss_of(logits, l).item<double>() * static_cast<double>(l.numel());
  }
};

// Scores the held-out samples `idx` in chunks of `chunk`, remembering their margins.
Scored score_samples(Network& net, const TensorSet& eval, const std::vector<int64_t>& idx, int64_t chunk,
                     HeldOutMargins& memory) {
  Scored s;
  const auto all = torch::tensor(idx, torch::kInt64).to(eval.inputs.device());
  for (int64_t start = 0; start < all.size(0); start += chunk) {
    const auto i = all.slice(0, start, std::min(all.size(0), start + chunk));
    const auto labels = eval.labels.index_select(0, i);
    const auto logits = net.forward(eval.inputs.index_select(0, i));
    s.add(logits, labels);
    remember_margins(memory, i, logits, labels);
  }
  return s;
}

// The score of a hardest-first evaluation that stopped after the first `done` samples of `order`
// (`prefix`): the unscored rest's score is estimated from `estimate_samples` of it spread evenly
// over its order (a sample stratified by the remembered margin), so a learning curve gets an
// estimate of the score, not the bound the evaluation stopped on. It stays below that bound.
EvalResult estimate_stopped(Network& net, const TensorSet& eval, const std::vector<int64_t>& order, int64_t done,
                            const Scored& prefix, int64_t estimate_samples, int64_t chunk, HeldOutMargins& memory) {
  const int64_t n = static_cast<int64_t>(order.size()), rest = n - done;
  const int64_t m = std::min(rest, estimate_samples);
  const double all_labels = prefix.labels / static_cast<double>(done) * static_cast<double>(n);
  if (m <= 0)
    return {(prefix.correct + (all_labels - prefix.labels)) / all_labels, prefix.loss_sum / prefix.labels, done};
  std::vector<int64_t> pick;
  for (int64_t j = 0; j < m; ++j) pick.push_back(order[static_cast<size_t>(done + (2 * j + 1) * rest / (2 * m))]);
  const Scored s = score_samples(net, eval, pick, chunk, memory);
  const double weight = static_cast<double>(rest) / static_cast<double>(m);
  return {(prefix.correct + s.correct * weight) / all_labels, (prefix.loss_sum + s.loss_sum * weight) / all_labels,
          done + m};
}

// Scores the first `max_samples` held-out samples in chunks, hardest first when `hardness` is given.
// With a target, it stops as soon as the full score cannot reach it: exactly (stop.exact: even if
// every unscored label were right; then estimates the score), or statistically: at
// `screen_samples` by the screening margin, then after every chunk when the score so far plus z
// binomial standard errors on the rest still falls short (a wrong stop needs a z = 3.09,
// one-in-a-thousand, deviation of the unscored rest).
EvalResult evaluate(Network& net, const TensorSet& eval, int64_t max_samples, const EvalStop& stop,
                    HeldOutMargins* hardness) {
  c10::InferenceMode inference;
  net.module().eval();
  const int64_t n = max_samples > 0 ? std::min(max_samples, eval.size) : eval.size;
  // Chunks of the training batch size's order keep im2col buffers in cache; 1000-image chunks ran
  // ten times slower per sample than training on the CPU.
  // Hardest-first: a quarter of that (the cost per sample is the same down to 32 images), so that the
  // exact stop comes soon after the last miss it needs; the first chunk holds the fewest samples
  // whose misses could prove the target out of reach.
  const int64_t chunk = (eval.inputs.dim() == 2 ? 32 : 128) / (hardness ? 4 : 1);
  const bool may_stop = !std::isnan(stop.target) && stop.higher_is_better;
  const bool bound = may_stop && stop.z > 0;
  const std::vector<int64_t> order_v = hardness ? hardest_first_order(*hardness, n) : std::vector<int64_t>();
  const torch::Tensor order =
      hardness ? torch::tensor(order_v, torch::kInt64).to(eval.inputs.device()) : torch::Tensor();
  const double labels_per_sample = eval.labels.dim() == 2 ? static_cast<double>(eval.labels.size(1)) : 1.0;
  const double all_labels = static_cast<double>(n) * labels_per_sample;
  int64_t first_chunk = chunk;
  if (may_stop && stop.exact) {
    const double misses = std::floor((1 - stop.target) * all_labels) + 1;  // out of reach from this many
    first_chunk = std::clamp(static_cast<int64_t>(std::ceil(misses / labels_per_sample)), chunk, n);
  }
  Scored s;  // scored labels: one per sample for images, one per position for text
  int64_t done = 0;
  for (int64_t start = 0, end = 0; start < n; start = end) {
    end = std::min(n, start + (start == 0 ? first_chunk : chunk));
    if (may_stop && start < stop.screen_samples) end = std::min(end, stop.screen_samples);  // screen exactly
    const torch::Tensor idx = order.defined() ? order.slice(0, start, end) : torch::Tensor();
    const auto inputs = idx.defined() ? eval.inputs.index_select(0, idx) : eval.inputs.slice(0, start, end);
    const auto labels = idx.defined() ? eval.labels.index_select(0, idx) : eval.labels.slice(0, start, end);
    const auto logits = net.forward(inputs);
    s.add(logits, labels);
    if (hardness) remember_margins(*hardness, idx, logits, labels);
    done = end;
    if (!may_stop || end >= n) continue;
    const double best = (s.correct + (all_labels - s.labels)) / all_labels;  // every unscored label right
    if (stop.exact && best < stop.target) {
      const EvalResult r = estimate_stopped(net, eval, order_v, done, s, stop.estimate_samples, chunk, *hardness);
      net.module().train();
      return r;
    }
    const double p = s.correct / s.labels;
    if (stop.screen_samples > 0 && start < stop.screen_samples && end >= stop.screen_samples &&
        p < stop.target - stop.screen_margin)
      break;
    if (bound && evaluation_cannot_reach(s.correct, s.labels, done, n, stop.target, stop.z)) break;
  }
  net.module().train();
  return {s.labels > 0 ? s.correct / s.labels : NAN, s.labels > 0 ? s.loss_sum / s.labels : NAN, done};
}

// The early stop of `o`'s evaluations (TrainOptions::eval_stop).
EvalStop eval_stop_of(const TrainOptions& o) {
  EvalStop s;
  if (o.eval_stop == TrainOptions::kFull) return s;
  s.target = o.target;
  s.higher_is_better = o.higher_is_better;
  if (o.eval_stop == TrainOptions::kHardestFirst) {
    s.exact = true;
    s.estimate_samples = o.estimate_samples;
  } else if (o.eval_stop == TrainOptions::kScreened) {
    s.screen_samples = o.screen_samples;
    s.screen_margin = o.screen_margin;
    s.z = o.eval_stop_z;
  } else {
    throw Error(fmt::format("unknown evaluation stop '{}' ({}, {} or {})", o.eval_stop, TrainOptions::kHardestFirst,
                            TrainOptions::kScreened, TrainOptions::kFull));
  }
  return s;
}

}  // namespace

void check_training_device(const std::string& name, const std::string& option) {
  if (!is_training_device(name))
    throw OptionError(option, fmt::format("unknown training device '{}' (use cpu, cuda or cuda:N)", name));
}

bool cuda_available() {
  return torch::cuda::is_available();
}

int set_threads(int threads) {
  static std::once_flag interop;
  std::call_once(interop, [] {
    try {
      torch::set_num_interop_threads(1);
    } catch (const c10::Error&) {  // the pool already ran work: it keeps its size
    }
  });
  if (threads > 0) torch::set_num_threads(threads);
  return torch::get_num_threads();
}

double scaled_learning_rate(double base_lr, int base_batch, int batch_size) {
  if (!(base_lr > 0) || base_batch <= 0 || batch_size <= 0)
    throw Error("learning-rate rule needs a positive base rate, base batch and batch size");
  return base_lr * std::sqrt(static_cast<double>(batch_size) / base_batch);
}

std::string learning_rate_rule(double base_lr, int base_batch) {
  return fmt::format("lr = {:g} * sqrt(b / {})", base_lr, base_batch);
}

// ----- StepRunner ----------------------------------------------------------------------------
struct StepRunner::Impl {
  traces::WorkloadInfo info;
  std::string device_name;
  torch::Device device = torch::kCPU;
  std::unique_ptr<Network> net;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  torch::Tensor inputs, labels;
};

StepRunner::StepRunner(const StepRunnerOptions& o) : impl_(std::make_unique<Impl>()) {
  if (o.batch_size < 1) throw Error("step runner: batch size must be at least 1");
  batch_size_ = o.batch_size;
  at_torch_boundary(o.batch_size, o.device, [&] { init(o); });
}

void StepRunner::init(const StepRunnerOptions& o) {
  impl_->info = models::describe_workload(o.workload);
  impl_->device_name = o.device;
  impl_->device = parse_device(o.device);
  set_threads(o.threads);
  torch::manual_seed(o.seed);
  const NetSpec spec = models::parse_workload(o.workload);
  impl_->net = build_network(spec);
  impl_->net->module().to(impl_->device);
  impl_->net->module().train();
  impl_->optimizer = make_optimizer(impl_->net->module(), o.optimizer, o.learning_rate, 0.01);
  std::vector<int64_t> shape = {o.batch_size};
  shape.insert(shape.end(), spec.input_shape.begin(), spec.input_shape.end());
  const auto on = torch::TensorOptions().device(impl_->device);
  if (spec.task == "image") {
    impl_->inputs = torch::randn(shape, on);
    impl_->labels = torch::randint(spec.num_classes, {o.batch_size}, on.dtype(torch::kInt64));
  } else {
    impl_->inputs = torch::randint(spec.num_classes, shape, on.dtype(torch::kInt64));
    impl_->labels = torch::randint(spec.num_classes, shape, on.dtype(torch::kInt64));
  }
}

StepRunner::~StepRunner() = default;

void StepRunner::step() {
  at_torch_boundary(batch_size_, impl_->device_name, [&] {
    impl_->optimizer->zero_grad();
    auto loss = loss_of(impl_->net->forward(impl_->inputs), impl_->labels);
    loss.backward();
    impl_->optimizer->step();
    if (impl_->device.is_cuda()) torch::cuda::synchronize();
  });
}

const traces::WorkloadInfo& StepRunner::workload() const {
  return impl_->info;
}
const std::string& StepRunner::device() const {
  return impl_->device_name;
}

// ----- training to a target ------------------------------------------------------------------
void check_checkpoint(const std::string& path, const std::string& workload) {
  require_readable(path);
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(path);
  } catch (const c10::Error&) {
    throw Error(fmt::format("{}: cannot read checkpoint (missing or corrupt file)", path));
  }
  const std::string stored = checkpoint_workload(archive, path);
  if (stored != workload && stored.substr(0, stored.find('@')) != workload)
    throw Error(fmt::format("{}: checkpoint holds {} weights, not {}", path, stored, workload));
}

namespace {

TrainResult train_to_target_in_torch(const TrainOptions& o, const data::DataSplit& data, const TrainHooks& hooks,
                                     HeldOutMargins* margins);

}  // namespace

TrainResult train_to_target(const TrainOptions& o, const data::DataSplit& data, const TrainHooks& hooks,
                            HeldOutMargins* margins) {
  return at_torch_boundary(o.batch_size, o.device, [&] { return train_to_target_in_torch(o, data, hooks, margins); });
}

namespace {

TrainResult train_to_target_in_torch(const TrainOptions& o, const data::DataSplit& data, const TrainHooks& hooks,
                                     HeldOutMargins* margins) {
  if (o.batch_size < 1) throw Error("batch size must be at least 1");
  if (o.eval_every_samples < 1) throw Error("evaluation interval must be at least 1 sample");
  if (data.train.size() < o.batch_size)
    throw Error(fmt::format("dataset {} has {} training samples, fewer than one batch of {}", data.name,
                            data.train.size(), o.batch_size));
  if (data.eval.size() == 0) throw Error(fmt::format("dataset {} has no held-out samples", data.name));
  const NetSpec spec = resolve(o.workload, data.train);
  const torch::Device device = parse_device(o.device);
  const int threads = set_threads(o.threads);
  torch::manual_seed(static_cast<uint64_t>(o.seed));
  auto net = build_network(spec);
  const bool resume = !o.run_state.empty() && std::filesystem::exists(o.run_state);
  if (!o.init_checkpoint.empty() && !resume) load_checkpoint(*net, o.init_checkpoint);
  net->module().to(device);
  net->module().train();

  TrainResult result;
  result.threads = threads;
  result.learning_rate = scaled_learning_rate(o.base_lr, o.base_batch, o.batch_size);
  auto optimizer = make_optimizer(net->module(), o.optimizer, result.learning_rate, o.weight_decay);
  RunState from;
  if (resume) {
    from = load_run_state(*net, *optimizer, o.run_state);
    result.resumed_samples = from.samples;
  }
  const TensorSet train = to_tensors(data.train, device);
  const TensorSet eval = to_tensors(data.eval, device);

  const auto t0 = Clock::now();
  double eval_s = 0;
  auto reached = [&](double metric) {
    return !std::isnan(o.target) && (o.higher_is_better ? metric >= o.target : metric <= o.target);
  };
  const int64_t full_n = o.eval_max_samples > 0 ? std::min(o.eval_max_samples, eval.size) : eval.size;
  const EvalStop early = eval_stop_of(o);
  HeldOutMargins own;
  HeldOutMargins* hardness = early.exact ? (margins ? margins : &own) : nullptr;
  if (hardness && hardness->margin.size() != static_cast<size_t>(full_n))
    hardness->margin.assign(static_cast<size_t>(full_n), 0.0f);  // another split: start afresh
  auto run_eval = [&](int64_t samples, bool force_full) {
    const auto te = Clock::now();
    const EvalResult r = evaluate(*net, eval, full_n, force_full ? EvalStop{} : early, hardness);
    const int64_t used = r.samples;
    const double took_s = seconds_since(te);
    eval_s += took_s;
    spdlog::debug("b={} seed={}: evaluation at {} samples scored {} of {} held-out samples in {:.1f} ms ({:.4f})",
                  o.batch_size, o.seed, samples, used, full_n, took_s * 1e3, r.metric);
    result.history.push_back({samples, r.metric, r.loss, seconds_since(t0), used});
    result.final_metric = r.metric;
    if (hooks.on_progress) {
      const double train_s = seconds_since(t0) - eval_s;
      hooks.on_progress(
          {o.batch_size, o.seed, samples, train_s > 0 ? samples / train_s : 0, r.metric, seconds_since(t0)});
    }
    return used == full_n && reached(r.metric);
  };

  int64_t samples = from.samples, last_eval = 0;
  // The evaluations a continued run makes are those of one run to the larger budget: the last one
  // before its state is where that run's schedule had its last one.
  for (int64_t s = o.batch_size; s <= from.samples; s += o.batch_size)
    if (s - last_eval >= o.eval_every_samples) last_eval = s;
  // A continued run starts where it stopped: its last evaluation (at its samples) is the state's.
  bool done = false;
  if (resume) {
    result.final_metric = from.metric;
    done = from.samples >= o.budget_samples || reached(from.metric);
    result.reached = reached(from.metric);
  } else {
    done = run_eval(0, false);
    result.reached = done;
  }
  const int64_t batches_per_epoch = train.size / o.batch_size;
  // Each epoch draws a fresh order from (seed, epoch); the incomplete last batch is dropped so every
  // step has exactly b samples (the device's time per batch is measured at b). A continued run
  // skips the batches it trained before.
  const int64_t first_batch = samples / o.batch_size;
  for (int64_t epoch = first_batch / batches_per_epoch; !done; ++epoch) {
    const auto order = data::permutation(train.size, static_cast<uint64_t>(o.seed) * 1000003ULL + epoch);
    auto order_t = torch::from_blob(const_cast<int64_t*>(order.data()), {train.size}, torch::kInt64).to(device);
    for (int64_t bi = epoch == first_batch / batches_per_epoch ? first_batch % batches_per_epoch : 0;
         bi < batches_per_epoch && !done; ++bi) {
      auto idx = order_t.slice(0, bi * o.batch_size, (bi + 1) * o.batch_size);
      optimizer->zero_grad();
      auto loss = loss_of(net->forward(train.inputs.index_select(0, idx)), train.labels.index_select(0, idx));
      loss.backward();
      optimizer->step();
      samples += o.batch_size;
      if (hooks.on_batch && !hooks.on_batch(samples, o.batch_size)) {
        result.stopped_by_hook = true;
        done = true;
      }
      const bool out_of_budget = samples >= o.budget_samples;
      if (samples - last_eval >= o.eval_every_samples || out_of_budget || done) {
        last_eval = samples;
        result.reached = run_eval(samples, out_of_budget || done);
        done = done || result.reached || out_of_budget;
      }
    }
  }
  result.samples = samples;
  result.wall_time_s = seconds_since(t0);
  result.eval_time_s = eval_s;
  if (!o.save_checkpoint.empty()) save_checkpoint(*net, o.save_checkpoint);
  if (!o.run_state.empty()) save_run_state(*net, *optimizer, samples, result.final_metric, o.run_state);
  return result;
}

}  // namespace

}  // namespace pacer::dnn
