// Raw (non-differentiable) joining and splitting along one dimension: cat, stack, split, chunk. They need no
// kernel of their own: cat/stack copy each input into a narrow view of the output (raw::copy_, so any device
// and dtype conversion work), split/chunk return narrow views. The differentiable versions (autograd/ops/join.h)
// call these.
#pragma once

#include <initializer_list>
#include <vector>

#include "tensor/tensor.h"

namespace syncgrad {

// Promoted dtype, shape and wrapped dim of cat(tensors, dim), checking devices, ranks and sizes; `skipped[i]`
// marks a 1-D empty input that PyTorch's legacy rule leaves out (when some other input is not 1-D).
struct CatPlan {
  DType dtype = DType::f32;
  Shape shape;
  int64_t dim = 0;
  std::vector<bool> skipped;
};
CatPlan plan_cat(const std::vector<Tensor>& tensors, int64_t dim, const char* op = "cat");

namespace raw {
// Concatenation along `dim`: all inputs have the same rank and equal sizes except along dim; the result has
// the promoted dtype. Contiguous inputs joined along dim 0 are one memcpy each.
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
// Joins equally shaped tensors along a new dimension `dim` (in [-(rank+1), rank]).
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
// Views of `split_size` elements along dim (the last may be shorter).
std::vector<Tensor> split(const Tensor& t, int64_t split_size, int64_t dim = 0);
// Views with the given lengths along dim (they must add up to the size of dim). A braced list always means
// lengths: split(t, {2}) is one piece of length 2.
std::vector<Tensor> split(const Tensor& t, const Shape& split_sizes, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& t, std::initializer_list<int64_t> split_sizes, int64_t dim = 0);
// `chunks` views of ceil(size / chunks) elements along dim (fewer when the size runs out first).
std::vector<Tensor> chunk(const Tensor& t, int64_t chunks, int64_t dim = 0);
}  // namespace raw

}  // namespace syncgrad
