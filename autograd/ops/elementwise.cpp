// Differentiable binary elementwise ops (arithmetic, pow, maximum/minimum, clamp, where), the comparisons,
// and the operators. Forward calls the raw op; a node is recorded only when an input requires grad.
#include "autograd/ops/elementwise.h"

#include "autograd/ops/elementwise_nodes.h"
#include "tensor/ops/elementwise.h"

namespace syncgrad {
namespace {

using namespace autograd::elementwise;
using autograd::SavedTensor;

// A number operand as the 0-dim tensor the raw op computes with.
Tensor number(const Scalar& value, const Tensor& like) { return raw::wrap_scalar(value, like); }

// Records `out` = a + alpha * b; a null operand is a number.
Tensor record_add_if_needed(const Tensor* a, const Tensor* b, const Scalar& alpha, Tensor out) {
  if (autograd::any_requires_grad({a, b})) record_add(a, b, alpha, out);
  return out;
}

// a * b where either may be a number (wrapped as a 0-dim tensor that takes no gradient).
Tensor mul_impl(const Tensor& a, const Tensor& b, bool a_number, bool b_number) {
  Tensor out = raw::mul(a, b);
  const Tensor* pa = a_number ? nullptr : &a;
  const Tensor* pb = b_number ? nullptr : &b;
  if (autograd::any_requires_grad({pa, pb})) {
    SavedTensor a_value = autograd::needs_grad(b) && !b_number ? a : Tensor();
    SavedTensor b_value = autograd::needs_grad(a) && !a_number ? b : Tensor();
    record_mul(pa, pb, std::move(a_value), std::move(b_value), out);
  }
  return out;
}

Tensor div_impl(const Tensor& a, const Tensor& b, bool a_number, bool b_number) {
  Tensor out = raw::div(a, b);
  const Tensor* pa = a_number ? nullptr : &a;
  const Tensor* pb = b_number ? nullptr : &b;
  if (autograd::any_requires_grad({pa, pb})) {
    record_div(pa, pb, pb && autograd::needs_grad(b) ? a : Tensor(), b, out);
  }
  return out;
}

Tensor pow_impl(const Tensor& a, const Tensor& b, bool a_number, bool b_number) {
  Tensor out = raw::pow(a, b);
  const Tensor* pa = a_number ? nullptr : &a;
  const Tensor* pb = b_number ? nullptr : &b;
  if (autograd::any_requires_grad({pa, pb})) {
    record_pow(pa, pb, a, b, pb && autograd::needs_grad(b) ? out : Tensor(), out);
  }
  return out;
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  return record_add_if_needed(&a, &b, alpha, raw::add(a, b, alpha));
}
Tensor add(const Tensor& a, const Scalar& b) { return record_add_if_needed(&a, nullptr, 1, raw::add(a, b)); }

Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  Scalar negated = alpha.is_floating() ? Scalar(-alpha.to_double()) : Scalar(-alpha.to_int());
  return record_add_if_needed(&a, &b, negated, raw::sub(a, b, alpha));
}
Tensor sub(const Tensor& a, const Scalar& b) { return record_add_if_needed(&a, nullptr, 1, raw::sub(a, b)); }
Tensor sub(const Scalar& a, const Tensor& b) { return record_add_if_needed(nullptr, &b, -1, raw::sub(a, b)); }

Tensor mul(const Tensor& a, const Tensor& b) { return mul_impl(a, b, false, false); }
Tensor mul(const Tensor& a, const Scalar& b) { return mul_impl(a, number(b, a), false, true); }
Tensor div(const Tensor& a, const Tensor& b) { return div_impl(a, b, false, false); }
Tensor div(const Tensor& a, const Scalar& b) { return div_impl(a, number(b, a), false, true); }
Tensor div(const Scalar& a, const Tensor& b) { return div_impl(number(a, b), b, true, false); }
Tensor pow(const Tensor& base, const Tensor& exponent) { return pow_impl(base, exponent, false, false); }
Tensor pow(const Tensor& base, const Scalar& exponent) {
  return pow_impl(base, number(exponent, base), false, true);
}
Tensor pow(const Scalar& base, const Tensor& exponent) {
  return pow_impl(number(base, exponent), exponent, true, false);
}

Tensor maximum(const Tensor& a, const Tensor& b) {
  Tensor out = raw::maximum(a, b);
  if (autograd::any_requires_grad({&a, &b})) record_maximum(a, b, out);
  return out;
}

Tensor minimum(const Tensor& a, const Tensor& b) {
  Tensor out = raw::minimum(a, b);
  if (autograd::any_requires_grad({&a, &b})) record_minimum(a, b, out);
  return out;
}

Tensor clamp(const Tensor& t, const std::optional<Scalar>& low, const std::optional<Scalar>& high) {
  Tensor out = raw::clamp(t, low, high);
  if (autograd::any_requires_grad({&t})) record_clamp(t, t, low, high, out);
  return out;
}

Tensor clamp(const Tensor& t, const Tensor& low, const Tensor& high) {
  Tensor out = raw::clamp(t, low, high);
  if (autograd::any_requires_grad({&t, &low, &high})) record_clamp(t, low, high, out);
  return out;
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  Tensor out = raw::where(cond, a, b);
  if (autograd::any_requires_grad({&a, &b})) record_where(cond, a, &b, out);
  return out;
}

Tensor where(const Tensor& cond, const Tensor& a, const Scalar& b) {
  Tensor out = raw::where(cond, a, b);
  if (autograd::any_requires_grad({&a})) record_where(cond, a, nullptr, out);
  return out;
}

Tensor eq(const Tensor& a, const Tensor& b) { return raw::compare(CompareOp::eq, a, b); }
Tensor ne(const Tensor& a, const Tensor& b) { return raw::compare(CompareOp::ne, a, b); }
Tensor lt(const Tensor& a, const Tensor& b) { return raw::compare(CompareOp::lt, a, b); }
Tensor le(const Tensor& a, const Tensor& b) { return raw::compare(CompareOp::le, a, b); }
Tensor gt(const Tensor& a, const Tensor& b) { return raw::compare(CompareOp::gt, a, b); }
Tensor ge(const Tensor& a, const Tensor& b) { return raw::compare(CompareOp::ge, a, b); }
Tensor eq(const Tensor& a, const Scalar& b) { return raw::compare(CompareOp::eq, a, b); }
Tensor ne(const Tensor& a, const Scalar& b) { return raw::compare(CompareOp::ne, a, b); }
Tensor lt(const Tensor& a, const Scalar& b) { return raw::compare(CompareOp::lt, a, b); }
Tensor le(const Tensor& a, const Scalar& b) { return raw::compare(CompareOp::le, a, b); }
Tensor gt(const Tensor& a, const Scalar& b) { return raw::compare(CompareOp::gt, a, b); }
Tensor ge(const Tensor& a, const Scalar& b) { return raw::compare(CompareOp::ge, a, b); }
Tensor logical_and(const Tensor& a, const Tensor& b) { return raw::compare(CompareOp::logical_and, a, b); }
Tensor logical_or(const Tensor& a, const Tensor& b) { return raw::compare(CompareOp::logical_or, a, b); }
Tensor logical_xor(const Tensor& a, const Tensor& b) { return raw::compare(CompareOp::logical_xor, a, b); }
Tensor logical_not(const Tensor& t) { return raw::logical_not(t); }

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator+(const Tensor& a, const Scalar& b) { return add(a, b); }
Tensor operator+(const Scalar& a, const Tensor& b) { return add(b, a); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator-(const Tensor& a, const Scalar& b) { return sub(a, b); }
Tensor operator-(const Scalar& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator*(const Tensor& a, const Scalar& b) { return mul(a, b); }
Tensor operator*(const Scalar& a, const Tensor& b) { return mul(b, a); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator/(const Tensor& a, const Scalar& b) { return div(a, b); }
Tensor operator/(const Scalar& a, const Tensor& b) { return div(a, b); }
Tensor operator-(const Tensor& t) { return neg(t); }

Tensor operator==(const Tensor& a, const Tensor& b) { return eq(a, b); }
Tensor operator!=(const Tensor& a, const Tensor& b) { return ne(a, b); }
Tensor operator<(const Tensor& a, const Tensor& b) { return lt(a, b); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return le(a, b); }
Tensor operator>(const Tensor& a, const Tensor& b) { return gt(a, b); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return ge(a, b); }
Tensor operator==(const Tensor& a, const Scalar& b) { return eq(a, b); }
Tensor operator!=(const Tensor& a, const Scalar& b) { return ne(a, b); }
Tensor operator<(const Tensor& a, const Scalar& b) { return lt(a, b); }
Tensor operator<=(const Tensor& a, const Scalar& b) { return le(a, b); }
Tensor operator>(const Tensor& a, const Scalar& b) { return gt(a, b); }
Tensor operator>=(const Tensor& a, const Scalar& b) { return ge(a, b); }
Tensor operator==(const Scalar& a, const Tensor& b) { return eq(b, a); }
Tensor operator!=(const Scalar& a, const Tensor& b) { return ne(b, a); }
Tensor operator<(const Scalar& a, const Tensor& b) { return gt(b, a); }
Tensor operator<=(const Scalar& a, const Tensor& b) { return ge(b, a); }
Tensor operator>(const Scalar& a, const Tensor& b) { return lt(b, a); }
Tensor operator>=(const Scalar& a, const Tensor& b) { return le(b, a); }

}  // namespace syncgrad
