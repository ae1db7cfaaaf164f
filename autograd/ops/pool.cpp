// Differentiable pooling: max pooling routes each output gradient to its saved argmax; average and adaptive
// average pooling spread it evenly over the window that produced the output.
#include "autograd/ops/pool.h"

#include "autograd/meta.h"

namespace syncgrad {
namespace {

using autograd::GradList;
using autograd::NodeOf;
using autograd::SavedTensor;

struct MaxPool2dBackward final : NodeOf<MaxPool2dBackward> {
  static constexpr const char* kName = "MaxPool2dBackward";
  SavedTensor indices;  // (N, C, OH, OW) int64 positions in the input planes
  Shape input_shape;    // (N, C, H, W)

  GradList apply(GradList&& g) override {
    return {raw::max_pool2d_backward(g[0], indices.get(*this), input_shape)};
  }
  void release_saved() override { indices.reset(); }
};

struct AvgPool2dBackward final : NodeOf<AvgPool2dBackward> {
  static constexpr const char* kName = "AvgPool2dBackward";
  Shape input_shape;  // (N, C, H, W)
  Pool2dParams params;

  GradList apply(GradList&& g) override { return {raw::avg_pool2d_backward(g[0], input_shape, params)}; }
};

struct AdaptiveAvgPool2dBackward final : NodeOf<AdaptiveAvgPool2dBackward> {
  static constexpr const char* kName = "AdaptiveAvgPool2dBackward";
  Shape input_shape;  // (N, C, H, W)

  GradList apply(GradList&& g) override { return {raw::adaptive_avg_pool2d_backward(g[0], input_shape)}; }
};

}  // namespace

std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, Size2 kernel_size,
                                                  std::optional<Size2> stride, Size2 padding, Size2 dilation,
                                                  bool ceil_mode) {
  auto [out, indices] = raw::max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode);
  if (autograd::any_requires_grad({&input})) {
    auto node = std::make_shared<MaxPool2dBackward>();
    node->indices = indices;
    node->input_shape = input.sizes();
    autograd::record(node, {&input}, {&out});
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
    auto node = std::make_shared<AvgPool2dBackward>();
    node->input_shape = input.sizes();
    node->params = {kernel_size, stride.value_or(kernel_size), padding, 1, ceil_mode, count_include_pad};
    autograd::record(node, {&input}, {&out});
  }
  return out;
}

Tensor adaptive_avg_pool2d(const Tensor& input, Size2 output_size) {
  Tensor out = raw::adaptive_avg_pool2d(input, output_size);
  if (autograd::any_requires_grad({&input})) {
    auto node = std::make_shared<AdaptiveAvgPool2dBackward>();
    node->input_shape = input.sizes();
    autograd::record(node, {&input}, {&out});
  }
  return out;
}

}  // namespace syncgrad
