// Embedding layer: N(0, 1) table with a zero padding row, forward through syncgrad::embedding.
#include "nn/embedding.h"

#include "autograd/grad_mode.h"
#include "autograd/ops/embedding.h"
#include "nn/init.h"
#include "tensor/check.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/views.h"

namespace syncgrad::nn {

Embedding::Embedding(int64_t num_embeddings, int64_t embedding_dim, std::optional<int64_t> padding_idx,
                     Generator* gen)
    : Module("Embedding"), num_embeddings(num_embeddings), embedding_dim(embedding_dim) {
  SYNCGRAD_CHECK(num_embeddings >= 0 && embedding_dim >= 0, ValueError,
                 "Embedding: sizes must be non-negative, got num_embeddings=", num_embeddings,
                 ", embedding_dim=", embedding_dim);
  if (padding_idx) {
    SYNCGRAD_CHECK(*padding_idx >= -num_embeddings && *padding_idx < num_embeddings, ValueError,
                   "Embedding: padding_idx ", *padding_idx, " is outside [", -num_embeddings, ", ", num_embeddings,
                   ")");
    this->padding_idx = *padding_idx < 0 ? *padding_idx + num_embeddings : *padding_idx;
  }
  weight = register_parameter("weight", empty({num_embeddings, embedding_dim}));
  init::normal_(weight, 0.0, 1.0, gen);
  if (this->padding_idx) init::zeros_(raw::select(weight, 0, *this->padding_idx));
}

Tensor Embedding::forward(const Tensor& indices) { return embedding(weight, indices, padding_idx); }

std::string Embedding::extra_repr() const {
  std::string out = std::to_string(num_embeddings) + ", " + std::to_string(embedding_dim);
  if (padding_idx) out += ", padding_idx=" + std::to_string(*padding_idx);
  return out;
}

}  // namespace syncgrad::nn
