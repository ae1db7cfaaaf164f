// Raw batch norm and layer norm front-ends: argument checks, reshaping to the kernels' (N, C, L) / (M, K)
// layouts, output allocation and dispatch.
#include "tensor/ops/norm.h"

#include <algorithm>

#include "tensor/check.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/elementwise.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/unary.h"
#include "tensor/ops/views.h"

namespace syncgrad {

namespace kernels {
constinit KernelSlot<void(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                          const Tensor&, const Tensor&, bool, double, double)>
    batch_norm_forward("batch_norm");
constinit KernelSlot<void(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                          const Tensor&, const Tensor&, bool)>
    batch_norm_backward("batch_norm_backward");
constinit KernelSlot<void(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                          const Tensor&, const Tensor&, const Tensor&, const Tensor&, bool, double, double)>
    batch_norm_relu_forward("batch_norm_relu");
constinit KernelSlot<void(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                          const Tensor&, const Tensor&, const Tensor&, const Tensor&, bool)>
    batch_norm_relu_backward("batch_norm_relu_backward");
constinit KernelSlot<void(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                          double)>
    layer_norm_forward("layer_norm");
constinit KernelSlot<void(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                          const Tensor&, const Tensor&)>
    layer_norm_backward("layer_norm_backward");
}  // namespace kernels

DType norm_stats_dtype(DType input) { return input == DType::f64 ? DType::f64 : DType::f32; }

namespace {

void check_floating_input(const char* op, const Tensor& input) {
  SYNCGRAD_CHECK(is_floating(input.dtype()), DTypeError, op, ": input has dtype ", dtype_name(input.dtype()),
                 "; expects a floating dtype (float32, float64, float16, bfloat16); convert with .to()");
}

// An optional per-channel / per-feature tensor: undefined, or floating with exactly `shape` on input's device.
void check_param(const char* op, const char* name, const Tensor& param, const Tensor& input, const Shape& shape,
                 const char* meaning) {
  if (!param.defined()) return;
  check_same_device(op, input, param);
  SYNCGRAD_CHECK(is_floating(param.dtype()), DTypeError, op, ": ", name, " has dtype ", dtype_name(param.dtype()),
                 "; expects a floating dtype");
  SYNCGRAD_CHECK(param.sizes() == shape, ShapeError, op, ": ", name, " has shape ", shape_str(param.sizes()),
                 " but expects ", shape_str(shape), " (", meaning, ") for input of shape ", shape_str(input.sizes()));
}

// `t` as a contiguous tensor of `shape` (a view when possible).
Tensor contiguous_as(const Tensor& t, const Shape& shape) { return raw::view(raw::contiguous(t), shape); }

// (N, C, L) sizes of a batch norm input (N, C, *).
Shape batch_norm_layout(const Tensor& input) {
  int64_t n = input.sizes()[0], c = input.sizes()[1];
  int64_t l = 1;
  for (int64_t d = 2; d < input.dim(); ++d) l *= input.sizes()[d];
  return {n, c, l};
}

// (M, K) sizes of a layer norm input: K = prod(normalized_shape), M = prod(leading dims).
Shape layer_norm_layout(const Tensor& input, const Shape& normalized_shape) {
  int64_t lead = input.dim() - static_cast<int64_t>(normalized_shape.size());
  int64_t m = 1;
  for (int64_t d = 0; d < lead; ++d) m *= input.sizes()[d];
  return {m, shape_numel(normalized_shape)};
}

Tensor param_as_vector(const Tensor& param, int64_t n) {
  return param.defined() ? contiguous_as(param, {n}) : Tensor();
}

Tensor grad_buffer(const Shape& shape, std::optional<DType> dtype, Device device) {
  return dtype ? empty(shape, {.dtype = *dtype, .device = device}) : Tensor();
}

}  // namespace

namespace raw {

namespace {

// The checks every batch norm front-end makes; input's (N, C, L) layout.
Shape check_batch_norm(const char* op, const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                       const Tensor& weight, const Tensor& bias, bool training, double eps) {
  check_floating_input(op, input);
  SYNCGRAD_CHECK(input.dim() >= 2, ShapeError, op, ": expects input of shape (N, C) or (N, C, *), got ",
                 shape_str(input.sizes()), "; add a batch dim with unsqueeze(0)");
  Shape layout = batch_norm_layout(input);
  Shape channels{layout[1]};
  check_param(op, "weight", weight, input, channels, "one value per channel C = input.size(1)");
  check_param(op, "bias", bias, input, channels, "one value per channel C = input.size(1)");
  check_param(op, "running_mean", running_mean, input, channels, "one value per channel C = input.size(1)");
  check_param(op, "running_var", running_var, input, channels, "one value per channel C = input.size(1)");
  SYNCGRAD_CHECK(running_mean.defined() == running_var.defined(), ValueError, op,
                 ": running_mean and running_var must be given together (got only ",
                 (running_mean.defined() ? "running_mean" : "running_var"), ")");
  SYNCGRAD_CHECK(training || running_mean.defined(), ValueError, op,
                 ": eval mode (training=false) normalises with running_mean and running_var, but none were given; pass "
                 "them or use training=true");
  SYNCGRAD_CHECK(!training || layout[0] * layout[2] > 1, ValueError, op,
                 ": expected more than 1 value per channel when training, got input of shape ",
                 shape_str(input.sizes()), "; use a larger batch or eval mode");
  SYNCGRAD_CHECK(!(eps < 0), ValueError, op, ": eps must be >= 0, got ", std::to_string(eps));
  return layout;
}

// The output (input's layout and dtype) and empty statistics of a batch norm forward.
BatchNormResult batch_norm_buffers(const Tensor& input, const Shape& layout) {
  const DType stats = norm_stats_dtype(input.dtype());
  const TensorOptions vector_options{.dtype = stats, .device = input.device()};
  return {empty(layout, {.dtype = input.dtype(), .device = input.device()}), empty({layout[1]}, vector_options),
          empty({layout[1]}, vector_options), Tensor()};
}

void bump_running_stats(bool training, const Tensor& running_mean, const Tensor& running_var) {
  if (training && running_mean.defined()) {
    running_mean.impl()->storage()->bump_version();
    running_var.impl()->storage()->bump_version();
  }
}

}  // namespace

BatchNormResult batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                           const Tensor& weight, const Tensor& bias, bool training, double momentum, double eps) {
  const Shape layout = check_batch_norm("batch_norm", input, running_mean, running_var, weight, bias, training, eps);
  BatchNormResult result = batch_norm_buffers(input, layout);
  kernels::batch_norm_forward(input.device(), result.output, result.save_mean, result.save_invstd,
                              contiguous_as(input, layout), weight, bias, running_mean, running_var, training,
                              momentum, eps);
  bump_running_stats(training, running_mean, running_var);
  result.output = view(result.output, input.sizes());
  return result;
}

BatchNormResult batch_norm_relu(const Tensor& input, const Tensor& residual, const Tensor& running_mean,
                                const Tensor& running_var, const Tensor& weight, const Tensor& bias, bool training,
                                double momentum, double eps, bool keep_relu_mask) {
  constexpr const char* op = "batch_norm_relu";
  const Shape layout = check_batch_norm(op, input, running_mean, running_var, weight, bias, training, eps);
  if (residual.defined()) {
    check_same_device(op, input, residual);
    SYNCGRAD_CHECK(residual.sizes() == input.sizes(), ShapeError, op, ": residual has shape ",
                   shape_str(residual.sizes()), " but the input has shape ", shape_str(input.sizes()),
                   "; the residual is added to the normalised input elementwise, so the shapes must match");
    SYNCGRAD_CHECK(residual.dtype() == input.dtype(), DTypeError, op, ": residual has dtype ",
                   dtype_name(residual.dtype()), " but the input has ", dtype_name(input.dtype()),
                   "; convert one with .to()");
  }
  if (!kernels::batch_norm_relu_forward.has(input.device().type)) {
    BatchNormResult result = batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps);
    if (residual.defined()) add_(result.output, residual);
    relu_(result.output);
    return result;
  }
  BatchNormResult result = batch_norm_buffers(input, layout);
  if (keep_relu_mask) {
    result.relu_mask = empty({layout[0], layout[1], (layout[2] + 63) / 64},
                             {.dtype = DType::i64, .device = input.device()});
  }
  kernels::batch_norm_relu_forward(input.device(), result.output, result.relu_mask, result.save_mean,
                                   result.save_invstd, contiguous_as(input, layout),
                                   residual.defined() ? contiguous_as(residual, layout) : Tensor(), weight, bias,
                                   running_mean, running_var, training, momentum, eps);
  bump_running_stats(training, running_mean, running_var);
  result.output = view(result.output, input.sizes());
  return result;
}

