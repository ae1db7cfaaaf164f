// The backwards of the binary elementwise ops, recorded by both the out-of-place ops (elementwise.cpp) and
// the in-place ones (elementwise_inplace.cpp), so each node type is written once. Each backward returns
// one gradient per input edge, summed back over broadcast dims (raw::sum_to) and converted to the input's
// dtype; gradients are computed only for edges that need them. A null input is a number operand (no edge).
// The caller saves the operands (before an in-place write) and records after computing `out`.
#pragma once

#include <optional>

#include "autograd/meta.h"
#include "autograd/node.h"

namespace syncgrad::autograd::elementwise {

// out = a + alpha * b (sub is alpha = -1).
void record_add(const Tensor* a, const Tensor* b, const Scalar& alpha, const Tensor& out);
// out = a * b; `a_value` is saved only when b needs a gradient, `b_value` when a does (else undefined).
void record_mul(const Tensor* a, const Tensor* b, SavedTensor a_value, SavedTensor b_value, const Tensor& out);
// out = a / b; `a_value` only when b needs a gradient.
void record_div(const Tensor* a, const Tensor* b, SavedTensor a_value, SavedTensor b_value, const Tensor& out);
// out = base ^ exponent; `result` only when the exponent needs a gradient.
void record_pow(const Tensor* base, const Tensor* exponent, SavedTensor base_value, SavedTensor exponent_value,
                SavedTensor result, const Tensor& out);
// maximum/minimum: the larger (smaller) input gets the gradient; ties split it evenly.
void record_maximum(const Tensor& a, const Tensor& b, const Tensor& out);
void record_minimum(const Tensor& a, const Tensor& b, const Tensor& out);
// clamp with number bounds: the gradient passes where low <= x <= high (bounds included, as PyTorch).
void record_clamp(const Tensor& x, SavedTensor x_value, const std::optional<Scalar>& low,
                  const std::optional<Scalar>& high, const Tensor& out);
// clamp with tensor bounds (either may be undefined): x as above; a bound gets the gradient where it is the
// value taken (x beyond it, and for low only while low < high).
void record_clamp(const Tensor& x, const Tensor& low, const Tensor& high, const Tensor& out);
// where(cond, a, b); a null b is a number.
void record_where(const Tensor& cond, const Tensor& a, const Tensor* b, const Tensor& out);

}  // namespace syncgrad::autograd::elementwise
