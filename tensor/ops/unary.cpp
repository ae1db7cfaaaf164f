// Raw unary front-ends: result dtype, output allocation, dispatch; and the gradient kernels' front-end.
#include "tensor/ops/unary.h"

#include "tensor/check.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/elementwise.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/views.h"

namespace syncgrad {

namespace kernels {
constinit KernelSlot<void(UnaryOp, const Tensor&, const Tensor&)> unary("unary");
constinit KernelSlot<void(UnaryOp, const Tensor&, const Tensor&, const Tensor&)> unary_backward("unary_backward");
}  // namespace kernels

const char* unary_op_name(UnaryOp op) {
  switch (op) {
    case UnaryOp::neg: return "neg";
    case UnaryOp::abs: return "abs";
    case UnaryOp::relu: return "relu";
    case UnaryOp::square: return "square";
    case UnaryOp::sign: return "sign";
    case UnaryOp::exp: return "exp";
    case UnaryOp::log: return "log";
    case UnaryOp::log1p: return "log1p";
    case UnaryOp::sqrt: return "sqrt";
    case UnaryOp::rsqrt: return "rsqrt";
    case UnaryOp::sigmoid: return "sigmoid";
    case UnaryOp::tanh: return "tanh";
    case UnaryOp::gelu: return "gelu";
    case UnaryOp::gelu_tanh: return "gelu(approximate=tanh)";
  }
  return "unary";
}

bool unary_backward_uses_result(UnaryOp op) {
  switch (op) {
    case UnaryOp::exp:
    case UnaryOp::sqrt:
    case UnaryOp::rsqrt:
    case UnaryOp::sigmoid:
    case UnaryOp::tanh:
    case UnaryOp::relu: return true;
    default: return false;
  }
}

bool unary_is_floating_only(UnaryOp op) { return op >= UnaryOp::exp; }

namespace raw {
namespace {

DType unary_result_dtype(UnaryOp op, DType input) {
  if (unary_is_floating_only(op)) return is_floating(input) ? input : default_float_dtype();
  SYNCGRAD_CHECK(input != DType::boolean, DTypeError, unary_op_name(op),
                 ": not supported on bool tensors; use logical_not or convert with .to()");
  return input;
}

}  // namespace

Tensor unary(UnaryOp op, const Tensor& t) {
  DType dtype = unary_result_dtype(op, t.dtype());
  Tensor out = empty(t.sizes(), {.dtype = dtype, .device = t.device()});
  kernels::unary(t.device(), op, out, to(t, dtype));
  return out;
}

Tensor neg(const Tensor& t) { return unary(UnaryOp::neg, t); }
Tensor abs(const Tensor& t) { return unary(UnaryOp::abs, t); }
Tensor relu(const Tensor& t) { return unary(UnaryOp::relu, t); }
Tensor square(const Tensor& t) { return unary(UnaryOp::square, t); }
Tensor sign(const Tensor& t) { return unary(UnaryOp::sign, t); }
Tensor exp(const Tensor& t) { return unary(UnaryOp::exp, t); }
Tensor log(const Tensor& t) { return unary(UnaryOp::log, t); }
Tensor log1p(const Tensor& t) { return unary(UnaryOp::log1p, t); }
Tensor sqrt(const Tensor& t) { return unary(UnaryOp::sqrt, t); }
Tensor rsqrt(const Tensor& t) { return unary(UnaryOp::rsqrt, t); }
Tensor sigmoid(const Tensor& t) { return unary(UnaryOp::sigmoid, t); }
Tensor tanh(const Tensor& t) { return unary(UnaryOp::tanh, t); }
Tensor gelu(const Tensor& t, GeluApproximate approximate) {
  return unary(approximate == GeluApproximate::tanh ? UnaryOp::gelu_tanh : UnaryOp::gelu, t);
}

void unary_(UnaryOp op, const Tensor& self) {
  const char* name = unary_op_name(op);
  check_castable(unary_result_dtype(op, self.dtype()), self.dtype(), name);
  for (int64_t d = 0; d < self.dim(); ++d) {
    SYNCGRAD_CHECK(self.sizes()[d] <= 1 || self.strides()[d] != 0, ValueError, name, "_: the in-place target of shape ",
                   shape_str(self.sizes()), " has several elements in one memory location; call .clone() on it first");
  }
  kernels::unary(self.device(), op, self, self);
  self.impl()->storage()->bump_version();
}

void relu_(const Tensor& self) { unary_(UnaryOp::relu, self); }

Tensor unary_backward(UnaryOp op, const Tensor& grad_out, const Tensor& saved) {
  Tensor grad_in = empty(grad_out.sizes(), {.dtype = grad_out.dtype(), .device = grad_out.device()});
  Tensor s = saved.sizes() == grad_out.sizes() ? to(saved, grad_out.dtype())
                                               : expand(to(saved, grad_out.dtype()), grad_out.sizes());
  kernels::unary_backward(grad_out.device(), op, grad_in, grad_out, s);
  return grad_in;
}

}  // namespace raw
}  // namespace syncgrad
