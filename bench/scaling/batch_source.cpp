// BatchSource: restarts the loader at the end of every epoch.
#include "bench/scaling/batch_source.h"

namespace syncgrad::bench {

constexpr int64_t kBatchesPerEpoch = 8;

BatchSource::BatchSource(const SyntheticTask& task, int64_t batch, bool use_loader, int loader_workers, uint64_t seed) {
  Generator gen(seed);
  dataset_ = task.make_dataset(batch * kBatchesPerEpoch, gen);
  data::DataLoaderOptions options{.batch_size = batch, .shuffle = true, .drop_last = true};
  options.num_workers = loader_workers;
  options.seed = seed;
  loader_ = std::make_unique<data::DataLoader>(dataset_, options);
  if (!use_loader) {
    fixed_ = *loader_->begin();
    loader_.reset();
  }
}

BatchSource::~BatchSource() { position_.reset(); }

data::Batch BatchSource::next() {
  if (!loader_) return fixed_;
  if (position_) ++*position_;
  if (!position_ || *position_ == loader_->end()) {
    position_.reset();  // the loader allows one live iterator
    position_.emplace(loader_->begin());
  }
  return **position_;
}

}  // namespace syncgrad::bench
