// Raw (non-differentiable) unary elementwise ops and the kernels that compute their gradients. Ops defined
// only on floating values (exp, log, sigmoid, ...) give integer and bool inputs a floating result, as PyTorch.
#pragma once

#include "tensor/dispatch.h"
#include "tensor/tensor.h"

namespace syncgrad {

enum class UnaryOp : uint8_t {
  neg, abs, relu, square, sign,                                         // any numeric dtype
  exp, log, log1p, sqrt, rsqrt, sigmoid, tanh, gelu, gelu_tanh,         // floating results
};

// PyTorch's gelu(approximate="none" | "tanh"): the exact erf form or the tanh approximation.
enum class GeluApproximate : uint8_t { none, tanh };

namespace kernels {
// out = op(in); in of out's shape and dtype.
extern KernelSlot<void(UnaryOp op, const Tensor& out, const Tensor& in)> unary;
// grad_in = grad_out * op'(x), all floating of grad_in's shape and dtype; `saved` is op's result when
// unary_backward_uses_result(op), else its input (ignored for neg and sign).
extern KernelSlot<void(UnaryOp op, const Tensor& grad_in, const Tensor& grad_out, const Tensor& saved)>
    unary_backward;
}  // namespace kernels

const char* unary_op_name(UnaryOp op);  // "exp", "gelu", ...
// Whether the op's derivative is computed from its result (exp, sqrt, rsqrt, sigmoid, tanh, relu) rather
// than its input.
bool unary_backward_uses_result(UnaryOp op);
// Whether the op is defined only on floating values.
bool unary_is_floating_only(UnaryOp op);

namespace raw {
Tensor unary(UnaryOp op, const Tensor& t);
Tensor neg(const Tensor& t);
Tensor abs(const Tensor& t);
Tensor relu(const Tensor& t);
Tensor square(const Tensor& t);
Tensor sign(const Tensor& t);  // -1, 0 or 1
Tensor exp(const Tensor& t);
Tensor log(const Tensor& t);
Tensor log1p(const Tensor& t);
Tensor sqrt(const Tensor& t);
Tensor rsqrt(const Tensor& t);
Tensor sigmoid(const Tensor& t);
Tensor tanh(const Tensor& t);
Tensor gelu(const Tensor& t, GeluApproximate approximate = GeluApproximate::none);
// In place on a tensor whose dtype the op keeps (numeric ops, or floating-only ops on floating tensors).
void unary_(UnaryOp op, const Tensor& self);
void relu_(const Tensor& self);
// grad_out * op'(x) (see kernels::unary_backward for `saved`).
Tensor unary_backward(UnaryOp op, const Tensor& grad_out, const Tensor& saved);
}  // namespace raw

}  // namespace syncgrad
