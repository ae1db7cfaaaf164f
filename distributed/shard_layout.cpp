// ShardLayout: segments from DDP's initial bucket plan, padded per world size, and each rank's pieces.
#include "distributed/shard_layout.h"

#include <algorithm>
#include <numeric>

#include "distributed/bucket_plan.h"
#include "tensor/check.h"

namespace syncgrad::distributed {

ShardLayout::ShardLayout(const std::vector<Tensor>& params, int world_size, size_t first_bucket_bytes,
                         size_t bucket_bytes)
    : world_(world_size) {
  SYNCGRAD_CHECK(world_size >= 1, ValueError, "ShardLayout: world size ", world_size, " (must be >= 1)");
  std::vector<ParamInfo> info;
  for (const Tensor& p : params) {
    info.push_back({p.numel(), p.dtype(), p.device()});
    param_numels_.push_back(p.numel());
  }
  std::vector<size_t> reverse(params.size());
  std::iota(reverse.rbegin(), reverse.rend(), 0);
  segment_of_.assign(params.size(), 0);
  for (const std::vector<size_t>& bucket : plan_buckets(info, reverse, first_bucket_bytes, bucket_bytes)) {
    ShardSegment segment;
    segment.params = bucket;
    segment.dtype = params[bucket.front()].dtype();
    segment.device = params[bucket.front()].device();
    for (size_t index : bucket) {
      segment.offsets.push_back(segment.numel);
      segment.numel += param_numels_[index];
      segment_of_[index] = segments_.size();
    }
    segment.shard_numel = (segment.numel + world_size - 1) / world_size;
    segments_.push_back(std::move(segment));
  }
}

std::vector<ShardPiece> ShardLayout::pieces(size_t segment, int rank) const {
  const ShardSegment& s = segments_.at(segment);
  const int64_t begin = rank * s.shard_numel, end = begin + s.shard_numel;
  std::vector<ShardPiece> out;
  for (size_t i = 0; i < s.params.size(); ++i) {
    const int64_t first = std::max(begin, s.offsets[i]);
    const int64_t last = std::min(end, s.offsets[i] + param_numels_[s.params[i]]);
    if (first < last) out.push_back({s.params[i], first - s.offsets[i], first - begin, last - first});
  }
  return out;
}

int64_t ShardLayout::shard_numel() const {
  int64_t total = 0;
  for (const ShardSegment& s : segments_) total += s.shard_numel;
  return total;
}

}  // namespace syncgrad::distributed
