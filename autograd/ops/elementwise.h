// Differentiable elementwise ops, the user-facing versions of tensor/ops/elementwise.h and unary.h: NumPy
// broadcasting, PyTorch type promotion (numbers promote like Python scalars), any strides. Arithmetic
// operators + - * / (tensor with tensor or number), unary minus, compound assignment (in place) and
// comparison operators (bool tensors, no gradient) are found by ADL.
//
// In-place ops (add_, mul_, ..., relu_, clamp_) refuse a leaf that requires grad (outside NoGradGuard), bump
// the target's version (so a saved copy of it is detected at backward), keep its dtype (a promoted result
// that cannot be cast back is a DTypeError) and record the op on the target when autograd is involved. The
// record is on the target handle only: the history of a tensor it is a view of does not see the write, so do
// not modify a view of a tensor that requires grad in place (the base's saved copies still detect it).
#pragma once

#include <optional>

#include "tensor/ops/unary.h"
#include "tensor/tensor.h"

namespace syncgrad {

// ---- arithmetic ----
Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);  // a + alpha * b
Tensor add(const Tensor& a, const Scalar& b);
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);  // a - alpha * b
Tensor sub(const Tensor& a, const Scalar& b);
Tensor sub(const Scalar& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Scalar& b);
Tensor div(const Tensor& a, const Tensor& b);  // true division: integer inputs give a floating result
Tensor div(const Tensor& a, const Scalar& b);
Tensor div(const Scalar& a, const Tensor& b);
Tensor pow(const Tensor& base, const Tensor& exponent);
Tensor pow(const Tensor& base, const Scalar& exponent);
Tensor pow(const Scalar& base, const Tensor& exponent);
// Elementwise larger / smaller value (NaN propagates); tied elements share the gradient evenly.
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
// min(max(t, low), high); at least one bound. The gradient passes where low <= t <= high.
Tensor clamp(const Tensor& t, const std::optional<Scalar>& low, const std::optional<Scalar>& high = std::nullopt);
// Tensor bounds broadcast with t; pass an undefined Tensor() for a missing bound.
Tensor clamp(const Tensor& t, const Tensor& low, const Tensor& high);
// cond ? a : b, all three broadcast together; cond must be bool.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& cond, const Tensor& a, const Scalar& b);

// ---- unary ----
Tensor neg(const Tensor& t);
Tensor abs(const Tensor& t);     // abs'(0) = 0
Tensor relu(const Tensor& t);    // relu'(0) = 0
Tensor square(const Tensor& t);
Tensor sign(const Tensor& t);    // zero gradient
Tensor exp(const Tensor& t);
Tensor log(const Tensor& t);
Tensor log1p(const Tensor& t);
Tensor sqrt(const Tensor& t);
Tensor rsqrt(const Tensor& t);
Tensor sigmoid(const Tensor& t);
Tensor tanh(const Tensor& t);
Tensor gelu(const Tensor& t, GeluApproximate approximate = GeluApproximate::none);

// ---- comparisons and logic: bool tensors, never differentiable ----
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, const Scalar& b);
Tensor ne(const Tensor& a, const Scalar& b);
Tensor lt(const Tensor& a, const Scalar& b);
Tensor le(const Tensor& a, const Scalar& b);
Tensor gt(const Tensor& a, const Scalar& b);
Tensor ge(const Tensor& a, const Scalar& b);
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
Tensor logical_xor(const Tensor& a, const Tensor& b);
Tensor logical_not(const Tensor& t);

// ---- in place (return self) ----
const Tensor& add_(const Tensor& self, const Tensor& other, const Scalar& alpha = 1);
const Tensor& add_(const Tensor& self, const Scalar& value);
const Tensor& sub_(const Tensor& self, const Tensor& other, const Scalar& alpha = 1);
const Tensor& sub_(const Tensor& self, const Scalar& value);
const Tensor& mul_(const Tensor& self, const Tensor& other);
const Tensor& mul_(const Tensor& self, const Scalar& value);
const Tensor& div_(const Tensor& self, const Tensor& other);
const Tensor& div_(const Tensor& self, const Scalar& value);
const Tensor& relu_(const Tensor& self);
const Tensor& clamp_(const Tensor& self, const std::optional<Scalar>& low,
                     const std::optional<Scalar>& high = std::nullopt);

// ---- operators ----
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, const Scalar& b);
Tensor operator+(const Scalar& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Scalar& b);
Tensor operator-(const Scalar& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Scalar& b);
Tensor operator*(const Scalar& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Scalar& b);
Tensor operator/(const Scalar& a, const Tensor& b);
Tensor operator-(const Tensor& t);
Tensor& operator+=(Tensor& self, const Tensor& other);
Tensor& operator+=(Tensor& self, const Scalar& other);
Tensor& operator-=(Tensor& self, const Tensor& other);
Tensor& operator-=(Tensor& self, const Scalar& other);
Tensor& operator*=(Tensor& self, const Tensor& other);
Tensor& operator*=(Tensor& self, const Scalar& other);
Tensor& operator/=(Tensor& self, const Tensor& other);
Tensor& operator/=(Tensor& self, const Scalar& other);
Tensor operator==(const Tensor& a, const Tensor& b);
Tensor operator!=(const Tensor& a, const Tensor& b);
Tensor operator<(const Tensor& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Tensor& b);
Tensor operator==(const Tensor& a, const Scalar& b);
Tensor operator!=(const Tensor& a, const Scalar& b);
Tensor operator<(const Tensor& a, const Scalar& b);
Tensor operator<=(const Tensor& a, const Scalar& b);
Tensor operator>(const Tensor& a, const Scalar& b);
Tensor operator>=(const Tensor& a, const Scalar& b);
Tensor operator==(const Scalar& a, const Tensor& b);
Tensor operator!=(const Scalar& a, const Tensor& b);
Tensor operator<(const Scalar& a, const Tensor& b);
Tensor operator<=(const Scalar& a, const Tensor& b);
Tensor operator>(const Scalar& a, const Tensor& b);
Tensor operator>=(const Scalar& a, const Tensor& b);

}  // namespace syncgrad
