// A debugging record of the samples each rank trained on: with SYNCGRAD_RECORD_SAMPLES=PATH, rank R appends
// one line per batch to PATH.rank<R>: the 0-based epoch, then the batch's dataset indices, space-separated,
//   0 17 3 42 8
// (written as the batch is trained, flushed per line). It shows that a resumed run, at the same or another
// world size (--elastic), sees every sample of an epoch once. It needs the data to come through a
// DistributedSampler (several processes, or --elastic); otherwise it says so once and records nothing.
#pragma once

#include <cstdint>
#include <fstream>
#include <memory>
#include <optional>
#include <ostream>
#include <vector>

#include "data/sampler.h"

namespace syncgrad::train {

inline constexpr const char* kRecordSamplesVariable = "SYNCGRAD_RECORD_SAMPLES";

class SampleRecord {
 public:
  // From the environment; inactive when SYNCGRAD_RECORD_SAMPLES is unset or empty. IOError naming the file when
  // it cannot be opened for appending.
  SampleRecord(std::shared_ptr<const data::DistributedSampler> shard, int64_t batch_size, int rank,
               std::ostream& notes);

  // Starts epoch `epoch` at batch `first_batch` (of its loader position).
  void begin_epoch(int64_t epoch, int64_t first_batch);
  // Records the next batch of the epoch.
  void add_batch();

 private:
  std::shared_ptr<const data::DistributedSampler> shard_;
  int64_t batch_size_;
  std::optional<std::ofstream> file_;
  int64_t epoch_ = 0;
  int64_t next_batch_ = 0;
  std::vector<int64_t> indices_;  // this rank's indices of the epoch
};

}  // namespace syncgrad::train
