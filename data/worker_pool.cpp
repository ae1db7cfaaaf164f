// WorkerPool: one mutex, a condition variable each for workers and consumer, results keyed by batch number.
#include "data/worker_pool.h"

#include <chrono>
#include <cstdio>
#include <string>
#include <system_error>
#include <utility>

#include "data/loader_errors.h"
#include "data/worker_info.h"
#include "profiler/events.h"

namespace syncgrad::data {

WorkerPool::WorkerPool(int num_workers, std::shared_ptr<const BatchMaker> maker, uint64_t seed)
    : num_workers_(num_workers), maker_(std::move(maker)), seed_(seed) {
  threads_.reserve(static_cast<size_t>(num_workers));
  try {
    for (int id = 0; id < num_workers; ++id) {
      try {
        threads_.emplace_back([this, id] { run(id); });
      } catch (const std::system_error& e) {
        throw ValueError("DataLoader: cannot start worker thread " + std::to_string(id + 1) + " of " +
                         std::to_string(num_workers) + ": " + e.what() +
                         " (the process's thread limit, ulimit -u, or memory); use fewer workers");
      }
    }
  } catch (...) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    work_cv_.notify_all();
    for (std::thread& t : threads_) t.join();
    throw;
  }
}

WorkerPool::~WorkerPool() {
  std::map<int64_t, Result> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    dropped = std::move(results_);
  }
  work_cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

std::map<int64_t, WorkerPool::Result> WorkerPool::reset_locked(int64_t first, int64_t end) {
  ++generation_;
  std::map<int64_t, Result> dropped = std::move(results_);
  results_.clear();
  loading_.clear();
  end_ = end;
  next_dispatch_ = next_take_ = first;
  return dropped;
}

void WorkerPool::start_epoch(std::vector<std::vector<int64_t>> batches, int64_t first, int64_t epoch,
                             int64_t window) {
  auto plan = std::make_shared<const std::vector<std::vector<int64_t>>>(std::move(batches));
  std::map<int64_t, Result> dropped;  // destroyed after the lock is released
  {
    std::lock_guard<std::mutex> lock(mutex_);
    dropped = reset_locked(first, static_cast<int64_t>(plan->size()));
    plan_ = std::move(plan);
    epoch_ = epoch;
    window_ = window < 1 ? 1 : window;
  }
  work_cv_.notify_all();
}

void WorkerPool::abandon() {
  std::map<int64_t, Result> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    dropped = reset_locked(0, 0);
    plan_.reset();
  }
  work_cv_.notify_all();
}

void WorkerPool::run(int id) {
  profiler::set_thread_name("data worker " + std::to_string(id));
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stop_ || (next_dispatch_ < end_ && next_dispatch_ < next_take_ + window_); });
    if (stop_) return;
    const int64_t batch = next_dispatch_++;
    const uint64_t generation = generation_;
    const int64_t epoch = epoch_;
    std::shared_ptr<const std::vector<std::vector<int64_t>>> plan = plan_;
    loading_[batch] = id;
    lock.unlock();

    Result result;
    {
      WorkerScope scope(WorkerInfo{id, num_workers_, epoch, worker_seed(seed_, epoch, id)});
      profiler::Scope span("data", "load batch");
      span.arg("batch", batch).arg("epoch", epoch);
      try {
        result.batch = maker_->make((*plan)[static_cast<size_t>(batch)], epoch, batch, id);
      } catch (...) {
        result.error = std::current_exception();
      }
    }

    lock.lock();
    if (generation == generation_) {
      loading_.erase(batch);
      results_.emplace(batch, std::move(result));
      ready_cv_.notify_all();
    } else {
      lock.unlock();
      result = Result{};  // a stale epoch's batch: its buffers go back to the pool outside the lock
      lock.lock();
    }
  }
}

std::optional<Batch> WorkerPool::next(double timeout_seconds) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (next_take_ >= end_) return std::nullopt;
  const int64_t batch = next_take_;
  auto ready = [&] { return results_.count(batch) != 0; };
  if (timeout_seconds > 0) {
    if (!ready_cv_.wait_for(lock, std::chrono::duration<double>(timeout_seconds), ready)) {
      auto loader = loading_.find(batch);
      std::string state = loader != loading_.end() ? "is still being loaded by worker " + std::to_string(loader->second)
                                                   : "has not been started (all workers busy)";
      char seconds[32];
      std::snprintf(seconds, sizeof seconds, "%g", timeout_seconds);
      throw TimeoutError("DataLoader: no batch after waiting " + std::string(seconds) + " s (timeout): batch " +
                         std::to_string(batch) + " of epoch " + std::to_string(epoch_) + " " + state +
                         "; raise the timeout or check the dataset for slow or blocking reads");
    }
  } else {
    ready_cv_.wait(lock, ready);
  }
  auto node = results_.extract(batch);
  ++next_take_;
  lock.unlock();
  work_cv_.notify_one();  // one more batch may be dispatched
  Result& result = node.mapped();
  if (result.error) std::rethrow_exception(result.error);
  return std::move(result.batch);
}

}  // namespace syncgrad::data
