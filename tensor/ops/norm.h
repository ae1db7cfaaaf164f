// Raw (non-differentiable) normalisation ops: batch norm over the channel dim and layer norm over the last
// dims, each with a fused forward and a fused backward. The autograd layer (autograd/ops/norm.h) wraps them.
#pragma once

#include <optional>

#include "tensor/dispatch.h"
#include "tensor/tensor.h"

namespace syncgrad {

namespace kernels {
// input, out: contiguous (N, C, L) of one floating dtype. weight, bias, running_mean, running_var: (C) of any
// floating dtype, or undefined. save_mean, save_invstd: contiguous (C) of the statistics dtype (f64 for f64
// input, else f32). Training: normalises with the batch mean and biased variance, stores them in save_*, and
// updates the running stats in place with the unbiased variance; eval: normalises with the running stats
// (copied into save_*).
extern KernelSlot<void(const Tensor& out, const Tensor& save_mean, const Tensor& save_invstd, const Tensor& input,
                       const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                       const Tensor& running_var, bool training, double momentum, double eps)>
    batch_norm_forward;
// grad_out, input: contiguous (N, C, L); mean, invstd: as saved by the forward; weight (C) or undefined.
// Writes each defined output: grad_input (N, C, L), grad_weight and grad_bias (C, weight's/bias's dtype).
// training: the statistics depend on the input; eval: they are constants.
extern KernelSlot<void(const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad_bias,
                       const Tensor& grad_out, const Tensor& input, const Tensor& mean, const Tensor& invstd,
                       const Tensor& weight, bool training)>
    batch_norm_backward;
// batch_norm_forward followed in the same pass by + residual (when defined: contiguous (N, C, L) of input's dtype)
// and max(., 0): out = relu(batch_norm(input) + residual), each step rounded to the dtype as the separate ops
// round. relu_mask, when defined: contiguous int64 (N, C, ceil(L / 64)), receives one bit per element, set where
// out > 0 (bit l % 64 of word l / 64 of run (n, c); the unused high bits zero). Optional: raw::batch_norm_relu
// composes the separate ops on devices without it.
extern KernelSlot<void(const Tensor& out, const Tensor& relu_mask, const Tensor& save_mean,
                       const Tensor& save_invstd, const Tensor& input, const Tensor& residual, const Tensor& weight,
                       const Tensor& bias, const Tensor& running_mean, const Tensor& running_var, bool training,
                       double momentum, double eps)>
    batch_norm_relu_forward;
// The backward of batch_norm_relu_forward given the relu_mask it wrote: g = grad_out where the mask's bit is set,
// else 0; grad_residual (when defined) = g; the rest as batch_norm_backward of g. Optional, as
// batch_norm_relu_forward.
extern KernelSlot<void(const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad_bias,
                       const Tensor& grad_residual, const Tensor& grad_out, const Tensor& relu_mask,
                       const Tensor& input, const Tensor& mean, const Tensor& invstd, const Tensor& weight,
                       bool training)>
    batch_norm_relu_backward;
// input, out: contiguous (M, K); weight, bias: (K) of any floating dtype, or undefined; save_mean,
// save_rstd: contiguous (M) of the statistics dtype. Normalises each row with its mean and biased variance.
extern KernelSlot<void(const Tensor& out, const Tensor& save_mean, const Tensor& save_rstd, const Tensor& input,
                       const Tensor& weight, const Tensor& bias, double eps)>
    layer_norm_forward;
// grad_out, input: contiguous (M, K); mean, rstd: (M) as saved; weight (K) or undefined. Writes each defined
// output: grad_input (M, K), grad_weight and grad_bias (K, weight's/bias's dtype).
extern KernelSlot<void(const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad_bias,
                       const Tensor& grad_out, const Tensor& input, const Tensor& mean, const Tensor& rstd,
                       const Tensor& weight)>
    layer_norm_backward;
}  // namespace kernels

// The dtype batch/layer norm statistics are kept in: f64 for f64 inputs, f32 otherwise.
DType norm_stats_dtype(DType input);

namespace raw {

struct BatchNormResult {
  Tensor output;       // input's shape
  Tensor save_mean;    // (C): the mean used (batch mean in training, running mean in eval)
  Tensor save_invstd;  // (C): 1 / sqrt(var + eps) for the variance used
  Tensor relu_mask;    // batch_norm_relu only, where the fused kernel kept it: where output > 0, one bit each
};

// input (N, C) or (N, C, *); running_mean/running_var, weight, bias: (C) or undefined (running stats are
// required in eval). In training the running stats, when given, are updated in place:
// running = (1 - momentum) * running + momentum * batch (unbiased batch variance).
BatchNormResult batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                           const Tensor& weight, const Tensor& bias, bool training, double momentum, double eps);

// Which gradients a norm backward computes; a parameter's gradient is made in the dtype given for it.
struct NormGradRequest {
  bool input = true;
  std::optional<DType> weight;  // weight's dtype, when its gradient is wanted
  std::optional<DType> bias;    // bias's dtype, when its gradient is wanted
};

struct NormGrads {
  Tensor grad_input;   // input's shape
  Tensor grad_weight;  // the parameter's shape; undefined when not requested
  Tensor grad_bias;
};

// Gradients of batch_norm given its saved statistics (training selects the batch-statistics formula).
NormGrads batch_norm_backward(const Tensor& grad_out, const Tensor& input, const Tensor& save_mean,
                              const Tensor& save_invstd, const Tensor& weight, bool training,
                              const NormGradRequest& request);

// relu(batch_norm(input, ...) + residual) in one fused kernel where the device has it (the CPU), else through the
// separate ops; residual: undefined, or input's shape and dtype. The result's save_* are batch_norm's; with
// keep_relu_mask, the fused kernel also keeps relu_mask for the backward (undefined where the ops were composed).
BatchNormResult batch_norm_relu(const Tensor& input, const Tensor& residual, const Tensor& running_mean,
                                const Tensor& running_var, const Tensor& weight, const Tensor& bias, bool training,
                                double momentum, double eps, bool keep_relu_mask = false);

struct BatchNormReluGrads {
  NormGrads norm;
  Tensor grad_residual;  // undefined unless requested
};

// Gradients of batch_norm_relu given what it saved: its relu_mask where the fused kernel kept one, else its
// output (whose positive entries pass grad_out on; read only when relu_mask is undefined), and the statistics.
BatchNormReluGrads batch_norm_relu_backward(const Tensor& grad_out, const Tensor& output, const Tensor& relu_mask,
                                            const Tensor& input, const Tensor& save_mean, const Tensor& save_invstd,
                                            const Tensor& weight, bool training, const NormGradRequest& request,
                                            bool residual_grad);

struct LayerNormResult {
  Tensor output;     // input's shape
  Tensor save_mean;  // (M): one per normalised row, M = numel / prod(normalized_shape)
  Tensor save_rstd;  // (M): 1 / sqrt(var + eps)
};

// Normalises over the last normalized_shape.size() dims, whose sizes must equal normalized_shape;
// weight and bias have shape normalized_shape, or are undefined.
LayerNormResult layer_norm(const Tensor& input, const Shape& normalized_shape, const Tensor& weight,
                           const Tensor& bias, double eps);

NormGrads layer_norm_backward(const Tensor& grad_out, const Tensor& input, const Shape& normalized_shape,
                              const Tensor& save_mean, const Tensor& save_rstd, const Tensor& weight,
                              const NormGradRequest& request);

}  // namespace raw

}  // namespace syncgrad
