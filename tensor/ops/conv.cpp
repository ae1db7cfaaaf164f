// Raw conv2d front-end: argument checks (ranks, dtypes, devices, stride/padding/dilation/groups, channel
// counts, kernel vs padded input), output allocation and dispatch to the backend's conv kernels.
#include "tensor/ops/conv.h"

#include <string>

#include "tensor/check.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/reduce.h"
#include "tensor/ops/views.h"

namespace syncgrad {

namespace kernels {
constinit KernelSlot<void(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Conv2dParams&)> conv2d(
    "conv2d");
constinit KernelSlot<void(const Tensor&, const Tensor&, const Tensor&, const Conv2dParams&)> conv2d_backward_input(
    "conv2d_backward");
constinit KernelSlot<void(const Tensor&, const Tensor&, const Tensor&, const Conv2dParams&)> conv2d_backward_weight(
    "conv2d_backward");
}  // namespace kernels

// Appended piece by piece: g++ 12 warns falsely (-Wrestrict) on "literal" + std::string.
std::string size2_str(Size2 s) {
  std::string text = "(";
  text += std::to_string(s.h);
  text += ", ";
  text += std::to_string(s.w);
  text += ")";
  return text;
}

int64_t conv_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t padding, int64_t dilation) {
  return (in + 2 * padding - dilation * (kernel - 1) - 1) / stride + 1;
}

namespace {

void check_positive(const char* op, const char* what, Size2 v) {
  SYNCGRAD_CHECK(v.h > 0 && v.w > 0, ValueError, op, ": ", what, " must be positive, got ", size2_str(v));
}

void check_params(const Conv2dParams& p) {
  check_positive("conv2d", "stride", p.stride);
  check_positive("conv2d", "dilation", p.dilation);
  SYNCGRAD_CHECK(p.padding.h >= 0 && p.padding.w >= 0, ValueError, "conv2d: padding must be non-negative, got ",
                 size2_str(p.padding));
  SYNCGRAD_CHECK(p.groups > 0, ValueError, "conv2d: groups must be positive, got ", p.groups);
}

void check_operands(const Tensor& input, const Tensor& weight, const Tensor& bias, const Conv2dParams& p) {
  SYNCGRAD_CHECK(input.dim() == 4, ShapeError, "conv2d: expected a 4-D input (N, C_in, H, W), got shape ",
                 shape_str(input.sizes()), "; add a batch dimension with unsqueeze(0) for a single image");
  SYNCGRAD_CHECK(weight.dim() == 4, ShapeError,
                 "conv2d: expected a 4-D weight (C_out, C_in / groups, kH, kW), got shape ", shape_str(weight.sizes()));
  SYNCGRAD_CHECK(is_floating(input.dtype()), DTypeError, "conv2d: input dtype ", dtype_name(input.dtype()),
                 " is not supported (supported: float32, float64, float16, bfloat16); convert with .to()");
  SYNCGRAD_CHECK(weight.dtype() == input.dtype() && (!bias.defined() || bias.dtype() == input.dtype()), DTypeError,
                 "conv2d: input (", dtype_name(input.dtype()), "), weight (", dtype_name(weight.dtype()), ")",
                 (bias.defined() ? std::string(" and bias (") + dtype_name(bias.dtype()) + ")" : ""),
                 " must have the same dtype; convert with .to()");
  check_same_device("conv2d", input, weight);
  if (bias.defined()) check_same_device("conv2d", input, bias);
  check_params(p);

  const int64_t c_in = input.sizes()[1];
  const int64_t c_out = weight.sizes()[0];
  const std::string groups = std::to_string(p.groups);
  SYNCGRAD_CHECK(c_out % p.groups == 0, ValueError, "conv2d: groups=", groups, " does not divide C_out=", c_out,
                 " (weight shape ", shape_str(weight.sizes()), ")");
  SYNCGRAD_CHECK(c_in % p.groups == 0, ValueError, "conv2d: groups=", groups, " does not divide C_in=", c_in,
                 " (input shape ", shape_str(input.sizes()), ")");
  SYNCGRAD_CHECK(weight.sizes()[1] * p.groups == c_in, ShapeError, "conv2d: input has C_in=", c_in,
                 " channels but weight shape ", shape_str(weight.sizes()), " with groups=", groups, " expects ",
                 weight.sizes()[1] * p.groups, " (weight dim 1 must be C_in / groups)");
  SYNCGRAD_CHECK(!bias.defined() || (bias.dim() == 1 && bias.sizes()[0] == c_out), ShapeError, "conv2d: bias shape ",
                 shape_str(bias.sizes()), " does not match C_out=", c_out, "; expected [", c_out, "]");
  const int64_t kh = (weight.sizes()[2] - 1) * p.dilation.h + 1;
  const int64_t kw = (weight.sizes()[3] - 1) * p.dilation.w + 1;
  const int64_t ph = input.sizes()[2] + 2 * p.padding.h;
  const int64_t pw = input.sizes()[3] + 2 * p.padding.w;
  SYNCGRAD_CHECK(kh <= ph && kw <= pw, ShapeError, "conv2d: kernel of extent (", kh, ", ", kw, ") (weight shape ",
                 shape_str(weight.sizes()), ", dilation ", size2_str(p.dilation), ") is larger than the padded input (",
                 ph, ", ", pw, ") (input shape ", shape_str(input.sizes()), ", padding ", size2_str(p.padding), ")");
}

Shape output_shape(const Shape& input, const Shape& weight, const Conv2dParams& p) {
  return {input[0], weight[0], conv_output_size(input[2], weight[2], p.stride.h, p.padding.h, p.dilation.h),
          conv_output_size(input[3], weight[3], p.stride.w, p.padding.w, p.dilation.w)};
}

void check_grad_out(const Tensor& grad_out, const Shape& expected) {
  SYNCGRAD_CHECK(grad_out.sizes() == expected, ShapeError, "conv2d_backward: grad_output shape ",
                 shape_str(grad_out.sizes()), " differs from the forward output shape ", shape_str(expected));
}

}  // namespace

