// Differentiable reductions: the user-facing versions of tensor/ops/reduce.h. An empty `dims` list means all
// dimensions; negative dims count from the end.
#pragma once

#include <optional>

#include "tensor/ops/reduce.h"
#include "tensor/tensor.h"

namespace syncgrad {

// Integers and bool sum to int64 unless `dtype` says otherwise; half types accumulate in float32.
Tensor sum(const Tensor& t, const Shape& dims = {}, bool keepdim = false, std::optional<DType> dtype = {});
// Floating inputs (or a floating `dtype`) only.
Tensor mean(const Tensor& t, const Shape& dims = {}, bool keepdim = false, std::optional<DType> dtype = {});
// Largest / smallest element; the gradient is shared evenly among tied elements.
Tensor max(const Tensor& t);
Tensor min(const Tensor& t);
// Along one dim: values and int64 indices of the first extremum; the gradient goes to those indices.
ValuesIndices max(const Tensor& t, int64_t dim, bool keepdim = false);
ValuesIndices min(const Tensor& t, int64_t dim, bool keepdim = false);
// Indices of the first extremum (not differentiable); without `dim`, into the flattened tensor.
Tensor argmax(const Tensor& t, std::optional<int64_t> dim = {}, bool keepdim = false);
Tensor argmin(const Tensor& t, std::optional<int64_t> dim = {}, bool keepdim = false);
// Variance / standard deviation dividing by (count - correction); correction 1 is Bessel's (unbiased).
Tensor var(const Tensor& t, const Shape& dims = {}, int64_t correction = 1, bool keepdim = false);
Tensor std(const Tensor& t, const Shape& dims = {}, int64_t correction = 1, bool keepdim = false);
// log(sum(exp(t))) over `dims`, computed stably.
Tensor logsumexp(const Tensor& t, const Shape& dims, bool keepdim = false);

}  // namespace syncgrad
