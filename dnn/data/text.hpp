#pragma once
// Character-level text: the paper's vocabulary (English letters, digits, punctuation, space,
// newline) and next-character samples.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dnn/data/samples.hpp"

namespace pacer::dnn::data {

// 96 symbols: '\n', ' ', then the printable ASCII characters '!'..'~'.
class Vocabulary {
 public:
  static constexpr int kSize = 96;
  static int id(char c);         // -1 when c is outside the vocabulary
  static char symbol(int id);
  // Keeps only vocabulary characters ('\r' and tabs dropped, multi-byte UTF-8 dropped whole).
  static std::string filter(std::string_view text);
  static std::vector<uint8_t> encode(std::string_view filtered_text);
};

// Cuts filtered text into windows of context + 1 characters that overlap by one: inputs are the
// first `context` characters, labels the next character at each position. No character is in two
// inputs, so a random split of windows does not leak text between train and eval.
Samples text_windows(std::string_view text, int context);

// Reads a UTF-8 text file.
std::string read_text_file(const std::string& path);

}  // namespace pacer::dnn::data
