// Builders of small IDX files (raw or gzipped through zlib) for the data tests.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/io/io_test_util.h"

namespace syncgrad::testing {

// Big-endian magic 0x000008<ndim>, the extents, then the payload bytes.
inline Bytes idx_bytes(uint32_t magic, const std::vector<uint32_t>& dims, const Bytes& payload) {
  Bytes bytes;
  auto put_u32 = [&](uint32_t value) {
    for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<uint8_t>(value >> shift));
  };
  put_u32(magic);
  for (uint32_t dim : dims) put_u32(dim);
  bytes.insert(bytes.end(), payload.begin(), payload.end());
  return bytes;
}

inline void write_gzipped(const std::string& path, const Bytes& bytes) {
  gzFile file = gzopen(path.c_str(), "wb");
  if (file == nullptr) throw std::runtime_error("gzopen failed for " + path);
  int written = gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(file);
  if (written != static_cast<int>(bytes.size())) throw std::runtime_error("gzwrite failed for " + path);
}

}  // namespace syncgrad::testing
