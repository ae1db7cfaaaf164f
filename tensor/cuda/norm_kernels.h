// Launchers of the normalisation kernels (norm.cu), called by norm_ops.cpp: batch norm over (N, C, L) and
// layer norm over (M, K), contiguous, with per-channel (per-feature) vectors of any floating dtype or absent.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "tensor/dtype.h"

namespace syncgrad::cuda {

// A 1-D vector operand (weight, bias, running statistics, their gradients): data == nullptr when absent.
struct VectorArg {
  void* data = nullptr;
  DType dtype = DType::f32;
  int64_t stride = 1;
};

struct BatchNormDims {
  int64_t n = 0, c = 0, l = 0;
};

// Training: batch mean and biased variance per channel (two passes in double), running statistics updated
// with the unbiased variance; eval: the running statistics. Writes out and save_mean / save_invstd (stats
// dtype: f64 for f64 input, else f32).
void launch_batch_norm_forward(DType dtype, void* out, void* save_mean, void* save_invstd, const void* input,
                               VectorArg weight, VectorArg bias, VectorArg running_mean, VectorArg running_var,
                               BatchNormDims dims, bool training, double momentum, double eps, cudaStream_t stream);
// grad_input (may be null), grad_weight and grad_bias (may be absent) from grad_out, input and the saved stats.
void launch_batch_norm_backward(DType dtype, void* grad_input, VectorArg grad_weight, VectorArg grad_bias,
                                const void* grad_out, const void* input, const void* mean, const void* invstd,
                                VectorArg weight, BatchNormDims dims, bool training, cudaStream_t stream);

// Each row of (rows, cols) normalised with its mean and biased variance; save_mean / save_rstd per row.
void launch_layer_norm_forward(DType dtype, void* out, void* save_mean, void* save_rstd, const void* input,
                               VectorArg weight, VectorArg bias, int64_t rows, int64_t cols, double eps,
                               cudaStream_t stream);
void launch_layer_norm_backward(DType dtype, void* grad_input, VectorArg grad_weight, VectorArg grad_bias,
                                const void* grad_out, const void* input, const void* mean, const void* rstd,
                                VectorArg weight, int64_t rows, int64_t cols, cudaStream_t stream);

}  // namespace syncgrad::cuda
