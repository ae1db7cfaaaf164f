// Differentiable embedding: the backward index-adds the output gradient into a zero (num, dim) gradient.
#include "autograd/ops/embedding.h"

#include "autograd/meta.h"
#include "tensor/ops/embedding.h"

namespace syncgrad {
namespace {

using autograd::GradList;
using autograd::NodeOf;
using autograd::SavedTensor;

struct EmbeddingBackward final : NodeOf<EmbeddingBackward> {
  static constexpr const char* kName = "EmbeddingBackward";
  SavedTensor indices;
  int64_t num_embeddings = 0;
  std::optional<int64_t> padding_idx;
  GradList apply(GradList&& g) override {
    return {raw::embedding_backward(g[0], indices.get(*this), num_embeddings, padding_idx), Tensor()};
  }
  void release_saved() override { indices.reset(); }
};

}  // namespace

Tensor embedding(const Tensor& weight, const Tensor& indices, std::optional<int64_t> padding_idx) {
  Tensor out = raw::embedding(weight, indices);
  std::optional<int64_t> padding;
  if (padding_idx) padding = raw::embedding_padding_index(*padding_idx, weight.sizes()[0]);
  if (autograd::any_requires_grad({&weight})) {
    auto node = std::make_shared<EmbeddingBackward>();
    node->indices = indices;
    node->num_embeddings = weight.sizes()[0];
    node->padding_idx = padding;
    autograd::record(node, {&weight, &indices}, {&out});
  }
  return out;
}

}  // namespace syncgrad
