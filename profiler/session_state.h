// The recording state a Trace session sets and the recording side reads (private to profiler/): the session's
// id (events of an earlier session are never mixed in), the detail threshold and the per-thread event limit.
#pragma once

#include <atomic>
#include <cstdint>

namespace syncgrad::profiler::detail {

extern std::atomic<uint64_t> session;          // 0: none yet
extern std::atomic<int64_t> detail_threshold_ns;
extern std::atomic<size_t> events_per_thread;

}  // namespace syncgrad::profiler::detail
