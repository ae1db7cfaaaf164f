// Differentiable conv2d: the forward runs the raw kernel; the backward computes only the gradients whose
// inputs need them (grad_input by GEMM + col2im, grad_weight by GEMM summed over the batch, grad_bias by sums).
#include "autograd/ops/conv.h"

#include "autograd/autocast.h"
#include "autograd/meta.h"

namespace syncgrad {
namespace {

using autograd::GradList;
using autograd::Node;
using autograd::SavedTensor;

}  // namespace

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, Size2 stride, Size2 padding,
              Size2 dilation, int64_t groups) {
  if (auto c = autograd::autocast_operands(autograd::CastPolicy::lower_precision, {&input, &weight, &bias})) {
    return conv2d(c[0], c[1], c[2], stride, padding, dilation, groups);
  }
  Tensor out = raw::conv2d(input, weight, bias, stride, padding, dilation, groups);
  if (autograd::any_requires_grad({&input, &weight, &bias})) {
    // Each gradient needs the other operand: save only what a requested gradient reads.
    SavedTensor saved_input = autograd::needs_grad(weight) ? input : Tensor();  // (N, C_in, H, W)
    SavedTensor saved_weight = autograd::needs_grad(input) ? weight : Tensor();  // (C_out, C_in / groups, kH, kW)
    auto backward = [saved_input = std::move(saved_input), saved_weight = std::move(saved_weight),
                     input_shape = input.sizes(), weight_shape = weight.sizes(),
                     params = Conv2dParams{stride, padding, dilation, groups}](const Node& node, GradList&& g) {
      const Tensor& grad_out = g[0];  // (N, C_out, OH, OW)
      GradList grads(3);
      if (node.needs_input_grad(0)) {
        grads[0] = raw::conv2d_backward_input(grad_out, saved_weight.get(node), input_shape, params);
      }
      if (node.needs_input_grad(1)) {
        grads[1] = raw::conv2d_backward_weight(grad_out, saved_input.get(node), weight_shape, params);
      }
      if (node.needs_input_grad(2)) grads[2] = raw::conv2d_backward_bias(grad_out);
      return grads;
    };
    autograd::record<"Conv2dBackward">({&input, &weight, &bias}, {&out}, std::move(backward));
  }
  return out;
}

}  // namespace syncgrad
