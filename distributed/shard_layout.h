// How ZeRO splits parameters among the ranks of a group. The parameters are grouped into flat segments exactly
// as DistributedDataParallel's initial bucket plan groups them (bucket_plan.h: reverse registration order, split
// by dtype and device, closed at the bucket cap), each segment padded to a multiple of the world size W, and rank
// r owns the contiguous elements [r * S, (r + 1) * S) of every segment (S = padded length / W). So the shard of a
// segment is what a reduce_scatter_tensor of a DDP bucket hands rank r (ZeRO-2), and what an
// allgather_into_tensor of the W shards puts back together (ZeRO-1 and ZeRO-2 after the step).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tensor/tensor.h"

namespace syncgrad::distributed {

struct ShardSegment {
  std::vector<size_t> params;    // indices into the parameter list, in flat order
  std::vector<int64_t> offsets;  // each parameter's first element in the flat segment
  int64_t numel = 0;             // elements of the parameters together (without padding)
  int64_t shard_numel = 0;       // S: elements per rank; the padded segment holds S * W
  DType dtype = DType::f32;
  Device device;
};

// A part of one parameter that lies in one rank's shard of its segment.
struct ShardPiece {
  size_t param = 0;          // index into the parameter list
  int64_t param_offset = 0;  // first element in the (flattened) parameter
  int64_t shard_offset = 0;  // first element in the rank's shard
  int64_t numel = 0;
};

class ShardLayout {
 public:
  // `params` in the order the optimizer (and DDP) lists them; bucket caps in bytes as DDPOptions gives them.
  ShardLayout(const std::vector<Tensor>& params, int world_size, size_t first_bucket_bytes, size_t bucket_bytes);

  int world_size() const { return world_; }
  size_t num_params() const { return param_numels_.size(); }
  const std::vector<ShardSegment>& segments() const { return segments_; }
  // The parameters' element counts, in parameter order.
  const std::vector<int64_t>& param_numels() const { return param_numels_; }
  // The segment a parameter belongs to.
  size_t segment_of(size_t param) const { return segment_of_[param]; }
  // The pieces of segment `s` in rank `rank`'s shard, in shard order.
  std::vector<ShardPiece> pieces(size_t segment, int rank) const;
  // Elements of all of a rank's shards together (padding included): what its optimizer state is sized by.
  int64_t shard_numel() const;

 private:
  int world_;
  std::vector<int64_t> param_numels_;
  std::vector<ShardSegment> segments_;
  std::vector<size_t> segment_of_;
};

}  // namespace syncgrad::distributed
