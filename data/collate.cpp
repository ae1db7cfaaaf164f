// default_collate: one pooled output per field, each example copied into its row (memcpy when contiguous).
#include "data/collate.h"

#include <cstring>
#include <string>

#include "tensor/check.h"
#include "tensor/errors.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/views.h"

namespace syncgrad::data {
namespace {

// (B, *first.sizes()) holding the `field` of every example.
Tensor stack_field(const std::vector<Example>& examples, Tensor Example::*field, const char* name, BufferPool& pool) {
  const Tensor& first = examples.front().*field;
  SYNCGRAD_CHECK(first.defined(), ValueError, "default_collate: example 0 has no ", name);
  Shape shape = first.sizes();
  shape.insert(shape.begin(), static_cast<int64_t>(examples.size()));
  Tensor out = pool.empty(shape, first.dtype());  // (B, ...)
  const size_t row_bytes = first.nbytes();
  auto* dst = static_cast<char*>(out.data_ptr());
  for (size_t i = 0; i < examples.size(); ++i) {
    const Tensor& t = examples[i].*field;
    SYNCGRAD_CHECK(t.defined(), ValueError, "default_collate: example ", i, " has no ", name);
    SYNCGRAD_CHECK(t.sizes() == first.sizes(), ShapeError, "default_collate: ", name, " of example ", i, " has shape ",
                   shape_str(t.sizes()), " but example 0 has ", shape_str(first.sizes()),
                   "; examples of one batch must have the same shape (write a collate function to pad them)");
    SYNCGRAD_CHECK(t.dtype() == first.dtype(), DTypeError, "default_collate: ", name, " of example ", i, " is ",
                   dtype_name(t.dtype()), " but example 0 is ", dtype_name(first.dtype()));
    SYNCGRAD_CHECK(t.device().is_cpu(), DeviceError, "default_collate: ", name, " of example ", i, " is on ",
                   t.device().str(), "; datasets must return CPU tensors");
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
  SYNCGRAD_CHECK(!examples.empty(), ValueError, "default_collate: a batch needs at least one example");
  return {stack_field(examples, &Example::data, "data", pool), stack_field(examples, &Example::target, "target", pool)};
}

}  // namespace syncgrad::data
