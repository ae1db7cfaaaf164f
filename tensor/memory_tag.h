// Thread-attributed memory accounting. While a MemoryTagGuard(tag) lives on a thread, the bytes the CPU
// allocator hands to that thread are counted for `tag` until they are freed (on any thread), with a
// high-water mark per tag. DataParallel tags replica i's work with i + 1 (its "device") when asked, so that a
// benchmark can report each worker's peak although all workers share one allocator. Tag 0 means untagged;
// untagged allocations cost one thread-local read.
#pragma once

#include <cstddef>

namespace syncgrad {

constexpr int kMaxMemoryTags = 256;  // tags are 0 .. kMaxMemoryTags - 1

// Sets the calling thread's tag (0 <= tag < kMaxMemoryTags, else ValueError) and restores the previous one.
class MemoryTagGuard {
 public:
  explicit MemoryTagGuard(int tag);
  ~MemoryTagGuard();
  MemoryTagGuard(const MemoryTagGuard&) = delete;
  MemoryTagGuard& operator=(const MemoryTagGuard&) = delete;

 private:
  int previous_;
};

int current_memory_tag();

struct MemoryTagStats {
  size_t allocated_bytes = 0;       // bytes allocated under the tag and not yet freed
  size_t peak_allocated_bytes = 0;  // high-water mark since the last reset
};

MemoryTagStats memory_tag_stats(int tag);
// Every tag's peak becomes its current allocated bytes.
void reset_memory_tag_peaks();

namespace detail {
// The CPU allocator reports its blocks here (size = the block's size class).
void note_tagged_allocate(void* ptr, size_t bytes);
void note_tagged_free(void* ptr, size_t bytes);
// The tag table's mutex, held across fork() by the CPU allocator's pthread_atfork handlers (tensor/allocator.cpp).
void lock_memory_tags_for_fork();
void unlock_memory_tags_after_fork();
}  // namespace detail

}  // namespace syncgrad
