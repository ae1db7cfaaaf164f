// Differentiable view and copy ops: the user-facing versions of tensor/ops/views.h and copy.h.
#pragma once

#include "tensor/tensor.h"

namespace syncgrad {

Tensor view(const Tensor& t, const Shape& shape);
Tensor reshape(const Tensor& t, const Shape& shape);
Tensor permute(const Tensor& t, const Shape& dims);
Tensor transpose(const Tensor& t, int64_t dim0, int64_t dim1);
Tensor narrow(const Tensor& t, int64_t dim, int64_t start, int64_t length);
Tensor slice(const Tensor& t, int64_t dim, int64_t start, int64_t end, int64_t step = 1);
Tensor select(const Tensor& t, int64_t dim, int64_t index);
Tensor expand(const Tensor& t, const Shape& shape);
Tensor squeeze(const Tensor& t);
Tensor squeeze(const Tensor& t, int64_t dim);
Tensor unsqueeze(const Tensor& t, int64_t dim);
Tensor flatten(const Tensor& t, int64_t start_dim = 0, int64_t end_dim = -1);
Tensor contiguous(const Tensor& t);
Tensor clone(const Tensor& t);
Tensor to(const Tensor& t, DType dtype);
Tensor to(const Tensor& t, Device device, bool non_blocking = false);

// In-place copy into `dst` (broadcasting src); differentiable with respect to src when dst is not a leaf.
void copy_(const Tensor& dst, const Tensor& src);

}  // namespace syncgrad
