// CUDA fill kernels. The value arrives as the bit pattern of one element (converted on the host exactly as
// the CPU fill converts it), so one kernel per element width serves all eight dtypes bit-identically.
#include <cuda_runtime.h>

#include <cstdint>

#include "tensor/cuda/check.h"
#include "tensor/cuda/kernel_utils.cuh"
#include "tensor/cuda/launch.h"

namespace syncgrad::cuda {
namespace {

template <class U>
__global__ void fill_contiguous_kernel(U* __restrict__ out, int64_t n, U value) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) out[i] = value;
}

template <class U>
__global__ void fill_strided_kernel(U* __restrict__ out, Geometry<1> g, U value) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < g.numel; i += stride) {
    int64_t offsets[1];
    strided_offsets<1>(g, i, offsets);
    out[offsets[0]] = value;
  }
}

template <class U>
void launch_typed(void* data, uint64_t bits, const Geometry<1>& g, cudaStream_t stream) {
  const U value = static_cast<U>(bits);
  const unsigned int blocks = blocks_for(g.numel);
  if (g.contiguous) {
    fill_contiguous_kernel<U><<<blocks, kThreadsPerBlock, 0, stream>>>(static_cast<U*>(data), g.numel, value);
  } else {
    fill_strided_kernel<U><<<blocks, kThreadsPerBlock, 0, stream>>>(static_cast<U*>(data), g, value);
  }
  SG_CUDA_CHECK(cudaGetLastError());
}

// True when every byte of the element is the same (0, any u8/bool value, -1 ...): then memset does it.
bool uniform_bytes(uint64_t bits, int element_bytes) {
  const uint64_t byte = bits & 0xff;
  for (int i = 1; i < element_bytes; ++i) {
    if (((bits >> (8 * i)) & 0xff) != byte) return false;
  }
  return true;
}

}  // namespace

void launch_fill(void* data, int element_bytes, uint64_t bits, const Geometry<1>& g, cudaStream_t stream) {
  if (g.numel == 0) return;
  if (g.contiguous && uniform_bytes(bits, element_bytes)) {
    SG_CUDA_CHECK(cudaMemsetAsync(data, static_cast<int>(bits & 0xff), static_cast<size_t>(g.numel) * element_bytes,
                                  stream));
    return;
  }
  switch (element_bytes) {
    case 1: launch_typed<uint8_t>(data, bits, g, stream); break;
    case 2: launch_typed<uint16_t>(data, bits, g, stream); break;
    case 4: launch_typed<uint32_t>(data, bits, g, stream); break;
    case 8: launch_typed<uint64_t>(data, bits, g, stream); break;
    default: break;  // unreachable: element sizes are 1, 2, 4 or 8
  }
}

}  // namespace syncgrad::cuda
