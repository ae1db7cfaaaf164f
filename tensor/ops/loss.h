// Raw (non-differentiable) losses with PyTorch's semantics: cross_entropy (fused log_softmax + nll with
// ignore_index and label smoothing), nll_loss, mse_loss, their backward formulas, and one_hot.
// Differentiable versions are in autograd/ops/loss.h.
#pragma once

#include "tensor/dispatch.h"
#include "tensor/tensor.h"

namespace syncgrad {

enum class Reduction : uint8_t { none, mean, sum };

struct CrossEntropyOptions {
  Reduction reduction = Reduction::mean;
  int64_t ignore_index = -100;   // targets equal to this contribute nothing and are not counted by mean
  double label_smoothing = 0.0;  // in [0, 1): the target mixes with the uniform distribution over classes
};

struct NLLLossOptions {
  Reduction reduction = Reduction::mean;
  int64_t ignore_index = -100;
};

// What a loss kernel learnt about the class-index targets: the first out-of-range one (flat position and value,
// position -1 when all are valid) and how many are not ignored (meaningless once a target is out of range: the
// caller then throws).
struct TargetScan {
  int64_t invalid_position = -1;
  int64_t invalid_value = 0;
  int64_t valid = 0;
};

namespace kernels {
// logits contiguous (N, C, S); target contiguous int64 (N, S). Writes losses and lse (both (N, S), f64 for
// f64 logits, else f32): lse = logsumexp over C, loss = (1-s)(lse - x_t) + s(lse - mean_c x_c); 0 if ignored.
extern KernelSlot<TargetScan(const Tensor& losses, const Tensor& lse, const Tensor& logits, const Tensor& target,
                             int64_t ignore_index, double label_smoothing)>
    cross_entropy;
// grad_logits (N, C, S) in logits' dtype = weights * (softmax - (1-s) one_hot - s/C); 0 on ignored positions.
// weights (N, S), lse's dtype: the incoming gradient of each position's loss.
extern KernelSlot<void(const Tensor& grad_logits, const Tensor& logits, const Tensor& lse, const Tensor& target,
                       const Tensor& weights, int64_t ignore_index, double label_smoothing)>
    cross_entropy_backward;
// log_probs contiguous (N, C, S); losses (N, S) as for cross_entropy: -log_probs[n, t, s], 0 if ignored.
extern KernelSlot<TargetScan(const Tensor& losses, const Tensor& log_probs, const Tensor& target,
                             int64_t ignore_index)>
    nll_loss;
// grad_in (N, C, S) zeroed, log_probs' dtype: grad_in[n, t, s] = -weights[n, s] unless ignored.
extern KernelSlot<void(const Tensor& grad_in, const Tensor& weights, const Tensor& target, int64_t ignore_index)>
    nll_loss_backward;
// out (*indices.shape, C) int64 zeroed, indices contiguous int64: sets out[..., index] = 1; reports indices
// outside [0, C).
extern KernelSlot<TargetScan(const Tensor& out, const Tensor& indices)> one_hot;
}  // namespace kernels

const char* reduction_name(Reduction reduction);

namespace raw {

// Forward state kept for the fused backward.
struct CrossEntropyResult {
  Tensor loss;
  Tensor lse;         // (N, S) per-position logsumexp of the logits
  int64_t valid = 0;  // targets not equal to ignore_index
};

// logits (N, C) or (N, C, d1, ...) or (C); target int64 (N) or (N, d1, ...) or () with values in [0, C).
CrossEntropyResult cross_entropy_forward(const Tensor& logits, const Tensor& target,
                                         const CrossEntropyOptions& options = {});
Tensor cross_entropy(const Tensor& logits, const Tensor& target, const CrossEntropyOptions& options = {});
Tensor cross_entropy_backward(const Tensor& grad, const Tensor& logits, const Tensor& target,
                              const CrossEntropyResult& forward, const CrossEntropyOptions& options);

struct NLLLossResult {
  Tensor loss;
  int64_t valid = 0;  // targets not equal to ignore_index
};

// Negative log likelihood of class-index targets, log_probs laid out like cross_entropy's logits.
NLLLossResult nll_loss_forward(const Tensor& log_probs, const Tensor& target, const NLLLossOptions& options = {});
Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const NLLLossOptions& options = {});
// Needs only the log_probs' shape: the gradient does not depend on their values.
Tensor nll_loss_backward(const Tensor& grad, const Shape& log_probs_shape, const Tensor& target,
                         const NLLLossResult& forward, const NLLLossOptions& options);

// Mean (or sum, or elementwise) squared error; input and target of the same shape.
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::mean);
// Gradient with respect to the input (the target's is its negation).
Tensor mse_loss_backward(const Tensor& grad, const Tensor& input, const Tensor& target, Reduction reduction);

// (*indices.shape, num_classes) int64 with a 1 at each index; num_classes -1 means max(indices) + 1.
Tensor one_hot(const Tensor& indices, int64_t num_classes = -1);

}  // namespace raw
}  // namespace syncgrad
