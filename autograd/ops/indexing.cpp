// Differentiable index_select, gather and scatter_add. Their backwards are the dual raw ops: index_select <->
// index_add, gather <-> scatter_add, each writing into zeros of the input's shape.
#include "autograd/ops/indexing.h"

#include "autograd/meta.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/indexing.h"
#include "tensor/ops/views.h"

namespace syncgrad {
namespace {

using autograd::GradList;
using autograd::NodeOf;
using autograd::SavedTensor;

Tensor zeros_for(const Shape& shape, const Tensor& like) {
  return zeros(shape, {.dtype = like.dtype(), .device = like.device()});
}

struct IndexSelectBackward final : NodeOf<IndexSelectBackward> {
  static constexpr const char* kName = "IndexSelectBackward";
  Shape input_shape;
  int64_t dim = 0;
  SavedTensor index;
  GradList apply(GradList&& g) override {
    Tensor grad_in = zeros_for(input_shape, g[0]);
    raw::index_add_(grad_in, dim, index.get(*this), g[0]);
    return {grad_in, Tensor()};
  }
  void release_saved() override { index.reset(); }
};

struct GatherBackward final : NodeOf<GatherBackward> {
  static constexpr const char* kName = "GatherBackward";
  Shape input_shape;
  int64_t dim = 0;
  SavedTensor index;
  GradList apply(GradList&& g) override {
    Tensor grad_in = zeros_for(input_shape, g[0]);
    raw::scatter_add_(grad_in, dim, index.get(*this), g[0]);
    return {grad_in, Tensor()};
  }
  void release_saved() override { index.reset(); }
};

struct ScatterAddBackward final : NodeOf<ScatterAddBackward> {
  static constexpr const char* kName = "ScatterAddBackward";
  Shape src_shape;
  int64_t dim = 0;
  SavedTensor index;
  GradList apply(GradList&& g) override {
    Tensor grad_src;
    if (next_edges[2].valid()) {
      Tensor idx = index.get(*this);
      grad_src = raw::gather(g[0], dim, idx);
      if (idx.sizes() != src_shape) {
        // Only the leading index-shaped block of src was read; the rest gets zero gradient.
        Tensor padded = zeros_for(src_shape, g[0]);
        Tensor block = padded;
        for (int64_t k = 0; k < idx.dim(); ++k) block = raw::narrow(block, k, 0, idx.sizes()[k]);
        raw::copy_(block, grad_src);
        grad_src = padded;
      }
    }
    return {g[0], Tensor(), grad_src};
  }
  void release_saved() override { index.reset(); }
};

}  // namespace

Tensor index_select(const Tensor& input, int64_t dim, const Tensor& index) {
  Tensor out = raw::index_select(input, dim, index);
  if (autograd::any_requires_grad({&input})) {
    auto node = std::make_shared<IndexSelectBackward>();
    node->input_shape = input.sizes();
    node->dim = wrap_dim(dim, input.dim(), "index_select");
    node->index = index;
    autograd::record(node, {&input, &index}, {&out});
  }
  return out;
}

Tensor gather(const Tensor& input, int64_t dim, const Tensor& index) {
  Tensor out = raw::gather(input, dim, index);
  if (autograd::any_requires_grad({&input})) {
    auto node = std::make_shared<GatherBackward>();
    node->input_shape = input.sizes();
    node->dim = wrap_dim(dim, input.dim(), "gather");
    node->index = index;
    autograd::record(node, {&input, &index}, {&out});
  }
  return out;
}

Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  Tensor out = raw::scatter_add(self, dim, index, src);
  if (autograd::any_requires_grad({&self, &src})) {
    auto node = std::make_shared<ScatterAddBackward>();
    node->src_shape = src.sizes();
    node->dim = wrap_dim(dim, self.dim(), "scatter_add");
    node->index = index;
    autograd::record(node, {&self, &index, &src}, {&out});
  }
  return out;
}

}  // namespace syncgrad
