// Differentiable conv2d: the forward runs the raw kernel; Conv2dBackward computes only the gradients whose
// inputs need them (grad_input by GEMM + col2im, grad_weight by GEMM summed over the batch, grad_bias by sums).
#include "autograd/ops/conv.h"

#include "autograd/autocast.h"
#include "autograd/meta.h"

namespace syncgrad {
namespace {

using autograd::GradList;
using autograd::NodeOf;
using autograd::SavedTensor;

struct Conv2dBackward final : NodeOf<Conv2dBackward> {
  static constexpr const char* kName = "Conv2dBackward";
  SavedTensor input;   // (N, C_in, H, W)
  SavedTensor weight;  // (C_out, C_in / groups, kH, kW)
  Shape input_shape;
  Shape weight_shape;
  Conv2dParams params;

  GradList apply(GradList&& g) override {
    const Tensor& grad_out = g[0];  // (N, C_out, OH, OW)
    GradList grads(3);
    if (next_edges[0].valid()) {
      grads[0] = raw::conv2d_backward_input(grad_out, weight.get(*this), input_shape, params);
    }
    if (next_edges[1].valid()) {
      grads[1] = raw::conv2d_backward_weight(grad_out, input.get(*this), weight_shape, params);
    }
    if (next_edges[2].valid()) grads[2] = raw::conv2d_backward_bias(grad_out);
    return grads;
  }

  void release_saved() override {
    input.reset();
    weight.reset();
  }
};

}  // namespace

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, Size2 stride, Size2 padding,
              Size2 dilation, int64_t groups) {
  if (auto c = autograd::autocast_operands(autograd::CastPolicy::lower_precision, {&input, &weight, &bias})) {
    return conv2d(c[0], c[1], c[2], stride, padding, dilation, groups);
  }
  Tensor out = raw::conv2d(input, weight, bias, stride, padding, dilation, groups);
  if (autograd::any_requires_grad({&input, &weight, &bias})) {
    auto node = std::make_shared<Conv2dBackward>();
    // Each gradient needs the other operand: save only what a requested gradient reads.
    if (autograd::needs_grad(weight)) node->input = input;
    if (autograd::needs_grad(input)) node->weight = weight;
    node->input_shape = input.sizes();
    node->weight_shape = weight.sizes();
    node->params = {stride, padding, dilation, groups};
    autograd::record(node, {&input, &weight, &bias}, {&out});
  }
  return out;
}

}  // namespace syncgrad
