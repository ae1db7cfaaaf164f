// GlooSmallAllreduce: cached legacy Gloo ring objects on a synchronous Gloo context.
#include "distributed/gloo_small_allreduce.h"

#include <gloo/allreduce_ring.h>
#include <gloo/allreduce_ring_chunked.h>

#include <cstring>
#include <vector>

#include "distributed/gloo_reduce.h"
#include "tensor/errors.h"

namespace syncgrad::distributed {

namespace {

// Gloo's ring allreduce (it stages through its own inbox/outbox), re-pointable at another buffer of the same
// length between runs.
template <class T>
class ReboundRing : public gloo::AllreduceRing<T> {
 public:
  ReboundRing(const std::shared_ptr<gloo::Context>& context, size_t count, const gloo::ReductionFunction<T>* fn)
      : gloo::AllreduceRing<T>(context, {nullptr}, static_cast<int>(count), fn) {}
  void run_on(void* data) {
    this->ptrs_[0] = static_cast<T*>(data);
    this->run();
  }
};

// The buffer a StagedChunkedRing sends from, made before the ring that registers it with Gloo.
template <class T>
struct RingStaging {
  explicit RingStaging(size_t count) : staging(count) {}
  std::vector<T> staging;
};

// Gloo's chunked ring (a reduce-scatter, then an allgather of the reduced chunks): each chunk is summed once, at
// one rank, and copied to the others, so every rank gets the same bits. It sends from the buffer it was built
// on, so each call goes through a staging copy of the caller's data.
template <class T>
class StagedChunkedRing : private RingStaging<T>, public gloo::AllreduceRingChunked<T> {
 public:
  StagedChunkedRing(const std::shared_ptr<gloo::Context>& context, size_t count, const gloo::ReductionFunction<T>* fn)
      : RingStaging<T>(count),
        gloo::AllreduceRingChunked<T>(context, {this->staging.data()}, static_cast<int>(count), fn) {}
  void run_on(void* data) {
    const size_t bytes = this->staging.size() * sizeof(T);
    std::memcpy(this->staging.data(), data, bytes);
    this->run();
    std::memcpy(data, this->staging.data(), bytes);
  }
};

// Two ranks: the plain ring, where each rank adds the other's values to its own -- a + b and b + a are the same
// bits. More ranks: the plain ring would sum in a different order on each rank (rank r: x_r + x_r-1 + ...), so
// the ranks' results, and with them DDP's replicas, would part in the last bits; the chunked ring agrees.
template <class T>
std::pair<std::shared_ptr<void>, std::function<void(void*)>> make_ring(const std::shared_ptr<gloo::Context>& context,
                                                                     size_t count, DType dtype, ReduceOp op) {
  if (context->size == 2) {
    auto ring = std::make_shared<ReboundRing<T>>(context, count, legacy_reduction<T>(dtype, op));
    ReboundRing<T>* raw_ring = ring.get();
    return {ring, [raw_ring](void* data) { raw_ring->run_on(data); }};
  }
  auto ring = std::make_shared<StagedChunkedRing<T>>(context, count, legacy_reduction<T>(dtype, op));
  StagedChunkedRing<T>* raw_ring = ring.get();
  return {ring, [raw_ring](void* data) { raw_ring->run_on(data); }};
}

}  // namespace

GlooSmallAllreduce::GlooSmallAllreduce(std::shared_ptr<gloo::Context> context) : context_(std::move(context)) {
  for (int peer = 0; peer < context_->size; ++peer) {
    if (peer != context_->rank) context_->getPair(peer)->setSync(true, false);
  }
}

GlooSmallAllreduce::Entry GlooSmallAllreduce::make_entry(size_t count, DType dtype, ReduceOp op) {
  std::pair<std::shared_ptr<void>, std::function<void(void*)>> made;
  switch (dtype) {
    case DType::f32: made = make_ring<float>(context_, count, dtype, op); break;
    case DType::f64: made = make_ring<double>(context_, count, dtype, op); break;
    case DType::f16:
    case DType::bf16: made = make_ring<uint16_t>(context_, count, dtype, op); break;
    case DType::i64: made = make_ring<int64_t>(context_, count, dtype, op); break;
    case DType::i32: made = make_ring<int32_t>(context_, count, dtype, op); break;
    case DType::u8: made = make_ring<uint8_t>(context_, count, dtype, op); break;
    case DType::boolean: throw DTypeError("allreduce: cannot reduce a bool tensor; convert it to u8 or i32 first");
  }
  return Entry{std::move(made.first), std::move(made.second)};
}

void GlooSmallAllreduce::run(void* data, size_t count, DType dtype, ReduceOp op) {
  const Key key{static_cast<int>(dtype), static_cast<int>(op == ReduceOp::kAvg ? ReduceOp::kSum : op), count};
  auto found = cache_.find(key);
  if (found == cache_.end()) {
    const size_t bytes = count * element_size(dtype);
    // Least recently used first, until the new ring fits both limits (the same on every rank: same calls).
    while (!cache_.empty() && (cache_.size() == kCacheEntries || cached_bytes_ + bytes > kCacheBytes)) {
      const Key& oldest = recency_.back();
      cached_bytes_ -= static_cast<size_t>(std::get<2>(oldest)) * element_size(static_cast<DType>(std::get<0>(oldest)));
      cache_.erase(oldest);
      recency_.pop_back();
    }
    cached_bytes_ += bytes;
    recency_.push_front(key);
    found = cache_.emplace(key, std::make_pair(make_entry(count, dtype, op), recency_.begin())).first;
  } else {
    recency_.splice(recency_.begin(), recency_, found->second.second);
  }
  found->second.first.run(data);
}

void GlooSmallAllreduce::abort() {
  for (int peer = 0; peer < context_->size; ++peer) {
    if (peer != context_->rank) context_->getPair(peer)->close();
  }
}

}  // namespace syncgrad::distributed
