// Raw pooling front-ends: argument checks (rank, dtype, kernel/stride/padding/dilation, window vs padded
// input), output-size computation, output allocation and dispatch to the backend's pooling kernels.
#include "tensor/ops/pool.h"

#include <string>

#include "tensor/check.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/views.h"

namespace syncgrad {

namespace kernels {
constinit KernelSlot<void(const Tensor&, const Tensor&, const Tensor&, const Pool2dParams&)> max_pool2d("max_pool2d");
constinit KernelSlot<void(const Tensor&, const Tensor&, const Tensor&)> max_pool2d_backward("max_pool2d_backward");
constinit KernelSlot<void(const Tensor&, const Tensor&, const Pool2dParams&)> avg_pool2d("avg_pool2d");
constinit KernelSlot<void(const Tensor&, const Tensor&, const Pool2dParams&)> avg_pool2d_backward(
    "avg_pool2d_backward");
constinit KernelSlot<void(const Tensor&, const Tensor&)> adaptive_avg_pool2d("adaptive_avg_pool2d");
constinit KernelSlot<void(const Tensor&, const Tensor&)> adaptive_avg_pool2d_backward(
    "adaptive_avg_pool2d_backward");
}  // namespace kernels

int64_t pool_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t padding, int64_t dilation,
                         bool ceil_mode) {
  const int64_t numerator = in + 2 * padding - dilation * (kernel - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  // Floor division (the numerator may be negative for windows larger than the padded input).
  int64_t out = (numerator >= 0 ? numerator / stride : -((-numerator + stride - 1) / stride)) + 1;
  if (ceil_mode && (out - 1) * stride >= in + padding) --out;
  return out;
}

namespace {

void check_input(const char* op, const Tensor& input) {
  SYNCGRAD_CHECK(input.dim() == 4, ShapeError, op, ": expected a 4-D input (N, C, H, W), got shape ",
                 shape_str(input.sizes()), "; add a batch dimension with unsqueeze(0) for a single image");
  SYNCGRAD_CHECK(is_floating(input.dtype()), DTypeError, op, ": input dtype ", dtype_name(input.dtype()),
                 " is not supported (supported: float32, float64, float16, bfloat16); convert with .to()");
}

void check_window(const char* op, const Shape& input, const Pool2dParams& p) {
  auto positive = [op](const char* what, Size2 v) {
    SYNCGRAD_CHECK(v.h > 0 && v.w > 0, ValueError, op, ": ", what, " must be positive, got ", size2_str(v));
  };
  positive("kernel_size", p.kernel);
  positive("stride", p.stride);
  positive("dilation", p.dilation);
  SYNCGRAD_CHECK(p.padding.h >= 0 && p.padding.w >= 0 && 2 * p.padding.h <= p.kernel.h && 2 * p.padding.w <= p.kernel.w,
                 ValueError, op, ": padding ", size2_str(p.padding),
                 " must be non-negative and at most half the kernel size ", size2_str(p.kernel));
  const int64_t kh = (p.kernel.h - 1) * p.dilation.h + 1;
  const int64_t kw = (p.kernel.w - 1) * p.dilation.w + 1;
  const int64_t ph = input[2] + 2 * p.padding.h;
  const int64_t pw = input[3] + 2 * p.padding.w;
  SYNCGRAD_CHECK(kh <= ph && kw <= pw, ShapeError, op, ": window of extent (", kh, ", ", kw, ") (kernel_size ",
                 size2_str(p.kernel), ", dilation ", size2_str(p.dilation), ") is larger than the padded input (", ph,
                 ", ", pw, ") (input shape ", shape_str(input), ", padding ", size2_str(p.padding), ")");
}

Shape pooled_shape(const Shape& input, const Pool2dParams& p) {
  return {input[0], input[1],
          pool_output_size(input[2], p.kernel.h, p.stride.h, p.padding.h, p.dilation.h, p.ceil_mode),
          pool_output_size(input[3], p.kernel.w, p.stride.w, p.padding.w, p.dilation.w, p.ceil_mode)};
}

void check_grad_out(const char* op, const Tensor& grad_out, const Shape& expected) {
  SYNCGRAD_CHECK(grad_out.sizes() == expected, ShapeError, op, ": grad_output shape ", shape_str(grad_out.sizes()),
                 " differs from the forward output shape ", shape_str(expected));
}

Tensor zeros_for(const Shape& shape, const Tensor& like) {
  return zeros(shape, {.dtype = like.dtype(), .device = like.device()});
}

}  // namespace

namespace raw {

std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, Size2 kernel, std::optional<Size2> stride,
                                                  Size2 padding, Size2 dilation, bool ceil_mode) {
  check_input("max_pool2d", input);
  const Pool2dParams params{kernel, stride.value_or(kernel), padding, dilation, ceil_mode, true};
  check_window("max_pool2d", input.sizes(), params);
  const Shape shape = pooled_shape(input.sizes(), params);
  Tensor out = empty(shape, {.dtype = input.dtype(), .device = input.device()});
  Tensor indices = empty(shape, {.dtype = DType::i64, .device = input.device()});
  if (out.numel() > 0) kernels::max_pool2d(input.device(), out, indices, contiguous(input), params);
  return {out, indices};
}

Tensor max_pool2d_backward(const Tensor& grad_out, const Tensor& indices, const Shape& input_shape) {
  check_grad_out("max_pool2d_backward", grad_out, indices.sizes());
  if (grad_out.numel() == 0) return zeros_for(input_shape, grad_out);
  Tensor grad_input = empty(input_shape, {.dtype = grad_out.dtype(), .device = grad_out.device()});
  kernels::max_pool2d_backward(grad_out.device(), grad_input, contiguous(grad_out), contiguous(indices));
  return grad_input;
}

Tensor avg_pool2d(const Tensor& input, Size2 kernel, std::optional<Size2> stride, Size2 padding, bool ceil_mode,
                  bool count_include_pad) {
  check_input("avg_pool2d", input);
  const Pool2dParams params{kernel, stride.value_or(kernel), padding, 1, ceil_mode, count_include_pad};
  check_window("avg_pool2d", input.sizes(), params);
  Tensor out = empty(pooled_shape(input.sizes(), params), {.dtype = input.dtype(), .device = input.device()});
  if (out.numel() > 0) kernels::avg_pool2d(input.device(), out, contiguous(input), params);
  return out;
}

Tensor avg_pool2d_backward(const Tensor& grad_out, const Shape& input_shape, const Pool2dParams& params) {
  check_grad_out("avg_pool2d_backward", grad_out, pooled_shape(input_shape, params));
  Tensor grad_input = zeros_for(input_shape, grad_out);
  if (grad_out.numel() > 0) kernels::avg_pool2d_backward(grad_out.device(), grad_input, contiguous(grad_out), params);
  return grad_input;
}

Tensor adaptive_avg_pool2d(const Tensor& input, Size2 output_size) {
  check_input("adaptive_avg_pool2d", input);
  SYNCGRAD_CHECK(output_size.h > 0 && output_size.w > 0, ValueError,
                 "adaptive_avg_pool2d: output_size must be positive, got ", size2_str(output_size));
  SYNCGRAD_CHECK(input.sizes()[2] != 0 && input.sizes()[3] != 0, ShapeError, "adaptive_avg_pool2d: input shape ",
                 shape_str(input.sizes()),
                 " has an empty spatial dimension; every output cell needs at least one input element");
  Tensor out = empty({input.sizes()[0], input.sizes()[1], output_size.h, output_size.w},
                     {.dtype = input.dtype(), .device = input.device()});
  if (out.numel() > 0) kernels::adaptive_avg_pool2d(input.device(), out, contiguous(input));
  return out;
}

Tensor adaptive_avg_pool2d_backward(const Tensor& grad_out, const Shape& input_shape) {
  SYNCGRAD_CHECK(grad_out.dim() == 4 && grad_out.sizes()[0] == input_shape[0] && grad_out.sizes()[1] == input_shape[1],
                 ShapeError, "adaptive_avg_pool2d_backward: grad_output shape ", shape_str(grad_out.sizes()),
                 " does not match the input shape ", shape_str(input_shape), " in N and C");
  Tensor grad_input = zeros_for(input_shape, grad_out);
  if (grad_out.numel() > 0) kernels::adaptive_avg_pool2d_backward(grad_out.device(), grad_input, contiguous(grad_out));
  return grad_input;
}

}  // namespace raw
}  // namespace syncgrad
