// Helpers for the DataLoader tests: a synthetic dataset whose example i is (data = [i, i, i, i] f32,
// target = i i64) with optional per-index delays, failures and a record of what the workers did, and a stderr
// capture for the loader's one-line notices.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <iostream>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include "syncgrad.h"

namespace syncgrad::testing {

class CountingDataset : public data::Dataset {
 public:
  explicit CountingDataset(int64_t n) : n_(n) {}
  int64_t size() const override { return n_; }
  data::Example get(int64_t index) const override {
    check_index(index);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      max_fetched_ = std::max(max_fetched_, index);
      ++fetches_;
      if (const data::WorkerInfo* w = data::current_worker()) worker_seeds_.insert({w->id, w->seed});
    }
    if (delay) delay(index);
    if (fail_at == index) throw ValueError("bad record " + std::to_string(index));
    if (std_fail_at == index) throw std::runtime_error("plain failure");
    return {full({4}, static_cast<double>(index)), scalar_tensor(index, DType::i64, kCPU)};
  }
  int64_t max_fetched() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return max_fetched_;
  }
  int64_t fetches() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return fetches_;
  }
  std::set<std::pair<int, uint64_t>> worker_seeds() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return worker_seeds_;
  }

  std::function<void(int64_t)> delay;  // called in get() (worker thread)
  int64_t fail_at = -1;                // throws ValueError("bad record <i>")
  int64_t std_fail_at = -1;            // throws std::runtime_error

 private:
  int64_t n_;
  mutable std::mutex mutex_;
  mutable int64_t max_fetched_ = -1;
  mutable int64_t fetches_ = 0;
  mutable std::set<std::pair<int, uint64_t>> worker_seeds_;
};

// Example i: data = [i + u] with u drawn from the loader's generator, so batches show the augmentation.
class RandomizedDataset : public data::Dataset {
 public:
  explicit RandomizedDataset(int64_t n) : n_(n) {}
  int64_t size() const override { return n_; }
  data::Example get(int64_t index) const override {
    Generator gen(0);
    return fetch(index, gen);
  }
  data::Example fetch(int64_t index, Generator& gen) const override {
    check_index(index);
    return {full({1}, static_cast<double>(index) + gen.next_double()), scalar_tensor(index, DType::i64, kCPU)};
  }

 private:
  int64_t n_;
};

inline void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

// Targets of every batch of one epoch.
inline std::vector<std::vector<int64_t>> epoch_targets(data::DataLoader& loader) {
  std::vector<std::vector<int64_t>> out;
  for (data::Batch& batch : loader) out.push_back(to_vector<int64_t>(batch.target));
  return out;
}

// Data values of every batch of one epoch, flattened.
inline std::vector<float> epoch_values(data::DataLoader& loader) {
  std::vector<float> out;
  for (data::Batch& batch : loader) {
    std::vector<float> v = to_vector<float>(batch.data);
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

// Redirects std::cerr into a string for its lifetime.
class CaptureStderr {
 public:
  CaptureStderr() : old_(std::cerr.rdbuf(buffer_.rdbuf())) {}
  ~CaptureStderr() { std::cerr.rdbuf(old_); }
  std::string text() const { return buffer_.str(); }

 private:
  std::ostringstream buffer_;
  std::streambuf* old_;
};

inline int64_t count_lines(const std::string& text) { return std::count(text.begin(), text.end(), '\n'); }

}  // namespace syncgrad::testing
