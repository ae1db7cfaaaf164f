// BatchSource: an endless stream of training batches for the bench -- a real DataLoader (shuffled, epoch after
// epoch) over a SyntheticTask's examples, or one fixed batch when the loader is switched off.
#pragma once

#include <memory>
#include <optional>

#include "data/loader.h"
#include "bench/scaling/synthetic_task.h"

namespace syncgrad::bench {

class BatchSource {
 public:
  // Batches of `batch` examples; the dataset holds 8 of them. loader_workers as DataLoaderOptions::num_workers.
  BatchSource(const SyntheticTask& task, int64_t batch, bool use_loader, int loader_workers, uint64_t seed);
  ~BatchSource();

  // The next batch (data (B, ...), target (B)); the time it takes is the step's data-wait.
  data::Batch next();

 private:
  std::shared_ptr<const data::Dataset> dataset_;
  std::unique_ptr<data::DataLoader> loader_;
  std::optional<data::DataLoader::Iterator> position_;
  data::Batch fixed_;
};

}  // namespace syncgrad::bench
