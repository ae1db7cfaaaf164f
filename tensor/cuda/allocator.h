// The caching CUDA device allocator (private to tensor/cuda/): blocks from cudaMalloc, rounded up to size
// classes and kept on per-class free lists when freed, so a training step that allocates the same shapes as
// the previous one calls cudaMalloc/cudaFree (both synchronising) only in its first step.
//
// One allocator per device; all work on a device runs on its single compute stream, so reusing a freed block
// for the next allocation is stream-ordered and needs no events. (Per-stream pools are a later step.)
#pragma once

#include <cstddef>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "tensor/allocator.h"

namespace syncgrad::cuda {

class CachingDeviceAllocator final : public Allocator {
 public:
  explicit CachingDeviceAllocator(int device) : device_(device) {}
  // Never destroyed in practice (the backend lives until the process exits): cudaFree during process
  // teardown races the runtime's own shutdown.
  ~CachingDeviceAllocator() override = default;

  void* allocate(size_t nbytes) override;
  void deallocate(void* ptr, size_t nbytes) override;
  AllocatorStats stats() const override;
  void reset_peak() override;
  void empty_cache() override;

  int device() const { return device_; }

  // The size class a request of nbytes is served from: multiples of 512 bytes up to 1 MiB, then four steps
  // per power of two (at most 25% waste).
  static size_t size_class(size_t nbytes);

 private:
  // Frees every cached block of this device; the caller holds mutex_.
  void release_cached_locked();

  const int device_;
  mutable std::mutex mutex_;
  std::unordered_map<size_t, std::vector<void*>> free_;  // size class -> cached blocks
  std::unordered_map<void*, size_t> live_;               // block -> size class, for blocks handed out
  AllocatorStats stats_;
};

}  // namespace syncgrad::cuda