NormGrads batch_norm_backward(const Tensor& grad_out, const Tensor& input, const Tensor& save_mean,
                              const Tensor& save_invstd, const Tensor& weight, bool training,
                              const NormGradRequest& request) {
  Shape layout = batch_norm_layout(input);
  Device device = input.device();
  NormGrads grads{request.input ? empty(layout, {.dtype = input.dtype(), .device = device}) : Tensor(),
                  grad_buffer({layout[1]}, request.weight, device), grad_buffer({layout[1]}, request.bias, device)};
  kernels::batch_norm_backward(device, grads.grad_input, grads.grad_weight, grads.grad_bias,
                               contiguous_as(to(grad_out, input.dtype()), layout), contiguous_as(input, layout),
                               save_mean, save_invstd, weight, training);
  if (grads.grad_input.defined()) grads.grad_input = view(grads.grad_input, input.sizes());
  return grads;
}

BatchNormReluGrads batch_norm_relu_backward(const Tensor& grad_out, const Tensor& output, const Tensor& relu_mask,
                                            const Tensor& input, const Tensor& save_mean, const Tensor& save_invstd,
                                            const Tensor& weight, bool training, const NormGradRequest& request,
                                            bool residual_grad) {
  const Device device = input.device();
  SYNCGRAD_CHECK(output.defined() || relu_mask.defined(), ValueError,
                 "batch_norm_relu_backward: neither the output nor a relu_mask was given; pass what batch_norm_relu "
                 "returned (its relu_mask where defined, else its output)");
  if (!relu_mask.defined() || !kernels::batch_norm_relu_backward.has(device.type)) {
    Tensor g = unary_backward(UnaryOp::relu, to(grad_out, input.dtype()), output);
    return {batch_norm_backward(g, input, save_mean, save_invstd, weight, training, request),
            residual_grad ? g : Tensor()};
  }
  const Shape layout = batch_norm_layout(input);
  const TensorOptions options{.dtype = input.dtype(), .device = device};
  BatchNormReluGrads grads{{request.input ? empty(layout, options) : Tensor(),
                            grad_buffer({layout[1]}, request.weight, device),
                            grad_buffer({layout[1]}, request.bias, device)},
                           residual_grad ? empty(layout, options) : Tensor()};
  const Shape mask_shape{layout[0], layout[1], (layout[2] + 63) / 64};
  SYNCGRAD_CHECK(relu_mask.dtype() == DType::i64 && relu_mask.sizes() == mask_shape && relu_mask.is_contiguous(),
                 ShapeError, "batch_norm_relu_backward: relu_mask is ", dtype_name(relu_mask.dtype()), " ",
                 shape_str(relu_mask.sizes()), " but an input of shape ", shape_str(input.sizes()),
                 " needs a contiguous int64 ", shape_str(mask_shape),
                 "; pass the relu_mask batch_norm_relu returned for this input");
  kernels::batch_norm_relu_backward(device, grads.norm.grad_input, grads.norm.grad_weight, grads.norm.grad_bias,
                                    grads.grad_residual, contiguous_as(to(grad_out, input.dtype()), layout),
                                    relu_mask, contiguous_as(input, layout), save_mean, save_invstd, weight,
                                    training);
  if (grads.norm.grad_input.defined()) grads.norm.grad_input = view(grads.norm.grad_input, input.sizes());
  if (grads.grad_residual.defined()) grads.grad_residual = view(grads.grad_residual, input.sizes());
  return grads;
}

