// BatchMaker::make with error context.
#include "data/batch_maker.h"

#include <string>
#include <utility>

#include "data/loader_errors.h"
#include "data/worker_info.h"

namespace syncgrad::data {
namespace {

std::string who(int worker) {
  return worker < 0 ? std::string("DataLoader (main thread, num_workers=0)")
                    : "DataLoader worker " + std::to_string(worker);
}

}  // namespace

BatchMaker::BatchMaker(std::shared_ptr<const Dataset> dataset, CollateFn collate, std::shared_ptr<BufferPool> pool,
                       uint64_t seed)
    : dataset_(std::move(dataset)), collate_(std::move(collate)), pool_(std::move(pool)), seed_(seed) {}

Batch BatchMaker::make(const std::vector<int64_t>& indices, int64_t epoch, int64_t batch, int worker) const {
  std::vector<Example> examples;
  examples.reserve(indices.size());
  for (int64_t index : indices) {
    try {
      Generator gen = sample_generator(seed_, epoch, index);
      examples.push_back(dataset_->fetch(index, gen));
    } catch (...) {
      rethrow_with_context(who(worker) + ", sample " + std::to_string(index) + " (batch " + std::to_string(batch) +
                           " of epoch " + std::to_string(epoch) + ")");
    }
  }
  try {
    return collate_(examples, *pool_);
  } catch (...) {
    rethrow_with_context(who(worker) + ", collating batch " + std::to_string(batch) + " of epoch " +
                         std::to_string(epoch) + " (samples " + std::to_string(indices.front()) + " .. " +
                         std::to_string(indices.back()) + ")");
  }
}

}  // namespace syncgrad::data
