// Bucket assignment for DistributedDataParallel: which parameters share one flat gradient buffer. Parameters
// are taken in the given order (reverse registration order at first, then the order gradients became ready),
// grouped by dtype and device, and a bucket is closed once it reaches its byte cap (the first bucket has its
// own, smaller cap so the first allreduce starts early in backward).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tensor/device.h"
#include "tensor/dtype.h"

namespace syncgrad::distributed {

struct ParamInfo {
  int64_t numel = 0;
  DType dtype = DType::f32;
  Device device;
};

// buckets[b] = indices into `params`, in the order they appear in `order`.
std::vector<std::vector<size_t>> plan_buckets(const std::vector<ParamInfo>& params, const std::vector<size_t>& order,
                                              size_t first_bucket_bytes, size_t bucket_bytes);

}  // namespace syncgrad::distributed
