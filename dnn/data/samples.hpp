#pragma once
// Torch-free in-memory datasets. Images and text share one layout so the training loop has one
// batching path: every sample is `sample_values` bytes (pixels, or character ids) and
// `label_width` labels (one class, or the next character at every position).
#include <cstdint>
#include <string>
#include <vector>

namespace pacer::dnn::data {

struct Samples {
  std::string task;                   // "image" | "text"
  std::vector<int64_t> sample_shape;  // {C,H,W} or {context}
  std::vector<uint8_t> values;        // size() * sample_values(): pixels 0..255 or character ids
  std::vector<int32_t> labels;        // size() * label_width()
  int num_classes = 0;                // classes, or the vocabulary size
  std::vector<std::string> class_names;  // image folders by class: the name of each label (else empty)

  int64_t sample_values() const;
  int64_t label_width() const { return task == "text" ? sample_shape.at(0) : 1; }
  int64_t size() const;
  // The samples at `indices`, in that order (subsets, splits, shuffles).
  Samples select(const std::vector<int64_t>& indices) const;
  // Appends `other` (same task, shape and class names when both have them; throws Error otherwise).
  void append(const Samples& other);
};

// A named train / held-out pair. Evaluation runs on `eval` (the 20% test split).
struct DataSplit {
  std::string name;         // "fmnist-proxy"
  std::string description;  // how it was made, for the record
  uint64_t split_seed = 0;  // the seed of the shuffle that cut train from eval (recorded with relations)
  Samples train;
  Samples eval;
};

// Deterministic permutation of 0..n-1 from `seed` (same on every platform: own Fisher-Yates over a
// SplitMix64 stream, not std::shuffle whose algorithm is unspecified).
std::vector<int64_t> permutation(int64_t n, uint64_t seed);

// Shuffles with `seed` and cuts the first `train_fraction` into train, the rest into eval.
DataSplit split(const Samples& all, double train_fraction, uint64_t seed, const std::string& name);

// Keeps the first `max_samples` of `samples` (already shuffled data keeps its class balance).
Samples first(const Samples& samples, int64_t max_samples);

}  // namespace pacer::dnn::data
