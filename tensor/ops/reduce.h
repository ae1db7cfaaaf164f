// Raw (non-differentiable) reductions over dimensions: sum, mean, max/min (values and indices), argmax/argmin,
// var/std with a correction, logsumexp. An empty `dims` list means all dimensions. Differentiable versions are
// in autograd/ops/reduce.h.
#pragma once

#include <optional>

#include "tensor/dispatch.h"
#include "tensor/tensor.h"

namespace syncgrad {

// A contiguous tensor seen as (outer, size, inner) around one dimension: element (o, k, i) sits at
// o * size * inner + k * inner + i.
struct DimLayout {
  int64_t outer = 1;
  int64_t size = 1;
  int64_t inner = 1;
};
DimLayout dim_layout(const Shape& sizes, int64_t dim);

// Result of max/min along a dimension (like PyTorch's torch.return_types.max): `auto [v, i] = max(t, 1);`
struct ValuesIndices {
  Tensor values;
  Tensor indices;  // int64
};

namespace kernels {
// out has `in`'s rank with size 1 on reduced dims (keepdim layout), already zeroed, dtype = accumulate dtype;
// adds every element of `in` into its output slot.
extern KernelSlot<void(const Tensor& out, const Tensor& in)> sum_into;
// `in` contiguous, viewed as (outer, size, inner) around `dim` (size >= 1); values (in's dtype) and indices
// (int64) contiguous (outer, inner). The first extremum wins ties; NaN counts as the extremum.
extern KernelSlot<void(const Tensor& values, const Tensor& indices, const Tensor& in, int64_t dim, bool largest)>
    minmax_dim;
// Backward of minmax_dim: grad_in (contiguous, in's shape, zeroed) gets grad (outer, inner) at the indices.
extern KernelSlot<void(const Tensor& grad_in, const Tensor& grad, const Tensor& indices, int64_t dim)>
    index_backward;
// Backward of a full max/min: grad_in (contiguous, zeroed) gets grad / count at every element equal to value
// (both 0-dim); `in` contiguous.
extern KernelSlot<void(const Tensor& grad_in, const Tensor& in, const Tensor& value, const Tensor& grad)>
    ties_backward;
// `in` contiguous (rows, cols): out (rows) = variance of each row, dividing by cols - correction (clamped at 0);
// its square root (the standard deviation) when `root`.
extern KernelSlot<void(const Tensor& out, const Tensor& in, int64_t correction, bool root)> var_rows;
// `in` contiguous (rows, cols): out (rows) = log(sum(exp(row))), computed stably.
extern KernelSlot<void(const Tensor& out, const Tensor& in)> logsumexp_rows;
}  // namespace kernels

// Normalises a dims list for a reduction over a `ndim`-d tensor (wraps negatives, rejects repeats); empty = all.
std::vector<bool> reduction_mask(const Shape& dims, int64_t ndim, const char* op);
// Output shape of a reduction with or without keepdim.
Shape reduced_shape(const Shape& sizes, const std::vector<bool>& mask, bool keepdim);
// Number of elements each output of the reduction combines.
int64_t reduced_count(const Shape& sizes, const std::vector<bool>& mask);

namespace raw {
// Sum over `dims` (all when empty); integers and bool sum to i64 unless `dtype` says otherwise.
Tensor sum(const Tensor& t, const Shape& dims = {}, bool keepdim = false, std::optional<DType> dtype = {});
// Sums a broadcast result back to `shape` (the backward of broadcasting).
Tensor sum_to(const Tensor& t, const Shape& shape);
// Mean over `dims`; floating input (or a floating `dtype`) only, as in PyTorch. Halves accumulate in f32.
Tensor mean(const Tensor& t, const Shape& dims = {}, bool keepdim = false, std::optional<DType> dtype = {});
// Largest / smallest element (0-dim); an empty tensor is a ValueError.
Tensor max(const Tensor& t);
Tensor min(const Tensor& t);
// Along one dim: values and int64 indices of the first extremum; an empty dim is an IndexError.
ValuesIndices max(const Tensor& t, int64_t dim, bool keepdim = false);
ValuesIndices min(const Tensor& t, int64_t dim, bool keepdim = false);
// Index of the first extremum; without `dim` an index into the flattened tensor.
Tensor argmax(const Tensor& t, std::optional<int64_t> dim = {}, bool keepdim = false);
Tensor argmin(const Tensor& t, std::optional<int64_t> dim = {}, bool keepdim = false);
// Variance / standard deviation over `dims`, dividing by (count - correction) (1: Bessel's correction).
Tensor var(const Tensor& t, const Shape& dims = {}, int64_t correction = 1, bool keepdim = false);
Tensor std(const Tensor& t, const Shape& dims = {}, int64_t correction = 1, bool keepdim = false);
// log(sum(exp(t))) over `dims`, without overflow.
Tensor logsumexp(const Tensor& t, const Shape& dims, bool keepdim = false);
// Gradient of logsumexp: grad times the softmax of `input` over `dims`.
Tensor logsumexp_backward(const Tensor& grad, const Tensor& input, const Shape& dims);
// Gradient of an (all-element) max/min: grad spread evenly over the elements equal to `value`.
Tensor extremum_backward(const Tensor& grad, const Tensor& input, const Tensor& value);
// Gradient of max/min along `dim`: grad (keepdim or not) placed at `indices` in a zero tensor of `input_shape`.
Tensor index_backward(const Tensor& grad, const Tensor& indices, const Shape& input_shape, int64_t dim, bool keepdim);
}  // namespace raw

}  // namespace syncgrad
