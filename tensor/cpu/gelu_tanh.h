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

}  // namespace syncgrad::cpu
