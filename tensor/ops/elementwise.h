// Raw (non-differentiable) elementwise ops with NumPy broadcasting and PyTorch type promotion.
#pragma once

#include "tensor/dispatch.h"
#include "tensor/tensor.h"

namespace syncgrad {

enum class BinaryOp : uint8_t { add, sub, mul, div };

namespace kernels {
// out = a (op) b, all three of out's shape and dtype (a, b already expanded and converted).
extern KernelSlot<void(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b)> binary;
// out = a + alpha * b (same conventions as binary).
extern KernelSlot<void(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha)> add_scaled;
}  // namespace kernels

// Result dtype of an op on two tensors (0-dim tensors do not raise the category's width, as in PyTorch).
DType result_type(const Tensor& a, const Tensor& b);
DType result_type(const Tensor& a, const Scalar& b);

namespace raw {
Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b, const char* name);
Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);  // true division: integers give floating results
Tensor add(const Tensor& a, const Scalar& b);
Tensor mul(const Tensor& a, const Scalar& b);
// In place: self (op)= other; other broadcast to self's shape, result cast to self's dtype.
void add_(const Tensor& self, const Tensor& other, const Scalar& alpha = 1);
void mul_(const Tensor& self, const Scalar& value);
}  // namespace raw

}  // namespace syncgrad
