// Raw (non-differentiable) indexing along one dimension: index_select / index_add_ (a 1-D list of positions
// applied to whole slices) and gather / scatter_add_ (one position per element). Index tensors hold int64
// (index_select and index_add_ also take int32); every index must lie in [0, size of the indexed dim).
// Differentiable versions are in autograd/ops/indexing.h.
#pragma once

#include "tensor/dispatch.h"
#include "tensor/tensor.h"

namespace syncgrad {

namespace kernels {
// An indexing op seen as lines along `dim`, the form both backends walk. The front-ends build it from checked
// operands of equal rank (0-d tensors already viewed as 1-element 1-D) and a wrapped `dim`. Element p of
// `base` is where the line through p along dim starts, and line_index[p] says how many steps of `step()`
// elements to move along it. The kernels check every value of `index` against `size()` before writing.
struct IndexLines {
  const char* op;     // the op named in errors
  Tensor indexed;     // input (index_select, gather) or self (index_add, scatter_add)
  int64_t dim;        // the indexed dimension
  Tensor index;       // the index as the op got it: 1-D (index_select, index_add) or of the iteration shape
  Tensor base;        // `indexed` over the iteration shape with stride 0 along dim
  Tensor line_index;  // `index` over the iteration shape
  int64_t size() const { return indexed.sizes()[dim]; }
  int64_t step() const { return indexed.strides()[dim]; }
};
// out[p] = base[p] moved line_index[p] steps, over out's shape (the iteration shape); for index_select out has
// input's shape with index.numel() along dim, for gather index's shape.
extern KernelSlot<void(const Tensor& out, const IndexLines& lines)> index_select;
extern KernelSlot<void(const Tensor& out, const IndexLines& lines)> gather;
// base[p] moved line_index[p] steps += src[p], over src's shape (the iteration shape); for index_add src has
// self's shape with index.numel() along dim, for scatter_add index's shape (src already narrowed to it).
extern KernelSlot<void(const IndexLines& lines, const Tensor& src)> index_add;
extern KernelSlot<void(const IndexLines& lines, const Tensor& src)> scatter_add;
}  // namespace kernels

namespace raw {
// Slices of `input` at the positions listed in the 1-D (or 0-d) `index`, along `dim`.
Tensor index_select(const Tensor& input, int64_t dim, const Tensor& index);
// Adds slice i of `src` into slice index[i] of `self` along `dim` (repeated indices accumulate).
void index_add_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
// out has index's shape; index.size(d) <= input.size(d) for every d != dim.
Tensor gather(const Tensor& input, int64_t dim, const Tensor& index);
// In place: self[p with p[dim] = index[p]] += src[p] for each position p of index (repeats accumulate);
// index.size(d) <= src.size(d) for every d and <= self.size(d) for d != dim.
void scatter_add_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
// Out of place: a new tensor equal to self with src scattered-added into it.
Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
}  // namespace raw

}  // namespace syncgrad
