// Embedding: a lookup table of num_embeddings vectors of size embedding_dim, PyTorch's torch.nn.Embedding.
#pragma once

#include <optional>

#include "nn/module.h"
#include "tensor/generator.h"

namespace syncgrad::nn {

class Embedding : public Module {
 public:
  // weight (num_embeddings, embedding_dim) ~ N(0, 1), with the padding_idx row zeroed; padding_idx in
  // [-num_embeddings, num_embeddings) (negative counts from the end) gets no gradient.
  Embedding(int64_t num_embeddings, int64_t embedding_dim, std::optional<int64_t> padding_idx = std::nullopt,
            Generator* gen = nullptr);
  // indices (*) of int64/int32 -> (*, embedding_dim)
  Tensor forward(const Tensor& indices) override;

  int64_t num_embeddings, embedding_dim;
  std::optional<int64_t> padding_idx;  // normalised to [0, num_embeddings)
  Tensor weight;

 protected:
  std::string extra_repr() const override;
};

}  // namespace syncgrad::nn
