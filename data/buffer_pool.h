// BufferPool: the reusable host memory that a DataLoader collates batches into. empty() hands out a tensor over
// a pooled block; the block returns to the pool only when the last tensor (or view) on its storage is gone, so
// batches the user still holds stay valid, and in the steady state no batch allocates fresh memory. A pinned
// pool takes its blocks from the CUDA backend's page-locked host allocator (DeviceBackend::host_alloc), from
// which Tensor::to(cuda, non_blocking=true) copies asynchronously.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "tensor/tensor.h"

namespace syncgrad::data {

struct BufferPoolStats {
  int64_t fresh_allocations = 0;  // blocks obtained from the system (or the pinned allocator)
  int64_t reuses = 0;             // empty() calls served by a returned block
  int64_t blocks_in_use = 0;      // blocks whose storage is still referenced
  size_t cached_bytes = 0;        // bytes of blocks waiting in the pool
};

class BufferPool {
 public:
  // pinned: blocks from the CUDA backend's pinned host allocator; the caller checks that a CUDA device is there
  // (without one, or if pinning fails, blocks are plain 64-byte aligned host memory: see is_pinned()).
  explicit BufferPool(bool pinned = false);
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A contiguous CPU tensor of `shape` and `dtype` over a pooled block (contents undefined). Thread-safe.
  Tensor empty(const Shape& shape, DType dtype);
  // True when the blocks are page-locked memory from the CUDA backend.
  bool is_pinned() const;
  BufferPoolStats stats() const;

 private:
  struct State;
  std::shared_ptr<State> state_;  // shared with the storages handed out, so blocks outlive the pool safely
};

}  // namespace syncgrad::data
