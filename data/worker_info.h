// Seeds of a DataLoader and what a dataset can ask about the worker running it. Every seed derives from the
// loader's one base seed with Generator::split: epoch e uses E = Generator(seed).split(e); sample i of that
// epoch draws its random transforms from E.split(i) (so augmentation depends neither on the number of workers
// nor on which worker loads it, and a resumed run sees the same batches); worker w gets the seed
// E.split(kWorkerStream).split(w).seed() for any randomness of its own.
#pragma once

#include <cstdint>

#include "tensor/generator.h"

namespace syncgrad::data {

struct WorkerInfo {
  int id = 0;           // 0 .. num_workers-1
  int num_workers = 0;
  int64_t epoch = 0;
  uint64_t seed = 0;    // this worker's seed for this epoch
};

// The generator for sample `index` in `epoch` of a loader seeded with `base_seed`.
Generator sample_generator(uint64_t base_seed, int64_t epoch, int64_t index);
// Worker `worker`'s seed in `epoch`.
uint64_t worker_seed(uint64_t base_seed, int64_t epoch, int worker);

// The worker thread calling this (inside Dataset::fetch/get or a collate function), or nullptr outside loader
// workers (num_workers == 0 runs in the caller, which is no worker).
const WorkerInfo* current_worker();

// Marks the calling thread as a worker for the scope (used by the loader's worker threads).
class WorkerScope {
 public:
  explicit WorkerScope(const WorkerInfo& info);
  ~WorkerScope();
  WorkerScope(const WorkerScope&) = delete;
  WorkerScope& operator=(const WorkerScope&) = delete;
};

}  // namespace syncgrad::data
