// Device-side helpers shared by the kernel files: launch sizes, grid-stride loops and strided offsets.
// Included only by .cu files (no Eigen, no CUB: they cost seconds per file).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "tensor/cuda/launch.h"

namespace syncgrad::cuda {

inline constexpr int kThreadsPerBlock = 256;

// Blocks for n elements with a grid-stride loop: enough to fill the GPU, capped so huge tensors loop.
inline unsigned int blocks_for(int64_t n) {
  constexpr int64_t kMaxBlocks = int64_t{1} << 16;
  int64_t blocks = (n + kThreadsPerBlock - 1) / kThreadsPerBlock;
  if (blocks < 1) blocks = 1;
  return static_cast<unsigned int>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

// Element offsets of linear index `linear` (row-major over g.sizes) for each of the K operands. (Also a host
// function, so the geometry code can be checked without a GPU.)
template <int K>
__host__ __device__ __forceinline__ void strided_offsets(const Geometry<K>& g, int64_t linear, int64_t (&offsets)[K]) {
  for (int k = 0; k < K; ++k) offsets[k] = 0;
  for (int d = kMaxDims - 1; d >= 0; --d) {
    if (d < g.ndim) {
      const int64_t size = g.sizes[d];
      const int64_t index = linear % size;
      linear /= size;
      for (int k = 0; k < K; ++k) offsets[k] += index * g.strides[k][d];
    }
  }
}

}  // namespace syncgrad::cuda
