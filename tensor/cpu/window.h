// Sliding-window index helper shared by the CPU conv (im2col/col2im) and pooling kernels.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>

namespace syncgrad::cpu {

// The output positions o in [lo, hi) whose input position o * stride + offset lies inside [0, size), for
// out_size outputs; offset is the kernel tap's displacement minus the padding.
inline std::pair<int64_t, int64_t> valid_range(int64_t offset, int64_t stride, int64_t size, int64_t out_size) {
  int64_t lo = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  int64_t hi = offset > size - 1 ? 0 : (size - 1 - offset) / stride + 1;
  lo = std::min(lo, out_size);
  hi = std::clamp(hi, lo, out_size);
  return {lo, hi};
}

}  // namespace syncgrad::cpu
