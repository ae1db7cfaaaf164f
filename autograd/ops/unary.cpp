// Differentiable unary elementwise ops: the raw op forward; the backward is the op's derivative kernel
// reading the op's input or result (whichever it is computed from). Each op names its node here.
#include "autograd/autocast.h"
#include "autograd/meta.h"
#include "autograd/ops/elementwise.h"

namespace syncgrad {
namespace {

using autograd::GradList;
using autograd::Node;
using autograd::SavedTensor;

// Records out = Op(in) (in may be out itself, for an in-place op: then it is the result).
template <UnaryOp Op, autograd::NodeName Name>
void record_unary(const Tensor& in, const Tensor& out) {
  // neg and sign need neither the input nor the result.
  SavedTensor saved;
  if constexpr (Op != UnaryOp::neg && Op != UnaryOp::sign) saved = unary_backward_uses_result(Op) ? out : in;
  autograd::record<Name>({&in}, {&out}, [saved = std::move(saved)](const Node& node, GradList&& g) {
    if (!g[0].defined()) return GradList{};
    return GradList{raw::unary_backward(Op, g[0], saved.defined() ? saved.get(node) : g[0])};
  });
}

template <UnaryOp Op, autograd::NodeName Name>
Tensor unary(const Tensor& t) {
  Tensor out = raw::unary(Op, t);
  if (autograd::any_requires_grad({&t})) record_unary<Op, Name>(t, out);
  return out;
}

}  // namespace

Tensor neg(const Tensor& t) { return unary<UnaryOp::neg, "NegBackward">(t); }
Tensor abs(const Tensor& t) { return unary<UnaryOp::abs, "AbsBackward">(t); }
Tensor relu(const Tensor& t) { return unary<UnaryOp::relu, "ReluBackward">(t); }
Tensor square(const Tensor& t) { return unary<UnaryOp::square, "SquareBackward">(t); }
Tensor sign(const Tensor& t) { return unary<UnaryOp::sign, "SignBackward">(t); }
Tensor exp(const Tensor& t) {
  if (auto c = autograd::autocast_operands(autograd::CastPolicy::fp32, {&t})) return exp(c[0]);
  return unary<UnaryOp::exp, "ExpBackward">(t);
}
Tensor log(const Tensor& t) {
  if (auto c = autograd::autocast_operands(autograd::CastPolicy::fp32, {&t})) return log(c[0]);
  return unary<UnaryOp::log, "LogBackward">(t);
}
Tensor log1p(const Tensor& t) { return unary<UnaryOp::log1p, "Log1pBackward">(t); }
Tensor sqrt(const Tensor& t) { return unary<UnaryOp::sqrt, "SqrtBackward">(t); }
Tensor rsqrt(const Tensor& t) { return unary<UnaryOp::rsqrt, "RsqrtBackward">(t); }
Tensor sigmoid(const Tensor& t) { return unary<UnaryOp::sigmoid, "SigmoidBackward">(t); }
Tensor tanh(const Tensor& t) { return unary<UnaryOp::tanh, "TanhBackward">(t); }
Tensor gelu(const Tensor& t, GeluApproximate approximate) {
  return approximate == GeluApproximate::tanh ? unary<UnaryOp::gelu_tanh, "GeluTanhBackward">(t)
                                              : unary<UnaryOp::gelu, "GeluBackward">(t);
}

// In place: the same node as relu, reading the result it leaves in self.
const Tensor& relu_(const Tensor& self) {
  autograd::check_inplace(self, "relu_");
  bool recording = autograd::any_requires_grad({&self});
  raw::relu_(self);
  if (recording) record_unary<UnaryOp::relu, "ReluBackward">(self, self);
  return self;
}

}  // namespace syncgrad
