// CachingAllocator<RawMemory>: the free-list logic shared by the caching CPU allocator (tensor/allocator.cpp)
// and the caching CUDA device allocator (tensor/cuda/allocator.cpp). A request is rounded up to one of the raw
// memory's size classes; a freed block waits on its class's free list for the next request of that class, so
// a training loop that allocates the same shapes every step asks the raw memory for blocks only in its first
// step. The byte counters (current, peak, cached) are kept here, in block (size-class) bytes.
//
// A RawMemory provides:
//   static size_t size_class(size_t nbytes);   // the block size that serves nbytes (0: hand out nullptr)
//   void* allocate(size_t block_bytes);        // a fresh block; nullptr when out of memory, throws otherwise
//   void free(std::span<const CachedBlock>);   // gives cached blocks back to the system
//   [[noreturn]] void out_of_memory(size_t nbytes, size_t block_bytes, const AllocatorStats&) const;
//   void note_handed_out(void* ptr, size_t block_bytes);  // a block leaves the allocator (memory tags)
//   void note_returned(void* ptr, size_t block_bytes);    // and comes back
//   static constexpr bool kTracksLiveBlocks;   // remember each block handed out, so that a pointer it did not
//                                              // hand out is reported (report_foreign_free) instead of cached
//   static constexpr bool kRetryAfterReleasingCache;      // on out of memory, free the cache and try once more
#pragma once

#include <algorithm>
#include <cstddef>
#include <mutex>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tensor/allocator.h"

namespace syncgrad {

// A block on a free list: its address and its size class in bytes.
struct CachedBlock {
  void* ptr;
  size_t bytes;
};

template <class RawMemory>
class CachingAllocator final : public Allocator {
 public:
  template <class... Args>
  explicit CachingAllocator(Args&&... args) : raw_(std::forward<Args>(args)...) {}
  // Never destroyed in practice (allocators live until the process exits, and tensors held by static objects
  // may be freed after main returns): cached blocks are left to the process teardown.
  ~CachingAllocator() override = default;

  void* allocate(size_t nbytes) override {
    const size_t block_bytes = RawMemory::size_class(nbytes);
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.num_allocs;
    if (block_bytes == 0) return nullptr;
    void* ptr = reuse_cached_locked(block_bytes);
    if (ptr == nullptr) ptr = allocate_fresh_locked(nbytes, block_bytes);
    if constexpr (RawMemory::kTracksLiveBlocks) live_.emplace(ptr, block_bytes);
    stats_.allocated_bytes += block_bytes;
    stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
    raw_.note_handed_out(ptr, block_bytes);
    return ptr;
  }

  void deallocate(void* ptr, size_t nbytes) override {
    if (ptr == nullptr) return;
    std::lock_guard<std::mutex> lock(mutex_);
    size_t block_bytes = 0;
    if constexpr (RawMemory::kTracksLiveBlocks) {
      auto it = live_.find(ptr);
      if (it == live_.end()) {
        // Not ours (or freed twice): caching it would corrupt the free lists.
        raw_.report_foreign_free(ptr, nbytes);
        return;
      }
      block_bytes = it->second;
      live_.erase(it);
    } else {
      block_bytes = RawMemory::size_class(nbytes);
    }
    raw_.note_returned(ptr, block_bytes);
    stats_.allocated_bytes -= block_bytes;
    stats_.cached_bytes += block_bytes;
    free_[block_bytes].push_back(ptr);
  }

  AllocatorStats stats() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

  void reset_peak() override {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.peak_allocated_bytes = stats_.allocated_bytes;
  }

  void empty_cache() override {
    std::lock_guard<std::mutex> lock(mutex_);
    release_cached_locked();
  }

  // For pthread_atfork handlers (the CPU instance's, tensor/allocator.cpp): the mutex is held across fork() so
  // that the child's copy is not left locked by a thread the child does not have.
  void lock_for_fork() { mutex_.lock(); }
  void unlock_after_fork() { mutex_.unlock(); }

 private:
  // A cached block of exactly block_bytes, or nullptr; the caller holds mutex_.
  void* reuse_cached_locked(size_t block_bytes) {
    auto it = free_.find(block_bytes);
    if (it == free_.end() || it->second.empty()) return nullptr;
    void* ptr = it->second.back();
    it->second.pop_back();
    stats_.cached_bytes -= block_bytes;
    ++stats_.num_cache_hits;
    return ptr;
  }

  // A block from the raw memory; the caller holds mutex_.
  void* allocate_fresh_locked(size_t nbytes, size_t block_bytes) {
    void* ptr = raw_.allocate(block_bytes);
    if constexpr (RawMemory::kRetryAfterReleasingCache) {
      if (ptr == nullptr) {
        release_cached_locked();
        ptr = raw_.allocate(block_bytes);
      }
    }
    if (ptr == nullptr) raw_.out_of_memory(nbytes, block_bytes, stats_);
    return ptr;
  }

  // Gives every cached block back to the raw memory; the caller holds mutex_.
  void release_cached_locked() {
    if (stats_.cached_bytes == 0) return;
    std::vector<CachedBlock> blocks;
    for (const auto& [block_bytes, ptrs] : free_) {
      for (void* ptr : ptrs) blocks.push_back({ptr, block_bytes});
    }
    free_.clear();
    stats_.cached_bytes = 0;
    raw_.free(blocks);
  }

  RawMemory raw_;
  mutable std::mutex mutex_;
  std::unordered_map<size_t, std::vector<void*>> free_;  // size class -> cached blocks
  std::unordered_map<void*, size_t> live_;               // block -> size class (kTracksLiveBlocks only)
  AllocatorStats stats_;
};

}  // namespace syncgrad
