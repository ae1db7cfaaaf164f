// Vectorised tanh-approximation GELU for contiguous float32 and bfloat16 tensors, on Eigen's packet tanh: the
// fast path the unary kernels (unary.cpp) take for gelu(approximate = tanh), the activation of GPT's MLP.
#pragma once

#include "tensor/tensor.h"

namespace syncgrad::cpu {

// out = 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))). Returns false, doing nothing, unless out and in
// are contiguous and both float32 or both bfloat16.
bool gelu_tanh_contiguous(const Tensor& out, const Tensor& in);
// grad_in = grad_out * d gelu_tanh(x) / dx. Returns false, doing nothing, unless all three are contiguous
// and of one dtype, float32 or bfloat16.
bool gelu_tanh_backward_contiguous(const Tensor& grad_in, const Tensor& grad_out, const Tensor& x);

// The same derivative over one block of float32 rows, all three row-major (rows, cols) with rows `cols` apart, and
// column_sums[j] += the sum of grad_in's column j: the pass of the fused linear + GELU backward (linear_gelu.cpp)
// that also makes the bias gradient while the block is in cache. Columns are split across the intra-op threads and
// each column is summed over the rows in order (in float, then added in double), so the sums do not depend on the
// thread count.
void gelu_tanh_backward_rows(float* grad_in, const float* grad_out, const float* x, int64_t rows, int64_t cols,
                             double* column_sums);

}  // namespace syncgrad::cpu
