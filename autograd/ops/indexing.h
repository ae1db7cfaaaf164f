// Differentiable indexing along one dimension: the user-facing versions of tensor/ops/indexing.h. Gradients
// flow to the indexed tensors (not to the integer index).
#pragma once

#include "tensor/tensor.h"

namespace syncgrad {

// Slices of `input` at the positions in the 1-D `index` along `dim`; backward adds them back (index_add).
Tensor index_select(const Tensor& input, int64_t dim, const Tensor& index);
// out[p] = input[p with p[dim] = index[p]]; backward scatter-adds the gradient into zeros.
Tensor gather(const Tensor& input, int64_t dim, const Tensor& index);
// A copy of `self` with src[p] added at p with p[dim] = index[p]; grads: self <- grad, src <- gather(grad).
Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);

}  // namespace syncgrad
