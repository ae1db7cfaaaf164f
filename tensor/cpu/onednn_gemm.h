// Matrix products through oneDNN (Debian's libdnnl): its BLAS-style dnnl_sgemm for float32 products without a
// bias whose operands have a unit stride along one dim, its matmul primitive for the others. float32: on the
// shapes of linear layers at 512 rows and more it runs at 1.1-2.5x the register-tiled kernels of gemm_tiled.h on
// the Intel Xeon measured (docs/BENCHMARKS.md, "float32 GEMM: oneDNN beside the own kernels"). Primitives are
// created once per shape and layout and kept; oneDNN shares the intra-op OpenMP threads (inside a parallel region
// it runs on the calling thread alone). bfloat16: on CPUs with AMX, where oneDNN runs it on the tiles.
#pragma once

#include "tensor/scalar.h"
#include "tensor/tensor.h"

namespace syncgrad::cpu {

// out (M, N) = a (M, K) @ b (K, N), plus out's old values when beta is 1; a and b any strides, out contiguous;
// all three float32, or all three bfloat16 (float32 accumulation, the result rounded once). Returns false, doing
// nothing, for other types, when alpha is not 1, beta is neither 0 nor 1, the product is below the size from
// which oneDNN wins, or oneDNN refuses the layout or type on this CPU.
bool onednn_gemm(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha, const Scalar& beta);

// out (M, N) = a (M, K) @ b (K, N) + bias (N) on every row, under the same conditions as onednn_gemm (alpha 1,
// beta 0); bias contiguous, of out's type. Returns false, doing nothing, where onednn_gemm would.
bool onednn_gemm_bias(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& bias);

// A float32 matrix in memory: element (i, j) at data[i * row_stride + j * col_stride].
struct StridedMatrix {
  const float* data;
  int64_t row_stride, col_stride;
};

// c (M, N), rows ldc apart, = a (M, K) @ b (K, N), plus c's old values when accumulating; every size taken, no
// threshold (the caller decides where oneDNN pays). Returns false, doing nothing, when oneDNN refuses the layout.
// Inside a parallel region it runs on the calling thread alone.
bool onednn_sgemm(int64_t m, int64_t n, int64_t k, StridedMatrix a, StridedMatrix b, float* c, int64_t ldc,
                  bool accumulate);

// A bfloat16 matrix in memory (its elements' bits), laid out as StridedMatrix.
struct StridedBF16Matrix {
  const void* data;
  int64_t row_stride, col_stride;
};

// c (M, N) of float32, rows ldc apart, = a (M, K) @ b (K, N) of bfloat16 summed in float32, plus c's old values
// when accumulating: a product whose sum stays float32 across calls (a weight gradient over chunks of images).
// As onednn_sgemm otherwise.
bool onednn_gemm_bf16_f32(int64_t m, int64_t n, int64_t k, StridedBF16Matrix a, StridedBF16Matrix b, float* c,
                          int64_t ldc, bool accumulate);

// Whether bfloat16 products go to onednn_gemm, and bfloat16 convolutions to onednn_conv.h: by default where
// AMX-BF16 is usable (cpu_features.h), where oneDNN runs them on the tiles; SYNCGRAD_CPU_BF16_ONEDNN=1 / =0
// forces either way, any other value is a ValueError. Decided once per process.
bool onednn_bf16_chosen();

}  // namespace syncgrad::cpu
