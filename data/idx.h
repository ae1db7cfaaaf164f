// Reader for the IDX files of (Fashion-)MNIST: a big-endian header (magic 0x000008<ndim>, then ndim u32
// extents) followed by unsigned bytes. Files may be gzipped (detected by the magic bytes 1f 8b) or raw.
#pragma once

#include <string>

#include "tensor/tensor.h"

namespace syncgrad::data {

// u8 (N, rows, cols) from an images file (magic 0x00000803).
Tensor read_idx_images(const std::string& path);
// u8 (N) from a labels file (magic 0x00000801).
Tensor read_idx_labels(const std::string& path);

}  // namespace syncgrad::data