LayerNormResult layer_norm(const Tensor& input, const Shape& normalized_shape, const Tensor& weight,
                           const Tensor& bias, double eps) {
  constexpr const char* op = "layer_norm";
  check_floating_input(op, input);
  SYNCGRAD_CHECK(!normalized_shape.empty(), ValueError, op,
                 ": normalized_shape is empty; give at least the last dim's size, e.g. [",
                 (input.dim() > 0 ? std::to_string(input.sizes().back()) : std::string("D")), "]");
  int64_t lead = input.dim() - static_cast<int64_t>(normalized_shape.size());
  if (lead < 0 || !std::equal(normalized_shape.begin(), normalized_shape.end(), input.sizes().begin() + lead)) {
    std::string expected = shape_str(normalized_shape);
    throw ShapeError(std::string(op) + ": normalized_shape " + expected + " does not match the last dims of input " +
                     "shape " + shape_str(input.sizes()) + "; expects input of shape [*, " +
                     expected.substr(1));
  }
  check_param(op, "weight", weight, input, normalized_shape, "normalized_shape");
  check_param(op, "bias", bias, input, normalized_shape, "normalized_shape");
  SYNCGRAD_CHECK(!(eps < 0), ValueError, op, ": eps must be >= 0, got ", std::to_string(eps));

  Shape layout = layer_norm_layout(input, normalized_shape);
  DType stats = norm_stats_dtype(input.dtype());
  Tensor out = empty(layout, {.dtype = input.dtype(), .device = input.device()});
  LayerNormResult result{view(out, input.sizes()), empty({layout[0]}, {.dtype = stats, .device = input.device()}),
                         empty({layout[0]}, {.dtype = stats, .device = input.device()})};
  kernels::layer_norm_forward(input.device(), out, result.save_mean, result.save_rstd, contiguous_as(input, layout),
                              param_as_vector(weight, layout[1]), param_as_vector(bias, layout[1]), eps);
  return result;
}

NormGrads layer_norm_backward(const Tensor& grad_out, const Tensor& input, const Shape& normalized_shape,
                              const Tensor& save_mean, const Tensor& save_rstd, const Tensor& weight,
                              const NormGradRequest& request) {
  Shape layout = layer_norm_layout(input, normalized_shape);
  Device device = input.device();
  NormGrads grads{request.input ? empty(layout, {.dtype = input.dtype(), .device = device}) : Tensor(),
                  grad_buffer({layout[1]}, request.weight, device), grad_buffer({layout[1]}, request.bias, device)};
  kernels::layer_norm_backward(device, grads.grad_input, grads.grad_weight, grads.grad_bias,
                               contiguous_as(to(grad_out, input.dtype()), layout), contiguous_as(input, layout),
                               save_mean, save_rstd, param_as_vector(weight, layout[1]));
  if (grads.grad_input.defined()) grads.grad_input = view(grads.grad_input, input.sizes());
  if (grads.grad_weight.defined()) grads.grad_weight = view(grads.grad_weight, normalized_shape);
  if (grads.grad_bias.defined()) grads.grad_bias = view(grads.grad_bias, normalized_shape);
  return grads;
}

}  // namespace raw
}  // namespace syncgrad
