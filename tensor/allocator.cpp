// The caching CPU allocator (the free lists of tensor/caching_allocator.h over aligned_alloc): blocks are
// rounded up to size classes (4 per power of two, so at most 25% waste), 64-byte aligned, and kept on
// per-class free lists when freed, so a training loop that allocates the same shapes every step touches fresh
// pages only in its first step. Also allocator_for(device).
#include "tensor/allocator.h"

#include <bit>
#include <cstdlib>
#include <span>
#include <string>

#include "tensor/backend.h"
#include "tensor/caching_allocator.h"
#include "tensor/check.h"
#include "tensor/errors.h"
#include "tensor/memory_tag.h"
#include "tensor/out_of_memory_context.h"

namespace syncgrad {
namespace {

constexpr size_t kAlignment = 64;

// Host memory from aligned_alloc; each block handed out is counted for the calling thread's memory tag.
struct HostMemory {
  static constexpr bool kTracksLiveBlocks = false;
  static constexpr bool kRetryAfterReleasingCache = false;

  static size_t size_class(size_t nbytes) {
    if (nbytes <= 256) return 256;
    // Round up to one of four steps between consecutive powers of two.
    size_t top = std::bit_floor(nbytes);
    size_t step = top / 4;
    return (nbytes + step - 1) / step * step;
  }

  void* allocate(size_t block_bytes) { return std::aligned_alloc(kAlignment, block_bytes); }

  void free(std::span<const CachedBlock> blocks) {
    for (const CachedBlock& block : blocks) std::free(block.ptr);
  }

  [[noreturn]] void out_of_memory(size_t nbytes, size_t, const AllocatorStats& stats) const {
    throw Error("cpu allocator: out of memory allocating " + describe_bytes(nbytes) + " of host memory" +
                out_of_memory_during() + " (this process holds " + describe_bytes(stats.allocated_bytes) +
                " in tensors and " + describe_bytes(stats.cached_bytes) + " cached)" + out_of_memory_hint());
  }

  void note_handed_out(void* ptr, size_t block_bytes) { detail::note_tagged_allocate(ptr, block_bytes); }
  void note_returned(void* ptr, size_t block_bytes) { detail::note_tagged_free(ptr, block_bytes); }
};

}  // namespace

Allocator& cpu_allocator() {
  // Never destroyed: tensors held by static objects may be freed after main returns.
  static auto* instance = new CachingAllocator<HostMemory>();
  return *instance;
}

Allocator& allocator_for(Device device) {
  if (device.is_cpu()) return cpu_allocator();
  DeviceBackend* backend = device_backend(device.type);
  SYNCGRAD_CHECK(backend != nullptr, DeviceError, "allocate on ", device.str(), ": ",
                 backend_unavailable_reason(device.type));
  SYNCGRAD_CHECK(device.index >= 0 && device.index < backend->device_count(), DeviceError, "allocate on ", device.str(),
                 ": device index out of range (", backend->device_count(),
                 " device(s) visible); check CUDA_VISIBLE_DEVICES");
  return backend->allocator(device.index);
}

}  // namespace syncgrad
