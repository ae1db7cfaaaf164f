// TokenWindowDataset: fixed-length windows over a file of byte-level tokens, for language models (GPT). With
// T = block_size and s = stride, example i is data = tokens[i*s .. i*s + T) and target = tokens[i*s + 1 ..
// i*s + T + 1) (the same window shifted by one), both (T) i64; there are floor((N - T - 1) / s) + 1 examples
// for a file of N >= T + 1 bytes.
#pragma once

#include <cstdint>
#include <string>

#include "data/dataset.h"

namespace syncgrad::data {

class TokenWindowDataset : public Dataset {
 public:
  // stride 0 means stride = block_size (non-overlapping windows). IOError when the file cannot be read;
  // ValueError for block_size < 1, stride < 0, or a file shorter than block_size + 1 bytes (naming the file,
  // its size and the size needed).
  TokenWindowDataset(const std::string& path, int64_t block_size, int64_t stride = 0);
  int64_t size() const override { return size_; }
  Example get(int64_t index) const override;
  int64_t block_size() const { return block_size_; }
  int64_t num_tokens() const { return tokens_.numel(); }
  static constexpr int64_t kVocabSize = 256;  // byte-level tokens

 private:
  Tensor tokens_;  // (N) i64
  int64_t block_size_;
  int64_t stride_;
  int64_t size_ = 0;
};

}  // namespace syncgrad::data
