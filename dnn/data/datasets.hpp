#pragma once
// Named datasets built from the data that ships with the machine (Debian packages), and generic
// sources given by path. Pre-train, proxy and target sets never share a sample:
//
//   Fashion-MNIST (dataset-fashion-mnist). The 60k training file is partitioned once with a fixed
//   seed, independent of --split-seed:
//     fmnist-pretrain   classes 0-4 (T-shirt, trouser, pullover, dress, coat), 30k images
//     fmnist-proxy      classes 5-9 (sandal, shirt, sneaker, bag, ankle boot), one half (15k)
//     fmnist-target-a   classes 5-9, the other half (15k): same task, unseen images
//     fmnist-target-b   classes 5-9 of the 10k test file (5k), shifted 2 px right and down:
//                       unseen images under a distribution shift
//   So pre-training never sees the fine-tuning classes, and proxy and targets are disjoint.
//   Labels keep their Fashion-MNIST numbers (the 10-way head's rows 5-9 start untrained).
//
//   Jane Austen (r-cran-janeaustenr), as in the paper's text experiments:
//     austen-pretrain   Mansfield Park + Pride and Prejudice
//     austen-proxy      Northanger Abbey
//     austen-emma, austen-persuasion, austen-sense   the paper's three targets
//
//   Generic: text:FILE (UTF-8 text), idx:DIR (train-/t10k- IDX files, gz or not),
//   cifar10:DIR (data_batch_1..5.bin, test_batch.bin), cifar100:DIR (train.bin, test.bin; fine labels),
//   cinic:DIR (PNG image folders by class, CINIC-10 layout: DIR/train/<class>/*.png when DIR/train
//   exists, else DIR/<class>/*.png; classes numbered in sorted folder-name order).
//
// Every named set is split 80/20 (train / held-out) with `split_seed`.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "dnn/data/samples.hpp"

namespace pacer::dnn::data {

struct DatasetOptions {
  uint64_t split_seed = 0;
  int64_t max_train = 0;  // 0: all
  int64_t max_eval = 0;   // 0: all
  int context = 64;       // text window length
  std::filesystem::path fmnist_dir = "/usr/share/datasets/fashion-mnist";
  std::filesystem::path austen_rdata = "/usr/lib/R/site-library/janeaustenr/data/Rdata";
};

struct DatasetInfo {
  std::string name;
  std::string task;         // "image" | "text"
  std::string metric;       // "accuracy" | "char_accuracy"
  double default_target;    // fraction, for the small default workloads
  std::string description;
};

const std::vector<DatasetInfo>& dataset_catalog();
// Catalog entry for a named dataset, or a generic one for text:/idx:/cifar10:/cifar100:/cinic: sources.
DatasetInfo dataset_info(const std::string& name);
DataSplit load_dataset(const std::string& name, const DatasetOptions& options = {});

// Fashion-MNIST class partition of the named sets (exposed for tests).
Samples fmnist_partition(const std::string& name, const DatasetOptions& options);

}  // namespace pacer::dnn::data
