// Overflow-checked element and byte counts of a Shape: every place that turns a shape into a number of
// elements or bytes (TensorImpl, the factories, the views, the file readers) goes through these, so that a
// shape whose product does not fit (say a 16-byte file header promising 2^64 elements) is refused with a
// typed error instead of wrapping to a small number and leaving a tensor with no bytes behind it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tensor/tensor_impl.h"

namespace syncgrad {

// The number of elements of `shape` (0 when a dimension is 0); false when it does not fit in int64, for
// callers with their own error type.
bool numel_fits(const Shape& shape, int64_t& numel);
// The number of elements of `shape`; throws ValueError "<what>: shape [..] has 2^63 or more elements" when it
// does not fit in int64.
int64_t checked_numel(const Shape& shape, std::string_view what);
// checked_numel(shape) * element_size; throws ValueError naming `what` and the shape when either overflows.
size_t checked_nbytes(const Shape& shape, size_t element_size, std::string_view what);

}  // namespace syncgrad
