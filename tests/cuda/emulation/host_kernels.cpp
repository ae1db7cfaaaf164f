// Host versions of the kernel launchers (tensor/cuda/launch.h) for the emulated module: the same geometry
// walk (strided_offsets) and element conversions (convert.cuh) as fill.cu and copy.cu, run by loops on the
// CPU. Only the kernels' arithmetic differs from the GPU build; what they are handed is identical.
#include <cstring>

#include "tensor/cuda/convert.cuh"
#include "tensor/cuda/kernel_utils.cuh"
#include "tensor/cuda/launch.h"

namespace syncgrad::cuda {

void launch_fill(void* data, int element_bytes, uint64_t bits, const Geometry<1>& g, cudaStream_t) {
  for (int64_t i = 0; i < g.numel; ++i) {
    int64_t offsets[1] = {i};
    if (!g.contiguous) strided_offsets<1>(g, i, offsets);
    std::memcpy(static_cast<char*>(data) + offsets[0] * element_bytes, &bits, element_bytes);
  }
}

void launch_copy(void* dst, DType dst_dtype, const void* src, DType src_dtype, const Geometry<2>& g,
                 cudaStream_t) {
  visit_dtype(dst_dtype, [&]<class To>() {
    visit_dtype(src_dtype, [&]<class From>() {
      for (int64_t i = 0; i < g.numel; ++i) {
        int64_t offsets[2] = {i, i};
        if (!g.contiguous) strided_offsets<2>(g, i, offsets);
        static_cast<To*>(dst)[offsets[0]] = convert<To>(static_cast<const From*>(src)[offsets[1]]);
      }
    });
  });
}

}  // namespace syncgrad::cuda
