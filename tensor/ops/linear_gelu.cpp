// raw::linear_gelu and its backward: the fused kernels where the device registers them and takes the operands,
// raw::linear then raw::gelu (and their backward products) otherwise.
#include "tensor/ops/linear_gelu.h"

#include "tensor/ops/copy.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/linalg.h"
#include "tensor/ops/reduce.h"
#include "tensor/ops/views.h"

namespace syncgrad {

namespace kernels {
constinit KernelSlot<bool(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&)>
    linear_gelu_forward("linear_gelu");
constinit KernelSlot<bool(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                          const Tensor&)>
    linear_gelu_backward("linear_gelu_backward");
}  // namespace kernels

namespace raw {
namespace {

UnaryOp gelu_op(GeluApproximate approximate) {
  return approximate == GeluApproximate::tanh ? UnaryOp::gelu_tanh : UnaryOp::gelu;
}

// t (*, features) as contiguous rows (M, features).
Tensor contiguous_rows(const Tensor& t) { return contiguous(t.dim() == 1 ? unsqueeze(t, 0) : flatten(t, 0, -2)); }

// t's shape with its last size replaced by `features`.
Shape with_features(const Tensor& t, int64_t features) {
  Shape shape(t.sizes().begin(), t.sizes().end() - 1);
  shape.push_back(features);
  return shape;
}

}  // namespace

LinearGeluResult linear_gelu(const Tensor& input, const Tensor& weight, const Tensor& bias,
                             GeluApproximate approximate) {
  check_linear("linear_gelu", input, weight, bias);
  const int64_t out_features = weight.size(0);
  const bool whole_bias = !bias.defined() || (bias.dim() == 1 && bias.numel() == out_features);
  if (approximate == GeluApproximate::tanh && whole_bias && kernels::linear_gelu_forward.has(input.device().type)) {
    const Tensor rows = contiguous_rows(input);  // (M, in)
    const TensorOptions options{.dtype = input.dtype(), .device = input.device()};
    Tensor pre = empty({rows.size(0), out_features}, options), out = empty({rows.size(0), out_features}, options);
    if (kernels::linear_gelu_forward(input.device(), out, pre, rows, weight,
                                     bias.defined() ? contiguous(bias) : Tensor())) {
      const Shape shape = with_features(input, out_features);
      return {view(out, shape), view(pre, shape)};
    }
  }
  Tensor pre = linear(input, weight, bias);
  return {gelu(pre, approximate), pre};
}

LinearGrads linear_gelu_backward(const Tensor& grad_out, const Tensor& input, const Tensor& weight,
                                 const Shape& bias_shape, const Tensor& pre_activation, GeluApproximate approximate,
                                 const LinearGradRequest& request) {
  const Tensor grad_rows = contiguous_rows(to(grad_out, pre_activation.dtype()));  // (M, out)
  const Tensor pre_rows = contiguous_rows(pre_activation);
  const Tensor input_rows = request.weight ? contiguous_rows(input) : Tensor();  // (M, in)
  const Device device = pre_activation.device();
  const int64_t out_features = pre_activation.size(-1);
  if (approximate == GeluApproximate::tanh && kernels::linear_gelu_backward.has(device.type)) {
    const TensorOptions options{.dtype = pre_activation.dtype(), .device = device};
    LinearGrads grads{request.input ? empty({pre_rows.size(0), weight.size(1)}, options) : Tensor(),
                      request.weight ? empty({out_features, input.size(-1)}, options) : Tensor(),
                      request.bias ? empty({out_features}, options) : Tensor()};
    if (kernels::linear_gelu_backward(device, grads.grad_input, grads.grad_weight, grads.grad_bias, grad_rows,
                                      pre_rows, input_rows, weight)) {
      if (request.input) grads.grad_input = view(grads.grad_input, with_features(pre_activation, weight.size(1)));
      if (request.bias) grads.grad_bias = sum_to(grads.grad_bias, bias_shape);
      return grads;
    }
  }
  const Tensor grad_pre = unary_backward(gelu_op(approximate), grad_rows, pre_rows);  // (M, out)
  LinearGrads grads;
  if (request.input) grads.grad_input = view(mm(grad_pre, weight), with_features(pre_activation, weight.size(1)));
  if (request.weight) grads.grad_weight = mm(transpose(grad_pre, 0, 1), input_rows);
  if (request.bias) grads.grad_bias = sum_to(sum(grad_pre, {0}), bias_shape);
  return grads;
}

}  // namespace raw
}  // namespace syncgrad
