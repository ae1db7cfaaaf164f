// float32 matrix products through oneDNN's matmul primitive (Debian's libdnnl): on the shapes of linear layers
// at 512 rows and more it runs at 1.1-2.5x the register-tiled kernels of gemm_tiled.h on the Intel
// Xeon measured (docs/BENCHMARKS.md, "float32 GEMM: oneDNN beside the own kernels"). Primitives are created once
// per shape and layout and kept; oneDNN shares the intra-op OpenMP threads (inside a parallel region it runs on
// the calling thread alone).
#pragma once

#include "tensor/scalar.h"
#include "tensor/tensor.h"

namespace syncgrad::cpu {

// out (M, N) = a (M, K) @ b (K, N), plus out's old values when beta is 1; a and b any strides, out contiguous
// float32. Returns false, doing nothing, when alpha is not 1, beta is neither 0 nor 1, the product is below
// the size from which oneDNN wins, or oneDNN refuses the layout.
bool onednn_gemm_f32(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha, const Scalar& beta);

}  // namespace syncgrad::cpu
