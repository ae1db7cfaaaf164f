// Raw (non-differentiable) matrix products: mm, bmm, matmul (PyTorch's rules for 1-D operands and batch
// broadcasting), addmm and linear. Differentiable versions are in autograd/ops/linalg.h.
#pragma once

#include "tensor/dispatch.h"
#include "tensor/tensor.h"

namespace syncgrad {

namespace kernels {
// Batched GEMM: out = beta * out + alpha * (a @ b) per batch entry; beta == 0 overwrites out (its old values,
// NaN included, are ignored). out (..., M, N) is contiguous; a (..., M, K) and b (..., K, N) have out's batch
// sizes (already expanded, so batch strides may be 0) and any strides; all three share one dtype; M, N, K > 0.
extern KernelSlot<void(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha,
                       const Scalar& beta)>
    gemm;
// Optional fused kernel (devices without one take a bias copy and gemm with beta 1): out (M, N) contiguous =
// a (M, K) @ b (K, N) + bias (N) on every row; bias contiguous; all one dtype; M, N, K > 0.
extern KernelSlot<void(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& bias)> gemm_bias;
}  // namespace kernels

namespace raw {
// (M, K) @ (K, N) -> (M, N).
Tensor mm(const Tensor& a, const Tensor& b);
// (B, M, K) @ (B, K, N) -> (B, M, N); batch sizes must be equal (no broadcasting, as in PyTorch).
Tensor bmm(const Tensor& a, const Tensor& b);
// PyTorch's matmul: 1-D @ 1-D is a dot product (0-dim result); a 1-D first operand is a row vector and a 1-D
// second operand a column vector (the added dimension is removed from the result); operands with more than
// two dimensions are batches of matrices whose batch dimensions broadcast.
Tensor matmul(const Tensor& a, const Tensor& b);
// beta * bias + alpha * (a @ b): a (M, K), b (K, N), bias broadcastable to (M, N). beta == 0 ignores bias.
Tensor addmm(const Tensor& bias, const Tensor& a, const Tensor& b, const Scalar& beta = 1, const Scalar& alpha = 1);
// input (*, in_features) @ weight(out_features, in_features)^T + bias (out_features) -> (*, out_features).
// An undefined bias means none.
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias = {});
// linear's checks of its operands (ShapeError, DTypeError, DeviceError naming them), with `op` in the message.
void check_linear(const char* op, const Tensor& input, const Tensor& weight, const Tensor& bias);
}  // namespace raw

}  // namespace syncgrad
