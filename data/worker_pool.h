// WorkerPool: the DataLoader's worker threads for num_workers > 0. Workers take batch numbers in order from
// the current epoch's plan, never more than `window` (prefetch_factor x num_workers) ahead of the consumer, and
// park their results (or errors) by batch number; next() hands them out in sampler order whichever worker
// finished first. A new epoch or abandon() bumps a generation so late results of an old epoch are dropped.
// The destructor stops and joins the threads; it waits at most for the batch each worker is loading.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "data/batch_maker.h"

namespace syncgrad::data {

class WorkerPool {
 public:
  WorkerPool(int num_workers, std::shared_ptr<const BatchMaker> maker, uint64_t seed);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Loads batches[first..] of `epoch`, at most `window` of them dispatched and not yet returned by next().
  void start_epoch(std::vector<std::vector<int64_t>> batches, int64_t first, int64_t epoch, int64_t window);
  // The next batch in order, or nullopt when the epoch is exhausted. Rethrows a worker's error (already carrying
  // the worker id and sample index); TimeoutError after timeout_seconds (<= 0: wait as long as it takes).
  std::optional<Batch> next(double timeout_seconds);
  // Drops the rest of the epoch; the threads stay for the next start_epoch.
  void abandon();

 private:
  struct Result {
    std::optional<Batch> batch;
    std::exception_ptr error;
  };
  void run(int id);
  std::map<int64_t, Result> reset_locked(int64_t first, int64_t end);

  const int num_workers_;
  const std::shared_ptr<const BatchMaker> maker_;
  const uint64_t seed_;
  std::mutex mutex_;
  std::condition_variable work_cv_;   // workers: work to dispatch, or stop
  std::condition_variable ready_cv_;  // consumer: a result arrived
  bool stop_ = false;
  uint64_t generation_ = 0;
  std::shared_ptr<const std::vector<std::vector<int64_t>>> plan_;
  int64_t epoch_ = 0;
  int64_t end_ = 0;            // batches in the plan
  int64_t next_dispatch_ = 0;  // next batch a worker takes
  int64_t next_take_ = 0;      // next batch next() returns
  int64_t window_ = 1;
  std::map<int64_t, Result> results_;
  std::map<int64_t, int> loading_;  // batch -> worker loading it
  std::vector<std::thread> threads_;
};

}  // namespace syncgrad::data
