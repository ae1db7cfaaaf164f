// Differentiable embedding: the backward index-adds the output gradient into a zero (num, dim) gradient.
#include "autograd/ops/embedding.h"

#include "autograd/meta.h"
#include "tensor/ops/embedding.h"

namespace syncgrad {

Tensor embedding(const Tensor& weight, const Tensor& indices, std::optional<int64_t> padding_idx) {
  Tensor out = raw::embedding(weight, indices);
  std::optional<int64_t> padding;
  if (padding_idx) padding = raw::embedding_padding_index(*padding_idx, weight.sizes()[0]);
  if (autograd::any_requires_grad({&weight})) {
    auto backward = [indices = autograd::SavedTensor(indices), num_embeddings = weight.sizes()[0],
                     padding](const autograd::Node& node, autograd::GradList&& g) {
      return autograd::GradList{raw::embedding_backward(g[0], indices.get(node), num_embeddings, padding), Tensor()};
    };
    autograd::record<"EmbeddingBackward">({&weight, &indices}, {&out}, std::move(backward));
  }
  return out;
}

}  // namespace syncgrad
