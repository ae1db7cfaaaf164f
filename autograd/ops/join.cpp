// Differentiable cat/stack/split/chunk. cat and stack record one node over all inputs whose backward slices
// the gradient; split and chunk take the raw pieces (views of the input) and record one node over all of them
// whose backward writes each piece's gradient into its place of the input's.
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
using autograd::Node;

std::vector<DType> dtypes_of(const std::vector<Tensor>& tensors) {
  std::vector<DType> dtypes;
  dtypes.reserve(tensors.size());
  for (const Tensor& t : tensors) dtypes.push_back(t.dtype());
  return dtypes;
}

// The gradients g of pieces of lengths `lengths` along dim d of an input of input_shape when they already tile
// one contiguous buffer of that shape, each where its piece lies (as attention's backward leaves the gradients
// of q, k and v split from one projection): that buffer. Undefined otherwise.
Tensor buffer_tiled_by(const GradList& g, const Shape& input_shape, DType dtype, int64_t d,
                       const std::vector<int64_t>& lengths) {
  if (g.size() != lengths.size() || !g[0].defined()) return Tensor();
  const Shape strides = contiguous_strides(input_shape);
  int64_t start = 0;
  for (size_t i = 0; i < lengths.size(); ++i) {
    Shape piece_shape = input_shape;
    piece_shape[d] = lengths[i];
    const bool in_place = g[i].defined() && g[i].dtype() == dtype && g[i].device() == g[0].device() &&
                          g[i].impl()->storage() == g[0].impl()->storage() && g[i].sizes() == piece_shape &&
                          g[i].strides() == strides &&
                          g[i].storage_offset() == g[0].storage_offset() + start * strides[d];
    if (!in_place) return Tensor();
    start += lengths[i];
  }
  return raw::as_strided(g[0], input_shape, strides, g[0].storage_offset());
}

// The raw pieces of t along dim, made differentiable by one node. Its backward writes every piece's gradient
// into its region of one tensor, zeros where a piece got none: one pass over the input's size, where a narrow
// per piece filled a whole zero tensor each and the engine then added them up (a GPT's q, k, v split: three
// fills, three copies and two additions of the (B, T, 3C) gradient); nothing when the gradients already lie
// side by side in one buffer.
std::vector<Tensor> differentiable_pieces(const Tensor& t, std::vector<Tensor> pieces, int64_t dim) {
  if (!autograd::any_requires_grad({&t})) return pieces;
  const int64_t d = wrap_dim(dim, t.dim(), "split");  // valid: the raw op checked it
  std::vector<int64_t> lengths;
  lengths.reserve(pieces.size());
  for (const Tensor& piece : pieces) lengths.push_back(piece.sizes()[d]);
  auto backward = [input_shape = t.sizes(), dtype = t.dtype(), device = t.device(), d,
                   lengths = std::move(lengths)](GradList&& g) {
    if (Tensor tiled = buffer_tiled_by(g, input_shape, dtype, d, lengths); tiled.defined()) return GradList{tiled};
    Tensor grad_in = empty(input_shape, {.dtype = dtype, .device = device});
    int64_t start = 0;
    for (size_t i = 0; i < lengths.size(); ++i) {
      Tensor region = raw::narrow(grad_in, d, start, lengths[i]);
      if (i < g.size() && g[i].defined()) {
        raw::copy_(region, g[i]);
      } else {
        raw::fill_(region, 0);
      }
      start += lengths[i];
    }
    return GradList{grad_in};
  };
  autograd::record<"SplitBackward">(std::vector<Tensor>{t}, pieces, std::move(backward));
  return pieces;
}

}  // namespace

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  Tensor out = raw::cat(tensors, dim);
  if (autograd::any_requires_grad(tensors)) {
    CatPlan plan = plan_cat(tensors, dim);
    std::vector<int64_t> lengths;  // along dim, per input; -1 for an input the legacy rule left out
    for (size_t i = 0; i < tensors.size(); ++i) lengths.push_back(plan.skipped[i] ? -1 : tensors[i].sizes()[plan.dim]);
    // Gradients go back in each input's dtype.
    auto backward = [dim = plan.dim, lengths = std::move(lengths), dtypes = dtypes_of(tensors)](const Node& node,
                                                                                               GradList&& g) {
      GradList grads(lengths.size());
      int64_t offset = 0;
      for (size_t i = 0; i < lengths.size(); ++i) {
        if (lengths[i] < 0) {
          if (node.needs_input_grad(i)) grads[i] = zeros({0}, {.dtype = dtypes[i], .device = g[0].device()});
          continue;
        }
        if (node.needs_input_grad(i)) grads[i] = raw::to(raw::narrow(g[0], dim, offset, lengths[i]), dtypes[i]);
        offset += lengths[i];
      }
      return grads;
    };
    autograd::record<"CatBackward">(tensors, {out}, std::move(backward));
  }
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  Tensor out = raw::stack(tensors, dim);
  if (autograd::any_requires_grad(tensors)) {
    auto backward = [dim = wrap_dim(dim, out.dim(), "stack"), dtypes = dtypes_of(tensors)](const Node& node,
                                                                                          GradList&& g) {
      GradList grads(dtypes.size());
      for (size_t i = 0; i < dtypes.size(); ++i) {
        if (node.needs_input_grad(i)) grads[i] = raw::to(raw::select(g[0], dim, static_cast<int64_t>(i)), dtypes[i]);
      }
      return grads;
    };
    autograd::record<"StackBackward">(tensors, {out}, std::move(backward));
  }
  return out;
}

std::vector<Tensor> split(const Tensor& t, int64_t split_size, int64_t dim) {
  return differentiable_pieces(t, raw::split(t, split_size, dim), dim);
}

std::vector<Tensor> split(const Tensor& t, const Shape& split_sizes, int64_t dim) {
  return differentiable_pieces(t, raw::split(t, split_sizes, dim), dim);
}

std::vector<Tensor> split(const Tensor& t, std::initializer_list<int64_t> split_sizes, int64_t dim) {
  return split(t, Shape(split_sizes), dim);
}

std::vector<Tensor> chunk(const Tensor& t, int64_t chunks, int64_t dim) {
  return differentiable_pieces(t, raw::chunk(t, chunks, dim), dim);
}

}  // namespace syncgrad
