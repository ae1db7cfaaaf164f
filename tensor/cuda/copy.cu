// CUDA copy kernels: strided copy with dtype conversion for every pair of the eight dtypes, converting as the
// CPU does (tensor/cuda/convert.cuh).
#include <cuda_runtime.h>

#include <cstdint>

#include "tensor/cuda/check.h"
#include "tensor/cuda/convert.cuh"
#include "tensor/cuda/kernel_utils.cuh"
#include "tensor/cuda/launch.h"

namespace syncgrad::cuda {
namespace {

template <class To, class From>
__global__ void copy_kernel(To* __restrict__ dst, const From* __restrict__ src, Geometry<2> g) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (g.contiguous) {
    for (int64_t i = first; i < g.numel; i += stride) dst[i] = convert<To>(src[i]);
  } else {
    for (int64_t i = first; i < g.numel; i += stride) {
      int64_t offsets[2];
      strided_offsets<2>(g, i, offsets);
      dst[offsets[0]] = convert<To>(src[offsets[1]]);
    }
  }
}

}  // namespace

void launch_copy(void* dst, DType dst_dtype, const void* src, DType src_dtype, const Geometry<2>& g,
                 cudaStream_t stream) {
  if (g.numel == 0) return;
  const unsigned int blocks = blocks_for(g.numel);
  visit_dtype(dst_dtype, [&]<class To>() {
    visit_dtype(src_dtype, [&]<class From>() {
      copy_kernel<To, From>
          <<<blocks, kThreadsPerBlock, 0, stream>>>(static_cast<To*>(dst), static_cast<const From*>(src), g);
    });
  });
  SG_CUDA_CHECK(cudaGetLastError());
}

}  // namespace syncgrad::cuda
