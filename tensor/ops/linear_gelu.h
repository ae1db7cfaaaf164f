// Raw (non-differentiable) linear layer followed by GELU, gelu(input @ weight^T + bias), and its backward: the
// first half of a transformer's feed-forward block. Where the device has the fused kernels (the CPU, float32,
// tanh approximation) the product and the activation go one block of rows at a time, so the pre-activation is
// read back from cache in the forward and its gradient never leaves cache in the backward (the three products
// and the bias sum consume each block as it is made). Elsewhere the op composes raw::linear and raw::gelu. The
// differentiable version is in autograd/ops/linear_gelu.h.
#pragma once

#include "tensor/dispatch.h"
#include "tensor/ops/unary.h"
#include "tensor/tensor.h"

namespace syncgrad {

namespace kernels {
// Optional fused forward: pre (M, N) = x (M, K) @ weight (N, K)^T + bias (N), out (M, N) = gelu_tanh(pre). x, pre
// and out contiguous; weight any strides; bias contiguous or undefined (no bias); one dtype. Returns false, doing
// nothing, for operands it does not take (the op then composes the unfused ops).
extern KernelSlot<bool(const Tensor& out, const Tensor& pre, const Tensor& x, const Tensor& weight,
                       const Tensor& bias)>
    linear_gelu_forward;
// Optional fused backward of linear_gelu_forward: with g = grad_out * gelu_tanh'(pre), writes each defined output,
// grad_x (M, K) = g @ weight, grad_weight (N, K) = g^T @ x and grad_bias (N) = g summed over the rows. grad_out, pre
// and x contiguous, the outputs contiguous, weight any strides; one dtype. Returns false, doing nothing, as the
// forward.
extern KernelSlot<bool(const Tensor& grad_x, const Tensor& grad_weight, const Tensor& grad_bias,
                       const Tensor& grad_out, const Tensor& pre, const Tensor& x, const Tensor& weight)>
    linear_gelu_backward;
}  // namespace kernels

namespace raw {

struct LinearGeluResult {
  Tensor output;          // (*, out_features): gelu(pre_activation)
  Tensor pre_activation;  // (*, out_features): input @ weight^T + bias, which the backward needs
};

// input (*, in_features), weight (out_features, in_features), bias (out_features) or undefined: raw::linear's
// operands and checks (ShapeError, DTypeError naming them).
LinearGeluResult linear_gelu(const Tensor& input, const Tensor& weight, const Tensor& bias,
                             GeluApproximate approximate);

// Which gradients linear_gelu_backward computes.
struct LinearGradRequest {
  bool input = true, weight = true, bias = true;
};

struct LinearGrads {
  Tensor grad_input;   // input's shape; undefined when not requested
  Tensor grad_weight;  // (out_features, in_features)
  Tensor grad_bias;    // bias_shape
};

// Gradients of linear_gelu given grad_out (the output's shape) and what the forward saw and made: input is read
// only for weight's gradient and weight only for input's (either may be undefined when not read); bias_shape: the
// bias's shape (its gradient is summed to it, as linear's).
LinearGrads linear_gelu_backward(const Tensor& grad_out, const Tensor& input, const Tensor& weight,
                                 const Shape& bias_shape, const Tensor& pre_activation, GeluApproximate approximate,
                                 const LinearGradRequest& request);

}  // namespace raw
}  // namespace syncgrad
