// Differentiable batch norm and layer norm: forward through the fused raw ops, backward through their fused
// backward kernels (grad_input, grad_weight and grad_bias in one call).
#include "autograd/ops/norm.h"

#include "autograd/autocast.h"
#include "autograd/meta.h"
#include "tensor/ops/norm.h"

namespace syncgrad {
namespace {

using autograd::GradList;
using autograd::NodeOf;
using autograd::SavedTensor;

// The gradients a norm node owes: those of its inputs (input, weight, bias) whose edges lead somewhere.
raw::NormGradRequest request_for(const autograd::Node& node, DType weight_dtype, DType bias_dtype) {
  auto wanted = [&](size_t i, DType dtype) {
    return node.next_edges[i].valid() ? std::optional<DType>(dtype) : std::nullopt;
  };
  return {.input = node.next_edges[0].valid(), .weight = wanted(1, weight_dtype), .bias = wanted(2, bias_dtype)};
}

struct BatchNormBackward final : NodeOf<BatchNormBackward> {
  static constexpr const char* kName = "BatchNormBackward";
  SavedTensor input, weight, save_mean, save_invstd;
  DType weight_dtype = DType::f32, bias_dtype = DType::f32;
  bool training = true;

  GradList apply(GradList&& g) override {
    Tensor w = weight.get(*this);
    raw::NormGradRequest request = request_for(*this, weight_dtype, bias_dtype);
    raw::NormGrads grads = raw::batch_norm_backward(g[0], input.get(*this), save_mean.get(*this),
                                                    save_invstd.get(*this), w, training, request);
    return {grads.grad_input, grads.grad_weight, grads.grad_bias};
  }
  void release_saved() override {
    input.reset();
    weight.reset();
    save_mean.reset();
    save_invstd.reset();
  }
};

struct LayerNormBackward final : NodeOf<LayerNormBackward> {
  static constexpr const char* kName = "LayerNormBackward";
  SavedTensor input, weight, save_mean, save_rstd;
  Shape normalized_shape;
  DType weight_dtype = DType::f32, bias_dtype = DType::f32;

  GradList apply(GradList&& g) override {
    Tensor w = weight.get(*this);
    raw::NormGradRequest request = request_for(*this, weight_dtype, bias_dtype);
    raw::NormGrads grads = raw::layer_norm_backward(g[0], input.get(*this), normalized_shape, save_mean.get(*this),
                                                    save_rstd.get(*this), w, request);
    return {grads.grad_input, grads.grad_weight, grads.grad_bias};
  }
  void release_saved() override {
    input.reset();
    weight.reset();
    save_mean.reset();
    save_rstd.reset();
  }
};

}  // namespace

Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, double momentum, double eps) {
  // The running statistics are updated in place, so they are never cast.
  if (auto c = autograd::autocast_operands(autograd::CastPolicy::fp32, {&input, &weight, &bias})) {
    return batch_norm(c[0], running_mean, running_var, c[1], c[2], training, momentum, eps);
  }
  raw::BatchNormResult result =
      raw::batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps);
  if (autograd::any_requires_grad({&input, &weight, &bias})) {
    auto node = std::make_shared<BatchNormBackward>();
    node->input = input;
    node->weight = weight;
    node->save_mean = result.save_mean;
    node->save_invstd = result.save_invstd;
    if (weight.defined()) node->weight_dtype = weight.dtype();
    if (bias.defined()) node->bias_dtype = bias.dtype();
    node->training = training;
    autograd::record(node, {&input, &weight, &bias}, {&result.output});
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
    auto node = std::make_shared<LayerNormBackward>();
    node->input = input;
    node->weight = weight;
    node->save_mean = result.save_mean;
    node->save_rstd = result.save_rstd;
    node->normalized_shape = normalized_shape;
    if (weight.defined()) node->weight_dtype = weight.dtype();
    if (bias.defined()) node->bias_dtype = bias.dtype();
    autograd::record(node, {&input, &weight, &bias}, {&result.output});
  }
  return result.output;
}

}  // namespace syncgrad
