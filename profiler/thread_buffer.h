// The per-thread event buffers behind profiler::record (private to profiler/). Each thread appends to its own
// buffer without a lock: events go into fixed-size blocks linked in a list, and a count published with release
// order says how many a reader may read, so the session can collect them while the thread goes on recording.
// A buffer's mutex is taken only to collect it and, once per trace session, by its own thread to drop the
// previous session's events; a buffer outlives its thread until the next session starts.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "profiler/events.h"

namespace syncgrad::profiler::detail {

class ThreadBuffer {
 public:
  explicit ThreadBuffer(uint64_t tid) : tid_(tid) {}
  ~ThreadBuffer();
  ThreadBuffer(const ThreadBuffer&) = delete;
  ThreadBuffer& operator=(const ThreadBuffer&) = delete;

  uint64_t tid() const { return tid_; }
  // Owner thread only. False when the session's per-thread limit is reached (the event is counted as dropped).
  bool append(Event&& event, uint64_t session, size_t limit);
  void set_name(const std::string& name);
  void mark_finished() { finished_.store(true, std::memory_order_release); }
  bool finished() const { return finished_.load(std::memory_order_acquire); }

  struct Snapshot {
    uint64_t tid = 0;
    std::string name;
    std::vector<Event> events;
    uint64_t dropped = 0;
  };
  // The events `session` recorded so far (any thread).
  Snapshot snapshot(uint64_t session);

 private:
  static constexpr size_t kBlockEvents = 512;
  struct Block {
    Event events[kBlockEvents];
    std::atomic<Block*> next{nullptr};
  };
  void reset_for(uint64_t session);

  const uint64_t tid_;
  std::mutex mutex_;  // collection and the once-per-session reset; never per event
  std::string name_;  // under mutex_
  std::atomic<uint64_t> session_{0};
  std::atomic<Block*> head_{nullptr};
  Block* tail_ = nullptr;        // owner thread
  size_t tail_used_ = 0;         // owner thread
  std::atomic<size_t> published_{0};
  std::atomic<uint64_t> dropped_{0};
  std::atomic<bool> finished_{false};
};

// The calling thread's buffer (created and registered on first use).
ThreadBuffer& this_thread_buffer();
// Every registered buffer; drops those whose thread has ended (called when a session starts).
std::vector<std::shared_ptr<ThreadBuffer>> all_buffers(bool drop_finished);

}  // namespace syncgrad::profiler::detail
