// Raw (non-differentiable) indexing along one dimension: index_select / index_add_ (a 1-D list of positions
// applied to whole slices) and gather / scatter_add_ (one position per element). Index tensors hold int64
// (index_select and index_add_ also take int32); every index must lie in [0, size of the indexed dim).
// Differentiable versions are in autograd/ops/indexing.h.
#pragma once

#include "tensor/dispatch.h"
#include "tensor/tensor.h"

namespace syncgrad {

namespace kernels {
// The kernels receive validated operands of equal rank (0-d tensors already viewed as 1-element 1-D) and a
// wrapped `dim`; they check every index value against the size of `dim` before writing anything.
// out[.., i, ..] = input[.., index[i], ..]; out has input's shape with index.numel() along dim.
extern KernelSlot<void(const Tensor& out, const Tensor& input, int64_t dim, const Tensor& index)> index_select;
// self[.., index[i], ..] += src[.., i, ..]; src has self's shape with index.numel() along dim.
extern KernelSlot<void(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src)> index_add;
// out[p] = input[p with p[dim] replaced by index[p]]; out has index's shape.
extern KernelSlot<void(const Tensor& out, const Tensor& input, int64_t dim, const Tensor& index)> gather;
// self[p with p[dim] replaced by index[p]] += src[p] for every position p of index.
extern KernelSlot<void(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src)> scatter_add;
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
