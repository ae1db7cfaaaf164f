// CommCounters: per-collective call and byte counts under one mutex.
#include "distributed/comm_counters.h"

namespace syncgrad::distributed {

void CommCounters::add(const std::string& collective, uint64_t bytes) {
  std::lock_guard lock(mutex_);
  CollectiveCount& count = counts_[collective];
  ++count.calls;
  count.bytes_sent += bytes;
}

CollectiveCount CommCounters::get(const std::string& collective) const {
  std::lock_guard lock(mutex_);
  auto it = counts_.find(collective);
  return it == counts_.end() ? CollectiveCount{} : it->second;
}

std::map<std::string, CollectiveCount> CommCounters::all() const {
  std::lock_guard lock(mutex_);
  return counts_;
}

uint64_t CommCounters::total_bytes_sent() const {
  std::lock_guard lock(mutex_);
  uint64_t total = 0;
  for (const auto& [name, count] : counts_) total += count.bytes_sent;
  return total;
}

}  // namespace syncgrad::distributed
