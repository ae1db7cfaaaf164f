// The comm hook of DistributedDataParallel's gradient sharding (ZeRO-2): each bucket is reduce-scattered instead
// of allreduced, so rank r receives only the sum of block r of the (pre-divided, padded) bucket: its shard of the
// averaged gradients, kept here per bucket for ZeroRedundancyOptimizer (zero_redundancy_optimizer.h). The
// bucket's buffer itself is left unreduced. DDP installs it when DDPOptions::gradient_sharding is set.
#pragma once

#include <memory>
#include <vector>

#include "distributed/comm_hook.h"

namespace syncgrad::distributed {

class ReduceScatterHook : public CommHook {
 public:
  std::string name() const override { return "reduce_scatter"; }
  // ValueError when the bucket's length is not a multiple of the group size (the reducer pads it).
  std::shared_ptr<Work> launch(ProcessGroup& group, GradBucket& bucket) override;
  // Per bucket index, this rank's averaged gradient shard of the last synchronised backward (undefined before).
  const std::vector<Tensor>& shards() const { return shards_; }

 private:
  std::vector<Tensor> shards_;
};

std::shared_ptr<CommHook> reduce_scatter_hook();

// With gradient sharding the hook must be a ReduceScatterHook, and only then (ValueError naming the hook).
void check_sharding_hook(bool gradient_sharding, const CommHook& hook);
// The smallest multiple of `world` >= n (a sharded bucket's padded length).
inline int64_t padded_to_multiple(int64_t n, int world) { return (n + world - 1) / world * world; }

}  // namespace syncgrad::distributed
