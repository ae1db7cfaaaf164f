// Differentiable matrix products: the user-facing versions of tensor/ops/linalg.h (same shape rules).
#pragma once

#include "tensor/tensor.h"

namespace syncgrad {

// (M, K) @ (K, N) -> (M, N).
Tensor mm(const Tensor& a, const Tensor& b);
// (B, M, K) @ (B, K, N) -> (B, M, N).
Tensor bmm(const Tensor& a, const Tensor& b);
// PyTorch's matmul: dot product for two 1-D operands, matrix-vector products, batch dimensions broadcast.
Tensor matmul(const Tensor& a, const Tensor& b);
// beta * bias + alpha * (a @ b); bias broadcasts to (M, N).
Tensor addmm(const Tensor& bias, const Tensor& a, const Tensor& b, const Scalar& beta = 1, const Scalar& alpha = 1);
// input (*, in_features), weight (out_features, in_features), optional bias (out_features) -> (*, out_features).
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias = {});

}  // namespace syncgrad
