// Raw elementwise front-ends: argument checks, broadcasting, type promotion, output allocation, dispatch.
#include "tensor/ops/elementwise.h"

#include "tensor/check.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/views.h"

namespace syncgrad {

namespace kernels {
constinit KernelSlot<void(BinaryOp, const Tensor&, const Tensor&, const Tensor&)> binary("binary");
constinit KernelSlot<void(const Tensor&, const Tensor&, const Tensor&, const Scalar&)> add_scaled("add");
constinit KernelSlot<void(CompareOp, const Tensor&, const Tensor&, const Tensor&)> compare("compare");
constinit KernelSlot<void(const Tensor&, const Tensor&, const Tensor&, const Tensor&)> where("where");
constinit KernelSlot<void(const Tensor&, const Tensor&, const std::optional<Scalar>&, const std::optional<Scalar>&)>
    clamp("clamp");
}  // namespace kernels

namespace {

// 0: bool, 1: integer, 2: floating.
int category(DType t) { return t == DType::boolean ? 0 : (is_integral(t) ? 1 : 2); }
int category(const Scalar& s) { return s.is_floating() ? 2 : (s.is_integral() ? 1 : 0); }

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
  if (category(b) > category(a.dtype())) return b.is_floating() ? default_float_dtype() : DType::i64;
  return a.dtype();
}

const char* binary_op_name(BinaryOp op) {
  switch (op) {
    case BinaryOp::add: return "add";
    case BinaryOp::sub: return "sub";
    case BinaryOp::mul: return "mul";
    case BinaryOp::div: return "div";
    case BinaryOp::pow: return "pow";
    case BinaryOp::maximum: return "maximum";
    case BinaryOp::minimum: return "minimum";
  }
  return "binary";
}

const char* compare_op_name(CompareOp op) {
  switch (op) {
    case CompareOp::eq: return "eq";
    case CompareOp::ne: return "ne";
    case CompareOp::lt: return "lt";
    case CompareOp::le: return "le";
    case CompareOp::gt: return "gt";
    case CompareOp::ge: return "ge";
    case CompareOp::logical_and: return "logical_and";
    case CompareOp::logical_or: return "logical_or";
    case CompareOp::logical_xor: return "logical_xor";
  }
  return "compare";
}

void check_castable(DType from, DType to, const char* op) {
  SYNCGRAD_CHECK(category(from) <= category(to), DTypeError, op, ": the result type ", dtype_name(from),
                 " cannot be stored in the in-place target of dtype ", dtype_name(to),
                 "; use the out-of-place op or convert the target with .to(", dtype_name(from), ")");
}

namespace raw {
namespace {

Tensor prepared(const Tensor& t, const Shape& shape, DType dtype) {
  Tensor converted = to(t, dtype);
  return converted.sizes() == shape ? converted : expand(converted, shape);
}

// The dtype `op` computes in for inputs promoting to `promoted`; rejects combinations it does not define, so
// the binary kernels see a bool output only for add, mul, maximum and minimum.
DType arithmetic_dtype(BinaryOp op, DType promoted, const char* name) {
  if (is_floating(promoted)) return promoted;
  if (op == BinaryOp::div) return default_float_dtype();  // true division
  SYNCGRAD_CHECK(
      !(promoted == DType::boolean && (op == BinaryOp::sub || op == BinaryOp::pow)), DTypeError, name,
      ": not supported on two bool operands (use logical_xor for a bool difference) or convert them with .to()");
  return promoted;
}

// Refuses an in-place target in which several elements share one memory location (an expanded tensor).
void check_no_internal_overlap(const Tensor& self, const char* name) {
  for (int64_t d = 0; d < self.dim(); ++d) {
    SYNCGRAD_CHECK(self.sizes()[d] <= 1 || self.strides()[d] != 0, ValueError, name, ": the in-place target of shape ",
                   shape_str(self.sizes()), " has several elements in one memory location (stride 0 on dim ", d,
                   "); call .clone() (or .contiguous()) on it first");
  }
}

// Shape check for an in-place op: `other` must broadcast to self's shape without growing it.
void check_inplace_shape(const Tensor& self, const Tensor& other, const char* name) {
  check_same_device(name, self, other);
  Shape shape = broadcast_shapes(self.sizes(), other.sizes(), name);
  SYNCGRAD_CHECK(shape == self.sizes(), ShapeError, name, ": the result shape ", shape_str(shape),
                 " differs from the in-place target's shape ", shape_str(self.sizes()), " (other operand ",
                 shape_str(other.sizes()), "); an in-place op cannot grow its target");
  check_no_internal_overlap(self, name);
}

// An operand that reads self's memory through another layout is copied first, so writes cannot feed reads.
Tensor detached_from(const Tensor& self, const Tensor& other) {
  if (self.impl()->storage() != other.impl()->storage()) return other;
  if (other.sizes() == self.sizes() && other.strides() == self.strides() &&
      other.storage_offset() == self.storage_offset()) {
    return other;
  }
  return clone(other);
}

// Runs `compute(target, a, b)` for self = self (op) other: straight into self when it has the computing
// dtype, else into a temporary that is converted into self.
template <class Compute>
void inplace(const Tensor& self, const Tensor& other, DType dtype, const char* name, Compute compute) {
  check_castable(dtype, self.dtype(), name);
  Tensor b = prepared(detached_from(self, other), self.sizes(), dtype);
  if (dtype == self.dtype()) {
    compute(self, self, b);
  } else {
    Tensor result = empty(self.sizes(), {.dtype = dtype, .device = self.device()});
    compute(result, to(self, dtype), b);
    kernels::copy(self.device(), self, result);
  }
  self.impl()->storage()->bump_version();
}

}  // namespace

Tensor wrap_scalar(const Scalar& value, const Tensor& like) {
  return scalar_tensor(value, result_type(like, value), like.device());
}

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b, const char* name) {
  check_same_device(name, a, b);
  Shape shape = broadcast_shapes(a.sizes(), b.sizes(), name);
  DType dtype = arithmetic_dtype(op, result_type(a, b), name);
  Tensor out = empty(shape, {.dtype = dtype, .device = a.device()});
  kernels::binary(a.device(), op, out, prepared(a, shape, dtype), prepared(b, shape, dtype));
  return out;
}

Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  if (!alpha.is_floating() && alpha.to_int() == 1) return binary(BinaryOp::add, a, b, "add");
  check_same_device("add", a, b);
  Shape shape = broadcast_shapes(a.sizes(), b.sizes(), "add");
  DType dtype = result_type(a, b);
  SYNCGRAD_CHECK(dtype != DType::boolean && !(alpha.is_floating() && !is_floating(dtype)), DTypeError,
                 "add: alpha = ", std::to_string(alpha.to_double()), " is not supported when the operands promote to ",
                 dtype_name(dtype),
                 " (bool takes no alpha, integers no fractional alpha); convert an operand with .to()");
  Tensor out = empty(shape, {.dtype = dtype, .device = a.device()});
  kernels::add_scaled(a.device(), out, prepared(a, shape, dtype), prepared(b, shape, dtype), alpha);
  return out;
}

Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  if (!alpha.is_floating() && alpha.to_int() == 1) return binary(BinaryOp::sub, a, b, "sub");
  if (result_type(a, b) == DType::boolean) arithmetic_dtype(BinaryOp::sub, DType::boolean, "sub");
  return add(a, b, alpha.is_floating() ? Scalar(-alpha.to_double()) : Scalar(-alpha.to_int()));
}

