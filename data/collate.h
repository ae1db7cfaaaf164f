// Collation: turning the examples of one batch into batch tensors. A CollateFn receives the examples and the
// loader's BufferPool and must allocate its outputs from the pool (BufferPool::empty), so batch memory is
// reused (and pinned when the loader pins). default_collate stacks data and targets along a new first dim.
#pragma once

#include <functional>
#include <vector>

#include "data/buffer_pool.h"
#include "data/dataset.h"

namespace syncgrad::data {

struct Batch {
  Tensor data;    // (B, ...) the examples' data stacked
  Tensor target;  // (B, ...) the examples' targets stacked; (B) for 0-dim targets
};

using CollateFn = std::function<Batch(const std::vector<Example>& examples, BufferPool& pool)>;

// data (B, *data.sizes()) and target (B, *target.sizes()) in pool memory, with each tensor's dtype taken from
// the first example. ShapeError naming the example and both shapes when examples differ in shape; DTypeError
// likewise for dtypes; ValueError for an empty batch; DeviceError for non-CPU examples.
Batch default_collate(const std::vector<Example>& examples, BufferPool& pool);

}  // namespace syncgrad::data
