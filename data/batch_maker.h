// BatchMaker: loads one batch of a DataLoader (fetch every sample with its generator, then collate into the
// buffer pool). It is shared read-only by the worker threads; a failure is re-raised with its syncgrad type and
// a prefix naming the worker (or the main thread), the sample index, the batch and the epoch.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "data/buffer_pool.h"
#include "data/collate.h"
#include "data/dataset.h"

namespace syncgrad::data {

class BatchMaker {
 public:
  BatchMaker(std::shared_ptr<const Dataset> dataset, CollateFn collate, std::shared_ptr<BufferPool> pool,
             uint64_t seed);

  // Batch number `batch` of `epoch` from the dataset indices `indices`; `worker` is -1 in the caller's thread.
  Batch make(const std::vector<int64_t>& indices, int64_t epoch, int64_t batch, int worker) const;

  BufferPool& pool() const { return *pool_; }

 private:
  std::shared_ptr<const Dataset> dataset_;
  CollateFn collate_;
  std::shared_ptr<BufferPool> pool_;
  uint64_t seed_;
};

}  // namespace syncgrad::data