Tensor mul(const Tensor& a, const Tensor& b) { return binary(BinaryOp::mul, a, b, "mul"); }
Tensor div(const Tensor& a, const Tensor& b) { return binary(BinaryOp::div, a, b, "div"); }
Tensor pow(const Tensor& a, const Tensor& b) { return binary(BinaryOp::pow, a, b, "pow"); }
Tensor maximum(const Tensor& a, const Tensor& b) { return binary(BinaryOp::maximum, a, b, "maximum"); }
Tensor minimum(const Tensor& a, const Tensor& b) { return binary(BinaryOp::minimum, a, b, "minimum"); }

Tensor add(const Tensor& a, const Scalar& b) { return binary(BinaryOp::add, a, wrap_scalar(b, a), "add"); }
Tensor sub(const Tensor& a, const Scalar& b) { return binary(BinaryOp::sub, a, wrap_scalar(b, a), "sub"); }
Tensor sub(const Scalar& a, const Tensor& b) { return binary(BinaryOp::sub, wrap_scalar(a, b), b, "sub"); }
Tensor mul(const Tensor& a, const Scalar& b) { return binary(BinaryOp::mul, a, wrap_scalar(b, a), "mul"); }
Tensor div(const Tensor& a, const Scalar& b) { return binary(BinaryOp::div, a, wrap_scalar(b, a), "div"); }
Tensor div(const Scalar& a, const Tensor& b) { return binary(BinaryOp::div, wrap_scalar(a, b), b, "div"); }
Tensor pow(const Tensor& a, const Scalar& exponent) {
  return binary(BinaryOp::pow, a, wrap_scalar(exponent, a), "pow");
}
Tensor pow(const Scalar& base, const Tensor& exponent) {
  return binary(BinaryOp::pow, wrap_scalar(base, exponent), exponent, "pow");
}

Tensor compare(CompareOp op, const Tensor& a, const Tensor& b) {
  const char* name = compare_op_name(op);
  check_same_device(name, a, b);
  Shape shape = broadcast_shapes(a.sizes(), b.sizes(), name);
  DType dtype = result_type(a, b);
  Tensor out = empty(shape, {.dtype = DType::boolean, .device = a.device()});
  kernels::compare(a.device(), op, out, prepared(a, shape, dtype), prepared(b, shape, dtype));
  return out;
}

Tensor compare(CompareOp op, const Tensor& a, const Scalar& b) { return compare(op, a, wrap_scalar(b, a)); }

