// CountedBuffer: byte counting in front of Gloo's transport buffers.
#include "distributed/gloo_counted_buffer.h"

namespace syncgrad::distributed {

CountedBuffer::CountedBuffer(std::unique_ptr<gloo::transport::UnboundBuffer> inner, uint64_t* sent)
    : gloo::transport::UnboundBuffer(inner->ptr, inner->size), inner_(std::move(inner)), sent_(sent) {}

void CountedBuffer::send(int dstRank, uint64_t slot, size_t offset, size_t nbytes) {
  *sent_ += nbytes == kUnspecifiedByteCount ? size - offset : nbytes;
  inner_->send(dstRank, slot, offset, nbytes);
}

std::unique_ptr<gloo::transport::UnboundBuffer> counted_buffer(gloo::Context& context, const void* data, size_t bytes,
                                                               uint64_t* sent) {
  // Gloo's buffers take a mutable pointer; a buffer that only sends never writes through it.
  return std::make_unique<CountedBuffer>(context.createUnboundBuffer(const_cast<void*>(data), bytes), sent);
}

}  // namespace syncgrad::distributed
