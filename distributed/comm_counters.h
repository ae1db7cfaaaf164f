// CommCounters: how many calls of each collective a process group ran and the payload bytes this rank sent
// for them (the tensor bytes handed to the transport; message headers and TCP/IP framing are not counted).
// Thread-safe: the backend's worker adds while the user reads.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace syncgrad::distributed {

struct CollectiveCount {
  uint64_t calls = 0;
  uint64_t bytes_sent = 0;
};

class CommCounters {
 public:
  // One finished call of `collective` that sent `bytes` from this rank.
  void add(const std::string& collective, uint64_t bytes);
  // Zero counts for a collective never run.
  CollectiveCount get(const std::string& collective) const;
  std::map<std::string, CollectiveCount> all() const;
  uint64_t total_bytes_sent() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, CollectiveCount> counts_;
};

}  // namespace syncgrad::distributed
