#pragma once
// Readers for the on-disk formats of the paper's datasets. Each throws pacer::Error with the file
// name and what is wrong (missing, truncated, bad magic number, inconsistent sizes).
#include <filesystem>
#include <string>
#include <vector>

#include "dnn/data/samples.hpp"

namespace pacer::dnn::data {

// Reads a whole file, transparently gunzipping it when it starts with the gzip magic.
std::vector<uint8_t> read_maybe_gzip(const std::filesystem::path& path);

// IDX (MNIST / Fashion-MNIST): an images file (magic 0x00000803) and a labels file (0x00000801),
// optionally gzip-compressed.
Samples read_idx(const std::filesystem::path& images, const std::filesystem::path& labels, int num_classes = 10);

// CIFAR binary batches: records of <label byte>[<fine label byte>] + 3072 pixel bytes (CHW).
// CIFAR-10: label_bytes 1. CIFAR-100: label_bytes 2, fine labels when `fine` is set.
Samples read_cifar_batches(const std::vector<std::filesystem::path>& files, int label_bytes, bool fine);

// Image folders by class (CINIC-10 layout): DIR/<class>/*.png, classes numbered by the sorted folder
// names (recorded in class_names), files read in sorted name order. Grayscale, palette, 16-bit and
// alpha PNGs become 8-bit RGB (alpha dropped); pixels are stored CHW like CIFAR. All images must have
// one size. Hidden files are skipped; any other non-.png file is an error.
Samples read_png_class_folders(const std::filesystem::path& dir);

// One PNG decoded to 8-bit RGB as read_png_class_folders reads it: pixels interleaved (HWC).
struct RgbImage {
  int64_t height = 0;
  int64_t width = 0;
  std::vector<uint8_t> pixels;
};
RgbImage read_png_rgb(const std::filesystem::path& path);

// R lazy-load database (Rdata.rdx + Rdata.rdb, as installed by r-cran-janeaustenr): the names of
// its objects, and one object read as a character vector.
std::vector<std::string> rdata_objects(const std::filesystem::path& base);  // base without .rdx/.rdb
std::vector<std::string> rdata_character(const std::filesystem::path& base, const std::string& object);

// Decodes one R serialization stream (format 2 or 3, XDR) holding a character vector.
std::vector<std::string> unserialize_character(const std::vector<uint8_t>& stream, const std::string& what);

// zlib inflate of a buffer whose decompressed size is known (R's rdb chunks, gzip members).
std::vector<uint8_t> inflate(const uint8_t* data, size_t size, size_t expected_size, bool gzip,
                             const std::string& what);

}  // namespace pacer::dnn::data
