#include "dnn/data/datasets.hpp"

#include <fmt/format.h>

#include "base/error.hpp"
#include "dnn/data/readers.hpp"
#include "dnn/data/text.hpp"

namespace pacer::dnn::data {
namespace fs = std::filesystem;

namespace {

// Fixed forever: changing it would silently move images between pre-train, proxy and target.
constexpr uint64_t kFmnistPartitionSeed = 0x5041434552ULL;  // "PACER"

fs::path existing(const fs::path& dir, const std::string& stem) {
  for (const auto& candidate : {dir / (stem + ".gz"), dir / stem})
    if (fs::exists(candidate)) return candidate;
  return {};
}

Samples read_idx_pair(const fs::path& dir, const std::string& prefix, const std::string& package_hint) {
  const fs::path images = existing(dir, prefix + "-images-idx3-ubyte");
  const fs::path labels = existing(dir, prefix + "-labels-idx1-ubyte");
  if (images.empty() || labels.empty())
    throw Error(fmt::format("{}-images/labels IDX files not found under {}{}", prefix, dir.string(), package_hint));
  return read_idx(images, labels);
}

constexpr const char* kFmnistHint = ": install the Debian package dataset-fashion-mnist";
constexpr const char* kAustenHint = "install the Debian package r-cran-janeaustenr";

std::string austen_text(const DatasetOptions& o, const std::string& object) {
  if (!fs::exists(o.austen_rdata.string() + ".rdx") || !fs::exists(o.austen_rdata.string() + ".rdb"))
    throw Error(fmt::format("Jane Austen novels not found at {}.rdx/.rdb: {}", o.austen_rdata.string(), kAustenHint));
  std::string text;
  for (const auto& line : rdata_character(o.austen_rdata, object)) {
    text += line;
    text += '\n';
  }
  return text;
}

DataSplit finish(const Samples& all, const std::string& name, const std::string& description, const DatasetOptions& o) {
  if (all.size() < 10) throw Error(fmt::format("dataset {}: only {} samples, too few to split", name, all.size()));
  DataSplit s = split(all, 0.8, o.split_seed, name);
  s.train = first(s.train, o.max_train);
  s.eval = first(s.eval, o.max_eval);
  s.description = description;
  return s;
}

std::vector<fs::path> require_files(const fs::path& dir, const std::vector<std::string>& names, const std::string& what) {
  std::vector<fs::path> files;
  for (const auto& n : names) {
    if (!fs::exists(dir / n)) throw Error(fmt::format("{}: {} not found under {}", what, n, dir.string()));
    files.push_back(dir / n);
  }
  return files;
}

}  // namespace

const std::vector<DatasetInfo>& dataset_catalog() {
  static const std::vector<DatasetInfo> c = {
      {"fmnist-pretrain", "image", "accuracy", 0.90, "Fashion-MNIST classes 0-4 (train file), pre-training"},
      {"fmnist-proxy", "image", "accuracy", 0.95, "Fashion-MNIST classes 5-9, half A of the train file"},
      {"fmnist-target-a", "image", "accuracy", 0.95, "Fashion-MNIST classes 5-9, half B of the train file"},
      {"fmnist-target-b", "image", "accuracy", 0.93, "Fashion-MNIST classes 5-9 of the test file, shifted 2 px"},
      {"austen-pretrain", "text", "char_accuracy", 0.50, "Mansfield Park + Pride and Prejudice"},
      {"austen-proxy", "text", "char_accuracy", 0.50, "Northanger Abbey"},
      {"austen-emma", "text", "char_accuracy", 0.50, "Emma (paper target)"},
      {"austen-persuasion", "text", "char_accuracy", 0.50, "Persuasion (paper target)"},
      {"austen-sense", "text", "char_accuracy", 0.50, "Sense and Sensibility (paper target)"},
  };
  return c;
}

DatasetInfo dataset_info(const std::string& name) {
  for (const auto& d : dataset_catalog())
    if (d.name == name) return d;
  const auto colon = name.find(':');
  const std::string kind = name.substr(0, colon);
  if (colon != std::string::npos) {
    if (kind == "text") return {name, "text", "char_accuracy", 0.5, "text file " + name.substr(colon + 1)};
    if (kind == "idx" || kind == "cifar10" || kind == "cifar100" || kind == "cinic")
      return {name, "image", "accuracy", 0.8, kind + " data under " + name.substr(colon + 1)};
  }
  std::vector<std::string> known;
  for (const auto& d : dataset_catalog()) known.push_back(d.name);
  throw Error(fmt::format("unknown dataset '{}' (known: {}; or text:FILE, idx:DIR, cifar10:DIR, cifar100:DIR, "
                          "cinic:DIR)",
                          name, fmt::join(known, ", ")));
}

Samples fmnist_partition(const std::string& name, const DatasetOptions& o) {
  if (!fs::is_directory(o.fmnist_dir))
    throw Error(fmt::format("Fashion-MNIST not found under {}{}", o.fmnist_dir.string(), kFmnistHint));
  if (name == "fmnist-target-b") {
    const Samples test = read_idx_pair(o.fmnist_dir, "t10k", kFmnistHint);
    std::vector<int64_t> idx;
    for (int64_t i = 0; i < test.size(); ++i)
      if (test.labels[i] >= 5) idx.push_back(i);
    Samples s = test.select(idx);
    const int64_t h = s.sample_shape[1], w = s.sample_shape[2], shift = 2;
    for (int64_t i = 0; i < s.size(); ++i) {
      uint8_t* img = s.values.data() + i * h * w;
      for (int64_t y = h - 1; y >= 0; --y)
        for (int64_t x = w - 1; x >= 0; --x)
          img[y * w + x] = (y >= shift && x >= shift) ? img[(y - shift) * w + (x - shift)] : 0;
    }
    return s;
  }
  const Samples train = read_idx_pair(o.fmnist_dir, "train", kFmnistHint);
  const auto order = permutation(train.size(), kFmnistPartitionSeed);
  std::vector<int64_t> pretrain, half_a, half_b;
  for (const int64_t i : order) {
    if (train.labels[i] < 5) pretrain.push_back(i);
    else (half_a.size() <= half_b.size() ? half_a : half_b).push_back(i);
  }
  if (name == "fmnist-pretrain") return train.select(pretrain);
  if (name == "fmnist-proxy") return train.select(half_a);
  if (name == "fmnist-target-a") return train.select(half_b);
  throw Error(fmt::format("unknown Fashion-MNIST partition '{}'", name));
}

DataSplit load_dataset(const std::string& name, const DatasetOptions& o) {
  const DatasetInfo info = dataset_info(name);
  if (name.rfind("fmnist-", 0) == 0) return finish(fmnist_partition(name, o), name, info.description, o);
  if (name.rfind("austen-", 0) == 0) {
    std::vector<std::string> novels;
    if (name == "austen-pretrain") novels = {"mansfieldpark", "prideprejudice"};
    else if (name == "austen-proxy") novels = {"northangerabbey"};
    else if (name == "austen-emma") novels = {"emma"};
    else if (name == "austen-persuasion") novels = {"persuasion"};
    else novels = {"sensesensibility"};
    Samples all;
    for (const auto& n : novels) all.append(text_windows(austen_text(o, n), o.context));
    return finish(all, name, info.description, o);
  }
  const auto colon = name.find(':');
  const std::string kind = name.substr(0, colon);
  const fs::path path = name.substr(colon + 1);
  if (kind == "text") return finish(text_windows(read_text_file(path.string()), o.context), name, info.description, o);
  if (kind == "idx") {
    Samples all = read_idx_pair(path, "train", "");
    if (!existing(path, "t10k-images-idx3-ubyte").empty()) all.append(read_idx_pair(path, "t10k", ""));
    return finish(all, name, info.description, o);
  }
  if (kind == "cifar10") {
    Samples all = read_cifar_batches(
        require_files(path, {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin",
                             "data_batch_5.bin", "test_batch.bin"},
                      "CIFAR-10"),
        1, false);
    return finish(all, name, info.description, o);
  }
  if (kind == "cinic") {
    // CINIC-10 layout: its train split when there is one (valid/ and test/ stay unread), else the folder.
    const fs::path folder = fs::is_directory(path / "train") ? path / "train" : path;
    const Samples all = read_png_class_folders(folder);
    return finish(all, name,
                  fmt::format("PNG class folders under {}: {} classes ({})", folder.string(), all.num_classes,
                              fmt::join(all.class_names, ", ")),
                  o);
  }
  Samples all = read_cifar_batches(require_files(path, {"train.bin", "test.bin"}, "CIFAR-100"), 2, true);
  return finish(all, name, info.description, o);
}

}  // namespace pacer::dnn::data
