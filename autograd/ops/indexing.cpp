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
using autograd::Node;
using autograd::SavedTensor;

Tensor zeros_for(const Shape& shape, const Tensor& like) {
  return zeros(shape, {.dtype = like.dtype(), .device = like.device()});
}

}  // namespace

Tensor index_select(const Tensor& input, int64_t dim, const Tensor& index) {
  Tensor out = raw::index_select(input, dim, index);
  if (autograd::any_requires_grad({&input})) {
    auto backward = [input_shape = input.sizes(), dim = wrap_dim(dim, input.dim(), "index_select"),
                     index = SavedTensor(index)](const Node& node, GradList&& g) {
      Tensor grad_in = zeros_for(input_shape, g[0]);
      raw::index_add_(grad_in, dim, index.get(node), g[0]);
      return GradList{grad_in, Tensor()};
    };
    autograd::record<"IndexSelectBackward">({&input, &index}, {&out}, std::move(backward));
  }
  return out;
}

Tensor gather(const Tensor& input, int64_t dim, const Tensor& index) {
  Tensor out = raw::gather(input, dim, index);
  if (autograd::any_requires_grad({&input})) {
    auto backward = [input_shape = input.sizes(), dim = wrap_dim(dim, input.dim(), "gather"),
                     index = SavedTensor(index)](const Node& node, GradList&& g) {
      Tensor grad_in = zeros_for(input_shape, g[0]);
      raw::scatter_add_(grad_in, dim, index.get(node), g[0]);
      return GradList{grad_in, Tensor()};
    };
    autograd::record<"GatherBackward">({&input, &index}, {&out}, std::move(backward));
  }
  return out;
}

Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  Tensor out = raw::scatter_add(self, dim, index, src);
  if (autograd::any_requires_grad({&self, &src})) {
    auto backward = [src_shape = src.sizes(), dim = wrap_dim(dim, self.dim(), "scatter_add"),
                     index = SavedTensor(index)](const Node& node, GradList&& g) {
      Tensor grad_src;
      if (node.needs_input_grad(2)) {
        Tensor idx = index.get(node);
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
      return GradList{g[0], Tensor(), grad_src};
    };
    autograd::record<"ScatterAddBackward">({&self, &index, &src}, {&out}, std::move(backward));
  }
  return out;
}

}  // namespace syncgrad
