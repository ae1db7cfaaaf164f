// ReduceScatterHook: one reduce_scatter_tensor per bucket into a per-bucket shard kept between backwards.
#include "distributed/reduce_scatter_hook.h"

#include "tensor/check.h"
#include "tensor/ops/factories.h"

namespace syncgrad::distributed {

std::shared_ptr<Work> ReduceScatterHook::launch(ProcessGroup& group, GradBucket& bucket) {
  const int64_t n = bucket.buffer.numel();
  SYNCGRAD_CHECK(n % group.size() == 0, ValueError, "reduce_scatter hook: bucket ", bucket.index, " holds ", n,
                 " elements, not a multiple of the ", group.size(), " ranks (DDP pads buckets only with "
                 "gradient_sharding)");
  if (shards_.size() <= bucket.index) shards_.resize(bucket.index + 1);
  Tensor& shard = shards_[bucket.index];
  if (!shard.defined() || shard.numel() != n / group.size()) {
    shard = empty({n / group.size()}, TensorOptions{bucket.buffer.dtype(), bucket.buffer.device()});
  }
  return group.reduce_scatter_tensor(shard, bucket.buffer, ReduceOp::kSum);
}

std::shared_ptr<CommHook> reduce_scatter_hook() { return std::make_shared<ReduceScatterHook>(); }

void check_sharding_hook(bool gradient_sharding, const CommHook& hook) {
  const bool reduce_scatter = dynamic_cast<const ReduceScatterHook*>(&hook) != nullptr;
  SYNCGRAD_CHECK(!gradient_sharding || reduce_scatter, ValueError, "DistributedDataParallel: gradient_sharding "
                 "reduce-scatters the buckets itself and takes no other comm hook (got '", hook.name(), "')");
  SYNCGRAD_CHECK(gradient_sharding || !reduce_scatter, ValueError, "DistributedDataParallel: the reduce_scatter "
                 "hook leaves each rank only a shard of the gradients; set DDPOptions::gradient_sharding (ZeRO-2) "
                 "instead of registering it");
}

}  // namespace syncgrad::distributed
