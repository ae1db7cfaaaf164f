// CountedBuffer: a Gloo unbound buffer that adds the bytes of every send to a counter, then forwards to the
// transport's own buffer. The Gloo process group hands these to Gloo's options-API algorithms (allgather,
// gather, scatter, alltoall, broadcast, allreduce: they send only from the input and output buffers they are
// given) and to its own ring, so that ProcessGroup::bytes_sent() is measured, not modelled. Private header: it
// includes Gloo.
#pragma once

#include <gloo/context.h>
#include <gloo/transport/unbound_buffer.h>

#include <cstdint>
#include <memory>

namespace syncgrad::distributed {

class CountedBuffer final : public gloo::transport::UnboundBuffer {
 public:
  // `sent` must outlive the buffer; it is only touched by the thread that calls send().
  CountedBuffer(std::unique_ptr<gloo::transport::UnboundBuffer> inner, uint64_t* sent);

  bool waitRecv(int* rank, std::chrono::milliseconds timeout) override { return inner_->waitRecv(rank, timeout); }
  bool waitSend(int* rank, std::chrono::milliseconds timeout) override { return inner_->waitSend(rank, timeout); }
  void abortWaitRecv() override { inner_->abortWaitRecv(); }
  void abortWaitSend() override { inner_->abortWaitSend(); }
  void send(int dstRank, uint64_t slot, size_t offset, size_t nbytes) override;
  void recv(int srcRank, uint64_t slot, size_t offset, size_t nbytes) override {
    inner_->recv(srcRank, slot, offset, nbytes);
  }
  void recv(std::vector<int> srcRanks, uint64_t slot, size_t offset, size_t nbytes) override {
    inner_->recv(std::move(srcRanks), slot, offset, nbytes);
  }

 private:
  std::unique_ptr<gloo::transport::UnboundBuffer> inner_;
  uint64_t* sent_;
};

// A counted unbound buffer over `bytes` bytes at `data` on `context`'s transport.
std::unique_ptr<gloo::transport::UnboundBuffer> counted_buffer(gloo::Context& context, const void* data, size_t bytes,
                                                               uint64_t* sent);

}  // namespace syncgrad::distributed
