// DataLoaderOptions (PyTorch's DataLoader arguments) and LoaderState, the position a checkpoint saves.
#pragma once

#include <cstdint>
#include <memory>

#include "data/collate.h"
#include "data/sampler.h"

namespace syncgrad::data {

// The most worker threads a DataLoader starts (more than any machine's cores can keep busy loading batches;
// each also holds up to prefetch_factor batches).
inline constexpr int kMaxNumWorkers = 256;

struct DataLoaderOptions {
  int64_t batch_size = 1;
  // Visit the dataset in a new random order every epoch (a RandomSampler seeded with `seed`, set to the
  // loader's epoch). ValueError together with `sampler`.
  bool shuffle = false;
  // The order of indices; default SequentialSampler (or the RandomSampler of `shuffle`).
  std::shared_ptr<Sampler> sampler = nullptr;
  bool drop_last = false;  // drop the last batch when it is short
  // Worker threads, 0 to kMaxNumWorkers; 0 loads every batch in the caller's thread when it asks for it.
  int num_workers = 0;
  // At most prefetch_factor x num_workers batches are loading or loaded and not yet handed out.
  int prefetch_factor = 2;
  // Collate into page-locked host memory when a CUDA device is present (so batch.data.to(cuda, true) copies
  // asynchronously); otherwise plain aligned host memory, which the first such loader says on stderr.
  bool pin_memory = false;
  // Seconds to wait for one batch from the workers before a TimeoutError; 0 waits as long as it takes. With
  // num_workers == 0 the batch is loaded in the caller and there is nothing to time out.
  double timeout = 0;
  // Keep the worker threads between epochs instead of starting them at every begin().
  bool persistent_workers = false;
  // Base of every seed: the shuffle order and each sample's transform generator (data/worker_info.h).
  uint64_t seed = 0;
  // Empty: default_collate.
  CollateFn collate = nullptr;
  // With a sampler of your own: set its epoch to the loader's at each begin() (instead of warning once when a
  // DistributedSampler would repeat the previous epoch's order).
  bool auto_set_epoch = false;
};

// Where the next begin() starts: batch `batches_consumed` of epoch `epoch`. Save it with a checkpoint and give
// it to DataLoader::load_state to see exactly the batches an uninterrupted run would have seen.
struct LoaderState {
  int64_t epoch = 0;
  int64_t batches_consumed = 0;
  friend bool operator==(const LoaderState&, const LoaderState&) = default;
};

}  // namespace syncgrad::data
