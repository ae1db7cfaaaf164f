// Small allreduces for the Gloo process group, on a second Gloo context whose connections are in synchronous
// mode: the worker thread reads and writes the sockets itself instead of handing every message through
// Gloo's event-loop thread, which on this class of machine cuts a 4 KiB allreduce from ~580 us to ~40 us
// (docs/BENCHMARKS.md). It uses Gloo's legacy ring algorithms (the plain ring for two ranks, the chunked ring for
// more: both give every rank the same bits), one object per (dtype, op, element count)
// kept in a small LRU cache (at most 16 rings and 32 MiB of messages) and pointed at each call's buffer. Every rank makes the same calls in the same
// order, so every rank creates and evicts the same objects and their Gloo slots line up. Private header.
#pragma once

#include <gloo/context.h>

#include <cstddef>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <tuple>

#include "distributed/process_group.h"

namespace syncgrad::distributed {

class GlooSmallAllreduce {
 public:
  // Messages up to this many bytes take this path; larger ones use Gloo's (asynchronous) options API. Up to 8 MiB
  // the synchronous ring is faster (4 MiB: 2.9 ms vs 4.0 ms, and a 1.03 MiB DDP bucket no longer falls off a
  // 3.6 ms step); at 16 MiB and above the two are equal (docs/BENCHMARKS.md, 2026-11-29).
  static constexpr size_t kMaxBytes = 8u << 20;

  // `context` must be fully connected and no other code may use it (its pairs are switched to sync mode).
  explicit GlooSmallAllreduce(std::shared_ptr<gloo::Context> context);
  // data: `count` contiguous elements of `dtype`, reduced in place (kAvg sums; the caller divides).
  void run(void* data, size_t count, DType dtype, ReduceOp op);
  // Closes the connections so that a call blocked on a dead or stuck peer returns with an error.
  void abort();

 private:
  struct Entry {
    std::shared_ptr<void> algorithm;
    std::function<void(void*)> run;  // points the algorithm at the buffer and runs it
  };
  using Key = std::tuple<int, int, size_t>;  // dtype, op, count
  static constexpr size_t kCacheEntries = 16;
  // The rings keep buffers of about their message size, so the cache is also capped in bytes of messages.
  static constexpr size_t kCacheBytes = 32u << 20;

  Entry make_entry(size_t count, DType dtype, ReduceOp op);

  std::shared_ptr<gloo::Context> context_;
  std::list<Key> recency_;  // most recently used first
  std::map<Key, std::pair<Entry, std::list<Key>::iterator>> cache_;
  size_t cached_bytes_ = 0;  // message bytes of the cached rings
};

}  // namespace syncgrad::distributed
