// Overflow-checked element and byte counts of a Shape (__builtin_mul_overflow: one multiply and a branch each).
#include "tensor/numel.h"

#include <algorithm>

#include "tensor/check.h"
#include "tensor/errors.h"
#include "tensor/ops/views.h"

namespace syncgrad {

bool numel_fits(const Shape& shape, int64_t& numel) {
  int64_t product = 1;
  bool overflow = false;
  for (int64_t size : shape) overflow |= __builtin_mul_overflow(product, size, &product);
  if (overflow) [[unlikely]] {
    // A zero dimension makes the tensor empty however large the others are.
    if (std::find(shape.begin(), shape.end(), 0) == shape.end()) return false;
    product = 0;
  }
  numel = product;
  return true;
}

int64_t checked_numel(const Shape& shape, std::string_view what) {
  int64_t numel = 0;
  SYNCGRAD_CHECK(numel_fits(shape, numel), ValueError, what, ": shape ", shape_str(shape),
                 " has 2^63 or more elements (more than int64 can count); check the sizes");
  return numel;
}

size_t checked_nbytes(const Shape& shape, size_t element_size, std::string_view what) {
  size_t nbytes = 0;
  SYNCGRAD_CHECK(!__builtin_mul_overflow(static_cast<size_t>(checked_numel(shape, what)), element_size, &nbytes),
                 ValueError, what, ": shape ", shape_str(shape), " of ", element_size,
                 "-byte elements needs 2^64 bytes or more; check the sizes");
  return nbytes;
}

}  // namespace syncgrad
