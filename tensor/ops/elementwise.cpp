// Raw elementwise front-ends: broadcasting, type promotion, output allocation, dispatch.
#include "tensor/ops/elementwise.h"

#include "tensor/ops/copy.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/views.h"

namespace syncgrad {

namespace kernels {
constinit KernelSlot<void(BinaryOp, const Tensor&, const Tensor&, const Tensor&)> binary("binary");
constinit KernelSlot<void(const Tensor&, const Tensor&, const Tensor&, const Scalar&)> add_scaled("add");
}  // namespace kernels

namespace {

int category(DType t) { return t == DType::boolean ? 0 : (is_integral(t) ? 1 : 2); }

}  // namespace

DType result_type(const Tensor& a, const Tensor& b) {
  bool a_dim = a.dim() > 0, b_dim = b.dim() > 0;
  if (a_dim == b_dim) return promote_types(a.dtype(), b.dtype());
  // A 0-dim tensor only matters when it is of a higher category than the dimensioned one.
  const Tensor& dimmed = a_dim ? a : b;
  const Tensor& zero_dim = a_dim ? b : a;
  if (category(zero_dim.dtype()) > category(dimmed.dtype())) return zero_dim.dtype();
  return dimmed.dtype();
}

DType result_type(const Tensor& a, const Scalar& b) {
  int cat_b = b.is_floating() ? 2 : (b.is_integral() ? 1 : 0);
  if (cat_b > category(a.dtype())) return b.is_floating() ? default_float_dtype() : DType::i64;
  return a.dtype();
}

namespace raw {
namespace {

Tensor prepared(const Tensor& t, const Shape& shape, DType dtype) {
  Tensor converted = to(t, dtype);
  return converted.sizes() == shape ? converted : expand(converted, shape);
}

}  // namespace

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b, const char* name) {
  check_same_device(name, a, b);
  Shape shape = broadcast_shapes(a.sizes(), b.sizes(), name);
  DType dtype = result_type(a, b);
  if (op == BinaryOp::div && !is_floating(dtype)) dtype = default_float_dtype();
  if (dtype == DType::boolean && (op == BinaryOp::sub || op == BinaryOp::div)) {
    throw DTypeError(std::string(name) + ": not supported on two bool tensors; use logical_xor or convert with .to()");
  }
  Tensor out = empty(shape, {.dtype = dtype, .device = a.device()});
  kernels::binary(a.device(), op, out, prepared(a, shape, dtype), prepared(b, shape, dtype));
  return out;
}

Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  if (alpha.to_double() == 1.0) return binary(BinaryOp::add, a, b, "add");
  check_same_device("add", a, b);
  Shape shape = broadcast_shapes(a.sizes(), b.sizes(), "add");
  DType dtype = result_type(a, b);
  Tensor out = empty(shape, {.dtype = dtype, .device = a.device()});
  kernels::add_scaled(a.device(), out, prepared(a, shape, dtype), prepared(b, shape, dtype), alpha);
  return out;
}

Tensor sub(const Tensor& a, const Tensor& b) { return binary(BinaryOp::sub, a, b, "sub"); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary(BinaryOp::mul, a, b, "mul"); }
Tensor div(const Tensor& a, const Tensor& b) { return binary(BinaryOp::div, a, b, "div"); }

Tensor add(const Tensor& a, const Scalar& b) {
  return binary(BinaryOp::add, a, scalar_tensor(b, result_type(a, b), a.device()), "add");
}
Tensor mul(const Tensor& a, const Scalar& b) {
  return binary(BinaryOp::mul, a, scalar_tensor(b, result_type(a, b), a.device()), "mul");
}

void add_(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  check_same_device("add_", self, other);
  Shape shape = broadcast_shapes(self.sizes(), other.sizes(), "add_");
  if (shape != self.sizes()) {
    throw ShapeError("add_: the result shape " + shape_str(shape) + " differs from the in-place target's shape " +
                     shape_str(self.sizes()) + "; an in-place op cannot grow its target");
  }
  kernels::add_scaled(self.device(), self, self, prepared(other, shape, self.dtype()), alpha);
  self.impl()->storage()->bump_version();
}

void mul_(const Tensor& self, const Scalar& value) {
  kernels::binary(self.device(), BinaryOp::mul, self, self,
                  expand(scalar_tensor(value, self.dtype(), self.device()), self.sizes()));
  self.impl()->storage()->bump_version();
}

}  // namespace raw
}  // namespace syncgrad
