// Differentiable 2-D pooling (NCHW) with PyTorch's torch.nn.functional argument order and defaults:
// max_pool2d, avg_pool2d, adaptive_avg_pool2d. A stride left unset equals the kernel size.
#pragma once

#include <optional>
#include <utility>

#include "tensor/ops/pool.h"
#include "tensor/tensor.h"

namespace syncgrad {

// input (N, C, H, W) -> (N, C, OH, OW): the maximum of each window (padding never wins).
Tensor max_pool2d(const Tensor& input, Size2 kernel_size, std::optional<Size2> stride = {}, Size2 padding = 0,
                  Size2 dilation = 1, bool ceil_mode = false);
// As max_pool2d, also returning the int64 argmax position iy * W + ix of each window in its input plane.
std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, Size2 kernel_size,
                                                  std::optional<Size2> stride = {}, Size2 padding = 0,
                                                  Size2 dilation = 1, bool ceil_mode = false);
// input (N, C, H, W) -> (N, C, OH, OW): window means; count_include_pad counts padded zeros in the divisor.
Tensor avg_pool2d(const Tensor& input, Size2 kernel_size, std::optional<Size2> stride = {}, Size2 padding = 0,
                  bool ceil_mode = false, bool count_include_pad = true);
// input (N, C, H, W) -> (N, C, output_size.h, output_size.w): means over [floor(i*H/OH), ceil((i+1)*H/OH)).
Tensor adaptive_avg_pool2d(const Tensor& input, Size2 output_size);

}  // namespace syncgrad
