// Launcher of the integer GEMM kernel (gemm_int.cu), called by gemm_ops.cpp; floating GEMMs go to cuBLAS.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "tensor/dtype.h"

namespace syncgrad::cuda {

// Element strides of a (rows, cols) matrix.
struct MatrixStrides {
  int64_t row = 0, col = 0;
};

// `count` matrices, each operand's next matrix `a`, `b`, `out` elements further on.
struct BatchStrides {
  int64_t count = 1;
  int64_t a = 0, b = 0, out = 0;
};

// out (M, N, contiguous) = beta * out + alpha * a (M, K) @ b (K, N) for every batch entry, in the integer type
// (i64, i32) with its wraparound; beta == 0 ignores out's old values. One thread per output element.
void launch_gemm_integer(DType dtype, void* out, const void* a, const void* b, int64_t m, int64_t n, int64_t k,
                         MatrixStrides a_strides, MatrixStrides b_strides, BatchStrides batch, int64_t alpha,
                         int64_t beta, cudaStream_t stream);

}  // namespace syncgrad::cuda
