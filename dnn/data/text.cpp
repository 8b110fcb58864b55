#include "dnn/data/text.hpp"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "base/error.hpp"
#include "base/files.hpp"

namespace pacer::dnn::data {

int Vocabulary::id(char c) {
  if (c == '\n') return 0;
  if (c == ' ') return 1;
  if (c >= '!' && c <= '~') return 2 + (c - '!');
  return -1;
}

char Vocabulary::symbol(int id) {
  if (id == 0) return '\n';
  if (id == 1) return ' ';
  if (id >= 2 && id < kSize) return static_cast<char>('!' + id - 2);
  throw Error(fmt::format("character id {} is outside the vocabulary", id));
}

std::string Vocabulary::filter(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text)
    if (id(c) >= 0) out.push_back(c);
  return out;
}

std::vector<uint8_t> Vocabulary::encode(std::string_view filtered_text) {
  std::vector<uint8_t> ids;
  ids.reserve(filtered_text.size());
  for (const char c : filtered_text) {
    const int i = id(c);
    if (i < 0) throw Error("text contains a character outside the vocabulary (filter it first)");
    ids.push_back(static_cast<uint8_t>(i));
  }
  return ids;
}

Samples text_windows(std::string_view text, int context) {
  if (context < 1) throw Error("context length must be at least 1");
  const auto ids = Vocabulary::encode(Vocabulary::filter(text));
  Samples s;
  s.task = "text";
  s.sample_shape = {context};
  s.num_classes = Vocabulary::kSize;
  if (ids.size() < static_cast<size_t>(context) + 1) return s;
  const size_t n = (ids.size() - 1) / context;
  s.values.reserve(n * context);
  s.labels.reserve(n * context);
  for (size_t w = 0; w < n; ++w) {
    const size_t start = w * context;
    s.values.insert(s.values.end(), ids.begin() + start, ids.begin() + start + context);
    s.labels.insert(s.labels.end(), ids.begin() + start + 1, ids.begin() + start + context + 1);
  }
  return s;
}

std::string read_text_file(const std::string& path) {
  return base::read_regular_file(path, base::kMaxDataFileBytes, "text file");
}

}  // namespace pacer::dnn::data
