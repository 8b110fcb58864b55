#include "dnn/data/samples.hpp"

#include <fmt/format.h>

#include <numeric>

#include "base/error.hpp"

namespace pacer::dnn::data {

int64_t Samples::sample_values() const {
  return std::accumulate(sample_shape.begin(), sample_shape.end(), int64_t{1}, std::multiplies<>());
}

int64_t Samples::size() const { return label_width() == 0 ? 0 : static_cast<int64_t>(labels.size()) / label_width(); }

Samples Samples::select(const std::vector<int64_t>& indices) const {
  Samples out;
  out.task = task;
  out.sample_shape = sample_shape;
  out.num_classes = num_classes;
  out.class_names = class_names;
  const int64_t sv = sample_values(), lw = label_width(), n = size();
  out.values.reserve(indices.size() * sv);
  out.labels.reserve(indices.size() * lw);
  for (const int64_t i : indices) {
    if (i < 0 || i >= n) throw Error(fmt::format("sample index {} out of range (dataset has {})", i, n));
    out.values.insert(out.values.end(), values.begin() + i * sv, values.begin() + (i + 1) * sv);
    out.labels.insert(out.labels.end(), labels.begin() + i * lw, labels.begin() + (i + 1) * lw);
  }
  return out;
}

void Samples::append(const Samples& other) {
  if (task.empty() && values.empty()) {
    *this = other;
    return;
  }
  if (other.task != task || other.sample_shape != sample_shape)
    throw Error("cannot concatenate datasets of different tasks or sample shapes");
  if (!class_names.empty() && !other.class_names.empty() && class_names != other.class_names)
    throw Error("cannot concatenate image folders with different class folders");
  if (class_names.empty()) class_names = other.class_names;
  values.insert(values.end(), other.values.begin(), other.values.end());
  labels.insert(labels.end(), other.labels.begin(), other.labels.end());
  num_classes = std::max(num_classes, other.num_classes);
}

std::vector<int64_t> permutation(int64_t n, uint64_t seed) {
  std::vector<int64_t> p(static_cast<size_t>(n));
  std::iota(p.begin(), p.end(), 0);
  uint64_t state = seed + 0x9E3779B97F4A7C15ULL;
  auto next = [&state] {
    uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  };
  for (int64_t i = n - 1; i > 0; --i) {
    // Modulo bias is below 2^-32 for any dataset that fits in memory.
    const auto j = static_cast<int64_t>(next() % static_cast<uint64_t>(i + 1));
    std::swap(p[i], p[j]);
  }
  return p;
}

DataSplit split(const Samples& all, double train_fraction, uint64_t seed, const std::string& name) {
  if (!(train_fraction > 0 && train_fraction < 1)) throw Error("train fraction must be in (0, 1)");
  const auto p = permutation(all.size(), seed);
  const auto cut = static_cast<int64_t>(train_fraction * static_cast<double>(all.size()) + 0.5);
  DataSplit s;
  s.name = name;
  s.split_seed = seed;
  s.train = all.select({p.begin(), p.begin() + cut});
  s.eval = all.select({p.begin() + cut, p.end()});
  return s;
}

Samples first(const Samples& samples, int64_t max_samples) {
  if (max_samples <= 0 || max_samples >= samples.size()) return samples;
  std::vector<int64_t> idx(static_cast<size_t>(max_samples));
  std::iota(idx.begin(), idx.end(), 0);
  return samples.select(idx);
}

}  // namespace pacer::dnn::data
