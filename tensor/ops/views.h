// Raw view ops: new TensorImpls over the same storage with other sizes/strides/offset. They never copy
// (reshape copies only when no view is possible). Differentiable versions are in autograd/ops/views.h.
#pragma once

#include "tensor/tensor.h"

namespace syncgrad {

// Contiguous (row-major) strides for `shape`.
Shape contiguous_strides(const Shape& shape);
int64_t shape_numel(const Shape& shape);
std::string shape_str(const Shape& shape);  // "[2, 3]"
// Resolves one -1 entry against numel; throws ShapeError naming `op` and both shapes.
Shape infer_shape(const Shape& shape, int64_t numel, const char* op);
// NumPy broadcasting of two shapes; throws ShapeError naming `op` and both shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

namespace raw {
Tensor as_strided(const Tensor& t, const Shape& sizes, const Shape& strides, int64_t storage_offset);
Tensor view(const Tensor& t, const Shape& shape);     // throws when strides do not allow it
Tensor reshape(const Tensor& t, const Shape& shape);  // a view when possible, else a contiguous copy
Tensor permute(const Tensor& t, const Shape& dims);
Tensor transpose(const Tensor& t, int64_t dim0, int64_t dim1);
Tensor narrow(const Tensor& t, int64_t dim, int64_t start, int64_t length);
// Elements start, start+step, ... below end along dim (the t[a:b:step] slice).
Tensor slice(const Tensor& t, int64_t dim, int64_t start, int64_t end, int64_t step = 1);
Tensor select(const Tensor& t, int64_t dim, int64_t index);
Tensor expand(const Tensor& t, const Shape& shape);  // -1 keeps a size; new leading dims allowed
Tensor squeeze(const Tensor& t);                     // all size-1 dims
Tensor squeeze(const Tensor& t, int64_t dim);        // only that dim, when it has size 1
Tensor unsqueeze(const Tensor& t, int64_t dim);
Tensor flatten(const Tensor& t, int64_t start_dim = 0, int64_t end_dim = -1);
// A view without autograd history sharing data (used by detach).
Tensor alias(const Tensor& t);
}  // namespace raw

}  // namespace syncgrad
