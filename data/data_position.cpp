// A DataLoader's position across world sizes (see data_position.h).
#include "data/data_position.h"

#include <algorithm>

#include "tensor/check.h"
#include "tensor/errors.h"

namespace syncgrad::data {
namespace {

DistributedSampler* distributed_sampler(const DataLoader& loader) {
  return dynamic_cast<DistributedSampler*>(loader.options().sampler.get());
}

}  // namespace

DataPosition data_position(const DataLoader& loader, int64_t world_size) {
  const LoaderState state = loader.state();
  DataPosition position{.epoch = state.epoch, .batches_consumed = state.batches_consumed, .world_size = world_size};
  const int64_t taken = state.batches_consumed * loader.options().batch_size;
  if (const DistributedSampler* sampler = distributed_sampler(loader)) {
    position.epoch_start = sampler->start_of_epoch(state.epoch);
    position.global_position =
        sampler->global_position(state.epoch, std::min(taken, sampler->size_of_epoch(state.epoch)));
  } else {
    position.global_position = taken * world_size;
  }
  return position;
}

void restore_data_position(DataLoader& loader, const DataPosition& saved, int64_t world_size) {
  SYNCGRAD_CHECK(saved.epoch >= 0 && saved.batches_consumed >= 0 && saved.epoch_start >= 0 &&
                     saved.global_position >= saved.epoch_start && saved.world_size >= 1,
                 ValueError, "restore_data_position: epoch ", saved.epoch, ", batches_consumed ",
                 saved.batches_consumed, ", epoch_start ", saved.epoch_start, ", global_position ",
                 saved.global_position, " and world_size ", saved.world_size, " are not a position");
  DistributedSampler* sampler = distributed_sampler(loader);
  if (saved.world_size == world_size) {
    if (sampler != nullptr && saved.epoch_start > 0) sampler->resume_epoch_at(saved.epoch, saved.epoch_start);
    loader.load_state({saved.epoch, saved.batches_consumed});
    return;
  }
  SYNCGRAD_CHECK(sampler != nullptr && sampler->num_replicas() == world_size, ValueError,
                 "the data position was saved by a job of world size ", saved.world_size, " but this one has ",
                 world_size, "; continuing at another world size needs the DataLoader's sampler to be a "
                 "DistributedSampler of ", world_size, " ranks (it splits the epoch's remaining samples)");
  SYNCGRAD_CHECK(saved.global_position <= sampler->dataset_size(), ValueError, "the data position ",
                 saved.global_position, " of epoch ", saved.epoch, " lies past the dataset's ",
                 sampler->dataset_size(), " examples (another dataset than the saved run's?)");
  if (saved.global_position > 0) sampler->resume_epoch_at(saved.epoch, saved.global_position);
  loader.load_state({saved.epoch, 0});
}

}  // namespace syncgrad::data
