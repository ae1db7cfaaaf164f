// A ring reduce-scatter over Gloo's unbound-buffer transport, for the Gloo process group (Gloo's options API
// has no reduce-scatter; its legacy ReduceScatterHalvingDoubling needs pre-registered pair buffers per call
// and, at a world size that is not a power of two, sends more than (W-1)/W of the buffer from some ranks).
// Private header: it includes Gloo.
#pragma once

#include <gloo/context.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "distributed/process_group.h"
#include "tensor/dtype.h"

namespace syncgrad::distributed {

// blocks[k] (k = 0..W-1): this rank's contribution to rank k's result, `count` elements of `dtype` each.
// output = op over ranks of their blocks[rank] (kAvg sums; the caller divides). W-1 steps: at step s this rank
// sends its partial sum of block (rank-s-1) mod W to rank+1 and receives block (rank-s-2) mod W from rank-1,
// so each rank sends (W-1) * count elements. `output` may alias blocks[rank]; no other block is written.
// Adds the bytes it sends to *sent. Throws Gloo's exceptions on a dead peer or past `timeout` (for the whole ring).
void ring_reduce_scatter(const std::shared_ptr<gloo::Context>& context, const std::vector<const void*>& blocks,
                         void* output, size_t count, DType dtype, ReduceOp op, uint32_t tag,
                         std::chrono::milliseconds timeout, uint64_t* sent);

}  // namespace syncgrad::distributed
