// DataLoader: batches of a Dataset in sampler order, loaded by worker threads ahead of the consumer, collated
// into reusable (pinned when CUDA is present) buffers. Use it as a range:
//
//   data::DataLoader loader(dataset, {.batch_size = 64, .shuffle = true, .num_workers = 2});
//   for (data::Batch& batch : loader) train_step(batch.data, batch.target);  // one epoch per loop
//
// Each begin() starts an epoch: after a complete loop the next one is the following epoch; leaving a loop
// early (break, exception) also ends that epoch, and its workers stop (or park, with persistent_workers).
// state()/load_state() save and restore the position between runs. A worker's exception is re-thrown in the
// caller with the worker id and sample index. The time the caller spent waiting for batches is data-wait.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "data/batch_maker.h"
#include "data/buffer_pool.h"
#include "data/collate.h"
#include "data/dataset.h"
#include "data/loader_errors.h"
#include "data/loader_options.h"
#include "data/sampler.h"
#include "data/worker_pool.h"

namespace syncgrad::data {

class DataLoader {
 public:
  struct Sentinel {};
  class Iterator;

  // ValueError for a null dataset, shuffle together with a sampler, batch_size < 1, num_workers < 0,
  // prefetch_factor < 1, timeout < 0, or persistent_workers without workers.
  DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options = {});
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  // Starts the epoch state() names; ValueError while another iterator of this loader is alive.
  Iterator begin();
  Sentinel end() const { return {}; }

  // Batches in one epoch (for the sampler's current size).
  int64_t num_batches() const;
  // The next begin()'s position; after the last batch of epoch e was handed out: {e + 1, 0}.
  LoaderState state() const;
  // ValueError for negative values, more batches than an epoch has, or while iterating.
  void load_state(const LoaderState& state);

  // Seconds the caller spent inside begin()/++ waiting for a batch (with num_workers == 0: loading it).
  double data_wait_seconds() const { return wait_seconds_; }
  int64_t batches_delivered() const { return batches_delivered_; }
  // True when batches are collated into pinned host memory.
  bool pinned() const { return pool_->is_pinned(); }
  BufferPoolStats buffer_stats() const { return pool_->stats(); }
  const DataLoaderOptions& options() const { return options_; }

 private:
  std::optional<Batch> fetch_next();
  void end_iteration(bool completed);
  void prepare_sampler();

  std::shared_ptr<const Dataset> dataset_;
  DataLoaderOptions options_;
  std::shared_ptr<Sampler> sampler_;
  bool owns_sampler_ = false;
  std::shared_ptr<BufferPool> pool_;
  std::shared_ptr<const BatchMaker> maker_;
  std::unique_ptr<WorkerPool> workers_;
  std::vector<std::vector<int64_t>> plan_;  // the epoch's batches when num_workers == 0
  int64_t epoch_ = 0;
  int64_t consumed_ = 0;
  int64_t epoch_batches_ = -1;  // batches in the epoch being iterated (-1 before the first begin)
  bool resume_pending_ = false;
  bool iterating_ = false;
  std::optional<int64_t> last_sampler_epoch_;
  bool warned_same_epoch_ = false;
  double wait_seconds_ = 0;
  int64_t batches_delivered_ = 0;
};

// Move-only input iterator over one epoch; destroying it before the end ends the epoch. It must not outlive its
// loader, and the Batch it refers to is replaced by ++ (copy the Batch, a cheap handle, to keep it longer).
class DataLoader::Iterator {
 public:
  Iterator(Iterator&& other) noexcept;
  Iterator& operator=(Iterator&& other) noexcept;
  ~Iterator();

  Batch& operator*() { return *current_; }
  Batch* operator->() { return &*current_; }
  Iterator& operator++();
  friend bool operator==(const Iterator& it, Sentinel) { return !it.current_.has_value(); }

 private:
  friend class DataLoader;
  explicit Iterator(DataLoader* loader) : loader_(loader) {}
  void advance();

  DataLoader* loader_ = nullptr;  // null once the epoch is over (or moved from)
  std::optional<Batch> current_;
};

}  // namespace syncgrad::data
