// Differentiable batch norm and layer norm (PyTorch's F.batch_norm / F.layer_norm semantics).
#pragma once

#include "tensor/tensor.h"

namespace syncgrad {

// input (N, C) or (N, C, *); running_mean, running_var, weight, bias: (C) or undefined Tensor().
// training: normalises with the batch mean and biased variance and, when running stats are given, updates
// them in place: running = (1 - momentum) * running + momentum * batch (unbiased variance).
// eval (training = false): normalises with the running stats, which are then required.
// Gradients flow to input, weight and bias (never to the running stats).
Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight = {}, const Tensor& bias = {}, bool training = false, double momentum = 0.1,
                  double eps = 1e-5);

// relu(batch_norm(input, ...) + residual), as the three ops (residual: undefined, or input's shape), without their
// intermediate tensors where the device has the fused kernels (the CPU: each group of channels is normalised,
// added to and clamped while it is in cache). Backward finds where the relu let the gradient through from the
// output, which it keeps (the next layer's input: no extra memory).
// Gradients flow to input, weight, bias and residual.
Tensor batch_norm_relu(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                       const Tensor& weight = {}, const Tensor& bias = {}, bool training = false,
                       double momentum = 0.1, double eps = 1e-5, const Tensor& residual = {});

// Normalises over the last normalized_shape.size() dims (each row to mean 0, biased variance 1), then
// applies the elementwise affine weight and bias (shape normalized_shape) when given.
Tensor layer_norm(const Tensor& input, const Shape& normalized_shape, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5);

}  // namespace syncgrad
