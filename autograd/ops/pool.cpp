// Differentiable pooling: max pooling routes each output gradient to its saved argmax; average and adaptive
// average pooling spread it evenly over the window that produced the output.
#include "autograd/ops/pool.h"

#include "autograd/meta.h"

namespace syncgrad {
namespace {

using autograd::GradList;
using autograd::Node;
using autograd::SavedTensor;

}  // namespace

std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, Size2 kernel_size,
                                                  std::optional<Size2> stride, Size2 padding, Size2 dilation,
                                                  bool ceil_mode) {
  auto [out, indices] = raw::max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode);
  if (autograd::any_requires_grad({&input})) {
    // indices: (N, C, OH, OW) int64 positions in the (N, C, H, W) input planes.
    auto backward = [indices = SavedTensor(indices), input_shape = input.sizes()](const Node& node, GradList&& g) {
      return GradList{raw::max_pool2d_backward(g[0], indices.get(node), input_shape)};
    };
    autograd::record<"MaxPool2dBackward">({&input}, {&out}, std::move(backward));
  }
  return {out, indices};
}

Tensor max_pool2d(const Tensor& input, Size2 kernel_size, std::optional<Size2> stride, Size2 padding,
                  Size2 dilation, bool ceil_mode) {
  return max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode).first;
}

Tensor avg_pool2d(const Tensor& input, Size2 kernel_size, std::optional<Size2> stride, Size2 padding,
                  bool ceil_mode, bool count_include_pad) {
  Tensor out = raw::avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad);
  if (autograd::any_requires_grad({&input})) {
    auto backward = [input_shape = input.sizes(),
                     params = Pool2dParams{kernel_size, stride.value_or(kernel_size), padding, 1, ceil_mode,
                                           count_include_pad}](GradList&& g) {
      return GradList{raw::avg_pool2d_backward(g[0], input_shape, params)};
    };
    autograd::record<"AvgPool2dBackward">({&input}, {&out}, std::move(backward));
  }
  return out;
}

Tensor adaptive_avg_pool2d(const Tensor& input, Size2 output_size) {
  Tensor out = raw::adaptive_avg_pool2d(input, output_size);
  if (autograd::any_requires_grad({&input})) {
    autograd::record<"AdaptiveAvgPool2dBackward">({&input}, {&out}, [input_shape = input.sizes()](GradList&& g) {
      return GradList{raw::adaptive_avg_pool2d_backward(g[0], input_shape)};
    });
  }
  return out;
}

}  // namespace syncgrad
