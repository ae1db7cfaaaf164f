// Per-thread event buffers: lock-free appends by the owner, published counts for the collector (see
// thread_buffer.h).
#include "profiler/thread_buffer.h"

namespace syncgrad::profiler::detail {
namespace {

std::mutex registry_mutex;
std::vector<std::shared_ptr<ThreadBuffer>>& registry() {
  static auto* buffers = new std::vector<std::shared_ptr<ThreadBuffer>>();  // outlives every thread's exit
  return *buffers;
}
std::atomic<uint64_t> next_tid{1};

// Owns the thread's reference; marks the buffer finished at thread exit so the next session drops it.
struct BufferHolder {
  std::shared_ptr<ThreadBuffer> buffer;
  ~BufferHolder() {
    if (buffer) buffer->mark_finished();
  }
};

}  // namespace

ThreadBuffer::~ThreadBuffer() {
  Block* block = head_.load(std::memory_order_acquire);
  while (block != nullptr) {
    Block* next = block->next.load(std::memory_order_acquire);
    delete block;
    block = next;
  }
}

void ThreadBuffer::reset_for(uint64_t session) {
  std::lock_guard lock(mutex_);
  Block* block = head_.exchange(nullptr, std::memory_order_acq_rel);
  published_.store(0, std::memory_order_release);
  while (block != nullptr) {
    Block* next = block->next.load(std::memory_order_acquire);
    delete block;
    block = next;
  }
  tail_ = nullptr;
  tail_used_ = 0;
  dropped_.store(0, std::memory_order_relaxed);
  session_.store(session, std::memory_order_release);
}

bool ThreadBuffer::append(Event&& event, uint64_t session, size_t limit) {
  if (session_.load(std::memory_order_relaxed) != session) reset_for(session);
  const size_t count = published_.load(std::memory_order_relaxed);
  if (count >= limit) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  if (tail_ == nullptr || tail_used_ == kBlockEvents) {
    auto* block = new Block();
    if (tail_ == nullptr) {
      head_.store(block, std::memory_order_release);
    } else {
      tail_->next.store(block, std::memory_order_release);
    }
    tail_ = block;
    tail_used_ = 0;
  }
  tail_->events[tail_used_++] = std::move(event);
  published_.store(count + 1, std::memory_order_release);
  return true;
}

void ThreadBuffer::set_name(const std::string& name) {
  std::lock_guard lock(mutex_);
  name_ = name;
}

ThreadBuffer::Snapshot ThreadBuffer::snapshot(uint64_t session) {
  std::lock_guard lock(mutex_);
  Snapshot snap;
  snap.tid = tid_;
  snap.name = name_;
  if (session_.load(std::memory_order_acquire) != session) return snap;  // nothing recorded in this session
  const size_t count = published_.load(std::memory_order_acquire);
  snap.events.reserve(count);
  const Block* block = head_.load(std::memory_order_acquire);
  for (size_t i = 0; i < count; ++i) {
    if (i > 0 && i % kBlockEvents == 0) block = block->next.load(std::memory_order_acquire);
    snap.events.push_back(block->events[i % kBlockEvents]);
  }
  snap.dropped = dropped_.load(std::memory_order_relaxed);
  return snap;
}

ThreadBuffer& this_thread_buffer() {
  thread_local BufferHolder holder;
  if (!holder.buffer) {
    holder.buffer = std::make_shared<ThreadBuffer>(next_tid.fetch_add(1, std::memory_order_relaxed));
    std::lock_guard lock(registry_mutex);
    registry().push_back(holder.buffer);
  }
  return *holder.buffer;
}

std::vector<std::shared_ptr<ThreadBuffer>> all_buffers(bool drop_finished) {
  std::lock_guard lock(registry_mutex);
  std::vector<std::shared_ptr<ThreadBuffer>>& buffers = registry();
  if (drop_finished) std::erase_if(buffers, [](const auto& b) { return b->finished(); });
  return buffers;
}

}  // namespace syncgrad::profiler::detail
