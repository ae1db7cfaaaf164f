// The interface between the host-side glue (.cpp, which knows Tensor) and the kernel files (.cu, which see
// only plain pointers, dtypes and this geometry). Keeping Tensor and the rest of syncgrad's headers out of
// the .cu files keeps nvcc's work small and the kernels independent of the core's headers.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "tensor/dtype.h"

namespace syncgrad::cuda {

// Kernels index at most this many dimensions; the glue merges dimensions first and splits what remains
// beyond it into several launches.
inline constexpr int kMaxDims = 8;

// The iteration space of an elementwise kernel over K operands of one shape. Dims are ordered outermost
// first, strides are in elements of each operand's dtype (not bytes). `contiguous` means ndim == 1 and
// every operand has stride 1, for which the kernels take a fast path.
template <int K>
struct Geometry {
  int ndim = 0;
  bool contiguous = false;
  int64_t numel = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[K][kMaxDims] = {};
};

// fill.cu: every element of `data` (laid out by g) set to the element whose bit pattern is the low
// `element_bytes` bytes of `bits`.
void launch_fill(void* data, int element_bytes, uint64_t bits, const Geometry<1>& g, cudaStream_t stream);

// copy.cu: dst[i] = convert<dst_dtype>(src[i]) with the CPU's conversion rules (through float for the half
// types; to bool as != 0). Operand 0 of g is dst, operand 1 is src.
void launch_copy(void* dst, DType dst_dtype, const void* src, DType src_dtype, const Geometry<2>& g,
                 cudaStream_t stream);

}  // namespace syncgrad::cuda
