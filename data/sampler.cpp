// SequentialSampler, RandomSampler, BatchSampler and DistributedSampler.
#include "data/sampler.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <utility>

#include "tensor/check.h"
#include "tensor/errors.h"
#include "tensor/generator.h"
#include "tensor/ops/factories.h"

namespace syncgrad::data {

namespace {

void check_size(int64_t n, const char* who, const char* what) {
  SYNCGRAD_CHECK(n >= 0, ValueError, who, ": ", what, " must be >= 0, got ", n);
}

std::vector<int64_t> iota(int64_t n) {
  std::vector<int64_t> out(static_cast<size_t>(n));
  std::iota(out.begin(), out.end(), int64_t{0});
  return out;
}

std::vector<int64_t> permutation(int64_t n, Generator gen) { return to_vector<int64_t>(randperm(n, &gen)); }

}  // namespace

Sampler::~Sampler() = default;

SequentialSampler::SequentialSampler(int64_t n) : n_(n) { check_size(n, "SequentialSampler", "n"); }

std::vector<int64_t> SequentialSampler::indices() const { return iota(n_); }

RandomSampler::RandomSampler(int64_t n, uint64_t seed) : n_(n), seed_(seed) {
  check_size(n, "RandomSampler", "n");
}

std::vector<int64_t> RandomSampler::indices() const {
  return permutation(n_, Generator(seed_).split(static_cast<uint64_t>(epoch_)));
}

BatchSampler::BatchSampler(std::shared_ptr<Sampler> sampler, int64_t batch_size, bool drop_last)
    : sampler_(std::move(sampler)), batch_size_(batch_size), drop_last_(drop_last) {
  SYNCGRAD_CHECK(sampler_, ValueError, "BatchSampler: sampler must not be null");
  SYNCGRAD_CHECK(batch_size_ >= 1, ValueError, "BatchSampler: batch_size must be >= 1, got ", batch_size_);
}

int64_t BatchSampler::num_batches() const {
  const int64_t n = sampler_->size();
  return drop_last_ ? n / batch_size_ : (n + batch_size_ - 1) / batch_size_;
}

std::vector<std::vector<int64_t>> BatchSampler::batches() const {
  const std::vector<int64_t> all = sampler_->indices();
  std::vector<std::vector<int64_t>> out;
  for (size_t start = 0; start < all.size(); start += static_cast<size_t>(batch_size_)) {
    const size_t end = std::min(all.size(), start + static_cast<size_t>(batch_size_));
    if (drop_last_ && end - start < static_cast<size_t>(batch_size_)) break;
    out.emplace_back(all.begin() + static_cast<std::ptrdiff_t>(start), all.begin() + static_cast<std::ptrdiff_t>(end));
  }
  return out;
}

DistributedSampler::DistributedSampler(int64_t dataset_size, int64_t num_replicas, int64_t rank, bool shuffle,
                                       uint64_t seed, bool drop_last)
    : dataset_size_(dataset_size),
      num_replicas_(num_replicas),
      rank_(rank),
      shuffle_(shuffle),
      seed_(seed),
      drop_last_(drop_last) {
  check_size(dataset_size, "DistributedSampler", "dataset_size");
  SYNCGRAD_CHECK(num_replicas >= 1, ValueError, "DistributedSampler: num_replicas must be >= 1, got ", num_replicas);
  SYNCGRAD_CHECK(rank >= 0 && rank < num_replicas, ValueError, "DistributedSampler: rank ", rank,
                 " is out of range [0, ", num_replicas - 1, "] for num_replicas ", num_replicas);
}

int64_t DistributedSampler::samples_per_rank(int64_t start) const {
  const int64_t n = dataset_size_ - start, r = num_replicas_;
  return (drop_last_ && n % r != 0) ? n / r : (n + r - 1) / r;
}

void DistributedSampler::resume_epoch_at(int64_t epoch, int64_t start) {
  SYNCGRAD_CHECK(epoch >= 0, ValueError, "DistributedSampler::resume_epoch_at: epoch must be >= 0, got ", epoch);
  SYNCGRAD_CHECK(start >= 0 && start <= dataset_size_, ValueError, "DistributedSampler::resume_epoch_at: start ",
                 start, " is out of range [0, ", dataset_size_, "] for a dataset of ", dataset_size_, " examples");
  resumed_epoch_ = epoch;
  resumed_start_ = start;
  epoch_ = epoch;
}

int64_t DistributedSampler::global_position(int64_t epoch, int64_t taken) const {
  const int64_t size = size_of_epoch(epoch);
  SYNCGRAD_CHECK(taken >= 0 && taken <= size, ValueError, "DistributedSampler::global_position: taken ", taken,
                 " is out of range [0, ", size, "] (this rank's indices in epoch ", epoch, ")");
  return std::min(dataset_size_, start_of_epoch(epoch) + taken * num_replicas_);
}

std::vector<std::pair<std::string, std::string>> DistributedSampler::settings() const {
  return {{"dataset_size", std::to_string(dataset_size_)}, {"num_replicas", std::to_string(num_replicas_)},
          {"shuffle", shuffle_ ? "true" : "false"},         {"seed", std::to_string(seed_)},
          {"drop_last", drop_last_ ? "true" : "false"},     {"epoch", std::to_string(epoch_)},
          {"epoch_start", std::to_string(epoch_start())}};
}

std::vector<int64_t> DistributedSampler::indices() const {
  std::vector<int64_t> order =
      shuffle_ ? permutation(dataset_size_, Generator(seed_ + static_cast<uint64_t>(epoch_))) : iota(dataset_size_);
  order.erase(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(epoch_start()));
  const size_t total = static_cast<size_t>(total_size());
  if (order.size() > total) {
    order.resize(total);
  } else {
    const size_t n = order.size();
    for (size_t i = 0; order.size() < total; ++i) order.push_back(order[i % n]);
  }
  std::vector<int64_t> mine;
  mine.reserve(total / static_cast<size_t>(num_replicas_));
  for (size_t i = static_cast<size_t>(rank_); i < total; i += static_cast<size_t>(num_replicas_)) {
    mine.push_back(order[i]);
  }
  return mine;
}

}  // namespace syncgrad::data
