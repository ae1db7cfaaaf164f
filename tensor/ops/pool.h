// Raw (non-differentiable) 2-D pooling over NCHW tensors with PyTorch's semantics: max pooling (with the
// argmax indices its backward needs), average pooling, adaptive average pooling, and their backwards.
// Differentiable versions: autograd/ops/pool.h.
#pragma once

#include <optional>
#include <utility>

#include "tensor/dispatch.h"
#include "tensor/ops/conv.h"
#include "tensor/tensor.h"

namespace syncgrad {

struct Pool2dParams {
  Size2 kernel = 1;
  Size2 stride = 1;
  Size2 padding = 0;
  Size2 dilation = 1;              // max pooling only
  bool ceil_mode = false;          // round the output size up instead of down
  bool count_include_pad = true;   // average pooling: padded zeros count in the divisor
};

// PyTorch's pooling output size: floor (or ceil) of (in + 2 * padding - dilation * (kernel - 1) - 1) / stride
// plus one; with ceil_mode a last window that would start inside the right padding is dropped.
int64_t pool_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t padding, int64_t dilation,
                         bool ceil_mode);

namespace kernels {
// out and indices (N, C, OH, OW); input (N, C, H, W); all contiguous. indices get the argmax position
// iy * W + ix inside each input plane (the first one on ties; NaN wins).
extern KernelSlot<void(const Tensor& out, const Tensor& indices, const Tensor& input, const Pool2dParams& params)>
    max_pool2d;
// grad_input (N, C, H, W), uninitialised, = grad_out scattered (summed) to the saved indices, zero elsewhere: the
// kernel writes every element; all contiguous.
extern KernelSlot<void(const Tensor& grad_input, const Tensor& grad_out, const Tensor& indices)> max_pool2d_backward;
// out (N, C, OH, OW) = window means of input (N, C, H, W); contiguous.
extern KernelSlot<void(const Tensor& out, const Tensor& input, const Pool2dParams& params)> avg_pool2d;
// grad_input (N, C, H, W), zeroed, += each grad_out element spread over its window; contiguous.
extern KernelSlot<void(const Tensor& grad_input, const Tensor& grad_out, const Pool2dParams& params)>
    avg_pool2d_backward;
// out (N, C, OH, OW): the mean of rows [floor(i * H / OH), ceil((i + 1) * H / OH)) and likewise for columns.
extern KernelSlot<void(const Tensor& out, const Tensor& input)> adaptive_avg_pool2d;
// grad_input (N, C, H, W), zeroed, += grad_out (N, C, OH, OW) spread over each adaptive window.
extern KernelSlot<void(const Tensor& grad_input, const Tensor& grad_out)> adaptive_avg_pool2d_backward;
}  // namespace kernels

namespace raw {
// input (N, C, H, W) -> (output, indices (int64)) of shape (N, C, OH, OW); stride defaults to the kernel size.
std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, Size2 kernel, std::optional<Size2> stride = {},
                                                  Size2 padding = 0, Size2 dilation = 1, bool ceil_mode = false);
Tensor max_pool2d_backward(const Tensor& grad_out, const Tensor& indices, const Shape& input_shape);

// input (N, C, H, W) -> (N, C, OH, OW); stride defaults to the kernel size.
Tensor avg_pool2d(const Tensor& input, Size2 kernel, std::optional<Size2> stride = {}, Size2 padding = 0,
                  bool ceil_mode = false, bool count_include_pad = true);
Tensor avg_pool2d_backward(const Tensor& grad_out, const Shape& input_shape, const Pool2dParams& params);

// input (N, C, H, W) -> (N, C, output_size.h, output_size.w).
Tensor adaptive_avg_pool2d(const Tensor& input, Size2 output_size);
Tensor adaptive_avg_pool2d_backward(const Tensor& grad_out, const Shape& input_shape);
}  // namespace raw

}  // namespace syncgrad
