// The differentiable linear_gelu: raw::linear_gelu forward, one LinearGeluBackward node whose backward is
// raw::linear_gelu_backward for the gradients its inputs need.
#include "autograd/ops/linear_gelu.h"

#include "autograd/autocast.h"
#include "autograd/meta.h"
#include "tensor/ops/linear_gelu.h"

namespace syncgrad {

Tensor linear_gelu(const Tensor& input, const Tensor& weight, const Tensor& bias, GeluApproximate approximate) {
  if (auto c = autograd::autocast_operands(autograd::CastPolicy::lower_precision, {&input, &weight, &bias})) {
    return linear_gelu(c[0], c[1], c[2], approximate);
  }
  raw::LinearGeluResult result = raw::linear_gelu(input, weight, bias, approximate);
  const bool has_bias = bias.defined();
  const bool needs_grad =
      has_bias ? autograd::any_requires_grad({&input, &weight, &bias}) : autograd::any_requires_grad({&input, &weight});
  if (!needs_grad) return result.output;
  // input is needed only for weight's gradient and weight only for input's.
  auto backward = [input = autograd::SavedTensor(autograd::needs_grad(weight) ? input : Tensor()),
                   weight = autograd::SavedTensor(autograd::needs_grad(input) ? weight : Tensor()),
                   pre = autograd::SavedTensor(result.pre_activation), bias_shape = has_bias ? bias.sizes() : Shape{},
                   approximate](const autograd::Node& node, autograd::GradList&& g) {
    const raw::LinearGradRequest request{node.needs_input_grad(0), node.needs_input_grad(1),
                                         node.next_edges.size() > 2 && node.needs_input_grad(2)};
    raw::LinearGrads grads = raw::linear_gelu_backward(g[0], input.defined() ? input.get(node) : Tensor(),
                                                       weight.defined() ? weight.get(node) : Tensor(), bias_shape,
                                                       pre.get(node), approximate, request);
    autograd::GradList out{grads.grad_input, grads.grad_weight};
    if (node.next_edges.size() > 2) out.push_back(grads.grad_bias);
    return out;
  };
  if (has_bias) {
    autograd::record<"LinearGeluBackward">({&input, &weight, &bias}, {&result.output}, std::move(backward));
  } else {
    autograd::record<"LinearGeluBackward">({&input, &weight}, {&result.output}, std::move(backward));
  }
  return result.output;
}

}  // namespace syncgrad
