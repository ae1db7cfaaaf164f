// Differentiable fused scaled dot-product attention (PyTorch's F.scaled_dot_product_attention without masks
// other than the causal one, and without dropout).
#pragma once

#include <optional>

#include "tensor/tensor.h"

namespace syncgrad {

// softmax(q k^T * scale [+ causal mask]) v for q (B, H, L, E), k (B, H, S, E), v (B, H, S, Ev) -> (B, H, L, Ev)
// (or the same without B); scale defaults to 1 / sqrt(E). With is_causal, query i sees keys 0..i. One fused
// kernel each way (tensor/ops/attention.h): the L x S probabilities are never stored, and a 4-D result is laid
// out (B, L, H, Ev) in memory, so out.transpose(1, 2).reshape({B, L, H * Ev}) is a view. Gradients reach q, k
// and v. Under autocast it runs in float32.
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool is_causal = false,
                                    std::optional<double> scale = std::nullopt);

}  // namespace syncgrad
