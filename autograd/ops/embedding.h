// Differentiable embedding lookup (PyTorch's F.embedding semantics, dense gradient).
#pragma once

#include <optional>

#include "tensor/tensor.h"

namespace syncgrad {

// weight (num_embeddings, embedding_dim), indices i64/i32 of any shape -> (*indices.shape, embedding_dim):
// row indices[...] of weight. An index outside [0, num_embeddings) is an IndexError. The gradient of weight
// is dense: the output gradient rows added into the rows they were read from, except the padding_idx row
// (padding_idx in [-num_embeddings, num_embeddings); negative counts from the end), which gets none.
Tensor embedding(const Tensor& weight, const Tensor& indices, std::optional<int64_t> padding_idx = std::nullopt);

}  // namespace syncgrad
