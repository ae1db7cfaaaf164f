// The caching CPU allocator (the free lists of tensor/caching_allocator.h over aligned_alloc): blocks are
// rounded up to size classes (4 per power of two, so at most 25% waste), 64-byte aligned, and kept on
// per-class free lists when freed, so a training loop that allocates the same shapes every step touches fresh
// pages only in its first step. Its mutex and the memory tags' are held across fork() (pthread_atfork), so that a
// child can allocate. Also allocator_for(device).
#include "tensor/allocator.h"

#include <pthread.h>

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

CachingAllocator<HostMemory>& host_allocator() {
  // Never destroyed: tensors held by static objects may be freed after main returns.
  static auto* instance = new CachingAllocator<HostMemory>();
  return *instance;
}

// fork() copies every mutex as it is at that moment. A child forked while another thread allocated or freed
// (a detached Gloo worker dropping the last reference to a tensor) found the allocator's mutex locked by a
// thread it does not have, and blocked forever at its first allocation. These pthread_atfork handlers hold the
// allocator's mutex and then the memory tags' (the order allocate takes them) across fork() and release both
// in the parent and in the child; std::mutex is a default-type pthread mutex, which the child may unlock.
void lock_for_fork() {
  host_allocator().lock_for_fork();
  detail::lock_memory_tags_for_fork();
}

void unlock_after_fork() {
  detail::unlock_memory_tags_after_fork();
  host_allocator().unlock_after_fork();
}

// Registered once, at library load.
const int fork_handlers = pthread_atfork(lock_for_fork, unlock_after_fork, unlock_after_fork);

}  // namespace

Allocator& cpu_allocator() { return host_allocator(); }

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
