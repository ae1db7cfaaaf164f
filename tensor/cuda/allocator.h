// The caching CUDA device allocator (private to tensor/cuda/): the free lists of tensor/caching_allocator.h
// over cudaMalloc/cudaFree, so a training step that allocates the same shapes as the previous one calls
// cudaMalloc/cudaFree (both synchronising) only in its first step.
//
// One allocator per device; all work on a device runs on its single compute stream, so reusing a freed block
// for the next allocation is stream-ordered and needs no events. (Per-stream pools are a later step.)
#pragma once

#include <cstddef>
#include <span>

#include "tensor/allocator.h"
#include "tensor/caching_allocator.h"

namespace syncgrad::cuda {

// The memory of one device, from cudaMalloc. A request that finds the device full frees the cached blocks
// and tries once more; a pointer the allocator did not hand out is reported on stderr and ignored.
class DeviceMemory {
 public:
  static constexpr bool kTracksLiveBlocks = true;
  static constexpr bool kRetryAfterReleasingCache = true;

  explicit DeviceMemory(int device) : device_(device) {}

  // The size class a request of nbytes is served from: multiples of 512 bytes up to 1 MiB, then four steps
  // per power of two (at most 25% waste).
  static size_t size_class(size_t nbytes);

  void* allocate(size_t block_bytes);
  // cudaFree waits for work in flight on the device, so a block still read by a queued kernel is safe.
  void free(std::span<const CachedBlock> blocks);
  [[noreturn]] void out_of_memory(size_t nbytes, size_t block_bytes, const AllocatorStats& stats) const;
  void note_handed_out(void*, size_t) {}
  void note_returned(void*, size_t) {}
  // Called from Storage's destructor, so it reports instead of throwing (which would terminate).
  void report_foreign_free(void* ptr, size_t nbytes) const;

 private:
  int device_;
};

using CachingDeviceAllocator = CachingAllocator<DeviceMemory>;

}  // namespace syncgrad::cuda
