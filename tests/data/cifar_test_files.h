// Builder of small CIFAR-10 binary files for the data tests: records of 1 label byte + 3072 pixel bytes (CHW).
#pragma once

#include <cstdint>
#include <vector>

#include "tests/io/io_test_util.h"

namespace syncgrad::testing {

// Record r has label labels[r] and pixel p (0..3071, channel-major) = (r * 7 + p) % 256.
inline Bytes cifar_bytes(const std::vector<uint8_t>& labels) {
  Bytes bytes;
  for (size_t r = 0; r < labels.size(); ++r) {
    bytes.push_back(labels[r]);
    for (size_t p = 0; p < 3072; ++p) bytes.push_back(static_cast<uint8_t>((r * 7 + p) % 256));
  }
  return bytes;
}

}  // namespace syncgrad::testing
