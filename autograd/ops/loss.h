// Differentiable losses with PyTorch's semantics and defaults (reduction mean, ignore_index -100), and one_hot.
#pragma once

#include "tensor/ops/loss.h"
#include "tensor/tensor.h"

namespace syncgrad {

// logits (N, C) / (N, C, d1, ...) / (C); target int64 class indices (N) / (N, d1, ...) / (). Fused
// log_softmax + nll; label smoothing mixes the target with the uniform distribution over the C classes;
// mean divides by the number of targets not equal to ignore_index.
//   cross_entropy(logits, target, {.ignore_index = 0, .label_smoothing = 0.1})
Tensor cross_entropy(const Tensor& logits, const Tensor& target, const CrossEntropyOptions& options = {});
// Negative log likelihood of log-probabilities (e.g. log_softmax output), laid out like cross_entropy's logits.
Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const NLLLossOptions& options = {});
// Squared error; input and target must have the same shape. Differentiable in both.
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::mean);
// (*indices.shape, num_classes) int64 with a 1 at each index; num_classes -1 infers max + 1. Not differentiable.
Tensor one_hot(const Tensor& indices, int64_t num_classes = -1);

}  // namespace syncgrad
