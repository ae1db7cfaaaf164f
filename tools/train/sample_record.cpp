// SYNCGRAD_RECORD_SAMPLES: each rank's trained samples, one line per batch (see sample_record.h).
#include "tools/train/sample_record.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "tensor/check.h"
#include "tensor/errors.h"

namespace syncgrad::train {

SampleRecord::SampleRecord(std::shared_ptr<const data::DistributedSampler> shard, int64_t batch_size, int rank,
                           std::ostream& notes)
    : shard_(std::move(shard)), batch_size_(batch_size) {
  const char* path = std::getenv(kRecordSamplesVariable);
  if (path == nullptr || *path == '\0') return;
  if (!shard_) {
    notes << "note: " << kRecordSamplesVariable << " records the samples of a DistributedSampler (several "
          << "processes, or --elastic); this run has none, so nothing is recorded\n";
    return;
  }
  const std::string file = std::string(path) + ".rank" + std::to_string(rank);
  file_.emplace(file, std::ios::app);
  SYNCGRAD_CHECK(file_->good(), IOError, kRecordSamplesVariable, ": cannot append to \"", file,
                 "\"; choose a writable path");
}

void SampleRecord::begin_epoch(int64_t epoch, int64_t first_batch) {
  if (!file_) return;
  epoch_ = epoch;
  next_batch_ = first_batch;
  indices_ = shard_->indices();
}

void SampleRecord::add_batch() {
  if (!file_) return;
  const size_t begin = std::min(indices_.size(), static_cast<size_t>(next_batch_ * batch_size_));
  const size_t end = std::min(indices_.size(), begin + static_cast<size_t>(batch_size_));
  *file_ << epoch_;
  for (size_t i = begin; i < end; ++i) *file_ << ' ' << indices_[i];
  *file_ << std::endl;
  ++next_batch_;
}

}  // namespace syncgrad::train
