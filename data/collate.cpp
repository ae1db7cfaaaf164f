// default_collate: one pooled output per field, each example copied into its row (memcpy when contiguous).
#include "data/collate.h"

#include <cstring>
#include <string>

#include "tensor/errors.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/views.h"

namespace syncgrad::data {
namespace {

// (B, *first.sizes()) holding the `field` of every example.
Tensor stack_field(const std::vector<Example>& examples, Tensor Example::*field, const char* name, BufferPool& pool) {
  const Tensor& first = examples.front().*field;
  if (!first.defined()) throw ValueError(std::string("default_collate: example 0 has no ") + name);
  Shape shape = first.sizes();
  shape.insert(shape.begin(), static_cast<int64_t>(examples.size()));
  Tensor out = pool.empty(shape, first.dtype());  // (B, ...)
  const size_t row_bytes = first.nbytes();
  auto* dst = static_cast<char*>(out.data_ptr());
  for (size_t i = 0; i < examples.size(); ++i) {
    const Tensor& t = examples[i].*field;
    if (!t.defined()) throw ValueError("default_collate: example " + std::to_string(i) + " has no " + name);
    if (t.sizes() != first.sizes()) {
      throw ShapeError("default_collate: " + std::string(name) + " of example " + std::to_string(i) + " has shape " +
                       shape_str(t.sizes()) + " but example 0 has " + shape_str(first.sizes()) +
                       "; examples of one batch must have the same shape (write a collate function to pad them)");
    }
    if (t.dtype() != first.dtype()) {
      throw DTypeError("default_collate: " + std::string(name) + " of example " + std::to_string(i) + " is " +
                       dtype_name(t.dtype()) + " but example 0 is " + dtype_name(first.dtype()));
    }
    if (!t.device().is_cpu()) {
      throw DeviceError("default_collate: " + std::string(name) + " of example " + std::to_string(i) + " is on " +
                        t.device().str() + "; datasets must return CPU tensors");
    }
    if (t.is_contiguous()) {
      std::memcpy(dst + i * row_bytes, t.data_ptr(), row_bytes);
    } else {
      raw::copy_(raw::select(out, 0, static_cast<int64_t>(i)), t);
    }
  }
  return out;
}

}  // namespace

Batch default_collate(const std::vector<Example>& examples, BufferPool& pool) {
  if (examples.empty()) throw ValueError("default_collate: a batch needs at least one example");
  return {stack_field(examples, &Example::data, "data", pool), stack_field(examples, &Example::target, "target", pool)};
}

}  // namespace syncgrad::data
