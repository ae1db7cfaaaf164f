// Raw (non-differentiable) 2-D convolution over NCHW tensors, with PyTorch's argument order and output-size
// formula, and the three backward pieces (input, weight, bias). Differentiable version: autograd/ops/conv.h.
#pragma once

#include <cstdint>
#include <string>

#include "tensor/dispatch.h"
#include "tensor/tensor.h"

namespace syncgrad {

// A (height, width) pair; a single number means the same value for both (PyTorch's int-or-tuple arguments).
struct Size2 {
  int64_t h = 0;
  int64_t w = 0;
  constexpr Size2(int64_t both) : h(both), w(both) {}  // NOLINT: implicit on purpose
  constexpr Size2(int64_t height, int64_t width) : h(height), w(width) {}
  bool operator==(const Size2&) const = default;
};

std::string size2_str(Size2 s);  // "(3, 3)"

struct Conv2dParams {
  Size2 stride = 1;
  Size2 padding = 0;
  Size2 dilation = 1;
  int64_t groups = 1;
};

// floor((in + 2 * padding - dilation * (kernel - 1) - 1) / stride) + 1
int64_t conv_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t padding, int64_t dilation);

namespace kernels {
// out (N, C_out, OH, OW) = conv(input (N, C_in, H, W), weight (C_out, C_in / groups, kH, kW)) + bias (C_out).
// All contiguous, one floating dtype; bias may be undefined. `out` is overwritten.
extern KernelSlot<void(const Tensor& out, const Tensor& input, const Tensor& weight, const Tensor& bias,
                       const Conv2dParams& params)>
    conv2d;
// grad_input (N, C_in, H, W) from grad_out (N, C_out, OH, OW) and weight; all contiguous; grad_input overwritten.
extern KernelSlot<void(const Tensor& grad_input, const Tensor& grad_out, const Tensor& weight,
                       const Conv2dParams& params)>
    conv2d_backward_input;
// grad_weight (C_out, C_in / groups, kH, kW) summed over the batch; all contiguous; grad_weight overwritten.
extern KernelSlot<void(const Tensor& grad_weight, const Tensor& grad_out, const Tensor& input,
                       const Conv2dParams& params)>
    conv2d_backward_weight;
}  // namespace kernels

namespace raw {
// input (N, C_in, H, W), weight (C_out, C_in / groups, kH, kW), bias (C_out) or undefined -> (N, C_out, OH, OW).
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {}, Size2 stride = 1,
              Size2 padding = 0, Size2 dilation = 1, int64_t groups = 1);
// Gradient of conv2d with respect to its input, of shape `input_shape`.
Tensor conv2d_backward_input(const Tensor& grad_out, const Tensor& weight, const Shape& input_shape,
                             const Conv2dParams& params);
// Gradient of conv2d with respect to its weight, of shape `weight_shape`.
Tensor conv2d_backward_weight(const Tensor& grad_out, const Tensor& input, const Shape& weight_shape,
                              const Conv2dParams& params);
// Gradient with respect to the bias: grad_out (N, C_out, OH, OW) summed over N, OH, OW -> (C_out).
Tensor conv2d_backward_bias(const Tensor& grad_out);
}  // namespace raw

}  // namespace syncgrad
