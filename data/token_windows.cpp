// TokenWindowDataset: the whole file as i64 byte tokens, examples as copies of two overlapping windows.
#include "data/token_windows.h"

#include <cerrno>
#include <fstream>
#include <iterator>
#include <system_error>
#include <vector>

#include "tensor/check.h"
#include "tensor/errors.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/views.h"

namespace syncgrad::data {

TokenWindowDataset::TokenWindowDataset(const std::string& path, int64_t block_size, int64_t stride)
    : block_size_(block_size), stride_(stride == 0 ? block_size : stride) {
  SYNCGRAD_CHECK(block_size >= 1, ValueError, "TokenWindowDataset: block_size must be >= 1, got ", block_size);
  SYNCGRAD_CHECK(stride >= 0, ValueError, "TokenWindowDataset: stride must be >= 0 (0: block_size), got ", stride);
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int error_number = errno;
    throw IOError("TokenWindowDataset '" + path + "': cannot open: " + std::system_category().message(error_number));
  }
  std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  SYNCGRAD_CHECK(!in.bad(), IOError, "TokenWindowDataset '", path, "': read failed");
  const auto n = static_cast<int64_t>(bytes.size());
  SYNCGRAD_CHECK(n >= block_size + 1, ValueError, "TokenWindowDataset '", path, "': ", n,
                 " tokens (bytes), but one window of block_size ", block_size, " needs ", block_size + 1,
                 " (inputs plus the shifted target)");
  tokens_ = empty({n}, {.dtype = DType::i64});  // (N)
  int64_t* dst = tokens_.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) dst[i] = bytes[static_cast<size_t>(i)];
  size_ = (n - block_size - 1) / stride_ + 1;
}

Example TokenWindowDataset::get(int64_t index) const {
  check_index(index);
  const int64_t start = index * stride_;
  return {raw::narrow(tokens_, 0, start, block_size_), raw::narrow(tokens_, 0, start + 1, block_size_)};  // (T), (T)
}

}  // namespace syncgrad::data
