// Differentiable in-place elementwise ops and compound assignment. Each refuses a leaf that requires grad,
// runs the raw in-place op (which checks shapes and castability and bumps the version) and, when autograd is
// involved, records the same node as the out-of-place op with the target as both input (its history before
// the op) and output. Saved operands are captured before the write, so a write through an alias of a saved
// tensor is detected at backward.
#include "autograd/ops/elementwise.h"
#include "autograd/ops/elementwise_nodes.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/elementwise.h"

namespace syncgrad {
namespace {

using namespace autograd::elementwise;
using autograd::SavedTensor;

Scalar negated(const Scalar& s) { return s.is_floating() ? Scalar(-s.to_double()) : Scalar(-s.to_int()); }

// self = self + alpha * other; a null `other` is a number.
const Tensor& record_add_(const Tensor& self, const Tensor* other, const Scalar& alpha, bool recording) {
  if (recording) record_add(&self, other, alpha, self);
  return self;
}

const Tensor& mul_impl_(const Tensor& self, const Tensor& other, bool other_is_number) {
  autograd::check_inplace(self, "mul_");
  const Tensor* po = other_is_number ? nullptr : &other;
  if (!autograd::any_requires_grad({&self, po})) {
    raw::mul_(self, other);
    return self;
  }
  SavedTensor other_value = autograd::needs_grad(self) ? other : Tensor();
  SavedTensor self_value = po && autograd::needs_grad(other) ? raw::clone(self) : Tensor();
  raw::mul_(self, other);
  record_mul(&self, po, std::move(self_value), std::move(other_value), self);
  return self;
}

const Tensor& div_impl_(const Tensor& self, const Tensor& other, bool other_is_number) {
  autograd::check_inplace(self, "div_");
  const Tensor* po = other_is_number ? nullptr : &other;
  if (!autograd::any_requires_grad({&self, po})) {
    raw::div_(self, other);
    return self;
  }
  SavedTensor other_value = other;
  SavedTensor self_value = po && autograd::needs_grad(other) ? raw::clone(self) : Tensor();
  raw::div_(self, other);
  record_div(&self, po, std::move(self_value), std::move(other_value), self);
  return self;
}

}  // namespace

const Tensor& add_(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  autograd::check_inplace(self, "add_");
  bool recording = autograd::any_requires_grad({&self, &other});
  raw::add_(self, other, alpha);
  return record_add_(self, &other, alpha, recording);
}

const Tensor& add_(const Tensor& self, const Scalar& value) {
  autograd::check_inplace(self, "add_");
  bool recording = autograd::any_requires_grad({&self});
  raw::add_(self, value);
  return record_add_(self, nullptr, 1, recording);
}

const Tensor& sub_(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  autograd::check_inplace(self, "sub_");
  bool recording = autograd::any_requires_grad({&self, &other});
  raw::sub_(self, other, alpha);
  return record_add_(self, &other, negated(alpha), recording);
}

const Tensor& sub_(const Tensor& self, const Scalar& value) {
  autograd::check_inplace(self, "sub_");
  bool recording = autograd::any_requires_grad({&self});
  raw::sub_(self, value);
  return record_add_(self, nullptr, 1, recording);
}

const Tensor& mul_(const Tensor& self, const Tensor& other) { return mul_impl_(self, other, false); }
const Tensor& mul_(const Tensor& self, const Scalar& value) {
  return mul_impl_(self, raw::wrap_scalar(value, self), true);
}
const Tensor& div_(const Tensor& self, const Tensor& other) { return div_impl_(self, other, false); }
const Tensor& div_(const Tensor& self, const Scalar& value) {
  return div_impl_(self, raw::wrap_scalar(value, self), true);
}

const Tensor& clamp_(const Tensor& self, const std::optional<Scalar>& low, const std::optional<Scalar>& high) {
  autograd::check_inplace(self, "clamp_");
  if (!autograd::any_requires_grad({&self})) {
    raw::clamp_(self, low, high);
    return self;
  }
  SavedTensor input = raw::clone(self);
  raw::clamp_(self, low, high);
  record_clamp(self, std::move(input), low, high, self);
  return self;
}

Tensor& operator+=(Tensor& self, const Tensor& other) {
  add_(self, other);
  return self;
}
Tensor& operator+=(Tensor& self, const Scalar& other) {
  add_(self, other);
  return self;
}
Tensor& operator-=(Tensor& self, const Tensor& other) {
  sub_(self, other);
  return self;
}
Tensor& operator-=(Tensor& self, const Scalar& other) {
  sub_(self, other);
  return self;
}
Tensor& operator*=(Tensor& self, const Tensor& other) {
  mul_(self, other);
  return self;
}
Tensor& operator*=(Tensor& self, const Scalar& other) {
  mul_(self, other);
  return self;
}
Tensor& operator/=(Tensor& self, const Tensor& other) {
  div_(self, other);
  return self;
}
Tensor& operator/=(Tensor& self, const Scalar& other) {
  div_(self, other);
  return self;
}

}  // namespace syncgrad
