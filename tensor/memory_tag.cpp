// Memory tags: the calling thread's tag, and a table from live tagged blocks to their tag so that a block is
// uncounted from the tag that allocated it wherever it is freed.
#include "tensor/memory_tag.h"

#include <array>
#include <atomic>
#include <mutex>
#include <string>
#include <unordered_map>

#include "tensor/check.h"
#include "tensor/errors.h"

namespace syncgrad {
namespace {

thread_local int current_tag = 0;

struct TagTable {
  std::mutex mutex;
  std::unordered_map<void*, int> tag_of;  // live tagged blocks
  std::array<MemoryTagStats, kMaxMemoryTags> stats{};
  std::atomic<size_t> live{0};  // tag_of.size(), read without the lock
};

TagTable& table() {
  static auto* instance = new TagTable();  // never destroyed: blocks may be freed after main returns
  return *instance;
}

}  // namespace

MemoryTagGuard::MemoryTagGuard(int tag) : previous_(current_tag) {
  SYNCGRAD_CHECK(tag >= 0 && tag < kMaxMemoryTags, ValueError, "MemoryTagGuard: tag ", tag, " is outside [0, ",
                 kMaxMemoryTags, ")");
  current_tag = tag;
}

MemoryTagGuard::~MemoryTagGuard() { current_tag = previous_; }

int current_memory_tag() { return current_tag; }

MemoryTagStats memory_tag_stats(int tag) {
  SYNCGRAD_CHECK(tag >= 0 && tag < kMaxMemoryTags, ValueError, "memory_tag_stats: tag ", tag, " is outside [0, ",
                 kMaxMemoryTags, ")");
  TagTable& t = table();
  std::lock_guard lock(t.mutex);
  return t.stats[tag];
}

void reset_memory_tag_peaks() {
  TagTable& t = table();
  std::lock_guard lock(t.mutex);
  for (MemoryTagStats& s : t.stats) s.peak_allocated_bytes = s.allocated_bytes;
}

namespace detail {

void note_tagged_allocate(void* ptr, size_t bytes) {
  const int tag = current_tag;
  if (tag == 0) return;
  TagTable& t = table();
  std::lock_guard lock(t.mutex);
  t.tag_of[ptr] = tag;
  t.live.store(t.tag_of.size(), std::memory_order_relaxed);
  MemoryTagStats& s = t.stats[tag];
  s.allocated_bytes += bytes;
  if (s.allocated_bytes > s.peak_allocated_bytes) s.peak_allocated_bytes = s.allocated_bytes;
}

void note_tagged_free(void* ptr, size_t bytes) {
  TagTable& t = table();
  if (t.live.load(std::memory_order_relaxed) == 0) return;
  std::lock_guard lock(t.mutex);
  auto it = t.tag_of.find(ptr);
  if (it == t.tag_of.end()) return;
  t.stats[it->second].allocated_bytes -= bytes;
  t.tag_of.erase(it);
  t.live.store(t.tag_of.size(), std::memory_order_relaxed);
}

void lock_memory_tags_for_fork() { table().mutex.lock(); }

void unlock_memory_tags_after_fork() { table().mutex.unlock(); }

}  // namespace detail
}  // namespace syncgrad