namespace raw {

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, Size2 stride, Size2 padding,
              Size2 dilation, int64_t groups) {
  const Conv2dParams params{stride, padding, dilation, groups};
  check_operands(input, weight, bias, params);
  Tensor out = empty(output_shape(input.sizes(), weight.sizes(), params),
                     {.dtype = input.dtype(), .device = input.device()});
  if (out.numel() == 0) return out;
  kernels::conv2d(input.device(), out, contiguous(input), contiguous(weight),
                  bias.defined() ? contiguous(bias) : Tensor(), params);
  return out;
}

Tensor conv2d_backward_input(const Tensor& grad_out, const Tensor& weight, const Shape& input_shape,
                             const Conv2dParams& params) {
  check_grad_out(grad_out, output_shape(input_shape, weight.sizes(), params));
  Tensor grad_input = empty(input_shape, {.dtype = grad_out.dtype(), .device = grad_out.device()});
  if (grad_out.numel() == 0) {
    fill_(grad_input, 0);
    return grad_input;
  }
  kernels::conv2d_backward_input(grad_out.device(), grad_input, contiguous(grad_out),
                                 contiguous(to(weight, grad_out.dtype())), params);
  return grad_input;
}

Tensor conv2d_backward_weight(const Tensor& grad_out, const Tensor& input, const Shape& weight_shape,
                              const Conv2dParams& params) {
  check_grad_out(grad_out, output_shape(input.sizes(), weight_shape, params));
  Tensor grad_weight = empty(weight_shape, {.dtype = grad_out.dtype(), .device = grad_out.device()});
  if (grad_out.numel() == 0) {
    fill_(grad_weight, 0);
    return grad_weight;
  }
  kernels::conv2d_backward_weight(grad_out.device(), grad_weight, contiguous(grad_out),
                                  contiguous(to(input, grad_out.dtype())), params);
  return grad_weight;
}

Tensor conv2d_backward_bias(const Tensor& grad_out) { return sum(grad_out, {0, 2, 3}, false, grad_out.dtype()); }

}  // namespace raw
}  // namespace syncgrad
