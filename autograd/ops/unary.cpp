// Differentiable unary elementwise ops: the raw op forward, a UnaryBackward<op> node saving the op's input
// or result (whichever its derivative is computed from).
#include "autograd/autocast.h"
#include "autograd/ops/elementwise.h"
#include "autograd/ops/elementwise_nodes.h"

namespace syncgrad {
namespace {

using autograd::elementwise::UnaryBackward;

template <UnaryOp Op>
Tensor unary(const Tensor& t) {
  Tensor out = raw::unary(Op, t);
  if (autograd::any_requires_grad({&t})) {
    auto node = std::make_shared<UnaryBackward<Op>>();
    if constexpr (Op != UnaryOp::neg && Op != UnaryOp::sign) {
      node->saved = unary_backward_uses_result(Op) ? out : t;
    }
    autograd::record(node, {&t}, {&out});
  }
  return out;
}

}  // namespace

Tensor neg(const Tensor& t) { return unary<UnaryOp::neg>(t); }
Tensor abs(const Tensor& t) { return unary<UnaryOp::abs>(t); }
Tensor relu(const Tensor& t) { return unary<UnaryOp::relu>(t); }
Tensor square(const Tensor& t) { return unary<UnaryOp::square>(t); }
Tensor sign(const Tensor& t) { return unary<UnaryOp::sign>(t); }
Tensor exp(const Tensor& t) {
  if (auto c = autograd::autocast_operands(autograd::CastPolicy::fp32, {&t})) return exp(c[0]);
  return unary<UnaryOp::exp>(t);
}
Tensor log(const Tensor& t) {
  if (auto c = autograd::autocast_operands(autograd::CastPolicy::fp32, {&t})) return log(c[0]);
  return unary<UnaryOp::log>(t);
}
Tensor log1p(const Tensor& t) { return unary<UnaryOp::log1p>(t); }
Tensor sqrt(const Tensor& t) { return unary<UnaryOp::sqrt>(t); }
Tensor rsqrt(const Tensor& t) { return unary<UnaryOp::rsqrt>(t); }
Tensor sigmoid(const Tensor& t) { return unary<UnaryOp::sigmoid>(t); }
Tensor tanh(const Tensor& t) { return unary<UnaryOp::tanh>(t); }
Tensor gelu(const Tensor& t, GeluApproximate approximate) {
  return approximate == GeluApproximate::tanh ? unary<UnaryOp::gelu_tanh>(t) : unary<UnaryOp::gelu>(t);
}

}  // namespace syncgrad