Tensor logical_not(const Tensor& a) {
  return compare(CompareOp::eq, a, scalar_tensor(0, a.dtype(), a.device()));
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  SYNCGRAD_CHECK(cond.dtype() == DType::boolean, DTypeError, "where: the condition must be a bool tensor, got ",
                 dtype_name(cond.dtype()), "; build it with a comparison (x > 0) or .to(DType::boolean)");
  check_same_device("where", cond, a);
  check_same_device("where", a, b);
  Shape shape = broadcast_shapes(broadcast_shapes(cond.sizes(), a.sizes(), "where"), b.sizes(), "where");
  DType dtype = result_type(a, b);
  Tensor out = empty(shape, {.dtype = dtype, .device = a.device()});
  kernels::where(a.device(), out, prepared(cond, shape, DType::boolean), prepared(a, shape, dtype),
                 prepared(b, shape, dtype));
  return out;
}

Tensor where(const Tensor& cond, const Tensor& a, const Scalar& b) { return where(cond, a, wrap_scalar(b, a)); }

Tensor clamp(const Tensor& t, const std::optional<Scalar>& low, const std::optional<Scalar>& high) {
  SYNCGRAD_CHECK(low || high, ValueError, "clamp: at least one of min and max must be given");
  DType dtype = t.dtype();
  if (low) dtype = promote_types(dtype, result_type(t, *low));
  if (high) dtype = promote_types(dtype, result_type(t, *high));
  SYNCGRAD_CHECK(dtype != DType::boolean, DTypeError, "clamp: not supported on bool tensors");
  Tensor out = empty(t.sizes(), {.dtype = dtype, .device = t.device()});
  kernels::clamp(t.device(), out, to(t, dtype), low, high);
  return out;
}

Tensor clamp(const Tensor& t, const Tensor& low, const Tensor& high) {
  SYNCGRAD_CHECK(low.defined() || high.defined(), ValueError, "clamp: at least one of min and max must be given");
  Tensor lower = low.defined() ? binary(BinaryOp::maximum, t, low, "clamp") : t;
  return high.defined() ? binary(BinaryOp::minimum, lower, high, "clamp") : lower;
}

void binary_(BinaryOp op, const Tensor& self, const Tensor& other, const char* name) {
  check_inplace_shape(self, other, name);
  DType dtype = arithmetic_dtype(op, result_type(self, other), name);
  inplace(self, other, dtype, name, [&](const Tensor& out, const Tensor& a, const Tensor& b) {
    kernels::binary(self.device(), op, out, a, b);
  });
}

void add_(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  if (!alpha.is_floating() && alpha.to_int() == 1) return binary_(BinaryOp::add, self, other, "add_");
  check_inplace_shape(self, other, "add_");
  DType dtype = result_type(self, other);
  if (alpha.is_floating() && !is_floating(dtype)) dtype = default_float_dtype();
  inplace(self, other, dtype, "add_", [&](const Tensor& out, const Tensor& a, const Tensor& b) {
    kernels::add_scaled(self.device(), out, a, b, alpha);
  });
}

void sub_(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  if (!alpha.is_floating() && alpha.to_int() == 1) return binary_(BinaryOp::sub, self, other, "sub_");
  if (self.dtype() == DType::boolean) arithmetic_dtype(BinaryOp::sub, DType::boolean, "sub_");
  add_(self, other, alpha.is_floating() ? Scalar(-alpha.to_double()) : Scalar(-alpha.to_int()));
}

void mul_(const Tensor& self, const Tensor& other) { binary_(BinaryOp::mul, self, other, "mul_"); }
void div_(const Tensor& self, const Tensor& other) { binary_(BinaryOp::div, self, other, "div_"); }
void add_(const Tensor& self, const Scalar& value) { binary_(BinaryOp::add, self, wrap_scalar(value, self), "add_"); }
void sub_(const Tensor& self, const Scalar& value) { binary_(BinaryOp::sub, self, wrap_scalar(value, self), "sub_"); }
void mul_(const Tensor& self, const Scalar& value) { binary_(BinaryOp::mul, self, wrap_scalar(value, self), "mul_"); }
void div_(const Tensor& self, const Scalar& value) { binary_(BinaryOp::div, self, wrap_scalar(value, self), "div_"); }

void clamp_(const Tensor& self, const std::optional<Scalar>& low, const std::optional<Scalar>& high) {
  SYNCGRAD_CHECK(low || high, ValueError, "clamp_: at least one of min and max must be given");
  check_no_internal_overlap(self, "clamp_");
  if (low) check_castable(result_type(self, *low), self.dtype(), "clamp_");
  if (high) check_castable(result_type(self, *high), self.dtype(), "clamp_");
  SYNCGRAD_CHECK(self.dtype() != DType::boolean, DTypeError, "clamp_: not supported on bool tensors");
  kernels::clamp(self.device(), self, self, low, high);
  self.impl()->storage()->bump_version();
}

}  // namespace raw
}  // namespace syncgrad
