// Differentiable cat/stack/split/chunk. cat and stack record one node over all inputs whose backward slices
// the gradient; split and chunk are narrow views, differentiable through autograd/ops/views.h.
#include "autograd/ops/join.h"

#include "autograd/meta.h"
#include "autograd/ops/views.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/join.h"
#include "tensor/ops/views.h"

namespace syncgrad {
namespace {

using autograd::GradList;
using autograd::NodeOf;

struct CatBackward final : NodeOf<CatBackward> {
  static constexpr const char* kName = "CatBackward";
  int64_t dim = 0;
  std::vector<int64_t> lengths;  // along dim, per input; -1 for an input the legacy rule left out
  std::vector<DType> dtypes;     // per input: gradients go back in the input's dtype
  GradList apply(GradList&& g) override {
    GradList grads(lengths.size());
    int64_t offset = 0;
    for (size_t i = 0; i < lengths.size(); ++i) {
      if (lengths[i] < 0) {
        if (next_edges[i].valid()) grads[i] = zeros({0}, {.dtype = dtypes[i], .device = g[0].device()});
        continue;
      }
      if (next_edges[i].valid()) grads[i] = raw::to(raw::narrow(g[0], dim, offset, lengths[i]), dtypes[i]);
      offset += lengths[i];
    }
    return grads;
  }
};

struct StackBackward final : NodeOf<StackBackward> {
  static constexpr const char* kName = "StackBackward";
  int64_t dim = 0;
  std::vector<DType> dtypes;  // per input
  GradList apply(GradList&& g) override {
    GradList grads(dtypes.size());
    for (size_t i = 0; i < dtypes.size(); ++i) {
      if (next_edges[i].valid()) grads[i] = raw::to(raw::select(g[0], dim, static_cast<int64_t>(i)), dtypes[i]);
    }
    return grads;
  }
};

std::vector<DType> dtypes_of(const std::vector<Tensor>& tensors) {
  std::vector<DType> dtypes;
  dtypes.reserve(tensors.size());
  for (const Tensor& t : tensors) dtypes.push_back(t.dtype());
  return dtypes;
}

std::vector<Tensor> narrow_pieces(const Tensor& t, const Shape& lengths, int64_t dim) {
  std::vector<Tensor> pieces;
  pieces.reserve(lengths.size());
  int64_t start = 0;
  for (int64_t length : lengths) {
    pieces.push_back(narrow(t, dim, start, length));
    start += length;
  }
  return pieces;
}

}  // namespace

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  Tensor out = raw::cat(tensors, dim);
  if (autograd::any_requires_grad(tensors)) {
    CatPlan plan = plan_cat(tensors, dim);
    auto node = std::make_shared<CatBackward>();
    node->dim = plan.dim;
    node->dtypes = dtypes_of(tensors);
    for (size_t i = 0; i < tensors.size(); ++i) {
      node->lengths.push_back(plan.skipped[i] ? -1 : tensors[i].sizes()[plan.dim]);
    }
    autograd::record(node, tensors, {out});
  }
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  Tensor out = raw::stack(tensors, dim);
  if (autograd::any_requires_grad(tensors)) {
    auto node = std::make_shared<StackBackward>();
    node->dim = wrap_dim(dim, out.dim(), "stack");
    node->dtypes = dtypes_of(tensors);
    autograd::record(node, tensors, {out});
  }
  return out;
}

std::vector<Tensor> split(const Tensor& t, int64_t split_size, int64_t dim) {
  int64_t d = split_dim(t, dim, "split");
  return narrow_pieces(t, split_lengths(t, split_size, d), d);
}

std::vector<Tensor> split(const Tensor& t, const Shape& split_sizes, int64_t dim) {
  int64_t d = split_dim(t, dim, "split");
  check_split_sizes(t, split_sizes, d);
  return narrow_pieces(t, split_sizes, d);
}

std::vector<Tensor> split(const Tensor& t, std::initializer_list<int64_t> split_sizes, int64_t dim) {
  return split(t, Shape(split_sizes), dim);
}

std::vector<Tensor> chunk(const Tensor& t, int64_t chunks, int64_t dim) {
  int64_t d = split_dim(t, dim, "chunk");
  return narrow_pieces(t, chunk_lengths(t, chunks, d), d);
}

}  // namespace syncgrad
