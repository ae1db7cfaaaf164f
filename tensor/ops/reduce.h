// Raw (non-differentiable) reductions over dimensions. An empty `dims` list means all dimensions.
#pragma once

#include <optional>

#include "tensor/dispatch.h"
#include "tensor/tensor.h"

namespace syncgrad {

namespace kernels {
// out has `in`'s rank with size 1 on reduced dims (keepdim layout), already zeroed, dtype = accumulate dtype;
// adds every element of `in` into its output slot.
extern KernelSlot<void(const Tensor& out, const Tensor& in)> sum_into;
}  // namespace kernels

// Normalises a dims list for a reduction over a `ndim`-d tensor (wraps negatives, rejects repeats); empty = all.
std::vector<bool> reduction_mask(const Shape& dims, int64_t ndim, const char* op);
// Output shape of a reduction with or without keepdim.
Shape reduced_shape(const Shape& sizes, const std::vector<bool>& mask, bool keepdim);

namespace raw {
// Sum over `dims` (all when empty); integers and bool sum to i64 unless `dtype` says otherwise.
Tensor sum(const Tensor& t, const Shape& dims = {}, bool keepdim = false, std::optional<DType> dtype = {});
// Sums a broadcast result back to `shape` (the backward of broadcasting).
Tensor sum_to(const Tensor& t, const Shape& shape);
}  // namespace raw

}  // namespace syncgrad
