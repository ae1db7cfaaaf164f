// Differentiable 2-D convolution (NCHW), PyTorch's torch.nn.functional.conv2d argument order and defaults.
#pragma once

#include "tensor/ops/conv.h"
#include "tensor/tensor.h"

namespace syncgrad {

// input (N, C_in, H, W), weight (C_out, C_in / groups, kH, kW), bias (C_out) or undefined
// -> (N, C_out, OH, OW) with OH = floor((H + 2 * padding - dilation * (kH - 1) - 1) / stride) + 1.
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {}, Size2 stride = 1,
              Size2 padding = 0, Size2 dilation = 1, int64_t groups = 1);

}  // namespace syncgrad
