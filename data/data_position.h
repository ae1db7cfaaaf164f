// Where a training job stood in its data when it saved a checkpoint, and how a job of the same or of another
// world size continues from there. A job of the saving world size restores the DataLoader's own position (the
// very batches an uninterrupted run would see); a job of another world size (elastic) continues the epoch from
// its global position: its DistributedSampler splits the entries of the epoch's order that no rank consumed
// among the new ranks (DistributedSampler::resume_epoch_at), so within the epoch every sample is seen once,
// besides the sampler's own padding at the epoch's end. Later epochs are ordinary ones of the new world size.
#pragma once

#include <cstdint>

#include "data/loader.h"

namespace syncgrad::data {

struct DataPosition {
  int64_t epoch = 0;             // the epoch of the next batch
  int64_t batches_consumed = 0;  // of that epoch, per rank, in the saving job's batches
  int64_t epoch_start = 0;       // where that epoch began in its order (an elastic resume's start, else 0)
  int64_t global_position = 0;   // entries of that epoch's order consumed by all ranks together
  int64_t world_size = 1;        // of the saving job
};

// The loader's position in a job of `world_size` ranks. Its sampler is this rank's DistributedSampler (of
// world_size ranks), or any sampler with world_size 1 (its position is then batches x batch size).
DataPosition data_position(const DataLoader& loader, int64_t world_size);

// Sets `loader` (before begin()) to continue from `saved` in a job of `world_size` ranks: at the saved world
// size from the loader's own state (exact), at another one from the global position through the loader's
// DistributedSampler. ValueError naming both world sizes when they differ and the loader's sampler is no
// DistributedSampler of world_size ranks, and for a position the dataset cannot have.
void restore_data_position(DataLoader& loader, const DataPosition& saved, int64_t world_size);

}  // namespace syncgrad::data
