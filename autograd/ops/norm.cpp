// Differentiable batch norm and layer norm: forward through the fused raw ops, backward through their fused
// backward kernels (grad_input, grad_weight and grad_bias in one call).
#include "autograd/ops/norm.h"

#include "autograd/autocast.h"
#include "autograd/meta.h"
#include "autograd/ops/views.h"
#include "tensor/ops/norm.h"

namespace syncgrad {
namespace {

using autograd::GradList;
using autograd::Node;
using autograd::SavedTensor;

// The dtypes of the weight and bias gradients (float32 for an absent parameter).
struct ParamDTypes {
  DType weight = DType::f32, bias = DType::f32;
};

ParamDTypes param_dtypes(const Tensor& weight, const Tensor& bias) {
  return {weight.defined() ? weight.dtype() : DType::f32, bias.defined() ? bias.dtype() : DType::f32};
}

// The gradients a norm node owes: those of its inputs (input, weight, bias) whose edges lead somewhere.
raw::NormGradRequest request_for(const Node& node, ParamDTypes dtypes) {
  auto wanted = [&](size_t i, DType dtype) {
    return node.needs_input_grad(i) ? std::optional<DType>(dtype) : std::nullopt;
  };
  return {.input = node.needs_input_grad(0), .weight = wanted(1, dtypes.weight), .bias = wanted(2, dtypes.bias)};
}

// Whether batch norm under autocast normalises its float16/bfloat16 input as it is: on the CPU, as PyTorch's CPU
// autocast does (batch norm is on neither of its lists). The CPU kernels take the statistics in double, normalise
// in float32 and take float32 parameters and running statistics, so a conv's bfloat16 output is normalised
// without a float32 copy, and the next conv reads the bfloat16 result without a cast (ResNet-20 spent ~7% of a
// step on those two casts). Elsewhere (CUDA) batch norm runs in float32 under autocast.
bool normalises_half_input(const Tensor& input) {
  const bool half = input.dtype() == DType::bf16 || input.dtype() == DType::f16;
  return half && input.device().type == DeviceType::kCPU && is_autocast_enabled(DeviceType::kCPU);
}

}  // namespace

Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, double momentum, double eps) {
  // The running statistics are updated in place, so they are never cast.
  if (!normalises_half_input(input)) {
    if (auto c = autograd::autocast_operands(autograd::CastPolicy::fp32, {&input, &weight, &bias})) {
      return batch_norm(c[0], running_mean, running_var, c[1], c[2], training, momentum, eps);
    }
  }
  raw::BatchNormResult result =
      raw::batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps);
  if (autograd::any_requires_grad({&input, &weight, &bias})) {
    auto backward = [input = SavedTensor(input), weight = SavedTensor(weight),
                     save_mean = SavedTensor(result.save_mean), save_invstd = SavedTensor(result.save_invstd),
                     dtypes = param_dtypes(weight, bias), training](const Node& node, GradList&& g) {
      raw::NormGradRequest request = request_for(node, dtypes);
      raw::NormGrads grads = raw::batch_norm_backward(g[0], input.get(node), save_mean.get(node),
                                                      save_invstd.get(node), weight.get(node), training, request);
      return GradList{grads.grad_input, grads.grad_weight, grads.grad_bias};
    };
    autograd::record<"BatchNormBackward">({&input, &weight, &bias}, {&result.output}, std::move(backward));
  }
  return result.output;
}

Tensor batch_norm_relu(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                       const Tensor& weight, const Tensor& bias, bool training, double momentum, double eps,
                       const Tensor& residual) {
  if (normalises_half_input(input)) {  // a float32 or other half residual is added in the input's dtype
    const bool cast_residual = residual.defined() && residual.dtype() != input.dtype() &&
                               (residual.dtype() == DType::f32 || residual.dtype() == DType::bf16 ||
                                residual.dtype() == DType::f16);
    if (cast_residual) {
      return batch_norm_relu(input, running_mean, running_var, weight, bias, training, momentum, eps,
                             to(residual, input.dtype()));
    }
  } else if (auto c = autograd::autocast_operands(autograd::CastPolicy::fp32, {&input, &weight, &bias, &residual})) {
    return batch_norm_relu(c[0], running_mean, running_var, c[1], c[2], training, momentum, eps, c[3]);
  }
  const bool needs_grad = autograd::any_requires_grad({&input, &weight, &bias, &residual});
  raw::BatchNormResult result = raw::batch_norm_relu(input, residual, running_mean, running_var, weight, bias,
                                                     training, momentum, eps, needs_grad);
  if (needs_grad) {
    // The relu's bit mask where the fused kernel kept one (the output may then change in place freely), else the
    // output itself.
    const bool masked = result.relu_mask.defined();
    auto backward = [input = SavedTensor(input), weight = SavedTensor(weight),
                     save_mean = SavedTensor(result.save_mean), save_invstd = SavedTensor(result.save_invstd),
                     output = masked ? SavedTensor() : SavedTensor(result.output), relu_mask = result.relu_mask,
                     dtypes = param_dtypes(weight, bias), training](const Node& node, GradList&& g) {
      raw::BatchNormReluGrads grads = raw::batch_norm_relu_backward(
          g[0], output.defined() ? output.get(node) : Tensor(), relu_mask, input.get(node), save_mean.get(node),
          save_invstd.get(node), weight.get(node), training, request_for(node, dtypes), node.needs_input_grad(3));
      return GradList{grads.norm.grad_input, grads.norm.grad_weight, grads.norm.grad_bias, grads.grad_residual};
    };
    autograd::record<"BatchNormReluBackward">({&input, &weight, &bias, &residual}, {&result.output},
                                              std::move(backward));
  }
  return result.output;
}

Tensor layer_norm(const Tensor& input, const Shape& normalized_shape, const Tensor& weight, const Tensor& bias,
                  double eps) {
  if (auto c = autograd::autocast_operands(autograd::CastPolicy::fp32, {&input, &weight, &bias})) {
    return layer_norm(c[0], normalized_shape, c[1], c[2], eps);
  }
  raw::LayerNormResult result = raw::layer_norm(input, normalized_shape, weight, bias, eps);
  if (autograd::any_requires_grad({&input, &weight, &bias})) {
    auto backward = [input = SavedTensor(input), weight = SavedTensor(weight),
                     save_mean = SavedTensor(result.save_mean), save_rstd = SavedTensor(result.save_rstd),
                     normalized_shape, dtypes = param_dtypes(weight, bias)](const Node& node, GradList&& g) {
      raw::NormGradRequest request = request_for(node, dtypes);
      raw::NormGrads grads = raw::layer_norm_backward(g[0], input.get(node), normalized_shape, save_mean.get(node),
                                                      save_rstd.get(node), weight.get(node), request);
      return GradList{grads.grad_input, grads.grad_weight, grads.grad_bias};
    };
    autograd::record<"LayerNormBackward">({&input, &weight, &bias}, {&result.output}, std::move(backward));
  }
  return result.output;
}

}  // namespace syncgrad
