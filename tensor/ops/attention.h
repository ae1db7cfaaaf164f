// Raw (non-differentiable) fused scaled dot-product attention, softmax(q k^T * scale + mask) v, and its
// backward. The forward keeps only the output and each query row's log-sum-exp of the scores; the backward
// recomputes the attention probabilities from them, so memory grows with the sequence length, not with its
// square. With is_causal, query row i attends to keys 0..i (PyTorch's is_causal: the mask is aligned at the
// top left) and the masked-out blocks are never computed. The differentiable version is in
// autograd/ops/attention.h.
#pragma once

#include <optional>

#include "tensor/dispatch.h"
#include "tensor/tensor.h"

namespace syncgrad {

namespace kernels {
// q (B, H, L, E), k (B, H, S, E), v (B, H, S, Ev): f32 or f64, any strides with a unit last stride.
// out (B, H, L, Ev) with a unit last stride; lse (B, H, L) contiguous: each row's log(sum(exp(scores))).
extern KernelSlot<void(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k, const Tensor& v,
                       bool causal, double scale)>
    attention_forward;
// grad_q, grad_k, grad_v: shaped like q, k, v with unit last strides, overwritten. grad_out, out: (B, H, L, Ev)
// with unit last strides; lse as the forward wrote it.
extern KernelSlot<void(const Tensor& grad_q, const Tensor& grad_k, const Tensor& grad_v, const Tensor& grad_out,
                       const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                       bool causal, double scale)>
    attention_backward;
}  // namespace kernels

namespace raw {

struct AttentionResult {
  Tensor out;  // (..., L, Ev) in q's dtype
  Tensor lse;  // (..., L) f32 (f64 for f64 inputs): log-sum-exp of each query row's scaled, masked scores
};

// q (B, H, L, E) or (N, L, E), k (.., S, E), v (.., S, Ev) with equal leading dims, one floating dtype and
// device; scale defaults to 1 / sqrt(E). f16/bf16 inputs are computed in f32. A 4-D result is a view whose
// memory is laid out (B, L, H, Ev), so out.transpose(1, 2).reshape({B, L, H * Ev}) copies nothing. ShapeError
// naming the shapes when they do not fit (or S == 0), DTypeError for mixed or non-floating dtypes.
AttentionResult scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool is_causal = false,
                                             std::optional<double> scale = std::nullopt);

struct AttentionGrads {
  // Shaped and typed like the inputs; 4-D ones laid out (B, L, H, E) in memory, or, for q, k and v split from
  // one (B, L, 3 * H * E) projection (the heads of its thirds), views of one such buffer at the same offsets.
  Tensor q, k, v;
};

// The gradients for q, k and v, given the forward's inputs and result.
AttentionGrads scaled_dot_product_attention_backward(const Tensor& grad_out, const Tensor& q, const Tensor& k,
                                                     const Tensor& v, const AttentionResult& forward, bool is_causal,
                                                     std::optional<double> scale = std::nullopt);

}  // namespace raw
}  // namespace syncgrad
