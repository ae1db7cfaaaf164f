// Raw (non-differentiable) copies and conversions: copy_ with broadcasting and dtype conversion, contiguous,
// clone, dtype and device conversion, fill. The autograd layer wraps these for users.
#pragma once

#include "tensor/dispatch.h"
#include "tensor/tensor.h"

namespace syncgrad {

namespace kernels {
// dst and src: same device and same shape (src already expanded); dtypes may differ.
extern KernelSlot<void(const Tensor& dst, const Tensor& src)> copy;
// Sets every element of `out` (any strides) to `value` converted to out's dtype.
extern KernelSlot<void(const Tensor& out, const Scalar& value)> fill;
}  // namespace kernels

namespace raw {
// Writes src into dst (broadcasting src to dst's shape, converting dtype, across devices); bumps dst's version.
void copy_(const Tensor& dst, const Tensor& src, bool non_blocking = false);
void fill_(const Tensor& dst, const Scalar& value);
Tensor contiguous(const Tensor& t);  // returns t itself when already contiguous
Tensor clone(const Tensor& t);       // always a fresh contiguous copy
Tensor to(const Tensor& t, DType dtype);  // returns t itself when the dtype matches
Tensor to(const Tensor& t, Device device, bool non_blocking = false);
}  // namespace raw

}  // namespace syncgrad
