// Launchers of the 2-D pooling kernels (pool.cu), called by pool_ops.cpp. Tensors are contiguous NCHW; the
// window parameters mirror tensor/ops/pool.h's Pool2dParams.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "tensor/dtype.h"

namespace syncgrad::cuda {

// planes = N * C; input planes (h, w), output planes (oh, ow).
struct PoolDims {
  int64_t planes = 0, h = 0, w = 0, oh = 0, ow = 0;
};

struct PoolWindow {
  int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dilation_h = 1, dilation_w = 1;
  bool count_include_pad = true;
};

// out and indices (iy * w + ix of the window's maximum: the first on ties, NaN wins; -1 for an empty window).
void launch_max_pool2d(DType dtype, void* out, int64_t* indices, const void* input, PoolDims dims, PoolWindow window,
                       cudaStream_t stream);
// grad_input (zeroed) += grad_out at the saved indices (atomic adds: overlapping windows share inputs).
void launch_max_pool2d_backward(DType dtype, void* grad_input, const void* grad_out, const int64_t* indices,
                                PoolDims dims, cudaStream_t stream);
void launch_avg_pool2d(DType dtype, void* out, const void* input, PoolDims dims, PoolWindow window,
                       cudaStream_t stream);
void launch_avg_pool2d_backward(DType dtype, void* grad_input, const void* grad_out, PoolDims dims, PoolWindow window,
                                cudaStream_t stream);
void launch_adaptive_avg_pool2d(DType dtype, void* out, const void* input, PoolDims dims, cudaStream_t stream);
void launch_adaptive_avg_pool2d_backward(DType dtype, void* grad_input, const void* grad_out, PoolDims dims,
                                         cudaStream_t stream);

}  // namespace syncgrad::cuda
