// A cache-blocked float32 GEMM on the register tiles of conv_gemm.h: the fast path the CPU GEMM kernel
// (linalg.cpp) takes for the matrix products of linear layers, where Eigen's general GEMM packs more than it
// computes (short inner dimensions such as 128, or a long one with a small result as in a weight gradient).
#pragma once

#include "tensor/scalar.h"
#include "tensor/tensor.h"

namespace syncgrad::cpu {

// out (M, N) = a (M, K) @ b (K, N), plus out's old values when beta is 1: the contract of kernels::gemm for
// two-dimensional float32 operands (a and b any strides, out contiguous). Returns false, doing nothing,
// unless alpha is 1, beta is 0 or 1, M and K are at least 16, and either b is row-major with N a multiple of 16
// below 2048 (longer rows are Eigen's, which packs them), or b is column-major (a transposed weight) with M >= 512
// and N a multiple of 16 up to 4096, or M below 512 and N >= 16.
bool gemm_tiled_f32(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha, const Scalar& beta);

}  // namespace syncgrad::cpu
