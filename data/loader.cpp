// DataLoader: option checks, the epoch bookkeeping behind begin()/++ and the sampler-epoch guard.
#include "data/loader.h"

#include <chrono>
#include <iostream>
#include <mutex>
#include <string>
#include <utility>

#include "profiler/events.h"
#include "tensor/backend.h"
#include "tensor/check.h"

namespace syncgrad::data {
namespace {

void check_options(const Dataset* dataset, const DataLoaderOptions& o) {
  auto fail = [](const std::string& what) { throw ValueError("DataLoader: " + what); };
  if (dataset == nullptr) fail("dataset must not be null");
  if (o.shuffle && o.sampler) {
    fail("shuffle=true cannot be combined with a sampler (the sampler decides the order); drop one of them");
  }
  if (o.batch_size < 1) fail("batch_size must be >= 1, got " + std::to_string(o.batch_size));
  if (o.num_workers < 0 || o.num_workers > kMaxNumWorkers) {
    fail("num_workers must be from 0 to " + std::to_string(kMaxNumWorkers) + " (worker threads), got " +
         std::to_string(o.num_workers));
  }
  if (o.prefetch_factor < 1) fail("prefetch_factor must be >= 1, got " + std::to_string(o.prefetch_factor));
  if (o.timeout < 0) fail("timeout must be >= 0 seconds (0: no timeout), got " + std::to_string(o.timeout));
  if (o.persistent_workers && o.num_workers == 0) fail("persistent_workers needs num_workers > 0");
}

// Pinned when asked for and a CUDA device is there; otherwise says so on stderr, once per process.
std::shared_ptr<BufferPool> make_pool(bool pin_memory) {
  if (!pin_memory) return std::make_shared<BufferPool>(false);
  if (cuda_is_available()) return std::make_shared<BufferPool>(true);
  static std::once_flag told;
  std::call_once(told, [] {
    std::cerr << "DataLoader: pin_memory=true but " << backend_unavailable_reason(DeviceType::kCUDA)
              << "; batches go to plain aligned host memory\n";
  });
  return std::make_shared<BufferPool>(false);
}

}  // namespace

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options)
    : dataset_(std::move(dataset)), options_(std::move(options)) {
  check_options(dataset_.get(), options_);
  sampler_ = options_.sampler;
  if (!sampler_) {
    owns_sampler_ = true;
    if (options_.shuffle) sampler_ = std::make_shared<RandomSampler>(dataset_->size(), options_.seed);
    else sampler_ = std::make_shared<SequentialSampler>(dataset_->size());
  }
  pool_ = make_pool(options_.pin_memory);
  CollateFn collate = options_.collate ? options_.collate : CollateFn(default_collate);
  maker_ = std::make_shared<const BatchMaker>(dataset_, std::move(collate), pool_, options_.seed);
}

DataLoader::~DataLoader() = default;

int64_t DataLoader::num_batches() const {
  return BatchSampler(sampler_, options_.batch_size, options_.drop_last).num_batches();
}

LoaderState DataLoader::state() const {
  const int64_t total = epoch_batches_ >= 0 ? epoch_batches_ : num_batches();
  if (consumed_ > 0 && consumed_ >= total) return {epoch_ + 1, 0};
  return {epoch_, consumed_};
}

void DataLoader::load_state(const LoaderState& state) {
  SYNCGRAD_CHECK(!iterating_, ValueError,
                 "DataLoader::load_state: the loader is being iterated; restore it before begin()");
  SYNCGRAD_CHECK(state.epoch >= 0 && state.batches_consumed >= 0, ValueError, "DataLoader::load_state: epoch ",
                 state.epoch, " and batches_consumed ", state.batches_consumed, " must be >= 0");
  const int64_t total = num_batches();
  SYNCGRAD_CHECK(state.batches_consumed <= total, ValueError, "DataLoader::load_state: batches_consumed ",
                 state.batches_consumed, " exceeds the ", total,
                 " batches of an epoch (another dataset size or batch_size than the saved run?)");
  epoch_ = state.epoch;
  consumed_ = state.batches_consumed;
  epoch_batches_ = -1;
  resume_pending_ = true;
}

