// Ring reduce-scatter on Gloo unbound buffers: partial sums travel once around the ring.
#include "distributed/gloo_ring.h"

#include <gloo/common/error.h>
#include <gloo/types.h>

#include <algorithm>
#include <cstring>

#include "distributed/gloo_counted_buffer.h"
#include "distributed/gloo_reduce.h"

namespace syncgrad::distributed {

namespace {

// Gloo's own collectives use slot prefixes 0x01..0x08.
constexpr uint8_t kRingReduceScatterSlotPrefix = 0x21;

void wait_or_throw(bool completed, const char* what) {
  if (!completed) throw gloo::IoException(std::string("ring reduce_scatter: ") + what + " was aborted");
}

}  // namespace

void ring_reduce_scatter(const std::shared_ptr<gloo::Context>& context, const std::vector<const void*>& blocks,
                         void* output, size_t count, DType dtype, ReduceOp op, uint32_t tag,
                         std::chrono::milliseconds timeout, uint64_t* sent) {
  const int size = static_cast<int>(blocks.size());
  const size_t bytes = count * element_size(dtype);
  const int rank = context ? context->rank : 0;
  if (size == 1 || bytes == 0) {
    if (bytes > 0 && output != blocks[rank]) std::memmove(output, blocks[rank], bytes);
    return;
  }
  const ReduceKernel kernel = reduce_kernel(dtype, op, "reduce_scatter");
  const int right = (rank + 1) % size;
  const int left = (rank + size - 1) % size;
  const uint64_t slot = gloo::Slot::build(kRingReduceScatterSlotPrefix, tag);
  auto block = [&](int k) { return blocks[((k % size) + size) % size]; };

  std::vector<uint8_t> partial(bytes);   // the partial sum this rank sends next
  std::vector<uint8_t> incoming(bytes);  // the left neighbour's partial sum
  auto partial_buffer = counted_buffer(*context, partial.data(), bytes, sent);
  auto incoming_buffer = context->createUnboundBuffer(incoming.data(), bytes);
  // One deadline for the whole ring, as Gloo's own collectives have.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto remaining = [&] {
    using std::chrono::milliseconds;
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now());
    return std::max(left, milliseconds{1});
  };
  // Step 0 sends this rank's own contribution as it is.
  auto first_buffer = counted_buffer(*context, block(rank - 1), bytes, sent);
  for (int step = 0; step < size - 1; ++step) {
    gloo::transport::UnboundBuffer& outgoing = step == 0 ? *first_buffer : *partial_buffer;
    incoming_buffer->recv(left, slot);
    outgoing.send(right, slot);
    wait_or_throw(incoming_buffer->waitRecv(remaining()), "a receive");
    wait_or_throw(outgoing.waitSend(remaining()), "a send");
    // The block received: rank - step - 2; add this rank's own contribution to it.
    void* destination = step == size - 2 ? output : partial.data();
    kernel(destination, block(rank - step - 2), incoming.data(), count);
  }
}

}  // namespace syncgrad::distributed