void DataLoader::prepare_sampler() {
  if (owns_sampler_ || options_.auto_set_epoch) {
    sampler_->set_epoch(epoch_);
    return;
  }
  auto* distributed = dynamic_cast<DistributedSampler*>(sampler_.get());
  if (distributed == nullptr) return;
  if (last_sampler_epoch_ && *last_sampler_epoch_ == distributed->epoch() && !warned_same_epoch_) {
    warned_same_epoch_ = true;
    std::cerr << "DataLoader: warning: starting another epoch while the DistributedSampler is still at epoch "
              << distributed->epoch() << ", so it repeats the same order; call sampler->set_epoch(epoch) before "
              << "each epoch, or set DataLoaderOptions::auto_set_epoch = true\n";
  }
  last_sampler_epoch_ = distributed->epoch();
}

DataLoader::Iterator DataLoader::begin() {
  SYNCGRAD_CHECK(
      !iterating_, ValueError,
      "DataLoader::begin: an iterator of this loader is still alive; finish or destroy it first (one epoch at a time)");
  const bool abandoned = epoch_batches_ >= 0 && consumed_ > 0;  // a loop left early (completion resets -1)
  if (!resume_pending_ && abandoned) {
    ++epoch_;
    consumed_ = 0;
  }
  resume_pending_ = false;
  prepare_sampler();
  std::vector<std::vector<int64_t>> batches = BatchSampler(sampler_, options_.batch_size, options_.drop_last).batches();
  epoch_batches_ = static_cast<int64_t>(batches.size());
  if (consumed_ > epoch_batches_) consumed_ = epoch_batches_;
  if (options_.num_workers > 0) {
    if (!workers_) workers_ = std::make_unique<WorkerPool>(options_.num_workers, maker_, options_.seed);
    workers_->start_epoch(std::move(batches), consumed_, epoch_,
                          static_cast<int64_t>(options_.prefetch_factor) * options_.num_workers);
  } else {
    plan_ = std::move(batches);
  }
  iterating_ = true;
  Iterator it(this);
  it.advance();
  return it;
}

std::optional<Batch> DataLoader::fetch_next() {
  profiler::Scope span("data", "data wait");  // the caller waiting for its next batch
  auto start = std::chrono::steady_clock::now();
  std::optional<Batch> batch;
  try {
    if (workers_) {
      batch = workers_->next(options_.timeout);
    } else if (consumed_ < static_cast<int64_t>(plan_.size())) {
      batch = maker_->make(plan_[static_cast<size_t>(consumed_)], epoch_, consumed_, -1);
    }
  } catch (...) {
    wait_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    throw;
  }
  wait_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (batch) {
    ++consumed_;
    ++batches_delivered_;
  } else {
    ++epoch_;
    consumed_ = 0;
    epoch_batches_ = -1;
    end_iteration(true);
  }
  return batch;
}

void DataLoader::end_iteration(bool completed) {
  iterating_ = false;
  plan_.clear();
  if (!workers_) return;
  if (options_.persistent_workers) {
    if (!completed) workers_->abandon();
  } else {
    workers_.reset();
  }
}

DataLoader::Iterator::Iterator(Iterator&& other) noexcept
    : loader_(std::exchange(other.loader_, nullptr)), current_(std::move(other.current_)) {
  other.current_.reset();
}

DataLoader::Iterator& DataLoader::Iterator::operator=(Iterator&& other) noexcept {
  if (this != &other) {
    if (loader_ != nullptr) loader_->end_iteration(false);
    loader_ = std::exchange(other.loader_, nullptr);
    current_ = std::move(other.current_);
    other.current_.reset();
  }
  return *this;
}

DataLoader::Iterator::~Iterator() {
  if (loader_ != nullptr) loader_->end_iteration(false);
}

void DataLoader::Iterator::advance() {
  current_.reset();  // the previous batch's buffers can return to the pool if the caller kept no reference
  current_ = loader_->fetch_next();
  if (!current_) loader_ = nullptr;
}

DataLoader::Iterator& DataLoader::Iterator::operator++() {
  if (loader_ != nullptr) advance();
  return *this;
}

}  // namespace syncgrad::data
